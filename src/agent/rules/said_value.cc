// Inside a `format: date / time / date-time` string (or one whose description
// names the layout), a currency or language code, an identifier after a
// lookup, or a number with a declared unit: the values the conversation says
// in that form ("September 6, 2025" -> 2025-09-06, "5 minutes" -> 300 into
// seconds, "euros" -> EUR) get the option's bonus. The small model rewrites
// them digit by digit and gets them wrong.
#include <algorithm>

#include "agent/rules/rule_text.h"
#include "agent/rules/rules.h"
#include "agent/turn_evidence.h"

namespace needle::rules {
namespace {

bool IsNumberByte(char c) { return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'; }

}  // namespace

void SaidValue::Apply(CallView& view, CallStep& step) {
  bool opened = false;
  int32_t node = date_time_bias_ > 0.0f || record_id_bias_ > 0.0f ? view.matcher.OpenString(&opened) : -1;
  const bool number = node < 0;
  if (number) node = quantity_bias_ > 0.0f ? view.matcher.OpenNumber() : -1;
  if (node < 0) return;
  const std::vector<std::string>* values = view.evidence.SaidValues(uint32_t(node));
  if (!values) return;
  const float bias = number ? quantity_bias_ : view.evidence.IsRecordId(values) ? record_id_bias_ : date_time_bias_;
  if (bias <= 0.0f) return;
  // The value so far: a number's bytes end the call so far; a string's
  // content follows the call's last quote (dates and times hold no quotes).
  const std::string_view call = view.call;
  std::string_view content;
  if (number) {
    size_t start = call.size();
    while (start > 0 && IsNumberByte(call[start - 1])) --start;
    content = call.substr(start);
  } else if (opened) {
    const size_t q = call.rfind('"');
    if (q == std::string_view::npos) return;
    content = call.substr(q + 1);
  }
  const bool any = MarkTokens(view.tok, step.allowed(), keep_, [&](std::string_view piece) {
    if (!number && !opened) {
      if (piece.empty() || piece[0] != '"') return false;
      piece.remove_prefix(1);
    }
    // The token's part of the value, and whether the value ends within it.
    size_t end = 0;
    if (number) {
      while (end < piece.size() && IsNumberByte(piece[end])) ++end;
    } else {
      end = std::min(piece.find('"'), piece.size());
    }
    const bool ends = end < piece.size();
    const std::string_view head = piece.substr(0, end);
    for (const std::string& v : *values) {
      // content + head must be a prefix of v, and all of v where the token ends the value.
      if (content.size() + head.size() > v.size() || v.compare(0, content.size(), content) != 0 ||
          v.compare(content.size(), head.size(), head) != 0) {
        continue;
      }
      if (!ends || content.size() + head.size() == v.size()) return true;
    }
    return false;
  });
  if (any) step.AddBonus(keep_, bias);
}

}  // namespace needle::rules
