#include "server/server.h"

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <httplib.h>

#include "base/error.h"
#include "server/chat_request.h"
#include "server/chat_response.h"
#include "server/finetune_job.h"
#include "server/session_pool.h"

// The playground (src/server/playground.html), embedded by CMake.
extern "C" {
extern const char needle_playground_page_begin[];
extern const char needle_playground_page_end[];
}

namespace needle::server {
namespace {

using Json = nlohmann::json;
using OJson = nlohmann::ordered_json;

void Reply(httplib::Response& res, int status, const OJson& body) {
  res.status = status;
  res.set_content(body.dump(-1, ' ', false, OJson::error_handler_t::replace), "application/json");
}

void ReplyError(httplib::Response& res, const ApiError& e) {
  if (e.status == 503) res.set_header("Retry-After", "1");
  Reply(res, e.status, e.ToJson());
}

// The HTTP status of a turn that ended in an error envelope: the request's
// fault (400) or ours (500).
int StatusOf(const Envelope& env) {
  for (const char* code : {"invalid_argument", "invalid_json", "unsupported", "budget_exceeded"}) {
    if (env.error_code == code) return 400;
  }
  return 500;
}

std::string SetupKey(const OJson& tools, const OJson& facts, const std::vector<std::string>& pins) {
  std::string key = tools.dump() + '\x1f' + facts.dump();
  for (const std::string& p : pins) key += '\x1f' + p;
  return key;
}

}  // namespace

struct Server::Impl {
  Impl(std::shared_ptr<const Model> m, ServerOptions o)
      : model(std::move(m)), opt(std::move(o)), pool(model, opt.session, opt.parallel, opt.queue, opt.batch_decoding, opt.share_sinks),
        work_dir(opt.work_dir.empty() ? "/tmp/needle-serve-" + std::to_string(::getpid()) : opt.work_dir),
        job(opt.cli_path, work_dir + "/finetune"), served_name(opt.model_name) {}

  // The name answers carry: --model-name, then "<it>-finetuned" once the
  // sessions moved to a fine-tuned model (so a client can tell them apart).
  std::string ServedName() const {
    std::lock_guard<std::mutex> lock(name_mutex);
    return served_name;
  }

  std::shared_ptr<const Model> model;
  ServerOptions opt;
  SessionPool pool;
  std::string work_dir;
  FinetuneJob job;
  httplib::Server http;
  int port = -1;
  std::atomic<bool> stopping{false};
  mutable std::mutex name_mutex;
  std::string served_name;

  // Runs fn(session) on a session set up with these tools, facts and pins.
  template <typename Fn>
  void WithSession(const OJson& tools, const OJson& facts, const std::vector<std::string>& pins, Fn&& fn) {
    const auto deadline = SessionPool::Clock::now() + std::chrono::milliseconds(opt.timeout_ms);
    std::unique_ptr<SessionPool::Lease> lease;
    SessionPool::Wait w;
    try {
      w = pool.Acquire(SetupKey(tools, facts, pins), deadline,
                       [&](Session& s) {
                         s.ClearPins();
                         s.SetTools(tools);
                         s.SetSystem(facts);
                         for (const std::string& p : pins) s.PinSpan(p);
                       },
                       &lease);
    } catch (const Error& e) {  // the setup: tools, facts or pins the engine refuses
      throw ApiError(400, e.what(), "", ErrorCodeName(e.code()));
    }
    if (w == SessionPool::Wait::kQueueFull) throw ApiError(503, "the server is busy: every session is in use and the queue is full", "", "queue_full", "server_error");
    if (w == SessionPool::Wait::kDeadline) {
      throw ApiError(503, "no session came free within " + std::to_string(opt.timeout_ms) + " ms", "", "timeout", "server_error");
    }
    if (w == SessionPool::Wait::kStopping) throw ApiError(503, "the server is stopping", "", "stopping", "server_error");
    fn(lease->session());
  }

