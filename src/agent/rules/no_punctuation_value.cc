// Format guarantee: a free string value (no enum, format or pattern) never
// starts with JSON punctuation — { } [ ] : , or a backslash — so no value is
// made of the punctuation around it (":{}},{", "]]"), whatever the model
// prefers. Decided while the value holds nothing but spaces; the closing
// quote (an empty value) stays allowed.
#include "agent/rules/rule_text.h"
#include "agent/rules/rules.h"

namespace needle::rules {
namespace {

bool IsJsonPunctuation(char c) {
  return c == '{' || c == '}' || c == '[' || c == ']' || c == ':' || c == ',' || c == '\\';
}

}  // namespace

void NoPunctuationValue::Apply(CallView& view, CallStep& step) {
  bool opened = false;
  if (OpenFreeString(view.matcher, &opened) < 0) return;
  if (opened) {
    // Only while the value is empty or spaces: the call so far ends in its quote and spaces.
    const size_t last = view.call.find_last_not_of(' ');
    if (last == std::string_view::npos || view.call[last] != '"') return;
  }
  const bool any = MarkTokens(view.tok, step.allowed(), keep_, [&](std::string_view piece) {
    if (!opened) {
      if (piece.empty() || piece[0] != '"') return true;
      piece.remove_prefix(1);
    }
    const size_t first = piece.find_first_not_of(' ');
    return first == std::string_view::npos || !IsJsonPunctuation(piece[first]);
  });
  if (any) step.Restrict(keep_);
}

}  // namespace needle::rules
