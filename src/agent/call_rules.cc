#include "agent/call_rules.h"

#include <algorithm>
#include <cmath>

#include "agent/rules/rules.h"
#include "agent/session.h"  // SessionOptions

namespace needle {

void CallStep::Prepare(size_t vocab, size_t words) {
  allowed_.assign(words, 0);
  biased_.assign(words, 0);
  bias_.assign(std::max(vocab, words * 32), 0.0f);
}

void CallStep::Begin(std::span<const float> logits) {
  logits_ = logits;
  std::fill(allowed_.begin(), allowed_.end(), 0u);
  for (size_t w = 0; w < biased_.size(); ++w) {
    for (uint32_t bits = biased_[w]; bits; bits &= bits - 1) bias_[w * 32 + size_t(__builtin_ctz(bits))] = 0.0f;
    biased_[w] = 0;
  }
  can_close = false;
}

bool CallStep::Restrict(std::span<const uint32_t> keep) {
  bool any = false;
  for (size_t w = 0; w < allowed_.size() && !any; ++w) any = (allowed_[w] & keep[w]) != 0;
  if (!any) return false;
  for (size_t w = 0; w < allowed_.size(); ++w) allowed_[w] &= keep[w];
  return true;
}

void CallStep::AddBonus(std::span<const uint32_t> tokens, float bias) {
  if (std::isinf(bias) && bias > 0.0f) {
    Restrict(tokens);
    return;
  }
  for (size_t w = 0; w < allowed_.size(); ++w) {
    for (uint32_t bits = allowed_[w] & tokens[w]; bits; bits &= bits - 1) AddBias(int32_t(w * 32 + __builtin_ctz(bits)), bias);
  }
}

void CallStep::AddBias(int32_t id, float bias) {
  if (id < 0 || size_t(id) >= bias_.size()) return;
  bias_[size_t(id)] += bias;
  biased_[size_t(id) >> 5] |= 1u << (id & 31);
}

int32_t CallStep::Argmax() const {
  int32_t best = -1;
  float best_v = -INFINITY;
  for (size_t w = 0; w < allowed_.size(); ++w) {
    for (uint32_t bits = allowed_[w]; bits; bits &= bits - 1) {
      const int32_t id = int32_t(w * 32 + __builtin_ctz(bits));
      if (size_t(id) >= logits_.size()) continue;
      const float v = Score(id);
      if (v > best_v) best_v = v, best = id;
    }
  }
  return best;
}

double CallStep::LogProb(int32_t chosen) const {
  if (!IsAllowed(chosen)) return -INFINITY;
  const double top = Score(chosen);
  double z = 0.0;
  for (size_t w = 0; w < allowed_.size(); ++w) {
    for (uint32_t bits = allowed_[w]; bits; bits &= bits - 1) {
      const size_t j = w * 32 + size_t(__builtin_ctz(bits));
      if (j < logits_.size()) z += std::exp(double(Score(int32_t(j))) - top);
    }
  }
  return -std::log(z);
}

CallRuleChain MakeCallRules(const SessionOptions& o) {
  // The order is the precedence: a rule that keeps only some tokens (an
  // infinite bonus) narrows what the rules after it see. Exclusions first
  // (they hold for any value), then the value rules from the most specific
  // (a value the conversation says in the argument's own format) to the most
  // general (a copy of the conversation's text), then the naming preference.
  CallRuleChain chain;
  chain.Add(std::make_unique<rules::NoPunctuationValue>());
  if (o.distinct_argument_values) chain.Add(std::make_unique<rules::DistinctRequiredValues>());
  chain.Add(std::make_unique<rules::NumberAsWritten>());
  if (o.date_time_bias > 0.0f || o.quantity_bias > 0.0f || o.record_id_bias > 0.0f) {
    chain.Add(std::make_unique<rules::SaidValue>(o.date_time_bias, o.quantity_bias, o.record_id_bias));
  }
  if (o.copy_bias > 0.0f) chain.Add(std::make_unique<rules::CopyValue>(o.copy_bias));
  if (o.enum_word_bias > 0.0f) chain.Add(std::make_unique<rules::EnumWords>(o.enum_word_bias));
  if (o.tool_score_bias > 0.0f) chain.Add(std::make_unique<rules::ToolNaming>(o.tool_score_bias));
  return chain;
}

}  // namespace needle
