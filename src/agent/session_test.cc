// The agent on small random-weight models: the calls are nonsense but always
// valid (the grammar), envelopes always well formed, sessions bounded and
// deterministic, and every kind of bad input an error envelope or Error.
#include "agent/session.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <thread>

#include "agent/testing/session_testing.h"
#include "grammar/copy_source.h"  // CopySource::IsWordByte
#include "grammar/validate.h"
#include "io/tokenizer_blob.h"  // kThinkEndId, kToolCallId
#include "kv/budget.h"            // budget_window

namespace needle {
namespace {

using nlohmann::ordered_json;
using testing::ExpectWellFormed;
using testing::Small;

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

// A saved file whose header is valid JSON of the wrong shapes (a pins string,
// a huge sink length, numbers of the wrong kind) is a named error, and the session keeps its own tools
// with no conversation.
TEST(Session, ACorruptSaveLeavesTheSessionItsOwnSetup) {
  auto model = testing::AgentModel(6);
  const std::string path = ::testing::TempDir() + "/corrupt-session.bin";
  Session a(model, Small());
  a.SetToolsJson(testing::kFiveTools);
  a.Query("play some fado");
  a.Save(path);
  std::ifstream in(path, std::ios::binary);
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  const std::string one_tool = R"([{"name":"only_tool","parameters":{"type":"object","properties":{}}}])";
  for (const auto& [from, to] : {std::pair<std::string, std::string>{"\"pins\":[]", "\"pins\":\"x\""},
                                 {"\"sink_length\":", "\"sink_length\":4294967"},
                                 // Numbers of the wrong kind (found by session_restore_fuzz: a
                                 // float fingerprint was converted to an integer, undefined behaviour).
                                 {"\"model\":", "\"model\":1.6e21,\"m\":"},
                                 {"\"window\":", "\"window\":0.5,\"w\":"},
                                 {"\"turns\":", "\"turns\":-"},
                                 {"\"last_type\":", "\"last_type\":7,\"t\":"},
                                 {"\"active\":[", "\"active\":[1e30,"},
                                 {"\"has_state\":", "\"has_state\":\"yes\",\"s\":"},
                                 // A missing field (read through a const JSON's operator[]: a heap overflow).
                                 {"\"tools\":", "\"tool\":"},
                                 {"\"system\":", "\"sys\":"}}) {
    std::string bad = bytes;
    const size_t at = bad.find(from);
    ASSERT_NE(at, std::string::npos) << from;
    bad.replace(at, from.size(), to);
    if (to.size() != from.size()) {  // keep the header length field true
      uint64_t hn;
      std::memcpy(&hn, bad.data() + 8, 8);
      hn += to.size() - from.size();
      std::memcpy(bad.data() + 8, &hn, 8);
    }
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bad;
    Session b(model, Small());
    b.SetToolsJson(one_tool);
    try {
      b.Restore(path);
      ADD_FAILURE() << "restored a corrupt file (" << to << ")";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("session"), std::string::npos) << e.what();
    }
    EXPECT_EQ(b.tools().size(), 1u);  // its own tools, not the file's five
    EXPECT_EQ(b.tools()[0]["name"], "only_tool");
    EXPECT_NO_THROW(ordered_json::parse(b.Query("do the thing").Dump()));
  }
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
  SessionOptions reach_all = s.options();
  reach_all.window_requests = 0;
  s.SetOptions(reach_all);
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
  if (first.confidence) {
    EXPECT_NEAR(*late.confidence, *first.confidence, 0.02);
  }
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
  // Invalid UTF-8, or a NUL inside: an error envelope that names the byte
  // (never a call on bytes that say nothing), valid JSON, and the session
  // still answers.
  const Envelope u = s.Query("caf\xc3 \xff\xfe lights");
  EXPECT_EQ(u.error_code, "invalid_argument") << u.Dump();
  EXPECT_EQ(u.error, "the query is not valid UTF-8 (byte 0xC3 at offset 3)");
  EXPECT_TRUE(u.function_calls.empty());
  EXPECT_NO_THROW(ordered_json::parse(u.Dump()));
  const Envelope nul = s.Query(std::string("lights\0 off", 11));
  EXPECT_EQ(nul.error, "the query holds a NUL byte at offset 6") << nul.Dump();
  EXPECT_TRUE(s.Query("lights on").success());
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
  s.SetToolsJson(R"([{"name":"f","parameters":{"type":"object","properties":{"a":{"type":"string","not":{"maxLength":1}}}}}])");
  ASSERT_FALSE(s.warnings().empty());
  const Envelope e = s.Query("do f");
  ASSERT_TRUE(e.success());
  EXPECT_NE(e.Dump().find("keyword 'not' is not supported"), std::string::npos);
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

// Chosen tools whose block overflows the KV budget beside the window: the
// best-ranked ones that fit are pinned (a warning says so), not an error; one
// tool that alone does not fit is still the budget error.
TEST(Session, ChosenToolsBeyondTheBudgetKeepTheBestRanked) {
  auto model = testing::AgentModel(16);
  const uint64_t sinks = budget_window(model->config()) - model->fast().window();
  std::string description;  // about 40% of the sink budget: two such tools fit, three do not
  while (model->tokenizer().Encode(description).size() < sinks * 2 / 5) description += "Reads the garden sensors and reports them. ";
  ordered_json tools = ordered_json::array();
  for (int i = 0; i < 5; ++i) {
    tools.push_back({{"name", "tool_" + std::to_string(i)},
                     {"description", (i == 3 ? "Turns on the kitchen lights. " : "") + description},
                     {"parameters", {{"type", "object"}, {"properties", {{"x", {{"type", "integer"}}}}}}}});
  }
  Session s(model, Small());
  s.SetTools(tools);
  const Envelope e = s.Query("turn on the kitchen lights");
  ASSERT_TRUE(e.success()) << e.Dump();
  ASSERT_EQ(s.active_tools().size(), 2u);
  const std::vector<float>& scores = s.tool_scores();
  ASSERT_EQ(scores.size(), tools.size());
  std::vector<uint32_t> ranked = {0, 1, 2, 3, 4};
  std::stable_sort(ranked.begin(), ranked.end(), [&](uint32_t a, uint32_t b) { return scores[a] > scores[b]; });
  std::vector<uint32_t> best = {ranked[0], ranked[1]};
  std::sort(best.begin(), best.end());
  EXPECT_EQ(s.active_tools(), best);
  bool warned = false;
  for (const std::string& w : s.warnings()) warned = warned || w.find("2 of the 5 chosen tools fit the KV budget") != std::string::npos;
  EXPECT_TRUE(warned);
  for (const auto& c : e.function_calls)
    EXPECT_TRUE(c["name"] == tools[best[0]]["name"] || c["name"] == tools[best[1]]["name"]) << c.dump();
  // The same request again reuses the pinned block: no tool is prefilled again.
  const Envelope again = s.Query("turn on the kitchen lights");
  ASSERT_TRUE(again.success());
  EXPECT_LT(again.prefill_tokens, e.prefill_tokens - e.sink_tokens / 2) << again.Dump();
  // One tool alone beyond the budget.
  Session one(model, Small());
  one.SetTools(ordered_json::array({{{"name", "huge"}, {"description", description + description + description},
                                     {"parameters", {{"type", "object"}}}}}));
  EXPECT_EQ(one.Query("hi").error_code, "budget_exceeded");
}

// Tools written with $defs/$ref and anyOf (Pydantic, the OpenAI SDK): the
// session holds them composed, so the prompt, the rules and retrieval read the
// schema the grammar enforces; what could not be rewritten is a warning.
TEST(Session, ComposedSchemasAreWhatTheSessionReads) {
  Session s(testing::AgentModel(17), Small());
  s.SetToolsJson(R"([{"name":"ship","description":"Ship a parcel","parameters":{"type":"object",
      "$defs":{"Address":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},
      "properties":{"to":{"$ref":"#/$defs/Address"},"kg":{"anyOf":[{"type":"number"},{"type":"null"}]},
                    "via":{"$ref":"#/$defs/Nowhere"}},"required":["to"]}}])");
  const ordered_json& p = s.tools()[0]["parameters"];
  EXPECT_FALSE(p.contains("$defs"));
  EXPECT_EQ(p["properties"]["to"]["properties"]["city"]["type"], "string");
  EXPECT_EQ(p["properties"]["kg"]["type"], ordered_json::array({"number", "null"}));
  ASSERT_EQ(s.warnings().size(), 1u);
  EXPECT_NE(s.warnings()[0].find("tool 'ship': parameters.properties.via: reference '#/$defs/Nowhere' does not resolve"),
            std::string::npos) << s.warnings()[0];
  const Envelope e = s.Query("ship it to Lisbon");
  ASSERT_TRUE(e.success()) << e.Dump();
  for (const auto& c : e.function_calls) EXPECT_TRUE(c["arguments"]["to"].is_object()) << c.dump();
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

