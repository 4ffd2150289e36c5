// A required one-word string argument does not repeat another required
// argument's value in the same call: the model writes "USD" as both
// currencies of a conversion, the street as the city. Decided as the value
// starts: tokens that would start it with the whole of an earlier required
// one-word value, or a piece of it, are removed (unless none would remain).
// Optional arguments are left alone: one that repeats a value is dropped from
// the envelope (DropEchoedArguments), which beats a made-up other value.
#include <algorithm>

#include "agent/rules/rule_text.h"
#include "agent/rules/rules.h"
#include "agent/turn_evidence.h"
#include "grammar/copy_source.h"

namespace needle::rules {
namespace {

bool IsOneWord(std::string_view v) {
  if (v.empty()) return false;
  for (char c : v) {
    if (!grammar::CopySource::IsWordByte(uint8_t(c))) return false;
  }
  return true;
}

}  // namespace

void DistinctRequiredValues::Apply(CallView& view, CallStep& step) {
  bool opened = false;
  const int32_t node = view.matcher.OpenString(&opened);
  if (node < 0) return;
  if (opened) {
    // Decided as the value starts (its quote, maybe spaces, end the call so
    // far): once it has content, nothing to scan on each further token.
    const size_t last = view.call.find_last_not_of(' ');
    if (last == std::string_view::npos || view.call[last] != '"') return;
  }
  const grammar::ToolGrammar& g = view.matcher.grammar();
  const grammar::Node& n = g.nodes[size_t(node)];
  if (!n.format.empty() || !n.pattern.empty()) return;  // (dates, times, codes: the value rules' or the pattern's)
  // (A currency or language code is not repeated either: "from USD to USD".)
  const std::string_view described = view.evidence.DescribedFormat(uint32_t(node));
  if (!described.empty() && described != "currency-code" && described != "language-code") return;
  std::string_view content, key;
  if (!ArgumentValuesSoFar(view.call, written_, &content, &key) || written_.empty()) return;
  if (content.find_first_not_of(' ') != std::string_view::npos) return;  // (decided as the value starts)
  const int32_t tool = view.matcher.NamedTool();
  if (tool < 0) return;
  const grammar::Node& args = g.nodes[g.tools()[size_t(tool)].args];
  auto required = [&](std::string_view k) {
    const auto at = std::find(args.prop_names.begin(), args.prop_names.end(), k);
    const size_t i = size_t(at - args.prop_names.begin());
    return at != args.prop_names.end() && i < 64 && ((args.required >> i) & 1);
  };
  if (!required(key)) return;
  const bool any = MarkTokens(view.tok, step.allowed(), keep_, [&](std::string_view piece) {
    if (!opened) {
      if (piece.empty() || piece[0] != '"') return true;
      piece.remove_prefix(1);
    }
    std::string_view head = piece.substr(0, std::min(piece.find('"'), piece.size()));
    while (!head.empty() && head[0] == ' ') head.remove_prefix(1);
    if (head.empty()) return true;
    for (const auto& [k, value] : written_) {
      // (As the envelope will hold it: trimmed.)
      std::string_view v = value;
      while (!v.empty() && v.front() == ' ') v.remove_prefix(1);
      while (!v.empty() && v.back() == ' ') v.remove_suffix(1);
      if (!IsOneWord(v) || !required(k)) continue;
      // The value would start with the earlier one-word value ("USD"), or a piece of it.
      if (head.size() <= v.size() ? EqualFolded(head, v.substr(0, head.size()))
                                  : EqualFolded(head.substr(0, v.size()), v) && !grammar::CopySource::IsWordByte(uint8_t(head[v.size()]))) {
        return false;
      }
    }
    return true;
  });
  if (any) step.Restrict(keep_);
}

}  // namespace needle::rules
