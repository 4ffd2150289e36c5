#include "text/prompt.h"

#include <set>

#include "base/error.h"
#include "io/tokenizer_blob.h"

namespace needle {
namespace {

[[noreturn]] void Bad(const std::string& what) { throw Error(ErrorCode::kInvalidArgument, what); }

std::string ScalarText(const nlohmann::ordered_json& v) { return v.is_string() ? v.get<std::string>() : v.dump(); }

}  // namespace

std::string RenderToolsJson(const nlohmann::ordered_json& tools) {
  if (!tools.is_array()) Bad("tools: expected a JSON array of tool schemas");
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  std::set<std::string> names;
  for (size_t i = 0; i < tools.size(); ++i) {
    const auto& t = tools[i];
    const std::string who = "tools[" + std::to_string(i) + "]";
    if (!t.is_object()) Bad(who + ": expected an object");
    if (!t.contains("name") || !t["name"].is_string() || t["name"].get<std::string>().empty()) Bad(who + ": expected a non-empty string \"name\"");
    const std::string name = t["name"].get<std::string>();
    if (!names.insert(name).second) Bad(who + ": duplicate tool name '" + name + "'");
    nlohmann::ordered_json c = nlohmann::ordered_json::object();
    c["name"] = name;
    if (t.contains("description")) {
      if (!t["description"].is_string()) Bad(who + " (" + name + "): \"description\" must be a string");
      c["description"] = t["description"];
    }
    if (t.contains("parameters")) {
      if (!t["parameters"].is_object()) Bad(who + " (" + name + "): \"parameters\" must be a JSON Schema object");
      c["parameters"] = t["parameters"];
    } else {
      c["parameters"] = nlohmann::ordered_json{{"type", "object"}, {"properties", nlohmann::ordered_json::object()}};
    }
    out.push_back(std::move(c));
  }
  return out.dump();
}

std::string RenderSystemFacts(const nlohmann::ordered_json& system) {
  if (system.is_null()) return "";
  if (system.is_string()) return system.get<std::string>();
  if (!system.is_object()) Bad("system: expected an object of facts or a string");
  for (auto it = system.begin(); it != system.end(); ++it) {
    bool known = false;
    for (const char* k : kFactKeys) known = known || it.key() == k;
    if (!known) Bad("system: unknown fact '" + it.key() + "' (known: date, locale, device, battery, network, location, user, assistant)");
  }
  std::string s;
  for (const char* k : kFactKeys) {
    if (!system.contains(k)) continue;
    if (!s.empty()) s += '\n';
    s += std::string(k) + ": " + ScalarText(system[k]);
  }
  return s;
}

nlohmann::ordered_json ParseSystemFacts(std::string_view text) {
  const size_t start = text.find_first_not_of(" \t\r\n");
  if (start == std::string_view::npos) return nullptr;
  if (text[start] != '{' && text[start] != '[') return std::string(text);
  try {
    auto j = nlohmann::ordered_json::parse(text);
    if (!j.is_object()) Bad("system facts: expected a JSON object such as {\"date\": \"2026-11-30\"}, got a JSON " + std::string(j.type_name()));
    RenderSystemFacts(j);  // the keys
    return j;
  } catch (const nlohmann::json::exception& e) {
    // "[json.exception.parse_error.101] parse error at line 1, column 9: ..." -> from "parse error";
    // a number too large for a double is an out_of_range error ("number overflow parsing '1e999'").
    std::string why = e.what();
    if (why.starts_with("[json.exception.")) why.erase(0, why.find("] ") == std::string::npos ? 0 : why.find("] ") + 2);
    throw Error(ErrorCode::kInvalidJson, "system facts: malformed JSON (" + why + ")");
  }
}

std::string RenderCallsJson(const nlohmann::ordered_json& calls) {
  if (!calls.is_array()) Bad("answers: expected an array of calls");
  nlohmann::ordered_json out = nlohmann::ordered_json::array();
  for (size_t i = 0; i < calls.size(); ++i) {
    const auto& c = calls[i];
    if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) Bad("answers[" + std::to_string(i) + "]: expected {\"name\", \"arguments\"}");
    nlohmann::ordered_json call = nlohmann::ordered_json::object();
    call["name"] = c["name"];
    call["arguments"] = c.contains("arguments") ? c["arguments"] : nlohmann::ordered_json::object();
    if (!call["arguments"].is_object()) Bad("answers[" + std::to_string(i) + "]: \"arguments\" must be an object");
    out.push_back(std::move(call));
  }
  return out.dump();
}

std::string SinkText(std::string_view facts, std::string_view tools_json) {
  std::string s;
  if (!facts.empty()) s.append("<|im_start|>system\n").append(facts).append("<|im_end|>\n");
  s.append("<|im_start|>user\n<tools>").append(tools_json).append("</tools>");
  return s;
}

