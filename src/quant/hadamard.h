// The normalised Walsh–Hadamard transform (Sylvester order), applied as a fast
// in-place butterfly: n log n adds, no stored matrix. W_n is orthonormal and
// symmetric, so it is its own inverse.
#pragma once

#include <cstddef>

namespace needle {

inline bool IsPowerOfTwo(size_t n) { return n != 0 && (n & (n - 1)) == 0; }
size_t NextPowerOfTwo(size_t n);  // smallest power of two >= n (1 for n = 0)

// x[0..n) <- x · W_n with W_n normalised by 1/sqrt(n). n must be a power of two.
void FastWalshHadamard(float* x, size_t n);

// FastWalshHadamard of `blocks` consecutive blocks of 128 from `in` into
// `out` (which may be `in`): the per-group rotation W_128 of CQ activations.
void FastWalshHadamard128Blocks(const float* in, float* out, size_t blocks);

// Unnormalised butterflies only (x <- x · H_n, entries ±1); callers fold the
// 1/sqrt(n) into a later scale to save a pass.
void FastWalshHadamardUnnormalised(float* x, size_t n);
// The scalar butterflies: the yardstick of the SIMD kernel (identical results).
void FastWalshHadamardUnnormalisedReference(float* x, size_t n);

}  // namespace needle