// OpenAI's strict function schemas write an optional value as a list of
// types with every key required; declaring them used to throw a JSON type
// error out of SetTools (found by session_tools_fuzz).
TEST(Session, StrictStyleSchemasWithTypeListsAreAccepted) {
  Session s(testing::AgentModel(16), Small());
  s.SetToolsJson(R"([{"name":"play_track","description":"Play a track","parameters":{"type":"object","properties":{)"
                 R"("track_id":{"type":["string","null"]},"volume":{"type":["integer","null"],"minimum":0,"maximum":10}},)"
                 R"("required":["track_id","volume"],"additionalProperties":false}}])");
  EXPECT_EQ(s.tools().size(), 1u);
  testing::ExpectWellFormed(s.Query("play trk_224bb2 at volume 3"));
}

TEST(Session, ExtractUsesOneTool) {
  const Envelope e = Extract(testing::AgentModel(16), "Invoice 42 from ACME, total 19.99",
                             ordered_json::parse(R"({"type":"object","properties":{"number":{"type":"integer"},"vendor":{"type":"string","maxLength":10}},"required":["number"]})"),
                             Small());
  ASSERT_TRUE(e.success()) << e.Dump();
  for (const auto& c : e.function_calls) EXPECT_EQ(c["name"], "extract");
}

