// Argument text copied from the conversation (requests, tool results, facts,
// pins, and what they say in other forms: "fifty seven" -> 57): small models
// garble the values they copy, and most plain values are copies. The tokens
// that keep the open string or number a copy (grammar::CopySource) get
// copy_bias; INFINITY makes it a rule: a copy whenever one fits. (Keeping
// the case a text writes was a rule until 2026-12-04: it helped no blind set;
// docs/agent.md.)
#include <cmath>

#include "agent/rules/rules.h"
#include "agent/turn_evidence.h"

namespace needle::rules {

void CopyValue::Apply(CallView& view, CallStep& step) {
  if (!view.matcher.ComputeCopyMask(copy_)) return;
  const std::span<const uint32_t> allowed = step.allowed();
  bool copying = false;
  for (size_t w = 0; w < copy_.size(); ++w) copying |= (copy_[w] &= allowed[w]) != 0;
  if (!copying) return;
  step.AddBonus(copy_, bias_);
}

}  // namespace needle::rules