  // The cache after the turn, token by token: the pinned sink block and the
  // conversation the window shows (the playground's view).
  static OJson CacheView(const Session& s) {
    const Tokenizer& tok = s.model().tokenizer();
    auto pieces = [&](const std::vector<int32_t>& ids) {
      OJson out = OJson::array();
      for (int32_t id : ids) {
        const std::string_view bytes = tok.TokenBytes(id);
        out.push_back(std::string(bytes.empty() ? tok.IdToPiece(id) : bytes));  // markers by name
      }
      return out;
    };
    return {{"sink", pieces(s.sink_ids())}, {"window", pieces(s.window_ids())}};
  }

  // The turn options a request asks for, on the server's own.
  SessionOptions TurnOptions(bool require_call, uint32_t max_calls, uint32_t max_tokens) const {
    SessionOptions o = opt.session;
    o.require_call = require_call;
    o.max_calls = max_calls;
    if (max_tokens > 0) o.max_new_tokens = max_tokens;
    return o;
  }

  void Chat(const httplib::Request& req, httplib::Response& res) {
    const ChatRequest r = ParseChatRequest(req.body);
    Envelope env;
    OJson cache_view;
    if (r.tool_choice == ToolChoice::kNone) {  // no call, whatever the model would say: it is not asked
      env.type = EnvelopeType::kRefuse;
      env.warnings.push_back("tool_choice \"none\": no call was made");
    } else {
      OJson tools = r.tools;
      if (r.tool_choice == ToolChoice::kNamed) {  // that function alone: the grammar admits no other
        tools = OJson::array();
        for (const OJson& t : r.tools)
          if (t["name"] == r.named_tool) tools.push_back(t);
      }
      const bool require = r.tool_choice == ToolChoice::kRequired || r.tool_choice == ToolChoice::kNamed;
      WithSession(tools, r.facts, r.pins, [&](Session& s) {
        s.SetOptions(TurnOptions(require, r.parallel_tool_calls ? 0 : 1, r.max_tokens));
        for (size_t i = 0; i < r.history.size(); ++i) {
          try {
            s.ReplayTurn(r.history[i].text, r.history[i].calls, r.history[i].tool_result);
          } catch (const Error& e) {
            throw ApiError(400, std::string("messages: turn ") + std::to_string(i + 1) + " of the conversation: " + e.what(),
                           "messages", ErrorCodeName(e.code()));
          }
        }
        env = r.last.tool_result ? s.ToolResult(r.last.text) : s.Query(r.last.text);
        if (r.needle_cache) cache_view = CacheView(s);
      });
    }
    if (env.type == EnvelopeType::kError) throw ApiError(StatusOf(env), env.error, "", env.error_code, StatusOf(env) == 400 ? "invalid_request_error" : "server_error");
    const CompletionMeta meta = NewCompletionMeta(ServedName(), env.function_calls.size());
    if (!r.stream) {
      OJson body = CompletionJson(env, meta);
      if (!cache_view.is_null()) body["needle"]["cache"] = std::move(cache_view);
      return Reply(res, 200, body);
    }
    auto events = std::make_shared<std::vector<std::string>>(CompletionEvents(env, meta, r.include_usage));
    res.set_header("Cache-Control", "no-cache");
    res.set_chunked_content_provider("text/event-stream", [events](size_t, httplib::DataSink& sink) {
      for (const std::string& e : *events)
        if (!sink.write(e.data(), e.size())) return false;
      sink.done();
      return true;
    });
  }

