// The agent on small random-weight models: the calls are nonsense but always
// valid (the grammar), envelopes always well formed, sessions bounded and
// deterministic, and every kind of bad input an error envelope or Error.
#include "agent/session.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "agent/testing/agent_archives.h"
#include "grammar/copy_source.h"  // CopySource::IsWordByte
#include "grammar/validate.h"
#include "io/tokenizer_blob.h"  // kThinkEndId, kToolCallId

namespace needle {
namespace {

using nlohmann::ordered_json;

void ExpectWellFormed(const Envelope& e) {
  const ordered_json j = ordered_json::parse(e.Dump());
  for (const char* k : {"type", "success", "error", "error_code", "function_calls", "reasoning", "confidence", "prefill_tps",
                        "decode_tps", "peak_ram_mb"}) {
    EXPECT_TRUE(j.contains(k)) << k << " missing in " << e.Dump();
  }
  EXPECT_TRUE(j["function_calls"].is_array());
  EXPECT_EQ(j["success"].get<bool>(), j["type"] != "error");
  // No call twice in one turn (DropRepeatedCalls).
  std::vector<nlohmann::json> calls;
  for (const auto& c : j["function_calls"]) calls.push_back(nlohmann::json::parse(c.dump()));
  for (size_t a = 0; a < calls.size(); ++a)
    for (size_t b = a + 1; b < calls.size(); ++b) EXPECT_NE(calls[a], calls[b]) << e.Dump();
}

SessionOptions Small() {
  SessionOptions o;
  o.max_think_tokens = 8;
  o.max_new_tokens = 120;
  o.no_tool_bias = 0.0f;  // random heads have no cosine scale (NoToolBiasRefusesWhereNoToolIsSimilar tests it)
  return o;
}

TEST(Session, ReasoningLoopsAreDetected) {
  auto ids = [](std::initializer_list<int32_t> head, std::vector<int32_t> cycle, uint32_t n) {
    std::vector<int32_t> v(head);
    for (uint32_t i = 0; i < n; ++i) v.push_back(cycle[i % cycle.size()]);
    return v;
  };
  for (uint32_t period = 1; period <= kLoopMaxPeriod; ++period) {
    std::vector<int32_t> cycle;
    for (uint32_t i = 0; i < period; ++i) cycle.push_back(int32_t(100 + i));
    EXPECT_TRUE(EndsInLoop(ids({5, 6, 7}, cycle, kLoopTokens))) << "period " << period;
    EXPECT_FALSE(EndsInLoop(ids({5, 6, 7}, cycle, kLoopTokens - 1))) << "period " << period;  // not yet 16 tokens of it
  }
  EXPECT_FALSE(EndsInLoop(ids({}, {1, 2, 3, 4, 5}, 40)));  // a period of 5 is left alone
  std::vector<int32_t> prose(40);
  for (size_t i = 0; i < prose.size(); ++i) prose[i] = int32_t(i % 7 + i / 7);
  EXPECT_FALSE(EndsInLoop(prose));
  auto broken = ids({}, {9, 8}, kLoopTokens);
  broken[3] = 1;  // one token breaks the cycle
  EXPECT_FALSE(EndsInLoop(broken));
  EXPECT_FALSE(EndsInLoop(std::vector<int32_t>{}));
}

// The call is preceded by "</think>\n<tool_call>", as the training targets
// spell it (a bug once fed only "\n<tool_call>": the tokenizer clears its output).
TEST(Session, ReasoningIsClosedAsInTraining) {
  auto m = testing::AgentModel(2);
  Session s(m, Small());
  s.SetToolsJson(testing::kFiveTools);
  for (const char* q : {"turn on the kitchen lights", "what is the capital of Peru?"}) {
    s.Query(q);
    const std::vector<int32_t>& ids = s.turn_ids();
    const auto call = std::find(ids.begin(), ids.end(), int32_t(kToolCallId));
    ASSERT_NE(call, ids.end());
    std::vector<int32_t> newline;
    m->tokenizer().EncodeContinuation("\n", newline);
    ASSERT_GE(call - ids.begin(), std::ptrdiff_t(newline.size() + 1));
    EXPECT_EQ(*(call - std::ptrdiff_t(newline.size()) - 1), int32_t(kThinkEndId)) << q;
    EXPECT_TRUE(std::equal(newline.begin(), newline.end(), call - std::ptrdiff_t(newline.size()))) << q;
  }
}

TEST(Session, CallsAlwaysValidateAgainstTheDeclaredTools) {
  auto model = testing::AgentModel(3);
  const char* queries[] = {"turn on the kitchen lights", "wake me at 7", "text mum hi", "weather in Oslo?", "play jazz", ""};
  int calls = 0, refusals = 0;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    auto m = testing::AgentModel(seed);
    Session s(m, Small());
    s.SetToolsJson(testing::kFiveTools);
    for (const char* q : queries) {
      const Envelope e = s.Query(q);
      ExpectWellFormed(e);
      ASSERT_TRUE(e.success()) << e.Dump();
      ASSERT_FALSE(grammar::ValidateCall(e.function_calls.dump(), testing::kFiveTools)) << e.Dump();
      (e.type == EnvelopeType::kCall ? calls : refusals)++;
      ASSERT_TRUE(e.confidence.has_value());
      EXPECT_GE(*e.confidence, 0.0);
      EXPECT_LE(*e.confidence, 1.0);
      EXPECT_GT(e.prefill_tps, 0.0);
      EXPECT_GT(e.peak_ram_mb, 0.0);
    }
  }
  std::printf("[ agent ] %d calls, %d refusals over 24 turns\n", calls, refusals);
  EXPECT_EQ(calls + refusals, 24);
}

TEST(Session, CompleteFollowsTheAbiRule) {
  // After a call, the next text is its result (respond/call); else a new query.
  auto model = testing::AgentModel(2);
  Session s(model, Small());
  s.SetToolsJson(testing::kFiveTools);
  for (int turn = 0; turn < 12; ++turn) {
    const EnvelopeType before = s.last_type();
    const Envelope e = s.Complete(before == EnvelopeType::kCall ? R"({"ok":true})" : "dim the hall to 20");
    ASSERT_TRUE(e.success()) << e.Dump();
    if (before == EnvelopeType::kCall) {
      EXPECT_NE(e.type, EnvelopeType::kRefuse);  // [] after a result is respond
    } else {
      EXPECT_NE(e.type, EnvelopeType::kRespond);
    }
  }
}

TEST(Session, MemoryIsBoundedOverManyTurns) {
  auto model = testing::AgentModel(4);
  Session s(model, Small());
  s.SetToolsJson(testing::kFiveTools);
  ASSERT_TRUE(s.Query("turn on the kitchen lights").success());
  const uint64_t bytes = s.state_bytes();
  for (int i = 0; i < 150; ++i) {
    const Envelope e = s.Complete(i % 2 ? "play some jazz please and then set an alarm" : R"({"status":"done"})");
    ASSERT_TRUE(e.success()) << e.Dump();
  }
  EXPECT_EQ(s.state_bytes(), bytes);
}

TEST(Session, ResetKeepsToolsAndIsDeterministic) {
  auto model = testing::AgentModel(5);
  Session a(model, Small()), b(model, Small());
  a.SetToolsJson(testing::kFiveTools);
  b.SetToolsJson(testing::kFiveTools);
  const Envelope first = a.Query("set an alarm for 06:30");
  a.Complete(R"({"ok":true})");
  a.Query("something else entirely");
  a.Reset();
  const Envelope again = a.Query("set an alarm for 06:30");
  const Envelope fresh = b.Query("set an alarm for 06:30");
  EXPECT_EQ(again.function_calls.dump(), first.function_calls.dump());
  EXPECT_EQ(again.function_calls.dump(), fresh.function_calls.dump());
  EXPECT_EQ(again.reasoning, fresh.reasoning);
}

TEST(Session, SaveRestoreContinuesExactly) {
  auto model = testing::AgentModel(6);
  const std::string path = ::testing::TempDir() + "/session.bin";
  Session a(model, Small());
  a.SetToolsJson(testing::kFiveTools);
  a.SetSystem(ordered_json{{"date", "2026-11-30"}, {"location", "Lisbon"}});
  a.Query("play some fado");
  a.Complete(R"({"playing":true})");
  a.Save(path);
  const Envelope want = a.Query("now the weather in Porto");
  Session b(model, Small());
  b.Restore(path);
  const Envelope got = b.Query("now the weather in Porto");
  EXPECT_EQ(got.function_calls, want.function_calls);
  EXPECT_EQ(got.reasoning, want.reasoning);
  // Another model refuses the file.
  Session c(testing::AgentModel(7), Small());
  EXPECT_THROW(c.Restore(path), Error);
  std::ofstream(path, std::ios::binary) << "garbage";
  EXPECT_THROW(b.Restore(path), Error);
}

// window_requests: the window shows the conversation from the N-th most
// recent request on. It changes what the model reads (the same turns with the
// whole window come out otherwise), and a saved session keeps where its
// window starts (a tool result right after Restore reads the same window).
TEST(Session, TheWindowStartsAtARecentRequestAndSurvivesSaveRestore) {
  auto model = testing::AgentModel(6);
  const std::string path = ::testing::TempDir() + "/session-window.bin";
  const char* queries[] = {"play some fado", "turn on the kitchen lights", "wake me at 7", "text mum that I'm on my way"};
  auto play = [&](uint32_t window_requests, bool save) {
    SessionOptions o = Small();
    o.window_requests = window_requests;
    Session a(model, o);
    a.SetToolsJson(testing::kFiveTools);
    std::vector<std::string> out;
    for (uint32_t i = 0; i < std::size(queries); ++i) {
      const char* q = queries[i];
      const Envelope e = a.Query(q);
      out.push_back(e.Dump().substr(0, e.Dump().find("\"prefill_tps\"")));
      // Past the sinks once window_requests earlier requests came before.
      EXPECT_EQ(a.window_floor() > int64_t(a.sink_ids().size()), window_requests > 0 && i >= window_requests) << q;
      if (e.type == EnvelopeType::kCall) {
        if (save) a.Save(path);
        const Envelope r = a.ToolResult(R"({"status":"ok"})");
        out.push_back(r.Dump().substr(0, r.Dump().find("\"prefill_tps\"")));
        if (save) {
          Session b(model, o);
          b.Restore(path);
          EXPECT_EQ(b.window_floor(), a.window_floor());
          const Envelope rb = b.ToolResult(R"({"status":"ok"})");
          EXPECT_EQ(rb.Dump().substr(0, rb.Dump().find("\"prefill_tps\"")), out.back()) << "after " << q;
        }
      }
    }
    return out;
  };
  const auto whole = play(0, false), recent = play(1, true);
  EXPECT_NE(whole, recent);
  EXPECT_EQ(whole[0], recent[0]);  // the first request sees the same either way
  play(2, true);
  // Back to the whole window: at once, not only from the next request.
  SessionOptions o = Small();
  o.window_requests = 1;
  Session s(model, o);
  s.SetToolsJson(testing::kFiveTools);
  s.Query(queries[0]), s.Query(queries[1]);
  EXPECT_GT(s.window_floor(), int64_t(s.sink_ids().size()));
  s.SetWindowRequests(0);
  EXPECT_EQ(s.window_floor(), 0);
}

// With the window showing the current request alone, a request after any
// conversation reads as a session's first: the same reasoning and calls as a
// fresh session gives it (the confidence within RoPE's rounding at another
// counter and the int8 K/V rounding it brings).
TEST(Session, ARequestTheWindowShowsAloneIsAnsweredAsAFirstRequest) {
  auto model = testing::AgentModel(6);
  SessionOptions o = Small();
  o.window_requests = 1;
  const std::string request = "turn on the kitchen lights";
  Session fresh(model, o);
  fresh.SetToolsJson(testing::kFiveTools);
  const Envelope first = fresh.Query(request);
  Session s(model, o);
  s.SetToolsJson(testing::kFiveTools);
  for (const char* q : {"play some fado", "wake me at 7", "text mum that I'm on my way"}) {
    if (s.Query(q).type == EnvelopeType::kCall) s.ToolResult(R"({"status":"ok"})");
  }
  const Envelope late = s.Query(request);
  EXPECT_EQ(late.type, first.type);
  EXPECT_EQ(late.reasoning, first.reasoning);
  EXPECT_EQ(late.function_calls, first.function_calls);
  EXPECT_EQ(s.turn_ids(), fresh.turn_ids());  // the request's tokens, reasoning and call
  ASSERT_EQ(late.confidence.has_value(), first.confidence.has_value());
  if (first.confidence) EXPECT_NEAR(*late.confidence, *first.confidence, 0.02);
}

// The copy source follows the window: with window_requests N, only the texts
// of the last N requests (and the tool results after them) can be copied, and
// a restored session keeps which texts were requests.
TEST(Session, TheCopySourceHoldsOnlyTheRequestsInTheWindow) {
  auto model = testing::AgentModel(6);
  const std::string path = ::testing::TempDir() + "/session-copy.bin";
  auto texts = [&](uint32_t window_requests) {
    SessionOptions o = Small();
    o.window_requests = window_requests;
    Session a(model, o);
    a.SetToolsJson(testing::kFiveTools);
    a.Query("play some fado in Tokyo");
    a.ToolResult(R"({"status":"ok"})");
    a.Query("turn on the kitchen lights");
    a.Save(path);
    Session b(model, o);
    b.Restore(path);
    EXPECT_EQ(b.copy_texts(), a.copy_texts());
    a.Query("wake me at 7"), b.Query("wake me at 7");
    EXPECT_EQ(b.copy_texts(), a.copy_texts());
    return a.copy_texts();
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(texts(1), (V{"wake me at 7"}));
  EXPECT_EQ(texts(2), (V{"turn on the kitchen lights", "wake me at 7"}));
  const V all = texts(0);
  ASSERT_EQ(all.size(), 4u);
  EXPECT_EQ(all.front(), "play some fado in Tokyo");
  EXPECT_EQ(all.back(), "wake me at 7");
}

TEST(Session, RetrievalPicksFiveAndPersistsTheIndex) {
  auto model = testing::AgentModel(8);
  ordered_json tools = ordered_json::parse(testing::kFiveTools);
  for (int i = 0; i < 7; ++i) {
    tools.push_back({{"name", "tool_" + std::to_string(i)},
                     {"description", "Synthetic tool number " + std::to_string(i)},
                     {"parameters", {{"type", "object"}, {"properties", {{"x", {{"type", "integer"}}}}}}}});
  }
  const std::string index = ::testing::TempDir() + "/tools.index.json";
  std::filesystem::remove(index);
  SessionOptions o = Small();
  o.tool_index_path = index;
  Session s(model, o);
  s.SetTools(tools);
  const Envelope e = s.Query("turn on the kitchen lights");
  ASSERT_TRUE(e.success()) << e.Dump();
  EXPECT_EQ(s.active_tools().size(), 5u);
  for (const auto& c : e.function_calls) {
    bool active = false;
    for (uint32_t i : s.active_tools()) active = active || tools[i]["name"] == c["name"];
    EXPECT_TRUE(active) << "a call outside the retrieved tools: " << c.dump();
  }
  ASSERT_TRUE(std::filesystem::exists(index));
  const auto j = nlohmann::json::parse(std::ifstream(index));
  EXPECT_EQ(j["entries"].size(), 12u);
  // A changed schema adds one entry (the others are found by fingerprint).
  tools[11]["description"] = "Changed";
  Session t(model, o);
  t.SetTools(tools);
  ASSERT_TRUE(t.Query("turn on the kitchen lights").success());
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(index))["entries"].size(), 13u);
}

