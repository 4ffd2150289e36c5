// Reading OpenAI chat requests: tools, tool_choice, the conversation's turns,
// and a named 400 for everything malformed.
#include "server/chat_request.h"

#include <gtest/gtest.h>

namespace needle::server {
namespace {

using nlohmann::ordered_json;

const char* kTools =
    R"([{"type":"function","function":{"name":"get_weather","description":"Weather","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}},)"
    R"({"type":"function","function":{"name":"set_alarm","parameters":{"type":"object","properties":{"time":{"type":"string"}}}}}])";

std::string Body(const std::string& messages, const std::string& extra = "") {
  return std::string(R"({"model":"needle","tools":)") + kTools + R"(,"messages":)" + messages + extra + "}";
}

// The error a body gets: its status, param and code.
ApiError ErrorOf(const std::string& body) {
  try {
    ParseChatRequest(body);
  } catch (const ApiError& e) {
    return e;
  }
  ADD_FAILURE() << "accepted: " << body;
  return ApiError(0, "");
}

TEST(ChatRequest, ToolsChoicesAndLimits) {
  const ChatRequest r = ParseChatRequest(Body(R"([{"role":"user","content":"weather in Oslo"}])",
                                              R"(,"tool_choice":{"type":"function","function":{"name":"set_alarm"}},)"
                                              R"("parallel_tool_calls":false,"max_completion_tokens":64,"stream":true,)"
                                              R"("stream_options":{"include_usage":true})"));
  ASSERT_EQ(r.tools.size(), 2u);
  EXPECT_EQ(r.tools[0]["name"], "get_weather");
  EXPECT_EQ(r.tools[1]["parameters"]["properties"]["time"]["type"], "string");
  EXPECT_EQ(r.tool_choice, ToolChoice::kNamed);
  EXPECT_EQ(r.named_tool, "set_alarm");
  EXPECT_FALSE(r.parallel_tool_calls);
  EXPECT_EQ(r.max_tokens, 64u);
  EXPECT_TRUE(r.stream && r.include_usage);
  EXPECT_EQ(r.last.text, "weather in Oslo");
  EXPECT_FALSE(r.last.tool_result);
  EXPECT_TRUE(r.history.empty());
  EXPECT_EQ(ParseChatRequest(Body(R"([{"role":"user","content":"x"}])", R"(,"tool_choice":"required")")).tool_choice,
            ToolChoice::kRequired);
  EXPECT_EQ(ParseChatRequest(Body(R"([{"role":"user","content":"x"}])", R"(,"tool_choice":"none")")).tool_choice, ToolChoice::kNone);
}

TEST(ChatRequest, TheConversationBecomesTurns) {
  // system facts, system text (pinned), a call with two tool results in
  // reverse order, the answer, then a new request in text parts.
  const ChatRequest r = ParseChatRequest(Body(R"([
    {"role":"system","content":"date: 2026-12-06\nlocation: Oslo"},
    {"role":"system","content":"You are a careful assistant."},
    {"role":"user","content":"weather in Oslo and Rome"},
    {"role":"assistant","content":null,"tool_calls":[
      {"id":"a","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}},
      {"id":"b","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Rome\"}"}}]},
    {"role":"tool","tool_call_id":"b","content":"{\"temp\":20}"},
    {"role":"tool","tool_call_id":"a","content":"cold"},
    {"role":"assistant","content":"Oslo is cold, Rome 20."},
    {"role":"user","content":[{"type":"text","text":"and an alarm"},{"type":"text","text":"at 7"}]}])"));
  EXPECT_EQ(r.facts, "date: 2026-12-06\nlocation: Oslo");
  ASSERT_EQ(r.pins.size(), 1u);
  EXPECT_EQ(r.pins[0], "You are a careful assistant.");
  ASSERT_EQ(r.history.size(), 2u);
  EXPECT_EQ(r.history[0].text, "weather in Oslo and Rome");
  EXPECT_EQ(r.history[0].calls.size(), 2u);
  EXPECT_EQ(r.history[0].calls[1]["arguments"]["city"], "Rome");
  EXPECT_TRUE(r.history[1].tool_result);
  EXPECT_EQ(r.history[1].text, R"(["cold",{"temp":20}])");  // in the calls' order
  EXPECT_TRUE(r.history[1].calls.empty());
  EXPECT_EQ(r.last.text, "and an alarm\nat 7");
  // Ending on tool results: they are the turn to answer.
  const ChatRequest t = ParseChatRequest(Body(R"([{"role":"user","content":"weather in Oslo"},
    {"role":"assistant","tool_calls":[{"id":"c1","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Oslo\"}"}}]},
    {"role":"tool","tool_call_id":"c1","content":"{\"temp\":3}"}])"));
  EXPECT_TRUE(t.last.tool_result);
  EXPECT_EQ(t.last.text, R"({"temp":3})");
}