  // {"tools", "system"?, "query", "options"?} -> the SPEC envelope.
  void NativeComplete(const httplib::Request& req, httplib::Response& res) {
    const Json j = ParseBody(req.body);
    if (!j.is_object() || !j.contains("query") || !j["query"].is_string()) throw ApiError(400, "the body needs \"query\" (a string)", "query");
    const OJson tools = ParseTools(j.value("tools", Json::array()));
    const OJson facts = FactsOf(j);
    SessionOptions o = opt.session;
    if (j.contains("options")) {
      try {
        ApplyOptionsJson(j["options"], o);
      } catch (const Error& e) {
        throw ApiError(400, e.what(), "options");
      }
    }
    Envelope env;
    WithSession(tools, facts, {}, [&](Session& s) {
      try {
        s.SetOptions(o);
      } catch (const Error& e) {
        throw ApiError(400, e.what(), "options");
      }
      env = s.Query(j["query"].get<std::string>());
    });
    Reply(res, env.type == EnvelopeType::kError ? StatusOf(env) : 200, env.ToJson());
  }

  // {"text", "schema" (a JSON Schema, or a tool {"name", "parameters"}), "system"?}
  // -> {"record": {...} | null, "envelope": {...}}.
  void NativeExtract(const httplib::Request& req, httplib::Response& res) {
    const Json j = ParseBody(req.body);
    if (!j.is_object() || !j.contains("text") || !j["text"].is_string()) throw ApiError(400, "the body needs \"text\" (a string)", "text");
    if (!j.contains("schema") || !j["schema"].is_object()) throw ApiError(400, "the body needs \"schema\" (a JSON Schema object)", "schema");
    const OJson tools = ParseTools(Json::array({ExtractTool(OJson(j["schema"]))}), "schema");
    Envelope env;
    WithSession(tools, FactsOf(j), {}, [&](Session& s) {
      s.SetOptions(opt.session);
      env = s.Query(j["text"].get<std::string>());
    });
    if (env.type == EnvelopeType::kError) return Reply(res, StatusOf(env), {{"record", nullptr}, {"envelope", env.ToJson()}});
    const OJson record = env.function_calls.empty() ? OJson() : env.function_calls[0].value("arguments", OJson());
    Reply(res, 200, {{"record", record}, {"envelope", env.ToJson()}});
  }

  // {"tools"} -> {"tools": n} when every schema is one the grammar enforces
  // (the playground's editor), else the 400 a chat request would get.
  void CheckTools(const httplib::Request& req, httplib::Response& res) {
    const Json j = ParseBody(req.body);
    if (!j.is_object() || !j.contains("tools")) throw ApiError(400, "the body needs \"tools\" (an array)", "tools");
    Reply(res, 200, {{"tools", ParseTools(j["tools"]).size()}});
  }

  // {"examples": JSONL} or {"tools", "generate": N}, with "epochs", "bits"
  // -> 202 and the job's status; the base is the model served now.
  void StartFinetune(const httplib::Request& req, httplib::Response& res) {
    const Json j = ParseBody(req.body);
    if (!j.is_object()) throw ApiError(400, "the body must be a JSON object", "");
    FinetuneRequest r;
    if (j.contains("examples")) {
      if (!j["examples"].is_string()) throw ApiError(400, "examples must be JSONL text (one example per line)", "examples");
      r.examples_jsonl = j["examples"].get<std::string>();
    }
    if (j.contains("tools")) r.tools = ParseTools(j["tools"]);
    for (const char* k : {"generate", "epochs"}) {
      if (j.contains(k) && !j[k].is_number_unsigned()) throw ApiError(400, std::string(k) + " must be a positive integer", k);
    }
    r.generate = j.value("generate", 0u);
    r.epochs = j.value("epochs", 1u);
    if (j.contains("bits")) r.bits = j["bits"].is_string() ? j["bits"].get<std::string>() : j["bits"].dump();
    if (r.bits != "2" && r.bits != "3" && r.bits != "4") throw ApiError(400, "bits must be 2, 3 or 4", "bits");
    job.Start(r, BasePath());
    Reply(res, 202, job.Status());
  }

  void FinetuneStatus(const httplib::Request&, httplib::Response& res) { Reply(res, 200, job.Status()); }

