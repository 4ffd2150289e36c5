// Inside an enum value: the values sharing the most words with the request
// (LexicalScores over the enum's values; nothing when no value shares a word,
// or all share as many) get enum_word_bias: "a delicates cycle" ->
// "delicates", "normal priority" -> "PRIORITY_NORMAL". The small model picks
// the wrong one of a few declared values it never saw in training.
#include "agent/retrieval.h"  // LexicalTerms, LexicalScores
#include "agent/rules/rule_text.h"
#include "agent/rules/rules.h"

namespace needle::rules {

void EnumWords::SetTools(const grammar::ToolGrammar& g) {
  terms_.clear(), favoured_.clear();
  for (uint32_t node = 0; node < g.nodes.size(); ++node) {
    const grammar::Node& n = g.nodes[node];
    if (n.kind != grammar::NodeKind::kLiteral) continue;
    std::vector<std::vector<std::string>> terms(n.values.size());
    bool any = false;
    for (size_t v = 0; v < n.values.size(); ++v) {
      if (n.values[v].is_string()) terms[v] = LexicalTerms(n.values[v].get_ref<const std::string&>()), any = true;
    }
    if (any) terms_.emplace_back(node, std::move(terms));
  }
}

void EnumWords::BeginRequest(const grammar::ToolGrammar& g, std::span<const std::string> request_terms) {
  favoured_.clear();
  const std::vector<std::string> request(request_terms.begin(), request_terms.end());
  for (const auto& [node, terms] : terms_) {
    const grammar::Node& n = g.nodes[node];
    const std::vector<float> scores = LexicalScores(request, terms);
    float lo = INFINITY, hi = -INFINITY;
    for (float x : scores) lo = std::min(lo, x), hi = std::max(hi, x);
    if (!(hi > 0.0f && hi > lo)) continue;  // no value shares a word, or all share as many
    std::vector<uint8_t> favoured(n.value_of_rank.size(), 0);
    for (size_t r = 0; r < favoured.size(); ++r) favoured[r] = scores[n.value_of_rank[r]] == hi;
    favoured_.emplace(node, std::move(favoured));
  }
}

void EnumWords::Apply(CallView& view, CallStep& step) {
  const int32_t node = view.matcher.OpenLiteral();
  if (node < 0) return;
  const auto it = favoured_.find(uint32_t(node));
  if (it == favoured_.end()) return;
  const std::vector<uint8_t>& favoured = it->second;
  const bool any = MarkTokens(view.tok, step.allowed(), keep_, [&](std::string_view piece) {
    uint32_t lo = 0, hi = 0;
    if (!view.matcher.LiteralCandidates(piece, &lo, &hi)) return false;
    for (uint32_t r = lo; r < hi && r < favoured.size(); ++r)
      if (favoured[r]) return true;
    return false;
  });
  if (any) step.AddBonus(keep_, bias_);
}

}  // namespace needle::rules
