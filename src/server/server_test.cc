// The server over loopback with an HTTP client: the OpenAI shapes (plain,
// streamed, each tool_choice, a tool-result round trip), the native
// endpoints, errors, the API key, the queue and the reuse of a setup.
#include "server/server.h"

#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <filesystem>
#include <set>
#include <thread>

#include "agent/testing/agent_archives.h"
#include "agent/testing/session_testing.h"
#include "server/session_pool.h"

namespace needle::server {
namespace {

using nlohmann::json;

class ServerTest : public ::testing::Test {
 protected:
  void Start(ServerOptions o = {}) {
    o.port = 0;
    o.session = testing::Small();
    o.model_name = "test-model";
    server_ = std::make_unique<Server>(testing::AgentModel(2), o);
    port_ = server_->Bind();
    thread_ = std::thread([this] { server_->Run(); });
    client_ = std::make_unique<httplib::Client>("127.0.0.1", port_);
    client_->set_read_timeout(60, 0);
  }
  void TearDown() override {
    if (server_) server_->Stop();
    if (thread_.joinable()) thread_.join();
    server_.reset();
  }
  json Post(const std::string& path, const json& body, int want = 200, httplib::Headers headers = {}) {
    auto res = client_->Post(path.c_str(), headers, body.dump(), "application/json");
    EXPECT_TRUE(res) << path;
    if (!res) return json();
    EXPECT_EQ(res->status, want) << res->body;
    return json::parse(res->body, nullptr, false);
  }
  static json Chat(const std::string& user, json extra = json::object()) {
    json tools = json::array();
    for (const auto& t : json::parse(testing::kFiveTools)) tools.push_back({{"type", "function"}, {"function", t}});
    json body = {{"model", "test-model"}, {"tools", tools}, {"messages", {{{"role", "user"}, {"content", user}}}}};
    body.update(extra);
    return body;
  }
  std::unique_ptr<Server> server_;
  int port_ = 0;
  std::thread thread_;
  std::unique_ptr<httplib::Client> client_;
};

TEST_F(ServerTest, AChatCompletionHasOpenAIsShape) {
  Start();
  const json r = Post("/v1/chat/completions", Chat("turn on the kitchen lights", {{"tool_choice", "required"}}));
  EXPECT_EQ(r["object"], "chat.completion");
  EXPECT_EQ(r["model"], "test-model");
  EXPECT_EQ(r["id"].get<std::string>().rfind("chatcmpl-", 0), 0u);
  const json& choice = r["choices"][0];
  EXPECT_EQ(choice["finish_reason"], "tool_calls");
  EXPECT_EQ(choice["message"]["role"], "assistant");
  ASSERT_FALSE(choice["message"]["tool_calls"].empty()) << r.dump();
  std::set<std::string> ids;
  for (const json& c : choice["message"]["tool_calls"]) {
    EXPECT_EQ(c["type"], "function");
    EXPECT_FALSE(c["id"].get<std::string>().empty());
    ids.insert(c["id"].get<std::string>());
    EXPECT_TRUE(json::parse(c["function"]["arguments"].get<std::string>()).is_object());
  }
  EXPECT_EQ(ids.size(), choice["message"]["tool_calls"].size());
  EXPECT_GT(r["usage"]["prompt_tokens"].get<int>(), 0);
  EXPECT_EQ(r["usage"]["total_tokens"], r["usage"]["prompt_tokens"].get<int>() + r["usage"]["completion_tokens"].get<int>());
  EXPECT_TRUE(r["needle"].contains("confidence"));
  // Ids are unique across responses too.
  const json again = Post("/v1/chat/completions", Chat("turn on the kitchen lights", {{"tool_choice", "required"}}));
  EXPECT_NE(again["id"], r["id"]);
  EXPECT_NE(again["choices"][0]["message"]["tool_calls"][0]["id"], choice["message"]["tool_calls"][0]["id"]);
}

TEST_F(ServerTest, ToolChoiceIsEnforcedNeverDowngraded) {
  Start();
  for (const char* q : {"what is the capital of Peru?", "hello", "turn on the kitchen lights"}) {
    const json named = Post("/v1/chat/completions", Chat(q, {{"tool_choice", {{"type", "function"}, {"function", {{"name", "play_music"}}}}}}));
    ASSERT_FALSE(named["choices"][0]["message"]["tool_calls"].empty()) << named.dump();
    for (const json& c : named["choices"][0]["message"]["tool_calls"]) EXPECT_EQ(c["function"]["name"], "play_music");
    const json none = Post("/v1/chat/completions", Chat(q, {{"tool_choice", "none"}}));
    EXPECT_FALSE(none["choices"][0]["message"].contains("tool_calls"));
    EXPECT_EQ(none["choices"][0]["finish_reason"], "stop");
    const json one = Post("/v1/chat/completions", Chat(q, {{"tool_choice", "required"}, {"parallel_tool_calls", false}}));
    EXPECT_EQ(one["choices"][0]["message"]["tool_calls"].size(), 1u) << one.dump();
  }
}

TEST_F(ServerTest, AStreamedCompletionCarriesTheSameCall) {
  Start();
  const json plain = Post("/v1/chat/completions", Chat("set an alarm at 07:15", {{"tool_choice", "required"}}));
  auto res = client_->Post("/v1/chat/completions", Chat("set an alarm at 07:15", {{"tool_choice", "required"}, {"stream", true},
                                                      {"stream_options", {{"include_usage", true}}}}).dump(),
                           "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 200);
  EXPECT_NE(res->get_header_value("Content-Type").find("text/event-stream"), std::string::npos);
  std::vector<json> chunks;
  bool done = false;
  for (size_t at = 0; (at = res->body.find("data: ", at)) != std::string::npos;) {
    const size_t end = res->body.find("\n\n", at);
    const std::string data = res->body.substr(at + 6, end - at - 6);
    at = end;
    if (data == "[DONE]") {
      done = true;
      continue;
    }
    chunks.push_back(json::parse(data));
  }
  ASSERT_TRUE(done);
  ASSERT_GE(chunks.size(), 4u);
  EXPECT_EQ(chunks[0]["choices"][0]["delta"]["role"], "assistant");
  std::map<int, json> calls;  // by index: the id and name once, then the arguments in fragments
  std::string finish;
  for (const json& c : chunks) {
    EXPECT_EQ(c["object"], "chat.completion.chunk");
    if (c["choices"].empty()) {
      EXPECT_GT(c["usage"]["total_tokens"].get<int>(), 0);
      continue;
    }
    if (!c["choices"][0]["finish_reason"].is_null()) finish = c["choices"][0]["finish_reason"];
    for (const json& d : c["choices"][0]["delta"].value("tool_calls", json::array())) {
      json& call = calls[d["index"].get<int>()];
      if (d.contains("id")) {
        EXPECT_FALSE(call.contains("id")) << "the id came twice";
        call["id"] = d["id"], call["name"] = d["function"]["name"], call["arguments"] = "";
      } else {
        call["arguments"] = call["arguments"].get<std::string>() + d["function"]["arguments"].get<std::string>();
      }
    }
  }
  EXPECT_EQ(finish, "tool_calls");
  const json& want = plain["choices"][0]["message"]["tool_calls"];
  ASSERT_EQ(calls.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(calls[int(i)]["name"], want[i]["function"]["name"]);
    EXPECT_EQ(calls[int(i)]["arguments"], want[i]["function"]["arguments"]);
    EXPECT_FALSE(calls[int(i)]["id"].get<std::string>().empty());
  }
}

TEST_F(ServerTest, AToolResultRoundTrip) {
  Start();
  json body = Chat("weather in Rome", {{"tool_choice", "required"}});
  const json first = Post("/v1/chat/completions", body);
  const json& message = first["choices"][0]["message"];
  ASSERT_FALSE(message["tool_calls"].empty());
  body["messages"].push_back(message);
  for (const json& c : message["tool_calls"]) {
    body["messages"].push_back({{"role", "tool"}, {"tool_call_id", c["id"]}, {"content", R"({"temp_c": 21})"}});
  }
  body["tool_choice"] = "auto";
  const json second = Post("/v1/chat/completions", body);
  EXPECT_EQ(second["object"], "chat.completion");
  const std::string type = second["needle"]["type"];
  EXPECT_TRUE(type == "respond" || type == "call") << second.dump();
}

TEST_F(ServerTest, NativeEndpointsModelsAndHealth) {
  Start();
  const json env = Post("/v1/needle/complete", {{"tools", json::parse(testing::kFiveTools)}, {"query", "lights in the hall"},
                                                 {"system", {{"date", "2026-12-06"}}}, {"options", {{"reasoning_beams", 1}}}});
  for (const char* k : {"type", "success", "function_calls", "reasoning", "confidence"}) EXPECT_TRUE(env.contains(k)) << k;
  const json ex = Post("/v1/needle/extract", {{"text", "Invoice 42 from ACME"},
                                              {"schema", {{"type", "object"}, {"properties", {{"vendor", {{"type", "string"}}}}}, {"required", {"vendor"}}}}});
  EXPECT_TRUE(ex.contains("record") && ex.contains("envelope"));
  if (!ex["record"].is_null()) {
    EXPECT_TRUE(ex["record"].contains("vendor"));
  }
  auto models = client_->Get("/v1/models");
  ASSERT_TRUE(models);
  EXPECT_EQ(json::parse(models->body)["data"][0]["id"], "test-model");
  auto health = client_->Get("/health");
  ASSERT_TRUE(health);
  EXPECT_EQ(json::parse(health->body)["status"], "ok");
  Post("/v1/needle/complete", {{"query", "x"}, {"options", {{"reasoning_beams", 99}}}}, 400);
  // The playground and its schema check.
  auto page = client_->Get("/");
  ASSERT_TRUE(page);
  EXPECT_EQ(page->status, 200);
  EXPECT_NE(page->get_header_value("Content-Type").find("text/html"), std::string::npos);
  EXPECT_NE(page->body.find("Needle playground"), std::string::npos);
  EXPECT_NE(page->body.find("</html>"), std::string::npos);  // the whole file
  EXPECT_EQ(Post("/v1/needle/tools/check", {{"tools", json::parse(testing::kFiveTools)}})["tools"], 5);
  const json bad = Post("/v1/needle/tools/check", {{"tools", {{{"name", "f"}, {"parameters", {{"type", "object"}, {"properties", {{"x", {{"type", "string"}, {"if", json::object()}}}}}}}}}}}, 400);
  EXPECT_EQ(bad["error"]["code"], "unsupported_schema");
  // The cache view: counts always, the tokens when asked (needle_cache).
  const json viewed = Post("/v1/chat/completions", Chat("lights in the hall", {{"needle_cache", true}}))["needle"];
  const json& tokens = viewed["tokens"];
  EXPECT_GT(tokens["sink"].get<int>(), 0);
  EXPECT_GT(tokens["window_used"].get<int>(), 0);
  EXPECT_EQ(tokens["window"], 256);
  EXPECT_EQ(viewed["cache"]["window"].size(), tokens["window_used"].get<size_t>());
  EXPECT_FALSE(viewed["cache"]["sink"].empty());
  std::string window_text;
  for (const json& p : viewed["cache"]["window"]) window_text += p.get<std::string>();
  EXPECT_NE(window_text.find("hall"), std::string::npos) << window_text;
  EXPECT_FALSE(Post("/v1/chat/completions", Chat("lights in the hall"))["needle"].contains("cache"));
}

TEST_F(ServerTest, ErrorsAreOpenAIShapedJson) {
  ServerOptions o;
  o.body_limit = 4096;
  o.api_key = "sekret";
  Start(o);
  const httplib::Headers auth = {{"Authorization", "Bearer sekret"}};
  const json no_key = Post("/v1/chat/completions", Chat("hi"), 401);
  EXPECT_EQ(no_key["error"]["code"], "invalid_api_key");
  auto bad = client_->Post("/v1/chat/completions", auth, "{\"messages\": [", "application/json");
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->status, 400);
  const json e = json::parse(bad->body);
  for (const char* k : {"message", "type", "param", "code"}) EXPECT_TRUE(e["error"].contains(k)) << k;
  const json unknown = Post("/v1/chat/completions", Chat("hi", {{"tool_choice", {{"type", "function"}, {"function", {{"name", "nope"}}}}}}), 400, auth);
  EXPECT_EQ(unknown["error"]["param"], "tool_choice");
  auto big = client_->Post("/v1/chat/completions", auth, std::string(8192, ' '), "application/json");
  ASSERT_TRUE(big);
  EXPECT_EQ(big->status, 413);
  EXPECT_EQ(json::parse(big->body, nullptr, false)["error"]["code"], "body_too_large");
  EXPECT_EQ(Post("/v1/chat/completions", Chat("hi"), 200, auth)["object"], "chat.completion");
}

// Clients at once: two sessions serve six requests of three tool sets; each
// answer is its own request's (tool_choice names a tool of its set).
TEST_F(ServerTest, ConcurrentClientsGetTheirOwnAnswers) {
  ServerOptions o;
  o.parallel = 2;
  o.queue = 8;
  Start(o);
  const char* names[] = {"send_message", "set_alarm", "play_music"};
  std::vector<std::thread> clients;
  std::vector<std::string> got(6);
  for (int c = 0; c < 6; ++c) {
    clients.emplace_back([&, c] {
      httplib::Client client("127.0.0.1", port_);
      client.set_read_timeout(60, 0);
      json tools = json::array();
      for (const auto& t : json::parse(testing::kFiveTools)) {
        if (t["name"] == "get_weather" && c % 3 == 1) continue;  // three different tool sets
        if (t["name"] == "set_lights" && c % 3 == 2) continue;
        tools.push_back({{"type", "function"}, {"function", t}});
      }
      const json body = {{"tools", tools}, {"tool_choice", {{"type", "function"}, {"function", {{"name", names[c % 3]}}}}},
                         {"messages", {{{"role", "user"}, {"content", "hello"}}}}};
      auto res = client.Post("/v1/chat/completions", body.dump(), "application/json");
      if (res && res->status == 200) got[size_t(c)] = json::parse(res->body)["choices"][0]["message"]["tool_calls"][0]["function"]["name"];
    });
  }
  for (auto& t : clients) t.join();
  for (int c = 0; c < 6; ++c) EXPECT_EQ(got[size_t(c)], names[c % 3]) << c;
  const json health = json::parse(client_->Get("/health")->body);
  EXPECT_EQ(health["served"], 6);
  // The two sessions' decoding went through the shared batcher.
  EXPECT_EQ(health["batched_decoding"]["enabled"], true);
  EXPECT_GT(health["batched_decoding"]["tokens"].get<uint64_t>(), 0u);
  EXPECT_LE(health["batched_decoding"]["passes"].get<uint64_t>(), health["batched_decoding"]["tokens"].get<uint64_t>());
  // Their sink blocks came from the pool's shared blocks (at most one per session kept).
  EXPECT_EQ(health["shared_sinks"]["enabled"], true);
  EXPECT_GE(health["shared_sinks"]["built"].get<uint64_t>(), 1u);
  EXPECT_LE(health["shared_sinks"]["blocks"].get<uint64_t>(), 2u);
  EXPECT_GT(health["shared_sinks"]["bytes"].get<uint64_t>(), 0u);
}

// A burst of clients connecting at once is accepted (Debian's cpp-httplib
// listens with a backlog of 5; the server widens it): every request is
// answered, none fails to connect or read.
TEST_F(ServerTest, ABurstOfClientsIsAccepted) {
  ServerOptions o;
  o.parallel = 2;
  o.queue = 64;
  Start(o);
  std::atomic<int> answered{0};
  std::vector<std::thread> clients;
  for (int c = 0; c < 48; ++c) {
    clients.emplace_back([&] {
      httplib::Client client("127.0.0.1", port_);
      client.set_read_timeout(60, 0);
      auto res = client.Post("/v1/chat/completions", Chat("hello", {{"tool_choice", "required"}}).dump(), "application/json");
      if (res && res->status == 200) ++answered;
    });
  }
  for (auto& t : clients) t.join();
  EXPECT_EQ(answered.load(), 48);
}

// Fine-tuning from the playground: refused with a reason where it cannot
// run; where the trainer is built, a job phrases examples for the tools,
// fine-tunes and builds, and the server then serves the result.
TEST_F(ServerTest, FinetuneJobEndToEnd) {
  ServerOptions o;
  o.cli_path = "";
  o.work_dir = ::testing::TempDir() + "/needle-serve-ft";
  Start(o);
  const json tools = json::parse(testing::kFiveTools);
  EXPECT_EQ(Post("/v1/needle/finetune", {{"tools", tools}, {"generate", 20}}, 501)["error"]["code"], "no_trainer");
  TearDown();

  const std::filesystem::path cli = NEEDLE_CLI;
  o.cli_path = cli.string();
  Start(o);
  Post("/v1/needle/finetune", {{"generate", 20}}, 400);                       // nothing to learn from
  Post("/v1/needle/finetune", {{"tools", tools}, {"generate", 20}, {"bits", 5}}, 400);
  Post("/v1/needle/model", {{"use", "finetuned"}}, 409);                       // no model yet
  if (!std::filesystem::exists(cli.parent_path() / "needle-train")) {
    EXPECT_EQ(Post("/v1/needle/finetune", {{"tools", tools}, {"generate", 20}}, 501)["error"]["code"], "no_trainer");
    GTEST_SKIP() << "needle-train is not built (no libtorch): the job itself is not run";
  }
  const json started = Post("/v1/needle/finetune", {{"tools", tools}, {"generate", 20}, {"epochs", 1}}, 202);
  EXPECT_EQ(started["state"], "running");
  Post("/v1/needle/finetune", {{"tools", tools}, {"generate", 20}}, 409);       // one job at a time
  json status;
  double last_progress = 0.0;
  for (int i = 0; i < 600; ++i) {
    status = json::parse(client_->Get("/v1/needle/finetune")->body);
    EXPECT_GE(status["progress"].get<double>(), last_progress);  // it only moves forward
    last_progress = status["progress"].get<double>();
    if (status["state"] != "running") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ASSERT_EQ(status["state"], "done") << status.dump();
  EXPECT_EQ(status["progress"], 1.0);
  EXPECT_TRUE(std::filesystem::exists(status["model"].get<std::string>()));
  const json used = Post("/v1/needle/model", {{"use", "finetuned"}});
  EXPECT_EQ(used["model"], status["model"]);
  const json r = Post("/v1/chat/completions", Chat("turn on the kitchen lights", {{"tool_choice", "required"}}));
  EXPECT_FALSE(r["choices"][0]["message"]["tool_calls"].empty());
  // Answers, /v1/models and /health name the fine-tuned model from now on.
  EXPECT_EQ(used["id"], r["model"]);
  EXPECT_EQ(r["model"], "test-model-finetuned");
  EXPECT_EQ(json::parse(client_->Get("/v1/models")->body)["data"][0]["id"], r["model"]);
  EXPECT_EQ(json::parse(client_->Get("/health")->body)["model"], r["model"]);
}

// The pool: a repeated setup reuses its session's sinks; a full queue is
// refused at once; a wait ends at its deadline.
TEST(SessionPool, ReusesSetupsAndBoundsTheQueue) {
  SessionPool pool(testing::AgentModel(2), testing::Small(), 1, 0);
  int setups = 0;
  auto setup = [&](Session& s) { ++setups, s.SetToolsJson(testing::kFiveTools); };
  const auto soon = SessionPool::Clock::now() + std::chrono::milliseconds(50);
  std::unique_ptr<SessionPool::Lease> a;
  ASSERT_EQ(pool.Acquire("tools-a", soon, setup, &a), SessionPool::Wait::kOk);
  EXPECT_FALSE(a->reused());
  std::unique_ptr<SessionPool::Lease> b;
  EXPECT_EQ(pool.Acquire("tools-a", soon, setup, &b), SessionPool::Wait::kQueueFull);
  a.reset();
  ASSERT_EQ(pool.Acquire("tools-a", soon, setup, &b), SessionPool::Wait::kOk);
  EXPECT_TRUE(b->reused());
  EXPECT_EQ(setups, 1);
  SessionPool waiting(testing::AgentModel(2), testing::Small(), 1, 1);
  std::unique_ptr<SessionPool::Lease> c, d;
  ASSERT_EQ(waiting.Acquire("k", soon, setup, &c), SessionPool::Wait::kOk);
  EXPECT_EQ(waiting.Acquire("k", SessionPool::Clock::now() + std::chrono::milliseconds(20), setup, &d), SessionPool::Wait::kDeadline);
  EXPECT_EQ(waiting.stats().timed_out, 1u);
}

}  // namespace
}  // namespace needle::server