TEST(ChatRequest, MalformedRequestsAreNamed) {
  EXPECT_EQ(ErrorOf("{\"messages\": [").code, "invalid_json");
  EXPECT_EQ(ErrorOf(Body(R"([{"role":"user","content":"x"}])", R"(,"tool_choice":{"type":"function","function":{"name":"nope"}})")).param,
            "tool_choice");
  EXPECT_EQ(ErrorOf(Body(R"([{"role":"user","content":"x"}])", R"(,"tool_choice":"sometimes")")).param, "tool_choice");
  EXPECT_EQ(ErrorOf(Body(R"([])")).param, "messages");
  EXPECT_EQ(ErrorOf(Body(R"([{"role":"user","content":"x"},{"role":"assistant","content":"hi"}])")).param, "messages");
  EXPECT_EQ(ErrorOf(Body(R"([{"role":"wizard","content":"x"}])")).param, "messages[0].role");
  EXPECT_EQ(ErrorOf(Body(R"([{"role":"user","content":[{"type":"image_url","image_url":{}}]}])")).code, "unsupported_content");
  EXPECT_EQ(ErrorOf(Body(R"([{"role":"user","content":"x"},{"role":"tool","tool_call_id":"zz","content":"1"}])")).code,
            "unknown_tool_call_id");
  EXPECT_EQ(ErrorOf(Body(R"([{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{oops"}}]},{"role":"user","content":"y"}])")).param,
            "messages[1].tool_calls[0].function.arguments");
  EXPECT_EQ(ErrorOf(Body(R"([{"role":"user","content":"x"}])", R"(,"max_tokens":0)")).param, "max_tokens");
  EXPECT_EQ(ErrorOf(Body(R"([{"role":"user","content":"x"}])", R"(,"n":2)")).param, "n");
  // An unsupported schema keyword is refused, not silently loosened.
  const ApiError e = ErrorOf(R"({"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object","properties":{"x":{"type":"string","contentEncoding":"base64"}}}}}],"messages":[{"role":"user","content":"x"}]})");
  EXPECT_EQ(e.code, "unsupported_schema");
  EXPECT_NE(std::string(e.what()).find("contentEncoding"), std::string::npos) << e.what();
  EXPECT_EQ(e.ToJson()["error"]["type"], "invalid_request_error");
}

TEST(ChatRequest, SystemFactsOrText) {
  EXPECT_EQ(SystemFactsOf(R"({"date": "2026-12-06"})")["date"], "2026-12-06");
  EXPECT_EQ(SystemFactsOf("date: 2026-12-06"), "date: 2026-12-06");
  EXPECT_TRUE(SystemFactsOf("You are helpful. Today: Sunday").is_null());
  EXPECT_TRUE(SystemFactsOf("mood: happy").is_null());  // not a SPEC key: pinned as text
  EXPECT_TRUE(SystemFactsOf("").is_null());
}

}  // namespace
}  // namespace needle::server
