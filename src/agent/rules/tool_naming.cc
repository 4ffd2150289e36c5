// Naming a call: each token that starts or continues a tool's name gets
// tool_score_bias x (the best ranking score among the tools it still fits -
// the best score overall), so the tool the retrieval ranking prefers (the
// contrastive head's cosine plus the words the request shares with the
// schema) is preferred when the model is unsure. Refusing — a token with
// ']' before any call is named: the grammar admits one there only as the
// close of an empty calls array — gets the turn's refusal bias (a top-ranked
// tool makes refusing costly; no similar tool at all makes it cheaper).
#include <algorithm>
#include <cmath>

#include "agent/rules/rules.h"
#include "io/tokenizer_blob.h"  // kToolCallEndId
#include "text/tokenizer.h"

namespace needle::rules {

void ToolNaming::Apply(CallView& view, CallStep& step) {
  if (view.name_scores.empty() || !view.matcher.BeforeOrInName()) return;
  float best = -INFINITY;
  for (float s : view.name_scores) best = std::max(best, s);
  const std::vector<uint32_t>& tool_of_rank = view.matcher.grammar().tool_of_rank;
  const std::span<const uint32_t> allowed = step.allowed();
  for (size_t w = 0; w < allowed.size(); ++w) {
    for (uint32_t bits = allowed[w]; bits; bits &= bits - 1) {
      const int32_t id = int32_t(w * 32 + __builtin_ctz(bits));
      if (id == int32_t(kToolCallEndId)) continue;
      const std::string_view bytes = view.tok.TokenBytes(id);
      uint32_t lo = 0, hi = 0;
      if (view.matcher.NameCandidates(bytes, &lo, &hi)) {
        float fit = -INFINITY;
        for (uint32_t r = lo; r < hi && r < tool_of_rank.size(); ++r) fit = std::max(fit, view.name_scores[tool_of_rank[r]]);
        if (fit > -INFINITY) step.AddBias(id, bias_ * (fit - best));
      } else if (view.refusal_bias != 0.0f && bytes.find(']') != std::string_view::npos) {
        step.AddBias(id, view.refusal_bias);
      }
    }
  }
}

}  // namespace needle::rules