// Without a contrastive head, a positive lexical_weight still retrieves: the
// five tools sharing the most distinctive words with the request, no warning.
TEST(Session, LexicalWeightRetrievesWithoutTheHead) {
  auto model = testing::AgentModel(8, /*contrastive=*/false);
  ordered_json tools = ordered_json::parse(testing::kFiveTools);
  for (int i = 0; i < 7; ++i) {
    tools.push_back({{"name", "tool_" + std::to_string(i)},
                     {"description", "Synthetic tool number " + std::to_string(i)},
                     {"parameters", {{"type", "object"}, {"properties", {{"x", {{"type", "integer"}}}}}}}});
  }
  SessionOptions o = Small();
  o.lexical_weight = 0.0f;
  Session plain(model, o);
  plain.SetTools(tools);
  ASSERT_TRUE(plain.Query("dim the kitchen lights").success());
  EXPECT_EQ(plain.active_tools().size(), tools.size());
  ASSERT_EQ(plain.warnings().size(), 1u);
  EXPECT_NE(plain.warnings()[0].find("retrieval"), std::string::npos) << "all tools in the context, with a warning";
  o.lexical_weight = 1.0f;
  Session s(model, o);
  s.SetTools(tools);
  const Envelope e = s.Query("dim the kitchen lights");
  ASSERT_TRUE(e.success()) << e.Dump();
  ASSERT_EQ(s.active_tools().size(), 5u);
  for (const std::string& w : e.warnings) EXPECT_EQ(w.find("retrieval"), std::string::npos) << w;
  bool lights = false;
  for (uint32_t i : s.active_tools()) lights = lights || s.tools()[i]["name"] == "set_lights";
  EXPECT_TRUE(lights);
  const std::vector<float>& scores = s.tool_scores();
  ASSERT_EQ(scores.size(), tools.size());
  EXPECT_EQ(std::max_element(scores.begin(), scores.end()) - scores.begin(), 2) << "set_lights is the third tool";
  SessionOptions bad;
  bad.lexical_weight = -1.0f;
  EXPECT_THROW(Session(model, bad), Error);
  bad.lexical_weight = INFINITY;
  EXPECT_THROW(Session(model, bad), Error);
}

