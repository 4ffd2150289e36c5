// The C ABI (include/needle/needle.h) over agent::Session. Nothing here
// throws across the boundary: every entry point catches and returns a code.
//
// Handles are not pointers to objects: each is a number from a registry of
// live handles (an id that is never reused, and the handle's kind), so a
// handle freed twice, used after its free, of the wrong kind or never issued
// is found out and named instead of dereferenced. The registry holds shared
// pointers: a session freed on one thread while another thread is inside a
// call on it lives until that call returns.
#include "needle/needle.h"

#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

#include "agent/session.h"
#include "base/error.h"
#include "text/prompt.h"

struct needle_model {};    // never defined objects: handles are registry ids
struct needle_session {};

namespace {

struct ModelObject {
  std::shared_ptr<const needle::Model> model;
};
struct SessionObject {
  std::mutex in_use;  // one thread at a time; a second gets NEEDLE_E_STATE
  std::unique_ptr<needle::Session> session;
  std::string last_envelope;
};

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

// Runs `fn`, mapping exceptions to codes; `who` prefixes the message.
template <typename Fn>
int Guard(const char* who, Fn&& fn) {
  try {
    g_last_error.clear();
    return fn();
  } catch (const needle::Error& e) {
    return Fail(CodeFor(e), std::string(who) + ": " + needle::ErrorCodeName(e.code()) + ": " + e.what());
  } catch (const std::bad_alloc&) {
    return Fail(NEEDLE_E_INTERNAL, std::string(who) + ": out of memory");
  } catch (const std::exception& e) {
    return Fail(NEEDLE_E_INTERNAL, std::string(who) + ": " + e.what());
  }
}

// ---- the registry of live handles

enum Kind : uintptr_t { kModelKind = 1, kSessionKind = 2 };
constexpr int kKindBits = 2;
const char* KindName(uintptr_t kind) { return kind == kModelKind ? "needle_model" : "needle_session"; }

class Registry {
 public:
  template <typename T>
  uintptr_t Add(Kind kind, std::shared_ptr<T> object) {
    std::lock_guard<std::mutex> lock(mu_);
    const uintptr_t handle = (next_id_++ << kKindBits) | kind;
    live_.emplace(handle, std::static_pointer_cast<void>(std::move(object)));
    return handle;
  }

  // The object behind `handle` if it is a live handle of `kind`; otherwise
  // null, with the reason in the thread's last error.
  template <typename T>
  std::shared_ptr<T> Find(const void* handle, Kind kind, const char* who) {
    const auto h = reinterpret_cast<uintptr_t>(handle);
    std::string why;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = live_.find(h); it != live_.end() && (h & kKindMask) == kind) {
        return std::static_pointer_cast<T>(it->second);
      }
      why = Why(h, kind);
    }
    Fail(NEEDLE_E_ARGUMENT, std::string(who) + ": " + why);
    return nullptr;
  }

  // Removes a live handle of `kind`: 0, or NEEDLE_E_ARGUMENT naming the misuse.
  int Remove(const void* handle, Kind kind, const char* who) {
    const auto h = reinterpret_cast<uintptr_t>(handle);
    std::shared_ptr<void> object;  // released outside the lock
    std::string why;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (auto it = live_.find(h); it != live_.end() && (h & kKindMask) == kind) {
        object = std::move(it->second);
        live_.erase(it);
      } else {
        why = Why(h, kind);
      }
    }
    if (!object) return Fail(NEEDLE_E_ARGUMENT, std::string(who) + ": " + why);
    g_last_error.clear();
    return 0;
  }

 private:
  static constexpr uintptr_t kKindMask = (uintptr_t{1} << kKindBits) - 1;

  std::string Why(uintptr_t h, Kind kind) const {
    if (h == 0) return std::string("NULL ") + KindName(kind);
    const uintptr_t id = h >> kKindBits, got = h & kKindMask;
    if ((got != kModelKind && got != kSessionKind) || id == 0 || id >= next_id_) {
      return std::string("not a ") + KindName(kind) + " handle of this library";
    }
    if (got != kind) {
      return std::string("a ") + KindName(got) + " handle where a " + KindName(kind) + " is expected" +
             (live_.count(h) ? "" : " (and it was freed)");
    }
    return std::string("this ") + KindName(kind) + " was freed (used after free, or freed twice)";
  }

  std::mutex mu_;
  uintptr_t next_id_ = 1;
  std::unordered_map<uintptr_t, std::shared_ptr<void>> live_;
};