  // {"use": "finetuned"}: every session moves to the last job's model (busy
  // ones once their request is done).
  void UseModel(const httplib::Request& req, httplib::Response& res) {
    const Json j = ParseBody(req.body);
    if (!j.is_object() || j.value("use", Json()) != "finetuned") throw ApiError(400, "the body must be {\"use\": \"finetuned\"}", "use");
    const std::string path = job.model();
    if (path.empty()) throw ApiError(409, "no fine-tuned model yet (POST /v1/needle/finetune, then wait for state done)", "", "no_model");
    pool.SetModel(Model::Open(path));
    {
      std::lock_guard<std::mutex> lock(name_mutex);
      served_name = opt.model_name + "-finetuned";
    }
    Reply(res, 200, {{"model", path}, {"id", ServedName()}});
  }

  // The served model as a file, for the trainer: its own, or the embedded one written out once.
  std::string BasePath() {
    if (!opt.model_path.empty()) return opt.model_path;
    const std::string path = work_dir + "/base.cact";
    if (!std::filesystem::exists(path)) {
      std::filesystem::create_directories(work_dir);
      const auto bytes = Model::Embedded();
      if (bytes.empty()) throw ApiError(501, "no model file to fine-tune (start needle serve with --model)", "", "no_model", "server_error");
      std::ofstream(path, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
    }
    return path;
  }

  static OJson FactsOf(const Json& j) {
    if (!j.contains("system") || j["system"].is_null()) return nullptr;
    if (j["system"].is_string()) return SystemFactsOf(j["system"].get<std::string>());
    if (!j["system"].is_object()) throw ApiError(400, "system must be an object of facts or \"key: value\" lines", "system");
    return OJson(j["system"]);
  }

  bool Authorized(const httplib::Request& req) const {
    return opt.api_key.empty() || req.get_header_value("Authorization") == "Bearer " + opt.api_key;
  }

  // Wraps a handler: the API key, then ApiError and engine errors as OpenAI-shaped JSON.
  template <typename H>
  httplib::Server::Handler Route(H h) {
    return [this, h](const httplib::Request& req, httplib::Response& res) {
      try {
        if (!Authorized(req)) throw ApiError(401, "missing or wrong API key (Authorization: Bearer KEY)", "", "invalid_api_key");
        (this->*h)(req, res);
      } catch (const ApiError& e) {
        ReplyError(res, e);
      } catch (const Error& e) {
        ReplyError(res, ApiError(400, e.what(), "", ErrorCodeName(e.code())));
      } catch (const std::exception& e) {
        ReplyError(res, ApiError(500, std::string("internal error: ") + e.what(), "", "internal_error", "server_error"));
      }
    };
  }
};

Server::Server(std::shared_ptr<const Model> model, ServerOptions options)
    : impl_(std::make_unique<Impl>(std::move(model), std::move(options))) {
  Impl& m = *impl_;
  // Threads for the requests being served and those allowed to wait; the
  // pool's queue bounds the rest (503).
  const size_t threads = size_t(m.opt.parallel) + m.opt.queue + 2;
  m.http.new_task_queue = [threads] { return new httplib::ThreadPool(threads); };
  m.http.set_payload_max_length(m.opt.body_limit);
  m.http.set_error_handler([&m](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty()) return;  // a handler's own error
    const int status = res.status;
    if (status == 413) {
      ReplyError(res, ApiError(413, "the body is over the limit of " + std::to_string(m.opt.body_limit) + " bytes", "", "body_too_large"));
    } else if (status == 404) {
      ReplyError(res, ApiError(404, "no such endpoint", "", "not_found"));
    } else {
      ReplyError(res, ApiError(status, "HTTP error " + std::to_string(status), "", ""));
    }
  });
  m.http.Post("/v1/chat/completions", m.Route(&Impl::Chat));
  m.http.Post("/v1/needle/complete", m.Route(&Impl::NativeComplete));
  m.http.Post("/v1/needle/extract", m.Route(&Impl::NativeExtract));
  m.http.Get("/", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(std::string(needle_playground_page_begin, size_t(needle_playground_page_end - needle_playground_page_begin)),
                    "text/html; charset=utf-8");
  });
  m.http.Post("/v1/needle/tools/check", m.Route(&Impl::CheckTools));
  m.http.Post("/v1/needle/finetune", m.Route(&Impl::StartFinetune));
  m.http.Get("/v1/needle/finetune", m.Route(&Impl::FinetuneStatus));
  m.http.Post("/v1/needle/model", m.Route(&Impl::UseModel));
  m.http.Get("/v1/models", [&m](const httplib::Request& req, httplib::Response& res) {
    if (!m.Authorized(req)) return ReplyError(res, ApiError(401, "missing or wrong API key (Authorization: Bearer KEY)", "", "invalid_api_key"));
    Reply(res, 200, {{"object", "list"}, {"data", OJson::array({{{"id", m.ServedName()}, {"object", "model"}, {"created", 0}, {"owned_by", "needle"}}})}});
  });
  m.http.Get("/health", [&m](const httplib::Request&, httplib::Response& res) {
    const SessionPool::Stats st = m.pool.stats();
    Reply(res, 200, {{"status", m.stopping ? "stopping" : "ok"}, {"model", m.ServedName()}, {"sessions", st.sessions},
                     {"busy", st.busy}, {"waiting", st.waiting}, {"served", st.served}, {"setups_reused", st.reused},
                     {"queue_full", st.queue_full}, {"timed_out", st.timed_out},
                     {"batched_decoding", {{"enabled", m.opt.batch_decoding && st.sessions > 1},
                                           {"tokens", st.decode_steps},
                                           {"passes", st.decode_batches}}},
                     {"shared_sinks", {{"enabled", m.opt.share_sinks && st.sessions > 1},
                                       {"blocks", st.sink_blocks.blocks},
                                       {"bytes", st.sink_blocks.bytes},
                                       {"found", st.sink_blocks.hits},
                                       {"built", st.sink_blocks.builds}}}});
  });
}