TEST(Session, ConfidenceIsNullWithoutTheHead) {
  Session s(testing::AgentModel(9, true, false), Small());
  s.SetToolsJson(testing::kFiveTools);
  const Envelope e = s.Query("hello");
  ASSERT_TRUE(e.success());
  EXPECT_FALSE(e.confidence.has_value());
  EXPECT_TRUE(ordered_json::parse(e.Dump())["confidence"].is_null());
}

TEST(Session, BadInput) {
  auto model = testing::AgentModel(10);
  Session s(model, Small());
  // Malformed tools: an Error naming the problem; the previous setup stays.
  s.SetToolsJson(testing::kFiveTools);
  try {
    s.SetToolsJson("[{\"name\": \"x\", ");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidJson);
  }
  EXPECT_THROW(s.SetToolsJson(R"([{"description":"no name"}])"), Error);
  EXPECT_THROW(s.SetToolsJson(R"({"not":"an array"})"), Error);
  EXPECT_EQ(s.tools().size(), 5u);
  // A tool result with no call before it.
  Session fresh(model, Small());
  fresh.SetToolsJson(testing::kFiveTools);
  const Envelope r = fresh.ToolResult(R"({"ok":1})");
  EXPECT_EQ(r.type, EnvelopeType::kError);
  EXPECT_EQ(r.error_code, "invalid_state");
  // An over-long query: an error envelope, and the session still works.
  SessionOptions o = Small();
  o.max_input_tokens = 64;
  Session shortq(model, o);
  shortq.SetToolsJson(testing::kFiveTools);
  const Envelope big = shortq.Query(std::string(5000, 'a'));
  EXPECT_EQ(big.error_code, "budget_exceeded") << big.Dump();
  EXPECT_TRUE(shortq.Query("lights on").success());
  // A query longer than the window streams through it.
  EXPECT_TRUE(s.Query(std::string(1500, 'b')).success());
  // Invalid UTF-8 (no NUL): a normal turn and a JSON envelope.
  const Envelope u = s.Query("caf\xc3 \xff\xfe lights");
  ASSERT_TRUE(u.success()) << u.Dump();
  EXPECT_NO_THROW(ordered_json::parse(u.Dump()));
  // Unknown system fact keys are an error.
  EXPECT_THROW(s.SetSystem(ordered_json{{"mood", "happy"}}), Error);
}

TEST(Session, EmptyToolListAlwaysRefuses) {
  Session s(testing::AgentModel(11), Small());
  s.SetToolsJson("[]");
  for (const char* q : {"turn on the lights", "what time is it"}) {
    const Envelope e = s.Query(q);
    ASSERT_TRUE(e.success()) << e.Dump();
    EXPECT_EQ(e.type, EnvelopeType::kRefuse);
    EXPECT_TRUE(e.function_calls.empty());
  }
}

TEST(Session, UnsupportedKeywordWarns) {
  Session s(testing::AgentModel(12), Small());
  s.SetToolsJson(R"([{"name":"f","parameters":{"type":"object","properties":{"a":{"anyOf":[{"type":"string"}]}}}}])");
  ASSERT_FALSE(s.warnings().empty());
  const Envelope e = s.Query("do f");
  ASSERT_TRUE(e.success());
  EXPECT_NE(e.Dump().find("anyOf"), std::string::npos);
}

TEST(Session, TwoHundredTools) {
  ordered_json tools = ordered_json::array();
  for (int i = 0; i < 200; ++i) {
    tools.push_back({{"name", "t" + std::to_string(i)},
                     {"parameters", {{"type", "object"}, {"properties", {{"v", {{"type", "string"}, {"maxLength", 8}}}}}}}});
  }
  Session s(testing::AgentModel(13), Small());
  s.SetTools(tools);
  const Envelope e = s.Query("call t17");
  ASSERT_TRUE(e.success()) << e.Dump();
  EXPECT_EQ(s.active_tools().size(), 5u);
}

TEST(Session, PinnedSpanGrowsTheSinks) {
  auto model = testing::AgentModel(14);
  Session s(model, Small());
  s.SetToolsJson(testing::kFiveTools);
  s.Query("hi");
  const uint64_t before = s.state_bytes();
  s.PinSpan("user profile: prefers celsius; lives in Lisbon; partner is Ana");
  ASSERT_TRUE(s.Query("hi").success());
  EXPECT_GT(s.state_bytes(), before);  // more sink slots
  // The budget is enforced: a pin that cannot fit is an error envelope.
  s.PinSpan(std::string(6000, 'x'));
  EXPECT_EQ(s.Query("hi").error_code, "budget_exceeded");
}

TEST(Session, RunExecutesCallbacks) {
  auto model = testing::AgentModel(15);
  Session s(model, Small());
  int executed = 0;
  for (const auto& t : ordered_json::parse(testing::kFiveTools)) {
    s.AddTool(t, [&executed](const ordered_json& args) {
      ++executed;
      return ordered_json{{"ok", true}, {"echo", args}};
    });
  }
  const Envelope e = s.Run("set the kitchen lights to 40", 3);
  ASSERT_TRUE(e.results.has_value()) << e.Dump();
  EXPECT_EQ(static_cast<int>(e.results->size()), executed);
  for (const auto& r : *e.results) EXPECT_EQ(r["result"]["ok"], true);
}

TEST(Session, ExtractUsesOneTool) {
  const Envelope e = Extract(testing::AgentModel(16), "Invoice 42 from ACME, total 19.99",
                             ordered_json::parse(R"({"type":"object","properties":{"number":{"type":"integer"},"vendor":{"type":"string","maxLength":10}},"required":["number"]})"),
                             Small());
  ASSERT_TRUE(e.success()) << e.Dump();
  for (const auto& c : e.function_calls) EXPECT_EQ(c["name"], "extract");
}

TEST(Session, ThreadsGiveTheSameAnswersAsSequential) {
  auto model = testing::AgentModel(17);
  const char* queries[] = {"lights in the hall", "alarm 07:15", "weather in Rome"};
  auto run = [&](int which) {
    Session s(model, Small());
    s.SetToolsJson(testing::kFiveTools);
    std::string out;
    for (int i = 0; i < 3; ++i) out += s.Query(queries[(which + i) % 3]).function_calls.dump();
    return out;
  };
  std::string seq[3], par[3];
  for (int i = 0; i < 3; ++i) seq[i] = run(i);
  std::thread ts[3];
  for (int i = 0; i < 3; ++i) ts[i] = std::thread([&, i] { par[i] = run(i); });
  for (auto& t : ts) t.join();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(par[i], seq[i]);
}

}  // namespace
}  // namespace needle

namespace needle {
namespace {

std::string Lower(std::string s) {
  for (char& c : s) c = (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
  return s;
}

// With an infinite copy bias every plain string argument is a piece of the
// conversation's text (this random model left alone writes empty strings);
// the grammar still holds. Tool results count as text to copy from.
TEST(Session, InfiniteCopyBiasCopiesFromTheConversation) {
  const char* tools = R"([{"name":"note","parameters":{"type":"object","properties":{
      "text":{"type":"string"},"tag":{"type":"string","enum":["home","work"]}},"required":["text"]}}])";
  const char* queries[] = {"please remind me to water the basil plants", "Call Ana about the Berlin trip",
                           "note: buy 2 oat milks", "the meeting moved to room B-12"};
  auto values = [&](float bias, std::vector<std::pair<std::string, std::string>>* out) {
    for (uint64_t seed : {3, 5, 8}) {
      SessionOptions o = Small();
      o.copy_bias = bias;
      Session s(testing::AgentModel(seed), o);
      s.SetToolsJson(tools);
      for (const char* q : queries) {
        const Envelope e = s.Query(q);
        ASSERT_TRUE(e.success()) << e.Dump();
        for (const auto& c : e.function_calls) out->push_back({c["arguments"]["text"].get<std::string>(), q});
        if (e.type == EnvelopeType::kCall) {
          const Envelope r = s.ToolResult(R"({"saved":"Note N-7731 stored"})");
          ASSERT_TRUE(r.success()) << r.Dump();
          for (const auto& c : r.function_calls)
            out->push_back({c["arguments"]["text"].get<std::string>(), std::string(q) + " {\"saved\":\"Note N-7731 stored\"}"});
        }
        s.Reset();
      }
    }
  };
  std::vector<std::pair<std::string, std::string>> copied, free;
  values(INFINITY, &copied);
  values(0.0f, &free);
  // (An empty value is the grammar's completion when a call runs out of budget.)
  // Copies are whole spans: they start and end where words do in the source.
  auto word = [](char c) { return grammar::CopySource::IsWordByte(uint8_t(c)); };
  auto whole_span = [&](const std::string& text, const std::string& value) {
    const std::string t = Lower(text), v = Lower(value);
    for (size_t at = t.find(v); at != std::string::npos; at = t.find(v, at + 1)) {
      const size_t end = at + v.size();
      if ((at == 0 || !word(t[at - 1]) || !word(v[0])) && (end == t.size() || !word(t[end]))) return true;
    }
    return false;
  };
  size_t nonempty = 0;
  for (const auto& [value, source] : copied) {
    if (value.empty()) continue;
    ++nonempty;
    EXPECT_NE(Lower(source).find(Lower(value)), std::string::npos) << "'" << value << "' is not copied from: " << source;
    EXPECT_TRUE(whole_span(source, value)) << "'" << value << "' is not a whole span of: " << source;
  }
  EXPECT_GE(nonempty, 8u);  // (repeated calls are dropped: fewer values than calls)
  size_t free_nonempty = 0;
  for (const auto& [value, source] : free) free_nonempty += !value.empty();
  EXPECT_LT(free_nonempty, nonempty) << "left alone, this random model closes its strings at once";
  SessionOptions bad;
  bad.copy_bias = -1.0f;
  EXPECT_THROW(Session(testing::AgentModel(3), bad), Error);
}