// A stateless client's history: the given call is fed, not generated; the
// next text is its result; a refusal replayed leaves a query next; a
// malformed call is named and leaves the session as after Reset().
TEST(Session, ReplayedTurnsContinueAsGenerated) {
  auto m = testing::AgentModel(2);
  Session s(m, Small());
  s.SetToolsJson(testing::kFiveTools);
  const auto call = ordered_json::parse(R"([{"name":"set_lights","arguments":{"room":"kitchen","on":true}}])");
  s.ReplayTurn("turn on the kitchen lights", call);
  EXPECT_EQ(s.last_type(), EnvelopeType::kCall);
  const std::vector<int32_t>& ids = s.turn_ids();
  ASSERT_GE(ids.size(), 4u);
  EXPECT_EQ(ids.back(), m->tokenizer().eos_id());
  EXPECT_NE(std::find(ids.begin(), ids.end(), int32_t(kToolCallId)), ids.end());
  const Envelope after = s.Complete(R"({"ok":true})");  // the call's result
  EXPECT_TRUE(after.type == EnvelopeType::kRespond || after.type == EnvelopeType::kCall) << after.Dump();
  s.ReplayTurn(R"({"ok":true})", ordered_json::array(), true);  // the loop ended
  EXPECT_EQ(s.last_type(), EnvelopeType::kRespond);
  s.ReplayTurn("what is the capital of Peru?", ordered_json::array());
  EXPECT_EQ(s.last_type(), EnvelopeType::kRefuse);
  try {
    s.ReplayTurn("lights", ordered_json::parse(R"([{"arguments":{}}])"));
    FAIL() << "a call without a name was replayed";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("name"), std::string::npos) << e.what();
  }
  EXPECT_THROW(s.ReplayTurn(R"({"ok":true})", ordered_json::array(), true), Error);  // no call waits: reset
  EXPECT_TRUE(s.Query("turn on the kitchen lights").success());
}