std::string FirstQueryText(std::string_view query) {
  return std::string("\n").append(query).append("<|im_end|>\n<|im_start|>assistant\n");
}

std::string UserTurnText(std::string_view query) {
  return std::string("<|im_start|>user\n").append(query).append("<|im_end|>\n<|im_start|>assistant\n");
}

std::string ToolResultTurnText(std::string_view result_json) {
  return std::string("<|im_start|>tool\n<tool_result>")
      .append(result_json)
      .append("</tool_result><|im_end|>\n<|im_start|>assistant\n");
}

std::string AssistantTargetText(std::string_view reasoning, std::string_view calls_json) {
  return std::string("<think>")
      .append(reasoning)
      .append("</think>\n<tool_call>")
      .append(calls_json)
      .append("</tool_call><|im_end|>");
}

void PromptEncoder::BeginSession(EncodedPrompt& p, std::string_view facts, std::string_view tools_json) const {
  p.ids.assign(1, tok_.bos_id());
  p.target.assign(1, 0);
  AppendContext(p, SinkText(facts, tools_json));
  p.sink_length = static_cast<uint32_t>(p.ids.size());
}

void PromptEncoder::BeginText(EncodedPrompt& p) const {
  p.ids.assign(1, tok_.bos_id());
  p.target.assign(1, 0);
  p.sink_length = 0;
}

void PromptEncoder::AppendContext(EncodedPrompt& p, std::string_view text) const {
  std::vector<int32_t> ids;
  tok_.EncodeContinuation(text, ids);
  p.ids.insert(p.ids.end(), ids.begin(), ids.end());
  p.target.insert(p.target.end(), ids.size(), 0);
}

void PromptEncoder::AppendTarget(EncodedPrompt& p, std::string_view text) const {
  std::vector<int32_t> ids;
  tok_.EncodeContinuation(text, ids);
  ids.push_back(tok_.eos_id());
  p.ids.insert(p.ids.end(), ids.begin(), ids.end());
  p.target.insert(p.target.end(), ids.size(), 1);
}

EncodedPrompt EncodeExample(const PromptEncoder& enc, const nlohmann::ordered_json& ex) {
  if (!ex.is_object()) Bad("example: expected a JSON object");
  if (ex.contains("text") && !ex.contains("query")) {  // plain prose: BOS, the text and EOS, all of it targets
    if (!ex["text"].is_string() || ex["text"].get_ref<const std::string&>().empty()) Bad("example: \"text\" must be a non-empty string");
    EncodedPrompt p;
    enc.BeginText(p);
    enc.AppendTarget(p, ex["text"].get<std::string>());
    return p;
  }
  if (!ex.contains("query") || !ex["query"].is_string()) Bad("example: expected a string \"query\"");
  if (!ex.contains("tools")) Bad("example: expected \"tools\"");
  EncodedPrompt p;
  enc.BeginSession(p, RenderSystemFacts(ex.contains("system") ? ex["system"] : nlohmann::ordered_json()),
                   RenderToolsJson(ex["tools"]));
  enc.AppendContext(p, FirstQueryText(ex["query"].get<std::string>()));
  const std::string reasoning = ex.contains("reasoning") && ex["reasoning"].is_string() ? ex["reasoning"].get<std::string>() : "";
  enc.AppendTarget(p, AssistantTargetText(reasoning, RenderCallsJson(ex.contains("answers") ? ex["answers"] : nlohmann::ordered_json::array())));
  // Sessions (docs/data-format.md): each later turn is a tool result or a new query, then the assistant's answer.
  if (ex.contains("turns")) {
    const auto& turns = ex["turns"];
    if (!turns.is_array()) Bad("example: \"turns\" must be an array");
    for (size_t i = 0; i < turns.size(); ++i) {
      const auto& t = turns[i];
      const std::string who = "turns[" + std::to_string(i) + "]";
      if (!t.is_object()) Bad(who + ": expected an object");
      if (t.contains("tool_result")) {
        const auto& r = t["tool_result"];
        enc.AppendContext(p, ToolResultTurnText(r.is_string() ? r.get<std::string>() : r.dump()));
      } else if (t.contains("query") && t["query"].is_string()) {
        enc.AppendContext(p, UserTurnText(t["query"].get<std::string>()));
      } else {
        Bad(who + ": expected \"tool_result\" or a string \"query\"");
      }
      const std::string r = t.contains("reasoning") && t["reasoning"].is_string() ? t["reasoning"].get<std::string>() : "";
      enc.AppendTarget(p, AssistantTargetText(r, RenderCallsJson(t.contains("answers") ? t["answers"] : nlohmann::ordered_json::array())));
    }
  }
  return p;
}

}  // namespace needle