// Numbers spelled in words are in the copy source as digits: with an infinite
// copy bias an integer argument is the request's number, however it is written.
// Each (query, want) on sessions of three random models set up by `set`: the
// first call's `key` argument must be `want` whenever the model calls.
// Returns how many calls there were.
template <typename T>
size_t ExpectFirstCallArgument(const char* tools, const std::function<void(SessionOptions&)>& set,
                               std::initializer_list<std::pair<const char*, T>> cases, const char* key) {
  size_t calls = 0;
  for (uint64_t seed : {3, 5, 8}) {
    SessionOptions o = Small();
    set(o);
    Session s(testing::AgentModel(seed), o);
    s.SetToolsJson(tools);
    for (const auto& [q, want] : cases) {
      const Envelope e = s.Query(q);
      EXPECT_TRUE(e.success()) << e.Dump();
      s.Reset();
      // (The first call: a random model may ramble on into a second one that
      // the call budget cuts and the grammar completes.)
      if (e.function_calls.empty()) continue;
      ++calls;
      EXPECT_EQ(e.function_calls[0]["arguments"][key], want) << q << " -> " << e.Dump();
    }
  }
  return calls;
}

// A decoding rule checked on random models (seeds 3, 5, 8, 13): every query
// with the rule on and off (`set(options, on)`); `right(i, args)` says
// whether the first call's arguments are what query i wants. With the rule
// on every call must be right; off, the wrong ones are counted (a random
// model should get some wrong, or the test shows nothing).
struct RuleCounts {
  size_t calls = 0, wrong_without = 0;
};
RuleCounts CheckRule(const char* tools, const std::function<void(SessionOptions&, bool)>& set,
                     const std::vector<const char*>& queries,
                     const std::function<bool(size_t, const nlohmann::ordered_json&)>& right,
                     const nlohmann::ordered_json& facts = nullptr) {
  RuleCounts n;
  for (uint64_t seed : {3, 5, 8, 13}) {
    for (bool on : {true, false}) {
      SessionOptions o = Small();
      set(o, on);
      Session s(testing::AgentModel(seed), o);
      s.SetToolsJson(tools);
      if (!facts.is_null()) s.SetSystem(facts);
      for (size_t i = 0; i < queries.size(); ++i) {
        const Envelope e = s.Query(queries[i]);
        EXPECT_TRUE(e.success()) << e.Dump();
        s.Reset();
        if (e.function_calls.empty()) continue;
        const bool ok = right(i, e.function_calls[0]["arguments"]);
        if (!on) {
          n.wrong_without += !ok;
          continue;
        }
        ++n.calls;
        EXPECT_TRUE(ok) << "seed " << seed << ": " << queries[i] << " -> " << e.Dump();
      }
    }
  }
  return n;
}

TEST(Session, SpelledNumbersAreCopiedAsDigits) {
  const char* tools = R"([{"name":"volume","parameters":{"type":"object","properties":{
      "level":{"type":"integer"}},"required":["level"]}}])";
  const size_t calls = ExpectFirstCallArgument<int>(
      tools, [](SessionOptions& o) { o.copy_bias = INFINITY; },
      {{"set the volume to fifty seven", 57}, {"volume twenty-two please", 22}, {"turn it up to one hundred and five", 105},
       {"volume 64 percent", 64}},
      "level");
  EXPECT_GE(calls, 4u);
}

// Dates and times said in words are written as the format asks whenever the
// model calls (the default bias is a rule); "tomorrow" counts from the
// system facts' date. Without the rule a random model writes other ones.
TEST(Session, DateAndTimeArgumentsTakeTheOnesTheRequestSays) {
  const char* tools = R"([{"name":"book","parameters":{"type":"object","properties":{
      "day":{"type":"string","format":"date"},"at":{"type":"string","format":"time"},
      "when":{"type":"string","format":"date-time"}},"required":["day","at","when"]}}])";
  const char* want[][2] = {{"2025-09-06", "18:30"}, {"2026-02-13", "19:45"}};
  const RuleCounts n = CheckRule(
      tools, [](SessionOptions& o, bool on) { o.date_time_bias = on ? INFINITY : 0.0f; },
      {"book it for September 6, 2025 at half past 6 pm", "a table tomorrow at 7:45pm"},
      [&](size_t i, const nlohmann::ordered_json& args) {
        return args["day"] == want[i][0] && args["at"] == want[i][1] &&
               args["when"] == std::string(want[i][0]) + "T" + want[i][1];
      },
      nlohmann::ordered_json{{"date", "2026-02-12"}});
  EXPECT_GE(n.calls, 2u);
  EXPECT_GE(n.wrong_without, 1u);
}

// A description that spells the layout ("HH:MM", "YYYY-MM-DD") counts as
// the format the schema does not declare: people write it there.
TEST(Session, ADescriptionSpellingTheLayoutActsAsTheFormat) {
  const char* tools = R"([{"name":"book","parameters":{"type":"object","properties":{
      "day":{"type":"string","description":"Date, YYYY-MM-DD"},"at":{"type":"string","description":"Time in 24h HH:MM format"}},
      "required":["day","at"]}}])";
  const char* want[][2] = {{"2025-09-06", "18:30"}, {"2026-02-13", "19:45"}};
  const RuleCounts n = CheckRule(
      tools, [](SessionOptions& o, bool on) { o.date_time_bias = on ? INFINITY : 0.0f; },
      {"book it for September 6, 2025 at half past 6 pm", "a table tomorrow at 7:45pm"},
      [&](size_t i, const nlohmann::ordered_json& args) { return args["day"] == want[i][0] && args["at"] == want[i][1]; },
      nlohmann::ordered_json{{"date", "2026-02-12"}});
  EXPECT_GE(n.calls, 2u);
  EXPECT_GE(n.wrong_without, 1u);
}

// Arguments asking for a currency or language code take the codes of the
// ones the request names ("euros" -> EUR); a description that allows a name
// leaves the words as said. Without the rule a random model writes others.
TEST(Session, CodeArgumentsTakeTheCodesOfWhatTheRequestNames) {
  const char* tools = R"json([{"name":"convert","parameters":{"type":"object","properties":{
      "amount":{"type":"number"},"from_currency":{"type":"string","description":"ISO 4217 code of the source currency"},
      "to_currency":{"type":"string","description":"ISO 4217 code of the target currency"}},"required":["amount","from_currency","to_currency"]}},
      {"name":"translate","parameters":{"type":"object","properties":{"text":{"type":"string"},
      "target_language":{"type":"string","description":"Target language code (ISO 639-1)"}},"required":["text","target_language"]}}])json";
  // (A request naming no currency leaves the currency arguments free, and so for languages.)
  const std::vector<std::vector<std::string>> currencies = {{"EUR", "JPY"}, {"GBP", "USD"}, {}, {}};
  const std::vector<std::vector<std::string>> languages = {{}, {}, {"es"}, {"de"}};
  const RuleCounts n = CheckRule(
      tools, [](SessionOptions& o, bool on) { o.date_time_bias = on ? INFINITY : 0.0f; },
      {"how much is 250 euros in yen", "40 pounds to dollars", "say good morning in Spanish", "translate thank you into German"},
      [&](size_t i, const nlohmann::ordered_json& args) {
        for (const char* key : {"from_currency", "to_currency", "target_language"}) {
          const auto& a = key[0] == 't' && key[1] == 'a' ? languages[i] : currencies[i];
          if (!args.contains(key) || a.empty()) continue;
          if (std::find(a.begin(), a.end(), args[key].get<std::string>()) == a.end()) return false;
        }
        return true;
      });
  EXPECT_GE(n.calls, 4u);
  EXPECT_GE(n.wrong_without, 1u);
}