// The caller's requirements hold whatever the plan says: require_call admits
// no refusal, max_calls bounds the calls.
TEST(Session, RequireCallAndMaxCalls) {
  auto m = testing::AgentModel(2);
  SessionOptions o = Small();
  o.require_call = true;
  o.max_calls = 1;
  Session s(m, o);
  s.SetToolsJson(testing::kFiveTools);
  for (const char* q : {"what is the capital of Peru?", "lights on in the hall and an alarm at 07:15", "hello"}) {
    const Envelope e = s.Query(q);
    if (e.type == EnvelopeType::kError) {
      EXPECT_EQ(e.error_code, "invalid_call") << e.Dump();  // a value cut into a bound is named, never a refusal
      continue;
    }
    EXPECT_EQ(e.type, EnvelopeType::kCall) << q << " " << e.Dump();
    EXPECT_EQ(e.function_calls.size(), 1u) << e.Dump();
  }
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

// Sessions on threads that share a DecodeBatcher answer exactly as sequential
// sessions without one (whole envelopes: reasoning, calls, confidence), and
// their steps were joined into batches.
TEST(Session, ABatcherSharedByThreadsChangesNoAnswer) {
  auto model = testing::AgentModel(17);
  const char* queries[] = {"lights in the hall", "alarm 07:15", "weather in Rome", "text Ana I'm late"};
  auto run = [&](int which, std::shared_ptr<DecodeBatcher> batcher) {
    Session s(model, Small());
    s.SetDecodeBatcher(batcher);
    s.SetToolsJson(testing::kFiveTools);
    std::string out;
    for (int i = 0; i < 4; ++i) {
      const Envelope e = s.Query(queries[(which + i) % 4]);
      out += e.reasoning + ordered_json(e.function_calls).dump() + std::to_string(e.confidence.value_or(-1.0)) + "\n";
    }
    return out;
  };
  std::string seq[4], par[4];
  for (int i = 0; i < 4; ++i) seq[i] = run(i, nullptr);
  auto batcher = std::make_shared<DecodeBatcher>(model->fast(), 4);
  std::thread ts[4];
  for (int i = 0; i < 4; ++i) ts[i] = std::thread([&, i] { par[i] = run(i, batcher); });
  for (auto& t : ts) t.join();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(par[i], seq[i]);
  const DecodeBatcher::Stats st = batcher->stats();
  EXPECT_GT(st.steps, 0u);
  EXPECT_LT(st.batches, st.steps);
}

// Sessions that read shared sink blocks (SetSinkBlocks) answer exactly as
// sessions with their own: whole envelopes over queries, tool results and a
// reset, on four threads at once; each holds less, blocks are built once and
// then found, and a shared session's file restores into a session of its own.
TEST(Session, SharedSinkBlocksChangeNoAnswer) {
  auto model = testing::AgentModel(19);
  const char* queries[] = {"lights in the hall", "alarm 07:15", "weather in Rome", "text Ana I'm late"};
  const std::string saved_alone = ::testing::TempDir() + "/alone.bin", saved_shared = ::testing::TempDir() + "/shared.bin";
  auto run = [&](int which, std::shared_ptr<SinkBlocks> blocks, uint64_t* bytes) {
    Session s(model, Small());
    s.SetSinkBlocks(blocks);
    s.SetToolsJson(testing::kFiveTools);
    s.SetSystem(ordered_json{{"date", "2026-11-30"}});
    std::string out;
    for (int i = 0; i < 4; ++i) {
      if (i == 2) s.Reset();
      Envelope e = s.Query(queries[(which + i) % 4]);
      out += e.reasoning + ordered_json(e.function_calls).dump() + std::to_string(e.confidence.value_or(-1.0)) + "\n";
      if (e.type == EnvelopeType::kCall) {
        e = s.Complete(R"({"ok":true})");
        out += e.reasoning + ordered_json(e.function_calls).dump() + "\n";
      }
    }
    if (bytes) {  // session 0: its size, and its whole state (cache, confidence pool) saved
      *bytes = s.state_bytes();
      s.Save(blocks ? saved_shared : saved_alone);
    }
    return out;
  };
  std::string alone[4], shared[4];
  uint64_t own_bytes = 0, shared_bytes = 0;
  for (int i = 0; i < 4; ++i) alone[i] = run(i, nullptr, i == 0 ? &own_bytes : nullptr);
  auto blocks = std::make_shared<SinkBlocks>(2);
  std::thread ts[4];
  for (int i = 0; i < 4; ++i) ts[i] = std::thread([&, i] { shared[i] = run(i, blocks, i == 0 ? &shared_bytes : nullptr); });
  for (auto& t : ts) t.join();
  for (int i = 0; i < 4; ++i) EXPECT_EQ(shared[i], alone[i]) << i;
  const SinkBlocks::Stats st = blocks->stats();
  EXPECT_GT(st.hits, 0u);
  EXPECT_GE(st.builds, 1u);
  EXPECT_LE(st.blocks, 2u);
  EXPECT_LT(shared_bytes, own_bytes);
  auto slurp = [](const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  };
  EXPECT_EQ(slurp(saved_shared), slurp(saved_alone)) << "the same cache and confidence pool, byte for byte";

  const std::string path = ::testing::TempDir() + "/shared_session.bin";
  Session a(model, Small());
  a.SetSinkBlocks(blocks);
  a.SetToolsJson(testing::kFiveTools);
  a.Query("play some fado");
  a.Save(path);
  const Envelope want = a.Query("now the weather in Porto");
  Session b(model, Small());
  b.Restore(path);
  const Envelope got = b.Query("now the weather in Porto");
  EXPECT_EQ(got.reasoning, want.reasoning);
  EXPECT_EQ(ordered_json(got.function_calls).dump(), ordered_json(want.function_calls).dump());
  EXPECT_THROW(SinkBlocks(0), Error);
}

// Options change between turns through the table's checks; a creation option
// cannot change, and a rejected change changes nothing.
TEST(Session, SetOptionsAppliesFromTheNextTurnAndRefusesCreationOptions) {
  auto model = testing::AgentModel(3);
  Session s(model, Small());
  s.SetToolsJson(testing::kFiveTools);
  SessionOptions o = s.options();
  o.reasoning_beams = 1, o.copy_bias = 0.0f, o.max_new_tokens = 40;
  s.SetOptions(o);
  EXPECT_EQ(s.options().reasoning_beams, 1u);
  ExpectWellFormed(s.Query("turn the lights on"));
  // The same options give the same turn as a session created with them.
  Session fresh(model, o);
  fresh.SetToolsJson(testing::kFiveTools);
  s.Reset();
  const Envelope a = s.Query("set a timer for five minutes"), b = fresh.Query("set a timer for five minutes");
  EXPECT_EQ(a.reasoning, b.reasoning);
  EXPECT_EQ(ordered_json(a.function_calls).dump(), ordered_json(b.function_calls).dump());
  SessionOptions bad = s.options();
  bad.threads = 2;
  bad.reasoning_beams = 3;
  try {
    s.SetOptions(bad);
    ADD_FAILURE() << "threads changed after creation";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("option threads is fixed when the session is created"), std::string::npos) << e.what();
  }
  bad = s.options();
  bad.reasoning_beams = 9;
  EXPECT_THROW(s.SetOptions(bad), Error);
  EXPECT_EQ(s.options().reasoning_beams, 1u);
}

}  // namespace
}  // namespace needle
