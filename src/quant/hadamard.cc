// Fast Walsh–Hadamard transform in Sylvester order (SPEC §1). A Highway
// kernel (dispatched at run time) beside the scalar reference; both do the
// same adds in the same order, so their results are identical.
#include "quant/hadamard.h"

#include <algorithm>
#include <cmath>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/hadamard.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace needle {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
// Stage h >= 4: pairs (j, j + h) are whole vectors of up to kCap lanes.
template <size_t kCap>
HWY_INLINE void WideStage(float* x, size_t n, size_t h) {
  const hn::CappedTag<float, kCap> d;
  const size_t N = hn::Lanes(d);
  for (size_t block = 0; block < n; block += 2 * h) {
    float* lo = x + block;
    float* hi = lo + h;
    for (size_t j = 0; j < h; j += N) {
      const auto a = hn::LoadU(d, lo + j), b = hn::LoadU(d, hi + j);
      hn::StoreU(hn::Add(a, b), d, lo + j);
      hn::StoreU(hn::Sub(a, b), d, hi + j);
    }
  }
}
#endif

#if HWY_TARGET != HWY_SCALAR
// The stages h < 128 of one block of 128 held in registers (128 / N vectors of
// N lanes): stages h < N pair lanes inside a vector (the partner brought beside
// it by a shuffle; x * sign + partner is a + b in the low lane and -b + a = a - b
// in the high one, exactly as the scalar adds), stages h >= N pair whole
// vectors. Then each value times `scale` (1 for none). One load and one store
// per value instead of one per stage.
template <class D>
HWY_INLINE void Block128(D d, const float* in, float* out, float scale) {
  constexpr size_t N = hn::MaxLanes(D());
  constexpr size_t kVecs = 128 / N;
  alignas(64) static constexpr float kSign[4][16] = {
      {1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1, 1, -1},
      {1, 1, -1, -1, 1, 1, -1, -1, 1, 1, -1, -1, 1, 1, -1, -1},
      {1, 1, 1, 1, -1, -1, -1, -1, 1, 1, 1, 1, -1, -1, -1, -1},
      {1, 1, 1, 1, 1, 1, 1, 1, -1, -1, -1, -1, -1, -1, -1, -1}};
  hn::Vec<D> v[kVecs];
  for (size_t k = 0; k < kVecs; ++k) v[k] = hn::LoadU(d, in + k * N);
  const auto s1 = hn::Load(d, kSign[0]), s2 = hn::Load(d, kSign[1]);
  for (size_t k = 0; k < kVecs; ++k) {
    v[k] = hn::MulAdd(v[k], s1, hn::Shuffle2301(v[k]));
    v[k] = hn::MulAdd(v[k], s2, hn::Shuffle1032(v[k]));
  }
  if constexpr (N >= 8) {  // h = 4: the other 128-bit block of each pair
    const auto s4 = hn::Load(d, kSign[2]);
    for (size_t k = 0; k < kVecs; ++k) v[k] = hn::MulAdd(v[k], s4, hn::SwapAdjacentBlocks(v[k]));
  }
  if constexpr (N >= 16) {  // h = 8: the other 256-bit half
    const auto s8 = hn::Load(d, kSign[3]);
    for (size_t k = 0; k < kVecs; ++k) v[k] = hn::MulAdd(v[k], s8, hn::ConcatLowerUpper(d, v[k], v[k]));
  }
  for (size_t h = 1; h < kVecs; h <<= 1) {  // stages N * h: whole vectors
    for (size_t b = 0; b < kVecs; b += 2 * h) {
      for (size_t j = b; j < b + h; ++j) {
        const auto a = v[j], c = v[j + h];
        v[j] = hn::Add(a, c);
        v[j + h] = hn::Sub(a, c);
      }
    }
  }
  if (scale != 1.0f) {
    const auto vs = hn::Set(d, scale);
    for (size_t k = 0; k < kVecs; ++k) v[k] = hn::Mul(v[k], vs);
  }
  for (size_t k = 0; k < kVecs; ++k) hn::StoreU(v[k], d, out + k * N);
}
#endif