// An optional number argument the conversation does not say is left out of
// the envelope (a random model opens such keys and invents values); one it
// says, in digits, in words or as a quantity in the argument's unit, stays.
TEST(Session, OptionalNumbersTheConversationDoesNotSayAreDropped) {
  const char* tools = R"([{"name":"ride","parameters":{"type":"object","properties":{
      "dropoff":{"type":"string"},"seats":{"type":"integer"},"wait_seconds":{"type":"integer"}},"required":["dropoff"]}}])";
  const std::vector<std::vector<double>> said = {{}, {2}, {3, 5, 300}};
  const RuleCounts n = CheckRule(
      tools, [](SessionOptions& o, bool on) { o.drop_unsaid_numbers = on; },
      {"get me a ride to the airport", "a ride home for two", "3 seats to the station, wait 5 minutes"},
      [&](size_t i, const nlohmann::ordered_json& args) {
        for (const char* key : {"seats", "wait_seconds"}) {
          if (args.contains(key) && std::find(said[i].begin(), said[i].end(), args[key].get<double>()) == said[i].end()) return false;
        }
        return true;
      });
  EXPECT_GE(n.calls, 3u);
  EXPECT_GE(n.wrong_without, 1u);
}

// A required string argument does not start with another required one's
// one-word value ("USD" as both currencies); without the rule a random model
// writes such repeats.
TEST(Session, ARequiredArgumentDoesNotRepeatAnotherOnesWord) {
  const char* tools = R"([{"name":"convert","parameters":{"type":"object","properties":{
      "from":{"type":"string"},"to":{"type":"string"}},"required":["from","to"]}}])";
  auto lower = [](std::string t) {
    for (char& c : t) c = char(std::tolower(static_cast<unsigned char>(c)));
    return t;
  };
  const RuleCounts n = CheckRule(
      tools, [](SessionOptions& o, bool on) { o.distinct_argument_values = on; },
      {"USD to GBP", "EUR into JPY", "from CAD to CHF", "yen to euros", "SEK or NOK", "AUD in INR"},
      [&](size_t, const nlohmann::ordered_json& args) {
        if (!args.contains("from") || !args.contains("to")) return true;
        const std::string from = lower(args["from"]), to = lower(args["to"]);
        const bool one_word = !from.empty() && from.find_first_of(" ,.'") == std::string::npos;
        const size_t start = to.find_first_not_of(' ');
        return !one_word || start == std::string::npos || to.compare(start, from.size(), from) != 0 ||
               (to.size() > start + from.size() && std::isalnum(static_cast<unsigned char>(to[start + from.size()])));
      });
  EXPECT_GE(n.calls, 6u);
  EXPECT_GE(n.wrong_without, 1u);
}

// An optional date argument the model would leave out is written when the
// request says a date the call does not hold yet.
TEST(Session, AnOptionalDateArgumentTakesTheDateTheRequestSays) {
  const char* tools = R"([{"name":"steps","parameters":{"type":"object","properties":{
      "day":{"type":"string","format":"date"},"verbose":{"type":"boolean"}}}}])";
  const char* want[] = {"2025-09-06", "2024-03-02"};
  const RuleCounts n = CheckRule(
      tools, [](SessionOptions& o, bool on) { o.date_time_bias = on ? INFINITY : 0.0f; },
      {"my step count for September 6, 2025", "steps on the 2nd of March 2024 please"},
      [&](size_t i, const nlohmann::ordered_json& args) { return args.value("day", "") == want[i]; });
  EXPECT_GE(n.calls, 2u);
  EXPECT_GE(n.wrong_without, 1u);
}

// A number argument that declares a unit takes the quantity the request says
// in that unit.
TEST(Session, UnitArgumentsTakeTheQuantityTheRequestSays) {
  const char* tools = R"([{"name":"timer","parameters":{"type":"object","properties":{
      "duration_seconds":{"type":"integer"},"distance":{"type":"number","description":"How far, in meters"}},
      "required":["duration_seconds","distance"]}}])";
  const int64_t seconds[] = {300, 1800};
  const double metres[] = {0.9, 2.0};
  const RuleCounts n = CheckRule(
      tools, [](SessionOptions& o, bool on) { o.quantity_bias = on ? INFINITY : 0.0f; },
      {"a timer for 5 minutes and drive 90 cm", "half an hour, then 2 metres"},
      [&](size_t i, const nlohmann::ordered_json& args) {
        return args["duration_seconds"] == seconds[i] && args["distance"] == metres[i];
      });
  EXPECT_GE(n.calls, 2u);
  EXPECT_GE(n.wrong_without, 1u);
}

// Arguments that split one dimension between them (an alarm's hours and
// minutes) are left to the model: the rule changes nothing there, while it
// does change a lone minutes argument.
TEST(Session, UnitArgumentsThatSplitADimensionAreLeftAlone) {
  const char* split = R"([{"name":"alarm","parameters":{"type":"object","properties":{
      "hours":{"type":"integer"},"minutes":{"type":"integer"}},"required":["hours","minutes"]}}])";
  const char* lone = R"([{"name":"alarm","parameters":{"type":"object","properties":{
      "minutes":{"type":"integer"}},"required":["minutes"]}}])";
  size_t lone_changed = 0;
  for (uint64_t seed : {3, 5, 8}) {
    for (const char* tools : {split, lone}) {
      std::string calls[2];
      for (bool rule : {true, false}) {
        SessionOptions o = Small();
        o.quantity_bias = rule ? INFINITY : 0.0f;
        Session s(testing::AgentModel(seed), o);
        s.SetToolsJson(tools);
        const Envelope e = s.Query("wake me in 2 hours and 5 minutes");
        ASSERT_TRUE(e.success()) << e.Dump();
        calls[rule] = e.function_calls.dump();
      }
      if (tools == split) EXPECT_EQ(calls[0], calls[1]) << "seed " << seed;
      else lone_changed += calls[0] != calls[1];
    }
  }
  EXPECT_GE(lone_changed, 1u);
}

// An optional unit argument the model would leave out is written when the
// request says a quantity the call does not hold yet.
TEST(Session, AnOptionalUnitArgumentTakesTheQuantityTheRequestSays) {
  const char* tools = R"([{"name":"record","parameters":{"type":"object","properties":{
      "timeGoalSecs":{"type":"integer"},"verbose":{"type":"boolean"}}}}])";
  const int64_t want[] = {2700, 4140};
  const RuleCounts n = CheckRule(
      tools, [](SessionOptions& o, bool on) { o.quantity_bias = on ? INFINITY : 0.0f; },
      {"record for forty-five minutes", "a swim of 1 hour and 9 minutes"},
      [&](size_t i, const nlohmann::ordered_json& args) { return args.value("timeGoalSecs", int64_t(-1)) == want[i]; });
  EXPECT_GE(n.calls, 2u);
  EXPECT_GE(n.wrong_without, 1u);
}

// The reasoning's head names a declared tool (then ':' or ' '), or refuses,
// or quotes: a random model's free reasoning does not.
TEST(Session, TheReasoningNamesADeclaredTool) {
  const char* tools = R"([{"name":"set_volume","parameters":{"type":"object","properties":{"level":{"type":"integer"}}}},
      {"name":"setTimer","parameters":{"type":"object","properties":{"minutes":{"type":"integer"}}}}])";
  auto declared_head = [](const std::string& r) {
    for (const char* head : {"set_volume:", "set_volume ", "setTimer:", "setTimer ", "no declared tool", "'"}) {
      if (r.rfind(head, 0) == 0) return true;
    }
    return false;
  };
  size_t free_other = 0;
  for (uint64_t seed : {3, 5, 8, 13}) {
    for (bool names : {true, false}) {
      SessionOptions o = Small();
      o.max_think_tokens = 24;  // room for a whole head
      o.reasoning_names = names;
      Session s(testing::AgentModel(seed), o);
      s.SetToolsJson(tools);
      const Envelope e = s.Query("turn it up to 30 and set a timer");
      ASSERT_TRUE(e.success()) << e.Dump();
      if (names) {
        EXPECT_TRUE(declared_head(e.reasoning)) << "seed " << seed << ": " << e.reasoning;
      } else {
        free_other += !declared_head(e.reasoning);
      }
    }
  }
  EXPECT_GE(free_other, 1u);
}