Registry& Handles() {
  static Registry* r = new Registry;  // never destroyed: handles may be freed during static destruction
  return *r;
}

std::shared_ptr<SessionObject> FindSession(needle_session* s, const char* who) {
  return Handles().Find<SessionObject>(s, kSessionKind, who);
}

// ---- helpers

// Copies `s` with its NUL, or fails without writing past out[0].
// `what` names the result in the message (for an envelope: that the turn happened).
constexpr const char* kEnvelope = "envelope (the turn was processed; needle_last_envelope or needle_session_last_envelope returns it)";
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
  if (!tools_json) throw needle::Error(needle::ErrorCode::kInvalidArgument, "tools_json is NULL (pass \"[]\" for no tools)");
  needle::SessionOptions opt = ParseOptions(options_json, {});
  if (tool_index_path) opt.tool_index_path = tool_index_path;
  auto s = std::make_unique<needle::Session>(std::move(model), opt);
  s->SetToolsJson(*tools_json ? tools_json : "[]");
  s->SetSystem(needle::ParseSystemFacts(system ? system : ""));
  return s;
}

// Which turn a text starts: SPEC §11's rule (a result after a call, else a
// query), or one the caller names.
enum class TurnAs { kRule, kQuery, kToolResult };

// A turn on a session the caller holds: 0 or more bytes written, or < 0.
int Complete(SessionObject& so, const char* text, int max_new_tokens, char* out, int out_capacity,
             TurnAs as = TurnAs::kRule) {
  if (!text) return Fail(NEEDLE_E_ARGUMENT, "NULL text");
  if (!out || out_capacity <= 0) return Fail(NEEDLE_E_ARGUMENT, "output buffer is NULL or has no capacity");
  if (max_new_tokens < 0) {
    return Fail(NEEDLE_E_ARGUMENT, "max_new_tokens is " + std::to_string(max_new_tokens) + " (0 for the session's option, or a positive budget)");
  }
  // The same bound as the max_new_tokens option: checked by its table entry.
  if (max_new_tokens > 0) ParseOptions(("{\"max_new_tokens\":" + std::to_string(max_new_tokens) + "}").c_str(), {});
  const auto budget = static_cast<uint32_t>(max_new_tokens);
  needle::Envelope env;
  switch (as) {
    case TurnAs::kRule: env = so.session->Complete(text, budget); break;
    case TurnAs::kQuery: env = so.session->Query(text, budget); break;
    case TurnAs::kToolResult:
      if (so.session->last_type() != needle::EnvelopeType::kCall) {
        return Fail(NEEDLE_E_STATE, "needle_session_tool_result: no call is waiting for a result (the last turn was not a call)");
      }
      env = so.session->ToolResult(text, budget);
      break;
  }
  so.last_envelope = env.Dump();
  return WriteOut(so.last_envelope, out, out_capacity);
}

// The process-wide session of the drop-in ABI.
struct Global {
  std::mutex mu;
  std::shared_ptr<const needle::Model> loaded;  // needle_load
  SessionObject session;
  bool initialised = false;
  std::string system, tools, index;  // to rebuild the session after needle_load
};
Global& G() {
  static Global* g = new Global;  // never destroyed, as the registry
  return *g;
}

needle_model* AddModel(std::shared_ptr<const needle::Model> m) {
  auto object = std::make_shared<ModelObject>(ModelObject{std::move(m)});
  return reinterpret_cast<needle_model*>(Handles().Add(kModelKind, std::move(object)));
}
needle_session* AddSession(std::unique_ptr<needle::Session> s) {
  auto object = std::make_shared<SessionObject>();
  object->session = std::move(s);
  return reinterpret_cast<needle_session*>(Handles().Add(kSessionKind, std::move(object)));
}