// Blocks of 128 through Block128 where the target's vectors allow (4 to 16
// lanes): false when they do not (the caller falls back).
bool Fwht128BlocksSimd(const float* in, float* out, size_t blocks, float scale) {
#if HWY_TARGET == HWY_SCALAR
  return false;
#else
  const hn::ScalableTag<float> d;
  constexpr size_t N = hn::MaxLanes(hn::ScalableTag<float>());
  if constexpr (N < 4 || N > 16 || HWY_HAVE_SCALABLE) {
    return false;
  } else {
    if (hn::Lanes(d) != N) return false;
    for (size_t b = 0; b < blocks; ++b) Block128(d, in + b * 128, out + b * 128, scale);
    return true;
  }
#endif
}

// false when n is too small for the vector stages (the caller falls back).
bool FwhtSimd(float* x, size_t n) {
#if HWY_TARGET == HWY_SCALAR
  return false;
#else
  if (n < 8) return false;
  // From 128 up: the stages inside blocks of 128 in registers, then the wide
  // stages (each value sees the same adds in the same order as the scalar).
  if (n >= 128 && Fwht128BlocksSimd(x, x, n / 128, 1.0f)) {
    for (size_t h = 128; h < n; h <<= 1) WideStage<16>(x, n, h);
    return true;
  }
  // Stages 1 and 2 inside 4-lane blocks: lane i pairs with the lane a
  // Shuffle2301 / Shuffle1032 brings beside it; x*sign + swapped gives a+b in
  // the low lane and -b+a = a-b in the high one, exactly as the scalar adds.
  const hn::Full128<float> d4;
  alignas(16) static constexpr float kSign1[4] = {1.0f, -1.0f, 1.0f, -1.0f};
  alignas(16) static constexpr float kSign2[4] = {1.0f, 1.0f, -1.0f, -1.0f};
  const auto s1 = hn::Load(d4, kSign1), s2 = hn::Load(d4, kSign2);
  for (size_t i = 0; i < n; i += 4) {
    auto v = hn::LoadU(d4, x + i);
    v = hn::MulAdd(v, s1, hn::Shuffle2301(v));
    v = hn::MulAdd(v, s2, hn::Shuffle1032(v));
    hn::StoreU(v, d4, x + i);
  }
  WideStage<4>(x, n, 4);
  if (n > 8) WideStage<8>(x, n, 8);
  for (size_t h = 16; h < n; h <<= 1) WideStage<16>(x, n, h);
  return true;
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace needle
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace needle {

HWY_EXPORT(FwhtSimd);
HWY_EXPORT(Fwht128BlocksSimd);

size_t NextPowerOfTwo(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

void FastWalshHadamardUnnormalisedReference(float* x, size_t n) {
  // Stage h combines pairs (j, j + h) inside blocks of 2h: exactly the block
  // structure of W_2k = [[W, W], [W, -W]], so the result is x · H_n.
  for (size_t h = 1; h < n; h <<= 1) {
    for (size_t block = 0; block < n; block += 2 * h) {
      float* lo = x + block;
      float* hi = lo + h;
      for (size_t j = 0; j < h; ++j) {
        const float a = lo[j];
        const float b = hi[j];
        lo[j] = a + b;
        hi[j] = a - b;
      }
    }
  }
}

void FastWalshHadamardUnnormalised(float* x, size_t n) {
  if (!HWY_DYNAMIC_DISPATCH(FwhtSimd)(x, n)) FastWalshHadamardUnnormalisedReference(x, n);
}

void FastWalshHadamard(float* x, size_t n) {
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(n)));
  if (n == 128 && HWY_DYNAMIC_DISPATCH(Fwht128BlocksSimd)(x, x, 1, scale)) return;  // scaled in registers
  FastWalshHadamardUnnormalised(x, n);
  for (size_t i = 0; i < n; ++i) x[i] *= scale;
}

void FastWalshHadamard128Blocks(const float* in, float* out, size_t blocks) {
  const float scale = static_cast<float>(1.0 / std::sqrt(128.0));
  if (HWY_DYNAMIC_DISPATCH(Fwht128BlocksSimd)(in, out, blocks, scale)) return;
  for (size_t b = 0; b < blocks; ++b) {
    if (in != out) std::copy(in + b * 128, in + b * 128 + 128, out + b * 128);
    FastWalshHadamard(out + b * 128, 128);
  }
}

}  // namespace needle
#endif  // HWY_ONCE