// After a tool result the plan names a declared tool or says nothing more
// is to be called; and the tool the request's call named already (the
// lookup) gets no naming push, however strong the request's ranking made it.
TEST(Session, AfterAToolResultThePlanNamesADeclaredToolOrIsDone) {
  const char* tools = R"([{"name":"find_contact","description":"find a contact by name",
      "parameters":{"type":"object","properties":{"name":{"type":"string"}}}},
      {"name":"call_by_id","parameters":{"type":"object","properties":{"id":{"type":"string"}}}}])";
  auto declared_head = [](const std::string& r) {
    for (const char* head : {"find_contact:", "find_contact ", "call_by_id:", "call_by_id ", "done", "result received",
                             "request complete", "the tool reported an error"}) {
      if (r.rfind(head, 0) == 0) return true;
    }
    return false;
  };
  size_t named_next = 0;
  for (uint64_t seed : {3, 5, 8, 13, 21, 34}) {
    SessionOptions o = Small();
    o.max_think_tokens = 48;   // (a reasoning cut by the budget may stop inside a head)
    o.tool_score_bias = 1e4f;  // the ranking names the request's call
    o.refusal_score_penalty = 1e4f;
    Session s(testing::AgentModel(seed), o);
    s.SetToolsJson(tools);
    const Envelope q = s.Query("find the contact named Ada");
    ASSERT_TRUE(q.success()) << q.Dump();
    ASSERT_EQ(q.type, EnvelopeType::kCall) << q.Dump();
    ASSERT_EQ(q.function_calls[0]["name"], "find_contact") << q.Dump();
    const Envelope r = s.ToolResult(R"({"results":[{"id":"c_1","name":"Ada"}]})");
    ASSERT_TRUE(r.success()) << r.Dump();
    EXPECT_TRUE(declared_head(r.reasoning)) << "seed " << seed << ": " << r.reasoning;
    named_next += r.type == EnvelopeType::kCall && r.function_calls[0]["name"] == "call_by_id";
  }
  EXPECT_GE(named_next, 1u);  // (with find_contact's push kept, every call after the result named it again)
}

// A tool that needs an identifier the conversation does not hold loses the
// naming push to the others (the lookup); once one is said, it is named.
TEST(Session, AToolNeedingAnUnsaidIdentifierIsNotTheRequestsCall) {
  const char* tools = R"([{"name":"play_track","description":"play a track by id",
      "parameters":{"type":"object","properties":{"track_id":{"type":"string"}},"required":["track_id"]}},
      {"name":"search_music","description":"search the catalogue",
      "parameters":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}])";
  for (uint64_t seed : {3, 5}) {
    for (const char* request : {"play the track Volare", "play the track trk_51b9e7"}) {
      for (float penalty : {0.0f, SessionOptions::kDefaultUnsaidIdPenalty}) {
        SessionOptions o = Small();
        o.tool_score_bias = 1e4f;
        o.refusal_score_penalty = 1e4f;
        o.unsaid_id_penalty = penalty;
        Session s(testing::AgentModel(seed), o);
        s.SetToolsJson(tools);
        const Envelope e = s.Query(request);
        ASSERT_EQ(e.type, EnvelopeType::kCall) << e.Dump();
        const bool id_said = std::string_view(request).find("trk_") != std::string_view::npos;
        EXPECT_EQ(e.function_calls[0]["name"], penalty > 0.0f && !id_said ? "search_music" : "play_track")
            << "seed " << seed << ", penalty " << penalty << ": " << request;
      }
    }
  }
}

// A session on the embedded default model, with these options and tools.
std::unique_ptr<Session> DefaultModelSession(const SessionOptions& options, const char* tools) {
  auto s = std::make_unique<Session>(Model::FromStatic(Model::Embedded()), options);
  s->SetToolsJson(tools);
  return s;
}

// After a lookup, an identifier argument takes the id of the record the
// request names, not another record's (the default model, which tends to
// copy the first record's).
TEST(Session, AnIdentifierAfterALookupIsTheNamedRecords) {
  if (Model::Embedded().empty()) GTEST_SKIP() << "built without the default model";
  const char* tools = R"([{"name":"searchAddressBook","description":"Look up contacts by name.",
      "parameters":{"type":"object","properties":{"query":{"type":"string","description":"Name to search for"}},"required":["query"]}},
      {"name":"message_to_contact","description":"Send a text message to a contact by id.",
      "parameters":{"type":"object","properties":{"recipient_id":{"type":"string","description":"Contact id from the contacts search"},
      "body":{"type":"string","description":"Message text"}},"required":["recipient_id","body"]}}])";
  const char* result = R"({"matches":[{"id":"c_86215","name":"Ava Ricci"},{"id":"c_856","name":"Katerina Kowalski"}]})";
  std::vector<std::string> ids;
  for (float bias : {0.0f, SessionOptions::kDefaultRecordIdBias}) {
    SessionOptions o;
    o.record_id_bias = bias;
    const auto s = DefaultModelSession(o, tools);
    const Envelope q = s->Query("send katerina kowalski a message: can you feed the dog");
    ASSERT_EQ(q.type, EnvelopeType::kCall) << q.Dump();
    ASSERT_EQ(q.function_calls[0]["name"], "searchAddressBook") << q.Dump();
    const Envelope r = s->ToolResult(result);
    ASSERT_EQ(r.type, EnvelopeType::kCall) << r.Dump();
    ASSERT_EQ(r.function_calls[0]["name"], "message_to_contact") << r.Dump();
    ids.push_back(r.function_calls[0]["arguments"].value("recipient_id", ""));
  }
  EXPECT_NE(ids[0], "c_856");  // (without the rule: the first record's, or another copy)
  EXPECT_EQ(ids[1], "c_856");
}

// A copied value keeps the case the request writes it in (the copy source
// folds case; the default model wrote "GoOGL" for "GOOGL").
// A call that falls into a loop ends there, completed by the grammar, with a
// warning; it does not run on to max_new_tokens. (The default model loops in
// a free string here when copying is only a preference: "1974. p. p. p. ...")
TEST(Session, ACallThatLoopsEndsAtTheLoop) {
  if (Model::Embedded().empty()) GTEST_SKIP() << "built without the default model";
  const char* tools = R"([{"name":"reference_cite","description":"Record a citation.","parameters":{"type":"object",
      "properties":{"author_list":{"type":"string"},"title":{"type":"string"},"container":{"type":"string"},
      "year":{"type":"integer","description":"Year","minimum":1965,"maximum":2026},"pages":{"type":"string"},
      "doi":{"type":"string"}},"required":["author_list","title","year"]}}])";
  SessionOptions o;
  o.copy_bias = 8.0f;
  o.reasoning_beams = 1;  // (greedy: the beam search's plan leads to a call that does not loop)
  const Envelope e = DefaultModelSession(o, tools)->Query(
      "Beatrice Nelson, I. W. Sharma and Zoey Lefebvre. \"Deep Residual Learning for Image Recognition.\" 1974. pp. e4579.");
  ExpectWellFormed(e);
  ASSERT_TRUE(e.success()) << e.Dump();
  ASSERT_FALSE(grammar::ValidateCall(e.function_calls.dump(), tools)) << e.Dump();
  bool looped = false;
  for (const std::string& w : e.warnings) looped |= w.find("repeating loop") != std::string::npos;
  EXPECT_TRUE(looped) << e.Dump();
  EXPECT_EQ(e.Dump().find("max_new_tokens"), std::string::npos) << e.Dump();
}

// Two requests in one: the plan's second call is not the first planned again
// (same tool, same spans; or a tool without arguments twice). Without the
// rule the default model plans "get_steps: no arguments needed | get_steps:
// no arguments needed" here, and the repeat is dropped: one call for two.
TEST(Session, ASecondPlannedCallIsNotTheFirstAgain) {
  if (Model::Embedded().empty()) GTEST_SKIP() << "built without the default model";
  const char* tools = R"json([{"name":"get_heart_rate","parameters":{"type":"object","properties":{"period":{"type":"string",
      "enum":["now","today","week"]}}}},{"name":"changeDial","parameters":{"type":"object","properties":{"dialName":{"type":"string"}},
      "required":["dialName"]}},{"name":"show_sleep_report","description":"Can show sleep data.","parameters":{"type":"object",
      "properties":{"night":{"type":"string","description":"Which night (default last night)"}}}},
      {"name":"get_steps","parameters":{"type":"object","properties":{"date":{"type":"string","format":"date"}}}}])json";
  std::vector<std::string> plans;
  for (bool distinct : {false, true}) {
    SessionOptions o;
    o.distinct_plan_spans = distinct;
    const Envelope e = DefaultModelSession(o, tools)->Query("Ok read my pulse and then show my steps asap");
    ExpectWellFormed(e);
    plans.push_back(e.reasoning);
  }
  const std::string twice = "get_steps: no arguments needed | get_steps: no arguments needed";
  EXPECT_NE(plans[0].find(twice), std::string::npos) << plans[0];  // (without the rule)
  EXPECT_EQ(plans[1].find(twice), std::string::npos) << plans[1];
}

