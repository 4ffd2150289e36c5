// A free string argument (no enum, format or pattern) is never a lone
// function word: unsure of a span, the model closes the value after one
// ("find flights from Boston to Denver" -> origin "to"). The closing quote is
// removed where the value would be one (unless nothing else is allowed).
#include <algorithm>
#include <cstring>

#include "agent/rules/rule_text.h"
#include "agent/rules/rules.h"
#include "agent/session.h"  // IsFunctionWordValue
#include "grammar/copy_source.h"
#include "text/stop_words.h"

namespace needle {

bool IsFunctionWordValue(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || !grammar::CopySource::IsWordByte(uint8_t(v.front())))) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || !grammar::CopySource::IsWordByte(uint8_t(v.back())))) v.remove_suffix(1);
  if (v.empty() || v.size() > 6) return false;
  // In capitals it is a code ("US", "IT", "IN", "OR", "A"), not a function word.
  if (std::none_of(v.begin(), v.end(), [](char c) { return c >= 'a' && c <= 'z'; })) return false;
  return text::IsNeverAValue(v);
}

namespace rules {

void NoFunctionWordValue::Apply(CallView& view, CallStep& step) {
  bool opened = false;
  if (OpenFreeString(view.matcher, &opened) < 0) return;
  // Only a value of at most 8 bytes so far can still close as a function
  // word: past that, skip the scan of the call (the bytes after the last
  // quote are part of the open value, so more than 8 of them settle it).
  if (opened) {
    const size_t quote = view.call.rfind('"');
    if (quote != std::string_view::npos && view.call.size() - quote - 1 > 8) return;
  }
  std::string_view content, key;
  if (!ArgumentValuesSoFar(view.call, written_, &content, &key)) return;
  if (content.size() > 8) return;
  const bool any = MarkTokens(view.tok, step.allowed(), keep_, [&](std::string_view piece) {
    if (!opened) {
      if (piece.empty() || piece[0] != '"') return true;
      piece.remove_prefix(1);
    }
    const size_t quote = piece.find('"');
    if (quote == std::string_view::npos) return true;  // the value goes on
    if (content.size() + quote > 8) return true;
    char value[16];  // (no allocation per token)
    if (!content.empty()) std::memcpy(value, content.data(), content.size());
    if (quote > 0) std::memcpy(value + content.size(), piece.data(), quote);
    return !IsFunctionWordValue(std::string_view(value, content.size() + quote));
  });
  if (any) step.Restrict(keep_);
}

}  // namespace rules
}  // namespace needle
