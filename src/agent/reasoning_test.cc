// The reasoning (reasoning.cc, plan_spans.cc): its head names a declared
// tool, its spans copy the conversation and do not repeat, and the beam
// search finds plans greedy decoding misses.
#include "agent/session.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "agent/testing/session_testing.h"
#include "grammar/copy_source.h"  // CopySource::IsWordByte

namespace needle {
namespace {

using nlohmann::ordered_json;
using testing::DefaultModelSession;
using testing::Small;

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

// The reasoning's beam search (reasoning_beams) finds the plan greedy
// decoding misses: greedy commits to its first words, plans that the pet
// camera "needs navigation" and refuses; two hypotheses find the snapshot.
TEST(Session, TheReasoningBeamsFindThePlanGreedyMisses) {
  if (Model::Embedded().empty()) GTEST_SKIP() << "built without the default model";
  const char* tools = R"([{"name":"petCamSnapshot","description":"Take a picture with the pet camera.",
      "parameters":{"type":"object","properties":{},"required":[]}},
      {"name":"dispense_pet_food","description":"Release food from the automatic pet feeder.","parameters":{"type":"object",
      "properties":{"portions":{"type":"integer","description":"Number of portions","minimum":1,"maximum":5}},"required":["portions"]}},
      {"name":"run_irrigation","description":"Water a garden zone for some minutes.","parameters":{"type":"object",
      "properties":{"zone":{"type":"string","description":"Zone name, e.g. 'front lawn'"},
      "duration_min":{"type":"integer","description":"How long to water"}},"required":["zone","duration_min"]}}])";
  std::vector<Envelope> got;
  for (uint32_t beams : {1u, 2u}) {
    SessionOptions o;
    o.reasoning_beams = beams;
    got.push_back(DefaultModelSession(o, tools)->Query("show me what the dog is doing"));
  }
  EXPECT_EQ(got[0].type, EnvelopeType::kRefuse) << got[0].Dump();  // (greedy; the search is what changes it)
  ASSERT_EQ(got[1].type, EnvelopeType::kCall) << got[1].Dump();
  EXPECT_EQ(got[1].function_calls, nlohmann::ordered_json::parse(R"([{"name":"petCamSnapshot","arguments":{}}])")) << got[1].Dump();
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
    for (const char* turn : {"dim the kitchen lights to 30 percent", R"({"kitchen":"dimmed to 30%"})", "set a timer for 20 minutes"}) {
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

}  // namespace
}  // namespace needle