// The reasoning's beam search (reasoning_beams) finds the plan greedy
// decoding misses: greedy commits to its first words and picks the watch face
// for "Scale says 132.0"; two hypotheses find the weigh-in.
TEST(Session, TheReasoningBeamsFindThePlanGreedyMisses) {
  if (Model::Embedded().empty()) GTEST_SKIP() << "built without the default model";
  const char* tools = R"([{"name":"set_dial","description":"Switches to a named watch face.",
      "parameters":{"type":"object","properties":{"name":{"type":"string"}},"required":["name"]}},
      {"name":"log_weigh_in","description":"Records a weigh-in.","parameters":{"type":"object",
      "properties":{"weight_kg":{"type":"number","minimum":30.0,"maximum":200.0}},"required":["weight_kg"]}}])";
  std::vector<std::string> named;
  for (uint32_t beams : {1u, 2u}) {
    SessionOptions o;
    o.reasoning_beams = beams;
    const Envelope e = DefaultModelSession(o, tools)->Query("Scale says 132.0");
    ASSERT_EQ(e.type, EnvelopeType::kCall) << e.Dump();
    named.push_back(e.function_calls[0]["name"]);
    if (beams == 2) {
      EXPECT_EQ(e.function_calls[0]["arguments"]["weight_kg"], 132) << e.Dump();
    }
  }
  EXPECT_EQ(named[0], "set_dial");  // (greedy; the search is what changes it)
  EXPECT_EQ(named[1], "log_weigh_in");
}

// When the search keeps greedy's reasoning, the turn is greedy's to the bit:
// the call, the confidence (the head's pool and the call's probabilities,
// both read from the winning hypothesis's cache and pool) and the next turn,
// decoded on the cache the search handed back. The search's states are
// allocated once: the session's bytes stay the same over the turns.
TEST(Session, ABeamSearchThatKeepsGreedysPlanIsGreedyToTheBit) {
  if (Model::Embedded().empty()) GTEST_SKIP() << "built without the default model";
  const std::string tools = R"([{"name":"set_lights","description":"Turn the lights in a room on or off, or dim them",
      "parameters":{"type":"object","properties":{"room":{"type":"string","description":"Room name"},
      "state":{"type":"string","enum":["on","off"]},"brightness":{"type":"integer","minimum":0,"maximum":100,
      "description":"Brightness in percent"}},"required":["room"]}},
      {"name":"set_timer","description":"Start a countdown timer","parameters":{"type":"object","properties":{
      "minutes":{"type":"integer","minimum":1,"maximum":600},"label":{"type":"string"}},"required":["minutes"]}}])";
  std::vector<std::string> dumps[3];
  uint64_t bytes[3] = {};
  for (uint32_t beams : {1u, 2u, 4u}) {
    SessionOptions o;
    o.reasoning_beams = beams;
    const auto s = DefaultModelSession(o, tools.c_str());
    s->SetSystem(nlohmann::ordered_json{{"date", "2026-11-30"}});
    const uint32_t b = beams == 1 ? 0 : beams == 2 ? 1 : 2;
    for (const char* turn : {"dim the kitchen lights to 30 percent", R"({"status":"ok"})", "set a timer for 20 minutes"}) {
      Envelope e = s->Complete(turn);
      ASSERT_TRUE(e.success()) << e.Dump();
      e.prefill_tps = e.decode_tps = e.peak_ram_mb = 0;
      dumps[b].push_back(e.Dump());
      if (dumps[b].size() == 1) bytes[b] = s->state_bytes();
      EXPECT_EQ(s->state_bytes(), bytes[b]) << "beams " << beams;
    }
  }
  EXPECT_EQ(dumps[1], dumps[0]);
  EXPECT_EQ(dumps[2], dumps[0]);
  EXPECT_GT(bytes[1], bytes[0]);  // (the hypotheses' states)
}

TEST(Session, CopiesKeepTheRequestsCase) {
  if (Model::Embedded().empty()) GTEST_SKIP() << "built without the default model";
  const char* tools = R"([{"name":"web-lookup-stock-request","description":"Get the latest price for a stock ticker.",
      "parameters":{"type":"object","properties":{"ticker_symbol":{"type":"string"}},"required":["ticker_symbol"]}}])";
  std::vector<std::string> values;
  for (bool exact_case : {false, true}) {
    SessionOptions o;
    o.exact_case = exact_case;
    const Envelope e = DefaultModelSession(o, tools)->Query("What's the price of GOOGL?");
    ASSERT_EQ(e.type, EnvelopeType::kCall) << e.Dump();
    values.push_back(e.function_calls[0]["arguments"].value("ticker_symbol", ""));
  }
  EXPECT_NE(values[0], "GOOGL");  // (without the rule)
  EXPECT_EQ(values[1], "GOOGL");
}

// A reasoning span closes at its quote; an apostrophe inside it ("I'll")
// does not end the copy it follows.
TEST(Session, ReasoningSpansReadApostrophesAsPartOfTheCopy) {
  grammar::CopySource source;
  const std::string_view texts[] = {"text Maria that I'll be ten minutes late"};
  source.Build(texts);
  ReasoningSpan span;
  span.Feed(source, "send_message: 'Maria' -> recipient; ");
  EXPECT_FALSE(span.open);
  span.Feed(source, "'I");
  EXPECT_TRUE(span.open);
  span.Feed(source, "'");  // a quote: closed, as far as anyone can tell yet
  EXPECT_FALSE(span.open);
  span.Feed(source, "ll be ten");  // a word byte after it: an apostrophe
  EXPECT_TRUE(span.open);
  EXPECT_NE(span.state, grammar::CopySource::kDead);  // "I'll be ten" is a copy
  span.Feed(source, " minutes late' -> body");
  EXPECT_FALSE(span.open);
  ReasoningSpan other;
  other.Feed(source, "x: 'Maria' -> to");  // the closing quote then a space: closed for good
  EXPECT_FALSE(other.open);
}

// A plan span may not run along an earlier span's words nor hold them; other
// calls' spans, function words and spans that only share a prefix are free.
TEST(Session, FunctionWordsAreNoValues) {
  for (const char* v : {"to", " the", "My.", "it's", "Is", "and ", "please"}) EXPECT_TRUE(IsFunctionWordValue(v)) << v;
  for (const char* v : {"on", "off", "up", "all", "me", "now", "Denver", "to Denver", "the lawn", "", " ", "tomorrow", "US", "IT", "A"})
    EXPECT_FALSE(IsFunctionWordValue(v)) << v;
}

TEST(Session, RepeatedSpanCheckKeepsANewSpanOffEarlierOnes) {
  RepeatedSpanCheck check;
  EXPECT_FALSE(check.Read("play_song: 'Bohemian"));  // no span closed before it
  // Between spans: a token that opens one ("'Boh" after a space) is a new span.
  ASSERT_TRUE(check.Read("play_song: 'Bohemian Rhapsody' -> title;"));
  EXPECT_TRUE(check.TokenRepeats(" 'Boh", ';'));
  EXPECT_TRUE(check.TokenRepeats("'Bohemian Rhapsody'", ' '));
  EXPECT_FALSE(check.TokenRepeats(" 'Queen'", ';'));
  EXPECT_FALSE(check.TokenRepeats(" ->", ';'));
  ASSERT_TRUE(check.Read("play_song: 'Bohemian Rhapsody' -> title; '"));
  EXPECT_TRUE(check.Repeats("Boh", false));                  // may only go on as "Bohemian"
  EXPECT_TRUE(check.TokenRepeats("Rhapsody' ->", 'x'));       // closes on a repeat
  EXPECT_FALSE(check.TokenRepeats("Queen' ->", 'x'));
  EXPECT_TRUE(check.Repeats("bohemian rhapsody", true));     // equal, case folded
  EXPECT_TRUE(check.Repeats("Rhapsody", true));              // inside it
  EXPECT_FALSE(check.Repeats("Queen", true));
  EXPECT_FALSE(check.Repeats("Boheme", false));              // not a prefix of its word
  EXPECT_FALSE(check.Repeats("the", false));                 // a function word alone
  ASSERT_TRUE(check.Read("book_hotel: 'Rome' -> city; 'hotel in"));
  EXPECT_FALSE(check.Repeats(" ", false));
  EXPECT_TRUE(check.Repeats(" Rome", true));                 // closed, it holds "Rome"
  EXPECT_FALSE(check.Repeats(" Rome", false));               // (open, it may still be read as a new place)
  // Spans of the previous call's plan, and apostrophes inside a span.
  ASSERT_TRUE(check.Read("a: 'Maria' -> to | b: 'I'll be late' -> body; '"));
  EXPECT_FALSE(check.Repeats("Maria", true));
  EXPECT_TRUE(check.Repeats("I'll", false));
  EXPECT_TRUE(check.Repeats("be late", true));
  ASSERT_TRUE(check.Read("c: 'the small wrench' -> what; 'the"));
  EXPECT_TRUE(check.AnyTokenMay());  // "the" may still go on as "the small"
  EXPECT_FALSE(check.Repeats(" workbench", true));
  EXPECT_TRUE(check.Repeats(" small", false));
  ASSERT_TRUE(check.Read("c: 'the small wrench' -> what; 'the work"));
  EXPECT_FALSE(check.AnyTokenMay());  // off the earlier span: only a closing quote could repeat
  ASSERT_TRUE(check.Read("c: 'the small wrench' -> what; "));
  EXPECT_FALSE(check.AnyTokenMay());  // no span open: only a token that opens one
  // An earlier call of the same tool counts; another tool's does not.
  ASSERT_TRUE(check.Read("setPace: 'slow' -> pace SLOW | setPace: '"));
  EXPECT_TRUE(check.Repeats("slow", true));
  EXPECT_FALSE(check.Repeats("quick", true));
  EXPECT_FALSE(check.Read("setPace: 'slow' -> pace SLOW | lights: '"));
  ASSERT_TRUE(check.Read("a: 'x y' -> k | b: 'z' -> k | a: 'q' -> k; '"));
  EXPECT_TRUE(check.Repeats("x", false));
  EXPECT_TRUE(check.Repeats("q", true));
  EXPECT_FALSE(check.Repeats("z", true));
}

