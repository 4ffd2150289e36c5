#include "agent/call_rules.h"

#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "agent/session.h"  // SessionOptions

namespace needle {
namespace {

// The confidence's call probability is the decoder's: the bonus that made a
// token win counts as the decoder's preference, not as the model's doubt.
TEST(CallStep, LogProbIsTheFinalDistribution) {
  const std::vector<float> logits = {0.0f, 0.0f, 0.0f, 5.0f, 1.0f};
  CallStep step;
  step.Prepare(logits.size(), 1);
  step.Begin(logits);
  step.allowed()[0] = 0b00111u;  // tokens 0-2 (3 and 4 masked out by the grammar)
  EXPECT_NEAR(step.LogProb(2), std::log(1.0 / 3), 1e-9);
  EXPECT_EQ(step.LogProb(3), -INFINITY);
  const std::vector<uint32_t> bonus = {0b00100u};
  step.AddBonus(bonus, float(std::log(2.0)));
  EXPECT_NEAR(step.LogProb(2), std::log(0.5), 1e-6);
  EXPECT_NEAR(step.LogProb(0), std::log(0.25), 1e-6);
  EXPECT_EQ(step.Argmax(), 2);
  // Several rules on one step: their bonuses add up.
  step.AddBias(0, float(std::log(4.0)));
  EXPECT_NEAR(step.LogProb(0), std::log(4.0 / 7), 1e-6);
  EXPECT_EQ(step.Argmax(), 0);
  // An infinite bonus keeps only its tokens.
  step.AddBonus(bonus, INFINITY);
  EXPECT_EQ(step.allowed()[0], 0b00100u);
  EXPECT_NEAR(step.LogProb(2), 0.0, 1e-12);
}

TEST(CallStep, RestrictNeverEmptiesTheStep) {
  const std::vector<float> logits(64, 0.0f);
  CallStep step;
  step.Prepare(logits.size(), 2);
  step.Begin(logits);
  step.allowed()[0] = 0b1010u;
  const std::vector<uint32_t> none = {0b0101u, 0u};
  EXPECT_FALSE(step.Restrict(none));
  EXPECT_EQ(step.allowed()[0], 0b1010u);
  const std::vector<uint32_t> some = {0b1000u, 0u};
  EXPECT_TRUE(step.Restrict(some));
  EXPECT_EQ(step.allowed()[0], 0b1000u);
  EXPECT_EQ(step.Argmax(), 3);
}

TEST(CallStep, BeginClearsTheBiases) {
  const std::vector<float> logits = {1.0f, 0.0f};
  CallStep step;
  step.Prepare(logits.size(), 1);
  step.Begin(logits);
  step.allowed()[0] = 0b11u;
  step.AddBias(1, 5.0f);
  EXPECT_EQ(step.Argmax(), 1);
  step.Begin(logits);
  step.allowed()[0] = 0b11u;
  EXPECT_EQ(step.Argmax(), 0);
  EXPECT_FLOAT_EQ(step.Score(1), 0.0f);
}

// The options pick the chain's links; the format guarantees are always there.
TEST(CallRuleChain, BuiltFromTheOptions) {
  SessionOptions o;
  const std::vector<std::string_view> all = MakeCallRules(o).names();
  const std::vector<std::string_view> want = {"no_punctuation_value", "distinct_required_values", "number_as_written",
                                              "said_value",           "copy_value",               "enum_words",
                                              "tool_naming"};
  EXPECT_EQ(all, want);
  o.copy_bias = 0.0f, o.enum_word_bias = 0.0f, o.tool_score_bias = 0.0f, o.distinct_argument_values = false;
  o.date_time_bias = 0.0f, o.quantity_bias = 0.0f, o.record_id_bias = 0.0f;
  const std::vector<std::string_view> least = {"no_punctuation_value", "number_as_written"};
  EXPECT_EQ(MakeCallRules(o).names(), least);
}

}  // namespace
}  // namespace needle
