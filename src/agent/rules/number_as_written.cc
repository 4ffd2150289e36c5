// Format guarantee: a number argument is written in plain decimal notation
// unless the conversation writes a number with an exponent itself ("9e+44"
// is a value no request gave). (The grammar admits an exponent only in
// numbers without bounds; the sign and decimals of a number the request
// writes are kept by the copy rule and by KeepWrittenSigns.)
#include "agent/rules/rule_text.h"
#include "agent/rules/rules.h"
#include "agent/turn_evidence.h"

namespace needle::rules {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

}  // namespace

void NumberAsWritten::Apply(CallView& view, CallStep& step) {
  // (Whether the texts write an exponent is read once per turn, by TurnEvidence.)
  if (view.matcher.OpenNumber() < 0 || view.evidence.exponent_written()) return;
  const bool any = MarkTokens(view.tok, step.allowed(), keep_, [](std::string_view piece) {
    // (Only the token's bytes that go on writing the number: "," ends it, and
    // a key after it may hold an e.)
    for (char c : piece) {
      if (c == 'e' || c == 'E') return false;
      if (!IsDigit(c) && c != '.' && c != '-' && c != '+') break;
    }
    return true;
  });
  bool exponent_allowed = false;  // some allowed token writes one
  for (size_t w = 0; w < keep_.size() && !exponent_allowed; ++w) exponent_allowed = keep_[w] != step.allowed()[w];
  if (any && exponent_allowed) step.Restrict(keep_);
}

}  // namespace needle::rules
