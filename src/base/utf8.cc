#include "base/utf8.h"

#include <cstdio>

#include "base/error.h"

namespace needle {

size_t FirstInvalidUtf8(std::string_view text) {
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80) {
      ++i;
      continue;
    }
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF;  // the range of the second byte
    if (c >= 0xC2 && c <= 0xDF) {
      len = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
      len = 3;
      if (c == 0xE0) lo = 0xA0;  // overlong
      if (c == 0xED) hi = 0x9F;  // surrogates
    } else if (c >= 0xF0 && c <= 0xF4) {
      len = 4;
      if (c == 0xF0) lo = 0x90;  // overlong
      if (c == 0xF4) hi = 0x8F;  // above U+10FFFF
    } else {
      return i;  // a continuation byte, C0/C1 or F5..FF as a lead
    }
    if (i + 1 >= n || p[i + 1] < lo || p[i + 1] > hi) return i;
    for (size_t k = 2; k < len; ++k) {
      if (i + k >= n || (p[i + k] & 0xC0) != 0x80) return i;
    }
    i += len;
  }
  return kValidUtf8;
}

void CheckText(std::string_view text, const std::string& what) {
  if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
    throw Error(ErrorCode::kInvalidArgument, what + " holds a NUL byte at offset " + std::to_string(nul));
  }
  if (const size_t bad = FirstInvalidUtf8(text); bad != kValidUtf8) {
    char byte[8];
    std::snprintf(byte, sizeof byte, "0x%02X", static_cast<unsigned>(static_cast<unsigned char>(text[bad])));
    throw Error(ErrorCode::kInvalidArgument,
                what + " is not valid UTF-8 (byte " + byte + " at offset " + std::to_string(bad) + ")");
  }
}

}  // namespace needle
