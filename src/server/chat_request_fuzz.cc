// libFuzzer target: arbitrary bytes as a /v1/chat/completions body (and, when
// they are a JSON object, as an extract schema). The parser either reads the
// request or throws ApiError with a status and message; what it reads holds
// the invariants the server relies on (tools compile, the turn to answer
// exists, replayed calls are arrays of named calls).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "base/error.h"
#include "grammar/tool_grammar.h"
#include "server/chat_request.h"

using needle::server::ApiError;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view body(reinterpret_cast<const char*>(data), size);
  try {
    const needle::server::ChatRequest r = needle::server::ParseChatRequest(body);
    if (!r.tools.is_array()) std::abort();
    needle::grammar::ToolGrammar::Compile(r.tools);  // what ParseTools accepted compiles
    if (r.tool_choice == needle::server::ToolChoice::kNamed && r.named_tool.empty()) std::abort();
    for (const auto& t : r.history) {
      if (!t.calls.is_array()) std::abort();
      for (const auto& c : t.calls)
        if (!c.contains("name") || !c["name"].is_string() || !c["arguments"].is_object()) std::abort();
    }
    (void)r.last.text.size();
  } catch (const ApiError& e) {
    if (e.status < 400 || e.status > 599 || std::string_view(e.what()).empty()) std::abort();
    // As the server sends it: the message may quote the body's bytes, which need not be UTF-8.
    (void)e.ToJson().dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  // The same bytes as the schema of /v1/needle/extract.
  const auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object()) {
    try {
      needle::server::ParseTools(nlohmann::json::array({{{"name", "extract"}, {"parameters", j}}}), "schema");
    } catch (const ApiError&) {
    }
  }
  return 0;
}
