// Naming the call (session.cc's naming scores, turn_stages.cc's
// PrepareNaming): the retrieval ranking, the refusal penalty and bonus, and
// the penalty on a tool needing an identifier nobody said.
#include "agent/session.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "agent/testing/session_testing.h"
#include "io/tokenizer_blob.h"  // kThinkEndId, kToolCallId

namespace needle {
namespace {

using testing::Small;

// A tool that needs an identifier the conversation does not hold loses the
// naming push to the others (the lookup); once one is said, it is named.
TEST(Session, AToolNeedingAnUnsaidIdentifierIsNotTheRequestsCall) {
  const char* tools = R"([{"name":"play_track","description":"play a track by id",
      "parameters":{"type":"object","properties":{"track_id":{"type":"string"}},"required":["track_id"]}},
      {"name":"search_music","description":"search the catalogue",
      "parameters":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}])";
  for (uint64_t seed : {3, 5}) {
    for (const char* request : {"play the track Volare", "play the track trk_51b9e7"}) {
      for (float penalty : {0.0f, SessionOptions{}.unsaid_id_penalty}) {
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
