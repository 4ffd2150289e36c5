#include "server/chat_request.h"

#include <algorithm>
#include <optional>

#include "base/error.h"
#include "grammar/tool_grammar.h"
#include "text/prompt.h"

namespace needle::server {
namespace {

using Json = nlohmann::json;
using OJson = nlohmann::ordered_json;

[[noreturn]] void Bad(const std::string& message, const std::string& param, const std::string& code = "invalid_value") {
  throw ApiError(400, message, param, code);
}

// A string field of an object: "" when absent or null, a 400 naming it when
// of another type (nlohmann's typed value() would throw a type_error).
std::string StringField(const Json& obj, const char* key, const std::string& where) {
  const auto it = obj.find(key);
  if (it == obj.end() || it->is_null()) return "";
  if (!it->is_string()) Bad(where + (where.empty() ? "" : ".") + key + " must be a string", where + (where.empty() ? "" : ".") + key);
  return it->get<std::string>();
}

// A message's text: a string, or an array of {"type": "text", "text"} parts.
std::string TextOf(const Json& content, const std::string& param) {
  if (content.is_null()) return "";
  if (content.is_string()) return content.get<std::string>();
  if (!content.is_array()) Bad(param + " must be a string or an array of text parts", param);
  std::string text;
  for (size_t i = 0; i < content.size(); ++i) {
    const Json& part = content[i];
    const std::string where = param + "[" + std::to_string(i) + "]";
    if (!part.is_object() || StringField(part, "type", where) != "text" || !part.contains("text") || !part["text"].is_string()) {
      Bad(where + ": only text parts ({\"type\": \"text\", \"text\": ...}) are supported", where, "unsupported_content");
    }
    if (!text.empty()) text += "\n";
    text += part["text"].get<std::string>();
  }
  return text;
}

// An assistant message's tool_calls as [{"name", "arguments"}], with their ids.
OJson CallsOf(const Json& tool_calls, const std::string& param, std::vector<std::string>* ids) {
  OJson calls = OJson::array();
  if (tool_calls.is_null()) return calls;
  if (!tool_calls.is_array()) Bad(param + " must be an array", param);
  for (size_t j = 0; j < tool_calls.size(); ++j) {
    const Json& c = tool_calls[j];
    const std::string where = param + "[" + std::to_string(j) + "]";
    if (!c.is_object() || !c.contains("function") || !c["function"].is_object() || !c["function"].contains("name") ||
        !c["function"]["name"].is_string()) {
      Bad(where + " must be {\"id\", \"type\": \"function\", \"function\": {\"name\", \"arguments\"}}", where);
    }
    OJson arguments = OJson::object();
    if (const Json& a = c["function"].value("arguments", Json()); a.is_string()) {
      arguments = OJson::parse(a.get<std::string>(), nullptr, false);
      if (arguments.is_discarded() || !arguments.is_object()) Bad(where + ".function.arguments is not a JSON object", where + ".function.arguments");
    } else if (a.is_object()) {
      arguments = a;
    } else if (!a.is_null()) {
      Bad(where + ".function.arguments must be a JSON string", where + ".function.arguments");
    }
    calls.push_back({{"name", c["function"]["name"]}, {"arguments", std::move(arguments)}});
    ids->push_back(StringField(c, "id", where));
  }
  return calls;
}

uint32_t TokenLimit(const Json& v, const std::string& param) {
  if (!v.is_number_integer() || v.get<int64_t>() < 1 || v.get<int64_t>() > (1 << 16)) {
    Bad(param + " must be an integer from 1 to 65536", param);
  }
  return uint32_t(v.get<int64_t>());
}

void ReadToolChoice(const Json& v, const OJson& tools, ChatRequest& r) {
  if (v.is_null()) return;
  if (v.is_string()) {
    const std::string s = v.get<std::string>();
    if (s == "auto") return;
    if (s == "none") r.tool_choice = ToolChoice::kNone;
    else if (s == "required") r.tool_choice = ToolChoice::kRequired;
    else Bad("tool_choice must be \"auto\", \"none\", \"required\" or {\"type\": \"function\", \"function\": {\"name\"}}, not \"" + s + "\"", "tool_choice");
  } else if (v.is_object() && v.contains("function") && v["function"].is_object() && v["function"].contains("name") &&
             v["function"]["name"].is_string()) {
    r.named_tool = v["function"]["name"].get<std::string>();
    r.tool_choice = ToolChoice::kNamed;
    const bool declared = std::any_of(tools.begin(), tools.end(), [&](const OJson& t) { return t["name"] == r.named_tool; });
    if (!declared) Bad("tool_choice names \"" + r.named_tool + "\", which is not among the request's tools", "tool_choice", "unknown_tool");
  } else {
    Bad("tool_choice must be a string or {\"type\": \"function\", \"function\": {\"name\"}}", "tool_choice");
  }
  if ((r.tool_choice == ToolChoice::kRequired) && tools.empty()) Bad("tool_choice \"required\" needs tools", "tool_choice");
}

}  // namespace

nlohmann::ordered_json ApiError::ToJson() const {
  OJson e = {{"message", what()}, {"type", type}, {"param", param.empty() ? OJson() : OJson(param)},
             {"code", code.empty() ? OJson() : OJson(code)}};
  return {{"error", std::move(e)}};
}

nlohmann::json ParseBody(std::string_view body) {
  try {
    return Json::parse(body);
  } catch (const Json::exception& e) {  // a parse error, or a number out of range
    std::string why = e.what();
    if (const size_t at = why.find("] "); at != std::string::npos) why.erase(0, at + 2);
    throw ApiError(400, "malformed JSON body (" + why + ")", "", "invalid_json");
  }
}

nlohmann::ordered_json ParseTools(const nlohmann::json& tools, const std::string& param) {
  if (tools.is_null()) return OJson::array();
  if (!tools.is_array()) Bad(param + " must be an array", param);
  OJson out = OJson::array();
  for (size_t i = 0; i < tools.size(); ++i) {
    const Json& t = tools[i];
    const std::string where = param + "[" + std::to_string(i) + "]";
    const Json* f = &t;
    if (t.is_object() && t.contains("type")) {
      if (t["type"] != "function") Bad(where + ": only tools of type \"function\" are supported", where + ".type", "unsupported_tool");
      if (!t.contains("function") || !t["function"].is_object()) Bad(where + ".function must be an object", where + ".function");
      f = &t["function"];
    }
    if (!f->is_object() || !f->contains("name") || !(*f)["name"].is_string()) Bad(where + " needs a function name", where);
    OJson decl = {{"name", (*f)["name"]}};
    if (f->contains("description")) decl["description"] = (*f)["description"];
    decl["parameters"] = f->contains("parameters") ? OJson((*f)["parameters"]) : OJson({{"type", "object"}, {"properties", OJson::object()}});
    out.push_back(std::move(decl));
  }
  std::shared_ptr<const grammar::ToolGrammar> g;
  try {
    g = grammar::ToolGrammar::Compile(out);
  } catch (const Error& e) {
    Bad(std::string(param) + ": " + e.what(), param, "invalid_schema");
  }
  for (const std::string& w : g->warnings()) {
    // An ignored keyword would let through values the schema forbids: the
    // client is told, not served a looser grammar.
    if (w.find("is not supported") != std::string::npos || w.find("ignored") != std::string::npos) {
      Bad(param + ": " + w, param, "unsupported_schema");
    }
  }
  return out;
}

nlohmann::ordered_json SystemFactsOf(std::string_view text) {
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return nullptr;
  if (text[start] == '{') {
    try {
      return ParseSystemFacts(text);
    } catch (const Error&) {
      return nullptr;
    }
  }
  // "key: value" lines, every key one of SPEC §10's.
  size_t lines = 0;
  for (size_t pos = 0; pos < text.size();) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    pos = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) return nullptr;
    std::string_view key = line.substr(0, colon);
    while (!key.empty() && (key.front() == ' ' || key.front() == '\t')) key.remove_prefix(1);
    while (!key.empty() && key.back() == ' ') key.remove_suffix(1);
    if (std::none_of(std::begin(kFactKeys), std::end(kFactKeys), [&](const char* k) { return key == k; })) return nullptr;
    ++lines;
  }
  return lines > 0 ? OJson(std::string(text)) : OJson();
}