// A session on a live model handle, registered; NULL with the reason on error.
needle_session* NewSessionHandle(needle_model* model, const char* system, const char* tools_json,
                                 const char* tool_index_path, const char* options_json) {
  needle_session* s = nullptr;
  Guard("needle_session_new", [&] {
    auto m = Handles().Find<ModelObject>(model, kModelKind, "needle_session_new");
    if (!m) return NEEDLE_E_ARGUMENT;
    s = AddSession(NewSession(m->model, system, tools_json, tool_index_path, options_json));
    return 0;
  });
  return s;
}

// Runs `fn(SessionObject&)` on a live session handle held by this thread alone.
template <typename Fn>
int WithSession(needle_session* s, const char* who, Fn&& fn) {
  return Guard(who, [&] {
    auto so = FindSession(s, who);
    if (!so) return NEEDLE_E_ARGUMENT;
    std::unique_lock<std::mutex> lock(so->in_use, std::try_to_lock);
    if (!lock.owns_lock()) {
      return Fail(NEEDLE_E_STATE, std::string(who) + ": the session is in use on another thread (one thread at a time)");
    }
    return fn(*so);
  });
}

}  // namespace

extern "C" {

int needle_init(const char* system, const char* tools_json, const char* tool_index_path) {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  return Guard("needle_init", [&] {
    // Built aside and swapped in only when complete: a failed init keeps the
    // previous session (documented in needle.h).
    auto model = g.loaded ? g.loaded : needle::Model::Default();
    auto session = NewSession(model, system, tools_json, tool_index_path);
    g.session.session = std::move(session);
    g.session.last_envelope.clear();
    g.system = system ? system : "";
    g.tools = tools_json;
    g.index = tool_index_path ? tool_index_path : "";
    g.initialised = true;
    return 0;
  });
}

int needle_complete(const char* text, int max_new_tokens, char* out, int out_capacity) {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  return Guard("needle_complete", [&] {
    if (!g.initialised) return Fail(NEEDLE_E_STATE, "needle_complete before needle_init");
    return Complete(g.session, text, max_new_tokens, out, out_capacity);
  });
}

void needle_reset(void) {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  g_last_error.clear();
  if (g.initialised) g.session.session->Reset();
}

int needle_load(const char* blob, uint64_t size) {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  return Guard("needle_load", [&] {
    if (!blob || size == 0) return Fail(NEEDLE_E_ARGUMENT, "needle_load: empty blob");
    auto model = needle::Model::FromBytes(std::vector<uint8_t>(blob, blob + size));
    std::unique_ptr<needle::Session> session;
    if (g.initialised) {  // the session continues with the new weights and the same setup
      session = NewSession(model, g.system.c_str(), g.tools.c_str(), g.index.empty() ? nullptr : g.index.c_str());
    }
    g.loaded = model;
    if (session) {
      g.session.session = std::move(session);
      g.session.last_envelope.clear();
    }
    return 0;
  });
}

const char* needle_last_error(void) { return g_last_error.c_str(); }

int needle_last_envelope(char* out, int out_capacity) {
  Global& g = G();
  std::lock_guard<std::mutex> lock(g.mu);
  return Guard("needle_last_envelope", [&] { return WriteOut(g.session.last_envelope, out, out_capacity); });
}

const char* needle_version(void) { return "needle 0.1 (open C++ engine)"; }

// ---- handles

needle_model* needle_model_open(const char* path) {
  needle_model* m = nullptr;
  Guard("needle_model_open", [&] {
    if (!path) return Fail(NEEDLE_E_ARGUMENT, "needle_model_open: NULL path");
    m = AddModel(needle::Model::Open(path));
    return 0;
  });
  return m;
}

needle_model* needle_model_from_blob(const void* blob, uint64_t size) {
  needle_model* m = nullptr;
  Guard("needle_model_from_blob", [&] {
    if (!blob || size == 0) return Fail(NEEDLE_E_ARGUMENT, "needle_model_from_blob: empty blob");
    const auto* b = static_cast<const uint8_t*>(blob);
    m = AddModel(needle::Model::FromBytes(std::vector<uint8_t>(b, b + size)));
    return 0;
  });
  return m;
}

needle_model* needle_model_default(void) {
  needle_model* m = nullptr;
  Guard("needle_model_default", [&] {
    m = AddModel(needle::Model::Default());
    return 0;
  });
  return m;
}

int needle_model_free(needle_model* model) { return Handles().Remove(model, kModelKind, "needle_model_free"); }

needle_session* needle_session_new_with_options(needle_model* model, const char* system, const char* tools_json,
                                                const char* options_json) {
  return NewSessionHandle(model, system, tools_json, nullptr, options_json);
}

needle_session* needle_session_new(needle_model* model, const char* system, const char* tools_json,
                                   const char* tool_index_path) {
  return NewSessionHandle(model, system, tools_json, tool_index_path, nullptr);
}

int needle_session_complete(needle_session* s, const char* text, int max_new_tokens, char* out, int out_capacity) {
  return WithSession(s, "needle_session_complete",
                     [&](SessionObject& so) { return Complete(so, text, max_new_tokens, out, out_capacity); });
}

int needle_session_query(needle_session* s, const char* text, int max_new_tokens, char* out, int out_capacity) {
  return WithSession(s, "needle_session_query", [&](SessionObject& so) {
    return Complete(so, text, max_new_tokens, out, out_capacity, TurnAs::kQuery);
  });
}

int needle_session_tool_result(needle_session* s, const char* result_json, int max_new_tokens, char* out,
                               int out_capacity) {
  return WithSession(s, "needle_session_tool_result", [&](SessionObject& so) {
    return Complete(so, result_json, max_new_tokens, out, out_capacity, TurnAs::kToolResult);
  });
}

int needle_session_last_envelope(needle_session* s, char* out, int out_capacity) {
  return WithSession(s, "needle_session_last_envelope", [&](SessionObject& so) {
    return WriteOut(so.last_envelope, out, out_capacity, "last envelope");
  });
}

int needle_session_set_options(needle_session* s, const char* options_json) {
  return WithSession(s, "needle_session_set_options", [&](SessionObject& so) {
    if (!options_json) return Fail(NEEDLE_E_ARGUMENT, "needle_session_set_options: NULL options");
    so.session->SetOptions(ParseOptions(options_json, so.session->options()));
    return 0;
  });
}

int needle_session_get_options(needle_session* s, char* out, int out_capacity) {
  return WithSession(s, "needle_session_get_options", [&](SessionObject& so) {
    return WriteOut(needle::OptionsToJson(so.session->options()).dump(), out, out_capacity, "options object");
  });
}

int needle_options_describe(char* out, int out_capacity) {
  return Guard("needle_options_describe",
               [&] { return WriteOut(needle::DescribeOptions().dump(), out, out_capacity, "options table"); });
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
  return WithSession(s, "needle_session_pin", [&](SessionObject& so) {
    if (!text) return Fail(NEEDLE_E_ARGUMENT, "needle_session_pin: NULL text");
    so.session->PinSpan(text);
    return 0;
  });
}

int needle_session_reset(needle_session* s) {
  return WithSession(s, "needle_session_reset", [&](SessionObject& so) {
    so.session->Reset();
    return 0;
  });
}

int needle_session_save(needle_session* s, const char* path) {
  return WithSession(s, "needle_session_save", [&](SessionObject& so) {
    if (!path) return Fail(NEEDLE_E_ARGUMENT, "needle_session_save: NULL path");
    so.session->Save(path);
    return 0;
  });
}

int needle_session_restore(needle_session* s, const char* path) {
  return WithSession(s, "needle_session_restore", [&](SessionObject& so) {
    if (!path) return Fail(NEEDLE_E_ARGUMENT, "needle_session_restore: NULL path");
    so.session->Restore(path);
    return 0;
  });
}

int needle_session_free(needle_session* s) { return Handles().Remove(s, kSessionKind, "needle_session_free"); }

}  // extern "C"
