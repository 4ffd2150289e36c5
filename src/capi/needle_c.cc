// The C ABI (include/needle/needle.h) over agent::Session. Nothing here
// throws across the boundary: every entry point catches and returns a code.
#include "needle/needle.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "agent/session.h"
#include "base/error.h"

struct needle_model {
  std::shared_ptr<const needle::Model> model;
};
struct needle_session {
  std::unique_ptr<needle::Session> session;
  std::string last_envelope;
};

namespace {

thread_local std::string g_last_error;

int Fail(int code, const std::string& message) {
  g_last_error = message;
  return code;
}

int CodeFor(const needle::Error& e) {
  switch (e.code()) {
    case needle::ErrorCode::kInvalidArchive:
    case needle::ErrorCode::kInvalidTokenizer:
    case needle::ErrorCode::kNoModel: return NEEDLE_E_MODEL;
    case needle::ErrorCode::kInvalidState: return NEEDLE_E_STATE;
    case needle::ErrorCode::kInternal: return NEEDLE_E_INTERNAL;
    default: return NEEDLE_E_ARGUMENT;
  }
}

// Runs `fn`, mapping exceptions to codes.
template <typename Fn>
int Guard(Fn&& fn) {
  try {
    g_last_error.clear();
    return fn();
  } catch (const needle::Error& e) {
    return Fail(CodeFor(e), std::string(needle::ErrorCodeName(e.code())) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return Fail(NEEDLE_E_INTERNAL, "out of memory");
  } catch (const std::exception& e) {
    return Fail(NEEDLE_E_INTERNAL, e.what());
  }
}

// Copies `s` with its NUL, or fails without writing past out[0].
// `what` names the result in the message (for an envelope: that the turn happened).
constexpr const char* kEnvelope = "envelope (the turn was processed; needle_last_envelope returns it)";
int WriteOut(const std::string& s, char* out, int cap, const char* what = kEnvelope) {
  if (!out || cap <= 0) return Fail(NEEDLE_E_ARGUMENT, "output buffer is NULL or has no capacity");
  if (s.size() + 1 > size_t(cap)) {
    out[0] = '\0';
    return Fail(NEEDLE_E_BUFFER, "output buffer of " + std::to_string(cap) + " bytes is too small for the " +
                                     std::to_string(s.size() + 1) + "-byte " + what);
  }
  std::memcpy(out, s.data(), s.size() + 1);
  return static_cast<int>(s.size());
}

nlohmann::ordered_json SystemFacts(const char* system) {
  if (!system || !*system) return nullptr;
  const auto j = nlohmann::ordered_json::parse(system, nullptr, false);
  if (!j.is_discarded() && j.is_object()) return j;
  return std::string(system);  // already rendered "key: value" lines
}

// A JSON options object (needle_session_set_options), all or nothing.
needle::SessionOptions ParseOptions(const char* options_json, needle::SessionOptions opt) {
  if (!options_json || !*options_json) return opt;
  const auto j = nlohmann::json::parse(options_json, nullptr, false);
  if (j.is_discarded()) throw needle::Error(needle::ErrorCode::kInvalidJson, "options: malformed JSON");
  needle::ApplyOptionsJson(j, opt);
  return opt;
}

std::unique_ptr<needle::Session> NewSession(std::shared_ptr<const needle::Model> model, const char* system,
                                            const char* tools_json, const char* tool_index_path,
                                            const char* options_json = nullptr) {
  needle::SessionOptions opt = ParseOptions(options_json, {});
  if (tool_index_path) opt.tool_index_path = tool_index_path;
  auto s = std::make_unique<needle::Session>(std::move(model), opt);
  s->SetToolsJson(tools_json && *tools_json ? tools_json : "[]");
  s->SetSystem(SystemFacts(system));
  return s;
}

// The process-wide session of the drop-in ABI.
struct Global {
  std::mutex mu;
  std::shared_ptr<const needle::Model> loaded;  // needle_load
  needle_session session;
  bool initialised = false;
  std::string system, tools, index;  // to rebuild the session after needle_load
};
Global& G() {
  static Global g;
  return g;
}

}  // namespace

extern "C" {

int needle_init(const char* system, const char* tools_json, const char* tool_index_path) {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  return Guard([&] {
    auto model = g.loaded ? g.loaded : needle::Model::Default();
    g.session.session = NewSession(model, system, tools_json, tool_index_path);
    g.session.last_envelope.clear();
    g.system = system ? system : "";
    g.tools = tools_json ? tools_json : "";
    g.index = tool_index_path ? tool_index_path : "";
    g.initialised = true;
    return 0;
  });
}

int needle_complete(const char* text, int max_new_tokens, char* out, int out_capacity) {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!g.initialised) return Fail(NEEDLE_E_STATE, "needle_complete before needle_init");
  return needle_session_complete(&g.session, text, max_new_tokens, out, out_capacity);
}

void needle_reset(void) {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  if (g.initialised) g.session.session->Reset();
}

int needle_load(const char* blob, uint64_t size) {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  return Guard([&] {
    if (!blob || size == 0) return Fail(NEEDLE_E_ARGUMENT, "needle_load: empty blob");
    auto model = needle::Model::FromBytes(std::vector<uint8_t>(blob, blob + size));
    g.loaded = model;
    if (g.initialised) {  // the session continues with the new weights and the same setup
      g.session.session = NewSession(model, g.system.c_str(), g.tools.c_str(), g.index.c_str());
      g.session.last_envelope.clear();
    }
    return 0;
  });
}

const char* needle_last_error(void) { return g_last_error.c_str(); }

int needle_last_envelope(char* out, int out_capacity) {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  return Guard([&] { return WriteOut(g.session.last_envelope, out, out_capacity); });
}

const char* needle_version(void) { return "needle 0.1 (open C++ engine)"; }

needle_model* needle_model_open(const char* path) {
  needle_model* m = nullptr;
  Guard([&] {
    if (!path) return Fail(NEEDLE_E_ARGUMENT, "needle_model_open: NULL path");
    m = new needle_model{needle::Model::Open(path)};
    return 0;
  });
  return m;
}

needle_model* needle_model_from_blob(const void* blob, uint64_t size) {
  needle_model* m = nullptr;
  Guard([&] {
    if (!blob || size == 0) return Fail(NEEDLE_E_ARGUMENT, "needle_model_from_blob: empty blob");
    const auto* b = static_cast<const uint8_t*>(blob);
    m = new needle_model{needle::Model::FromBytes(std::vector<uint8_t>(b, b + size))};
    return 0;
  });
  return m;
}

needle_model* needle_model_default(void) {
  needle_model* m = nullptr;
  Guard([&] {
    m = new needle_model{needle::Model::Default()};
    return 0;
  });
  return m;
}

void needle_model_free(needle_model* model) { delete model; }

needle_session* needle_session_new(needle_model* model, const char* system, const char* tools_json,
                                   const char* tool_index_path) {
  needle_session* s = nullptr;
  Guard([&] {
    if (!model) return Fail(NEEDLE_E_ARGUMENT, "needle_session_new: NULL model");
    auto session = NewSession(model->model, system, tools_json, tool_index_path);
    s = new needle_session{std::move(session), {}};
    return 0;
  });
  return s;
}

int needle_session_complete(needle_session* s, const char* text, int max_new_tokens, char* out, int out_capacity) {
  return Guard([&] {
    if (!s || !s->session) return Fail(NEEDLE_E_ARGUMENT, "NULL session");
    if (!text) return Fail(NEEDLE_E_ARGUMENT, "NULL text");
    if (!out || out_capacity <= 0) return Fail(NEEDLE_E_ARGUMENT, "output buffer is NULL or has no capacity");
    const uint32_t budget = max_new_tokens > 0 ? static_cast<uint32_t>(max_new_tokens) : 0;
    s->last_envelope = s->session->Complete(text, budget).Dump();
    return WriteOut(s->last_envelope, out, out_capacity);
  });
}

needle_session* needle_session_new_with_options(needle_model* model, const char* system, const char* tools_json,
                                                const char* options_json) {
  needle_session* s = nullptr;
  Guard([&] {
    if (!model) return Fail(NEEDLE_E_ARGUMENT, "needle_session_new_with_options: NULL model");
    auto session = NewSession(model->model, system, tools_json, nullptr, options_json);
    s = new needle_session{std::move(session), {}};
    return 0;
  });
  return s;
}

int needle_session_set_options(needle_session* s, const char* options_json) {
  return Guard([&] {
    if (!s || !s->session) return Fail(NEEDLE_E_ARGUMENT, "NULL session");
    if (!options_json) return Fail(NEEDLE_E_ARGUMENT, "NULL options");
    s->session->SetOptions(ParseOptions(options_json, s->session->options()));
    return 0;
  });
}

int needle_session_get_options(needle_session* s, char* out, int out_capacity) {
  return Guard([&] {
    if (!s || !s->session) return Fail(NEEDLE_E_ARGUMENT, "NULL session");
    return WriteOut(needle::OptionsToJson(s->session->options()).dump(), out, out_capacity, "options object");
  });
}

int needle_options_describe(char* out, int out_capacity) {
  return Guard([&] { return WriteOut(needle::DescribeOptions().dump(), out, out_capacity, "options table"); });
}

// The two setters before the options object: the same path.
int needle_session_set_window_requests(needle_session* s, int n) {
  if (n < 0) return Fail(NEEDLE_E_ARGUMENT, "needle_session_set_window_requests: n must be 0 or more");
  return needle_session_set_options(s, ("{\"window_requests\":" + std::to_string(n) + "}").c_str());
}

int needle_session_set_reasoning_beams(needle_session* s, int n) {
  return needle_session_set_options(s, ("{\"reasoning_beams\":" + std::to_string(n) + "}").c_str());
}

int needle_session_pin(needle_session* s, const char* text) {
  return Guard([&] {
    if (!s || !text) return Fail(NEEDLE_E_ARGUMENT, "NULL session or text");
    s->session->PinSpan(text);
    return 0;
  });
}

void needle_session_reset(needle_session* s) {
  if (s && s->session) s->session->Reset();
}

int needle_session_save(needle_session* s, const char* path) {
  return Guard([&] {
    if (!s || !path) return Fail(NEEDLE_E_ARGUMENT, "NULL session or path");
    s->session->Save(path);
    return 0;
  });
}

int needle_session_restore(needle_session* s, const char* path) {
  return Guard([&] {
    if (!s || !path) return Fail(NEEDLE_E_ARGUMENT, "NULL session or path");
    s->session->Restore(path);
    return 0;
  });
}

void needle_session_free(needle_session* s) { delete s; }

}  // extern "C"