ChatRequest ParseChatRequest(std::string_view body) {
  const Json j = ParseBody(body);
  if (!j.is_object()) Bad("the body must be a JSON object", "");
  ChatRequest r;
  r.model = StringField(j, "model", "");
  if (j.contains("n") && j["n"] != 1) Bad("n must be 1 (one answer per request)", "n", "unsupported_value");
  r.tools = ParseTools(j.value("tools", Json()));
  ReadToolChoice(j.value("tool_choice", Json()), r.tools, r);
  if (j.contains("parallel_tool_calls")) {
    if (!j["parallel_tool_calls"].is_boolean()) Bad("parallel_tool_calls must be a boolean", "parallel_tool_calls");
    r.parallel_tool_calls = j["parallel_tool_calls"].get<bool>();
  }
  if (j.contains("max_completion_tokens") && !j["max_completion_tokens"].is_null()) {
    r.max_tokens = TokenLimit(j["max_completion_tokens"], "max_completion_tokens");
  } else if (j.contains("max_tokens") && !j["max_tokens"].is_null()) {
    r.max_tokens = TokenLimit(j["max_tokens"], "max_tokens");
  }
  if (j.contains("stream")) {
    if (!j["stream"].is_boolean()) Bad("stream must be a boolean", "stream");
    r.stream = j["stream"].get<bool>();
  }
  if (const Json& so = j.value("stream_options", Json()); so.is_object() && so.contains("include_usage")) {
    if (!so["include_usage"].is_boolean()) Bad("stream_options.include_usage must be a boolean", "stream_options.include_usage");
    r.include_usage = so["include_usage"].get<bool>();
  }

  if (j.contains("needle_cache")) {
    if (!j["needle_cache"].is_boolean()) Bad("needle_cache must be a boolean", "needle_cache");
    r.needle_cache = j["needle_cache"].get<bool>();
  }
  const Json& messages = j.value("messages", Json());
  if (!messages.is_array() || messages.empty()) Bad("messages must be a non-empty array", "messages");
  // The turns: each input (a user request, or the results of the previous
  // calls) with the assistant's answer to it; the last input has none yet.
  std::optional<ChatTurn> pending;
  std::vector<std::string> call_ids;  // of the last assistant calls
  OJson results;                      // [calls] the tool messages answering them, by position
  for (size_t i = 0; i < messages.size(); ++i) {
    const Json& m = messages[i];
    const std::string where = "messages[" + std::to_string(i) + "]";
    if (!m.is_object() || !m.contains("role") || !m["role"].is_string()) Bad(where + " needs a role", where + ".role");
    const std::string role = m["role"].get<std::string>();
    const std::string text = role == "assistant" && m.value("content", Json()).is_null() ? "" : TextOf(m.value("content", Json()), where + ".content");
    if (role == "system" || role == "developer") {
      if (const OJson facts = SystemFactsOf(text); !facts.is_null()) {
        r.facts = facts;
      } else if (!text.empty()) {
        r.pins.push_back(text);
      }
    } else if (role == "user") {
      if (pending && pending->tool_result) {  // results the assistant never answered: the loop ended there
        r.history.push_back(std::move(*pending));
        pending.reset();
      }
      if (pending) {
        pending->text += "\n" + text;  // two user messages in a row are one request
      } else {
        pending = ChatTurn{false, text, OJson::array()};
      }
    } else if (role == "assistant") {
      std::vector<std::string> ids;
      OJson calls = CallsOf(m.value("tool_calls", Json()), where + ".tool_calls", &ids);
      if (!pending) {
        if (!calls.empty()) Bad(where + ": an assistant's tool_calls must answer a user or tool message", where);
        continue;  // a greeting before the first request
      }
      pending->calls = std::move(calls);
      r.history.push_back(std::move(*pending));
      pending.reset();
      call_ids = std::move(ids);
      results = OJson::array();
      for (size_t k = 0; k < call_ids.size(); ++k) results.push_back(nullptr);
    } else if (role == "tool") {
      const std::string id = StringField(m, "tool_call_id", where);
      const auto it = std::find(call_ids.begin(), call_ids.end(), id);
      if (id.empty() || it == call_ids.end()) {
        Bad(where + ": tool_call_id \"" + id + "\" answers no call of the assistant message before it", where + ".tool_call_id", "unknown_tool_call_id");
      }
      OJson result = OJson::parse(text, nullptr, false);
      if (result.is_discarded()) result = text;
      results[size_t(it - call_ids.begin())] = std::move(result);
      OJson fed = OJson::array();
      for (const OJson& x : results)
        if (!x.is_null()) fed.push_back(x);
      pending = ChatTurn{true, (fed.size() == 1 ? fed[0] : fed).dump(), OJson::array()};
    } else {
      Bad(where + ": role \"" + role + "\" is not one of system, developer, user, assistant, tool", where + ".role");
    }
  }
  if (!pending) Bad("the last message must be a user or tool message (the turn to answer)", "messages");
  r.last = std::move(*pending);
  return r;
}

}  // namespace needle::server
