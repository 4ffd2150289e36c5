// Test helpers for the grammar tests (header-only, not part of the engine):
// compile a one-property tool around a schema and feed bytes, reporting where
// the first byte was rejected.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <algorithm>

#include <nlohmann/json.hpp>

#include "grammar/matcher.h"
#include "grammar/tool_grammar.h"

namespace needle::grammar::testing {

inline std::shared_ptr<const ToolGrammar> Compile(std::string_view tools_json) {
  return ToolGrammar::Compile(tools_json);
}

// One tool "t" whose only property "x" has `schema`; x is required unless `optional`.
inline std::string OnePropTools(std::string_view schema, bool optional = false) {
  return std::string(R"([{"name":"t","parameters":{"type":"object","properties":{"x":)") + std::string(schema) + "}" +
         (optional ? "" : R"(,"required":["x"])") + "}}]";
}

// The full call text for tool `name` with compact `args`.
inline std::string CallText(std::string_view name, std::string_view args) {
  return std::string(R"([{"name":")") + std::string(name) + R"(","arguments":)" + std::string(args) + "}]";
}

// Index of the first byte of `text` the grammar rejects, -1 if all are accepted
// and the calls are complete, or text.size() if all are accepted but incomplete.
inline long RejectAt(const ToolGrammar& g, std::string_view text) {
  GrammarMatcher m(std::shared_ptr<const ToolGrammar>(&g, [](const ToolGrammar*) {}));
  for (size_t i = 0; i < text.size(); ++i)
    if (!m.AcceptByte(uint8_t(text[i]))) return long(i);
  return m.IsComplete() ? -1 : long(text.size());
}

inline long RejectAt(std::string_view tools_json, std::string_view text) { return RejectAt(*Compile(tools_json), text); }

// Where a value for the one property "x" of `schema` is rejected, counted
// from the value's first byte: -1 = accepted (the call closes after it);
// value.size() = every byte accepted but the value cannot end there.
inline long ValueRejectAt(std::string_view schema, std::string_view value) {
  const std::string prefix = R"([{"name":"t","arguments":{"x":)";
  const long r = RejectAt(OnePropTools(schema), prefix + std::string(value) + "}}]");
  if (r == -1) return -1;
  if (r < long(prefix.size())) return -100;  // the prefix itself failed: a test bug
  return std::min<long>(r - long(prefix.size()), long(value.size()));
}

// Five realistic tools (smart home / assistant), about as large as a sink
// block allows: the benchmark's schema.
inline const char* kFiveTools = R"([
 {"name":"set_lights","description":"Turn lights on or off and set brightness.","parameters":{"type":"object","properties":{
   "room":{"type":"string","description":"Room name"},
   "state":{"type":"string","enum":["on","off"]},
   "brightness":{"type":"integer","minimum":0,"maximum":100}},"required":["state"]}},
 {"name":"set_timer","description":"Start a timer.","parameters":{"type":"object","properties":{
   "minutes":{"type":"number","exclusiveMinimum":0,"maximum":1440},
   "label":{"type":"string","maxLength":40}},"required":["minutes"]}},
 {"name":"send_message","description":"Send a text message.","parameters":{"type":"object","properties":{
   "to":{"type":"string"},"body":{"type":"string"},
   "channel":{"type":"string","enum":["sms","email","whatsapp"]}},"required":["to","body"]}},
 {"name":"create_event","description":"Add a calendar event.","parameters":{"type":"object","properties":{
   "title":{"type":"string"},"date":{"type":"string","format":"date"},"time":{"type":"string","format":"time"},
   "attendees":{"type":"array","items":{"type":"string","format":"email"},"maxItems":10}},"required":["title","date"]}},
 {"name":"get_weather","description":"Weather for a place.","parameters":{"type":"object","properties":{
   "location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},
   "days":{"type":"integer","minimum":1,"maximum":7}},"required":["location"]}}])";

// Short schemas that use every keyword; values stay small so random decoding terminates.
inline const char* kKeywordTools = R"([
 {"name":"set_lights","parameters":{"type":"object","properties":{
   "room":{"type":"string","maxLength":8},
   "state":{"enum":["on","one","off"]},
   "level":{"type":"integer","minimum":0,"maximum":100,"multipleOf":5}},"required":["state"]}},
 {"name":"set_timer","parameters":{"type":"object","properties":{
   "minutes":{"type":"number","exclusiveMinimum":0,"maximum":90.5},
   "label":{"type":["string","null"],"maxLength":6},
   "at":{"type":"string","format":"time"}},"required":["minutes"]}},
 {"name":"send","parameters":{"type":"object","properties":{
   "to":{"type":"string","format":"email","maxLength":16},
   "tags":{"type":"array","items":{"enum":["a","b","c"]},"maxItems":3,"uniqueItems":true},
   "code":{"type":"string","pattern":"[A-Z]{2}-\\d{2,3}"},
   "urgent":{"type":"boolean"}},"required":["to"]}},
 {"name":"book","parameters":{"type":"object","properties":{
   "date":{"type":"string","format":"date"},
   "guests":{"type":"object","properties":{
     "adults":{"type":"integer","minimum":1,"maximum":9},
     "kids":{"type":"integer","minimum":0,"exclusiveMaximum":5}},"required":["adults"]},
   "site":{"type":"string","format":"uri","maxLength":12},
   "note":{"const":"ok"},
   "extra":{"type":"array","maxItems":2}},"required":["date","guests"]}},
 {"name":"noop"}])";

}  // namespace needle::grammar::testing
