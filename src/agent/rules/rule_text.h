// Small readers of the call being written, shared by the call's rules.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <utility>
#include <vector>

#include "grammar/matcher.h"      // GrammarMatcher
#include "io/tokenizer_blob.h"  // kToolCallEndId
#include "text/tokenizer.h"

namespace needle::rules {

// ASCII case-insensitive equality.
bool EqualFolded(std::string_view a, std::string_view b);

// Where a calls array written so far (`[{"name": ..., "arguments": {...}}, ...`)
// stands: `values` gets the (key, string value) pairs of the last call's
// arguments (direct ones, as written: escapes kept); returns whether an
// argument's value comes next or is being written as a string (then
// `content` is what the string holds so far, `key` the argument's key).
bool ArgumentValuesSoFar(std::string_view calls, std::vector<std::pair<std::string_view, std::string_view>>& values,
                         std::string_view* content, std::string_view* key);

// The node of the string value being written when it is a free one (no
// enum, format or pattern); -1 otherwise. *opened: its quote is written.
int32_t OpenFreeString(const grammar::GrammarMatcher& matcher, bool* opened);

// out = the tokens of `allowed` (but </tool_call>) whose bytes `keep`
// accepts; returns whether any is.
template <typename Keep>
bool MarkTokens(const Tokenizer& tok, std::span<const uint32_t> allowed, std::span<uint32_t> out, Keep keep) {
  bool any = false;
  for (size_t w = 0; w < allowed.size(); ++w) {
    uint32_t kept = 0;
    for (uint32_t bits = allowed[w]; bits; bits &= bits - 1) {
      const int32_t id = int32_t(w * 32 + __builtin_ctz(bits));
      if (id != int32_t(kToolCallEndId) && keep(tok.TokenBytes(id))) kept |= bits & (0u - bits);
    }
    out[w] = kept;
    any |= kept != 0;
  }
  return any;
}

}  // namespace needle::rules
