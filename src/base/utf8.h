// Strict UTF-8 validation (RFC 3629: no overlong forms, no surrogates, nothing
// above U+10FFFF) for text that enters a turn: bytes that are not text must be
// named as such, not tokenised into a call that says nothing.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace needle {

inline constexpr size_t kValidUtf8 = std::string_view::npos;

// The offset of the first byte that does not start or continue a valid
// sequence, or kValidUtf8.
size_t FirstInvalidUtf8(std::string_view text);

// Throws Error(kInvalidArgument) naming `what` and the offending byte when
// `text` is not valid UTF-8 or holds a NUL (a C caller's string would end
// there, so the two would read different texts).
void CheckText(std::string_view text, const std::string& what);

}  // namespace needle