// With an infinite enum_word_bias the enum value sharing the request's words
// is a rule: a random model names it whenever it calls; without such a word
// nothing is forced.
TEST(Session, EnumWordBiasPicksTheValueTheRequestNames) {
  const char* tools = R"([{"name":"dishwasher","parameters":{"type":"object","properties":{
      "program":{"type":"string","enum":["eco","quick","heavy","delicates"]}},"required":["program"]}}])";
  const size_t calls = ExpectFirstCallArgument<const char*>(
      tools, [](SessionOptions& o) { o.enum_word_bias = INFINITY; },
      {{"run a delicates cycle", "delicates"}, {"do a heavy duty wash", "heavy"}, {"quick wash please", "quick"}}, "program");
  EXPECT_GE(calls, 3u);
  Session plain(testing::AgentModel(3), Small());
  plain.SetToolsJson(tools);
  EXPECT_TRUE(plain.Query("start the dishwasher").success());  // no value named: nothing forced
  SessionOptions bad = Small();
  bad.enum_word_bias = -1.0f;
  EXPECT_THROW(Session(testing::AgentModel(3), bad), Error);
}

}  // namespace
}  // namespace needle

namespace needle {
namespace {

// A top-ranked tool above the threshold makes refusing costly: with a huge
// penalty and a threshold every score clears, query turns always call.
TEST(Session, RefusalScorePenaltyKeepsRankedToolsCalled) {
  const char* queries[] = {"turn on the kitchen lights", "remind me in 10 minutes", "text Ana that I'm late",
                           "is it raining in Oslo", "set a 5 minute timer"};
  size_t refused_plain = 0, refused_penalised = 0, turns = 0;
  for (uint64_t seed : {3, 5, 8}) {
    auto model = testing::AgentModel(seed);
    SessionOptions plain = Small(), penalised = Small();
    plain.refusal_score_penalty = 0.0f;
    penalised.refusal_score_penalty = 1e6f;
    penalised.refusal_score_threshold = -100.0f;
    Session a(model, plain), b(model, penalised);
    a.SetToolsJson(testing::kFiveTools);
    b.SetToolsJson(testing::kFiveTools);
    for (const char* q : queries) {
      const Envelope ea = a.Query(q), eb = b.Query(q);
      ASSERT_TRUE(ea.success() && eb.success()) << ea.Dump() << eb.Dump();
      ++turns;
      refused_plain += ea.type == EnvelopeType::kRefuse;
      refused_penalised += eb.type == EnvelopeType::kRefuse;
      a.Reset();
      b.Reset();
    }
  }
  EXPECT_GT(refused_plain, 0u) << "these random models refuse some requests when left alone";
  EXPECT_EQ(refused_penalised, 0u) << "of " << turns;
  SessionOptions bad;
  bad.refusal_score_penalty = -1.0f;
  EXPECT_THROW(Session(testing::AgentModel(3), bad), Error);
  bad.refusal_score_penalty = 1.0f;
  bad.refusal_score_threshold = NAN;
  EXPECT_THROW(Session(testing::AgentModel(3), bad), Error);
}

// The other side: when no tool's head cosine reaches no_tool_cosine and no
// tool shares a word with the request, a huge no_tool_bias makes the turn
// refuse; a turn where some tool shares a word, or a cosine no tool is
// below, is left as it was; bad values are errors.
TEST(Session, NoToolBiasRefusesWhereNoToolIsSimilar) {
  const char* queries[] = {"turn on the kitchen lights", "remind me in 10 minutes", "text Ana that I'm late",
                           "is it raining in Oslo", "set a 5 minute timer", "what is the meaning of life"};
  size_t called_plain = 0, refused_unlike = 0, unlike = 0, same_shared = 0, shared = 0, same_below = 0, turns = 0;
  for (uint64_t seed : {3, 5, 8}) {
    auto model = testing::AgentModel(seed);
    SessionOptions plain = Small(), biased = Small(), never = Small();
    plain.refusal_score_penalty = biased.refusal_score_penalty = never.refusal_score_penalty = 0.0f;
    biased.no_tool_bias = 1e6f;
    biased.no_tool_cosine = 2.0f;  // above every cosine
    never.no_tool_bias = 1e6f;
    never.no_tool_cosine = -2.0f;  // below every cosine
    Session a(model, plain), b(model, biased), c(model, never);
    for (Session* s : {&a, &b, &c}) s->SetToolsJson(testing::kFiveTools);
    for (const char* q : queries) {
      const Envelope ea = a.Query(q), eb = b.Query(q), ec = c.Query(q);
      ASSERT_TRUE(ea.success() && eb.success() && ec.success()) << ea.Dump() << eb.Dump() << ec.Dump();
      ASSERT_EQ(b.tool_cosines().size(), 5u);
      bool words = false;  // some tool shares a word with the request
      for (size_t i = 0; i < 5; ++i) words = words || b.tool_scores()[i] > b.tool_cosines()[i];
      ++turns;
      called_plain += ea.type == EnvelopeType::kCall;
      if (words) {
        ++shared, same_shared += ea.function_calls.dump() == eb.function_calls.dump();
      } else {
        ++unlike, refused_unlike += eb.type == EnvelopeType::kRefuse;
      }
      same_below += ea.function_calls.dump() == ec.function_calls.dump();
      for (Session* s : {&a, &b, &c}) s->Reset();
    }
  }
  EXPECT_GT(called_plain, 0u) << "these random models call some requests when left alone";
  EXPECT_GT(unlike, 0u);
  EXPECT_GT(shared, 0u);
  EXPECT_EQ(refused_unlike, unlike);
  EXPECT_EQ(same_shared, shared);
  EXPECT_EQ(same_below, turns);
  SessionOptions bad;
  bad.no_tool_bias = -1.0f;
  EXPECT_THROW(Session(testing::AgentModel(3), bad), Error);
  bad.no_tool_bias = 1.0f;
  bad.no_tool_cosine = NAN;
  EXPECT_THROW(Session(testing::AgentModel(3), bad), Error);
}

// With a large tool_score_bias the first call is named after the tool the
// retrieval head scores highest (among those in the context).
TEST(Session, ToolScoreBiasNamesTheRetrievalHeadsChoice) {
  const char* queries[] = {"turn on the kitchen lights", "remind me in 10 minutes", "text Ana that I'm late",
                           "dinner with Bo on 2025-03-01", "is it raining in Oslo", "lights off please",
                           "weather for Rome tomorrow", "set a 5 minute timer"};
  size_t calls = 0, differs = 0;
  for (uint64_t seed : {2, 4, 6}) {
    auto model = testing::AgentModel(seed);
    SessionOptions on = Small(), off = Small();
    on.tool_score_bias = 1e6f;
    off.tool_score_bias = 0.0f;
    Session s(model, on), plain(model, off);
    s.SetToolsJson(testing::kFiveTools);
    plain.SetToolsJson(testing::kFiveTools);
    for (const char* q : queries) {
      const Envelope e = s.Query(q);
      ASSERT_TRUE(e.success()) << e.Dump();
      const std::vector<float>& scores = s.tool_scores();
      ASSERT_EQ(scores.size(), 5u);
      const size_t best = size_t(std::max_element(scores.begin(), scores.end()) - scores.begin());
      if (!e.function_calls.empty()) {
        ++calls;
        EXPECT_EQ(e.function_calls[0]["name"], s.tools()[best]["name"]) << q;
      }
      const Envelope p = plain.Query(q);
      if (!p.function_calls.empty() && p.function_calls[0]["name"] != s.tools()[best]["name"]) ++differs;
      s.Reset();
      plain.Reset();
    }
  }
  EXPECT_GE(calls, 6u);
  EXPECT_GT(differs, 0u) << "without the bias the random model should name other tools sometimes";
  SessionOptions bad;
  bad.tool_score_bias = INFINITY;
  EXPECT_THROW(Session(testing::AgentModel(3), bad), Error);
}

}  // namespace
}  // namespace needle
