// Round-to-nearest-even of a float to an integer-valued float, inline: the
// int8 quantizers call this per value, and std::lrint is an out-of-line libm
// call on baseline x86-64. Exactly lrint's result (default rounding mode) for
// |x| < 2^22, which covers every quantizer input (|x| <= 127.5).
#pragma once

namespace needle {

inline float RoundHalfEven(float x) {
  // Adding 1.5 * 2^23 pushes the fraction bits out; the FPU rounds to even.
  // (IEEE semantics: the build never uses -ffast-math, which could fold this.)
  constexpr float kMagic = 12582912.0f;
  return (x + kMagic) - kMagic;
}

}  // namespace needle
