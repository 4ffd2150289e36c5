// Argument text copied from the conversation (requests, tool results, facts,
// pins, and what they say in other forms: "fifty seven" -> 57): small models
// garble the values they copy, and most plain values are copies. The tokens
// that keep the open string or number a copy (grammar::CopySource) get
// copy_bias; INFINITY makes it a rule: a copy whenever one fits. With
// exact_case, among those the tokens that keep the value in the case a
// recent text writes it ("GOOGL", not "GoOGL").
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
  if (exact_case_) {
    if (bool opened = false; view.matcher.OpenString(&opened) >= 0 && opened) {
      const size_t quote = view.call.rfind('"');
      if (quote != std::string_view::npos) view.evidence.KeepExactCase(view.tok, view.call.substr(quote + 1), '"', copy_);
    }
  }
  step.AddBonus(copy_, bias_);
}

}  // namespace needle::rules
