// Fast Walsh–Hadamard transform in Sylvester order (SPEC §1). A Highway
// kernel (dispatched at run time) beside the scalar reference; both do the
// same adds in the same order, so their results are identical.
#include "quant/hadamard.h"

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

// false when n is too small for the vector stages (the caller falls back).
bool FwhtSimd(float* x, size_t n) {
#if HWY_TARGET == HWY_SCALAR
  return false;
#else
  if (n < 8) return false;
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
  FastWalshHadamardUnnormalised(x, n);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(n)));
  for (size_t i = 0; i < n; ++i) x[i] *= scale;
}

}  // namespace needle
#endif  // HWY_ONCE