Server::~Server() { Stop(); }

namespace {

// Debian's cpp-httplib is built with a listen backlog of 5: a burst of
// clients overflows it, and connections stall or fail (server_load_bench:
// 100 clients at once, 25% read errors). Calling listen() again on the
// listening socket sets a new backlog on Linux; httplib keeps that socket
// private, so it is found by its port among this process's descriptors.
void WidenListenBacklog(int port) {
  for (int fd = 0; fd < 4096; ++fd) {
    int listening = 0;
    socklen_t len = sizeof listening;
    if (::getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &len) != 0 || !listening) continue;
    sockaddr_storage addr{};
    socklen_t alen = sizeof addr;
    if (::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &alen) != 0) continue;
    const int p = addr.ss_family == AF_INET ? ntohs(reinterpret_cast<sockaddr_in*>(&addr)->sin_port)
                  : addr.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&addr)->sin6_port) : -1;
    if (p == port) ::listen(fd, SOMAXCONN);
  }
}

}  // namespace

int Server::Bind() {
  Impl& m = *impl_;
  if (m.opt.port == 0) {
    m.port = m.http.bind_to_any_port(m.opt.host.c_str());
  } else {
    m.port = m.http.bind_to_port(m.opt.host.c_str(), m.opt.port) ? m.opt.port : -1;
  }
  if (m.port < 0) throw Error(ErrorCode::kIo, "cannot listen on " + m.opt.host + ":" + std::to_string(m.opt.port) + " (in use, or not an address of this machine)");
  WidenListenBacklog(m.port);
  return m.port;
}

void Server::Run() {
  if (impl_->port < 0) Bind();
  impl_->http.listen_after_bind();
}

void Server::Stop() {
  Impl& m = *impl_;
  if (m.stopping.exchange(true)) return;
  m.pool.Stop();
  m.http.stop();
}

}  // namespace needle::server
