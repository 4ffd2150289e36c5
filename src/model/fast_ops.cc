#include "model/fast_ops.h"

#include <cmath>

#include "model/ops.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "model/fast_ops.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace needle {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Sum of x^2 (four accumulators, then the tail).
HWY_INLINE float SumSquares(const float* x, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  auto a0 = hn::Zero(d), a1 = hn::Zero(d);
  size_t i = 0;
  for (; i + 2 * N <= n; i += 2 * N) {
    const auto v0 = hn::LoadU(d, x + i), v1 = hn::LoadU(d, x + i + N);
    a0 = hn::MulAdd(v0, v0, a0);
    a1 = hn::MulAdd(v1, v1, a1);
  }
  float ss = hn::GetLane(hn::SumOfLanes(d, hn::Add(a0, a1)));
  for (; i < n; ++i) ss += x[i] * x[i];
  return ss;
}

void ZcRmsNormSimd(const float* x, const float* scale, size_t n, float* out) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const float inv = 1.0f / std::sqrt(SumSquares(x, n) / static_cast<float>(n) + kNormEps);
  const auto vinv = hn::Set(d, inv), one = hn::Set(d, 1.0f);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    hn::StoreU(hn::Mul(hn::Mul(hn::Add(one, hn::LoadU(d, scale + i)), hn::LoadU(d, x + i)), vinv), d, out + i);
  }
  for (; i < n; ++i) out[i] = (1.0f + scale[i]) * x[i] * inv;
}

void RmsUnitSimd(const float* x, size_t n, float* out) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const float inv = 1.0f / std::sqrt(SumSquares(x, n) / static_cast<float>(n) + kNormEps);
  const auto vinv = hn::Set(d, inv);
  size_t i = 0;
  for (; i + N <= n; i += N) hn::StoreU(hn::Mul(hn::LoadU(d, x + i), vinv), d, out + i);
  for (; i < n; ++i) out[i] = x[i] * inv;
}

void MulSigmoidSimd(float* o, const float* g, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto one = hn::Set(d, 1.0f);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto s = hn::Div(one, hn::Add(one, hn::Exp(d, hn::Neg(hn::LoadU(d, g + i)))));
    hn::StoreU(hn::Mul(hn::LoadU(d, o + i), s), d, o + i);
  }
  for (; i < n; ++i) o[i] *= Sigmoid(g[i]);
}

void SiluScaledSimd(float* z, const float* d2, size_t n) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  const auto one = hn::Set(d, 1.0f);
  size_t i = 0;
  for (; i + N <= n; i += N) {
    const auto x = hn::Mul(hn::LoadU(d, d2 + i), hn::LoadU(d, z + i));
    hn::StoreU(hn::Div(x, hn::Add(one, hn::Exp(d, hn::Neg(x)))), d, z + i);
  }
  for (; i < n; ++i) z[i] = Silu(d2[i] * z[i]);
}

void MixLanesSimd(const float* x, const float* y, const float* hres, const float* hpost, uint32_t lanes, uint32_t dm,
                  float* out) {
  const hn::ScalableTag<float> d;
  const size_t N = hn::Lanes(d);
  for (uint32_t r = 0; r < lanes; ++r) {
    const auto hp = hn::Set(d, hpost[r]);
    size_t i = 0;
    for (; i + N <= dm; i += N) {
      auto acc = hn::Mul(hp, hn::LoadU(d, y + i));
      for (uint32_t c = 0; c < lanes; ++c) acc = hn::MulAdd(hn::Set(d, hres[r * lanes + c]), hn::LoadU(d, x + size_t(c) * dm + i), acc);
      hn::StoreU(acc, d, out + size_t(r) * dm + i);
    }
    for (; i < dm; ++i) {
      float acc = hpost[r] * y[i];
      for (uint32_t c = 0; c < lanes; ++c) acc += hres[r * lanes + c] * x[size_t(c) * dm + i];
      out[size_t(r) * dm + i] = acc;
    }
  }
}

// 4x4: one 4-lane vector per row. Row passes reduce across lanes, column
// passes across the four vectors — the same order of operations as the scalar.
bool Sinkhorn4Simd(float* m, int iterations) {
#if HWY_TARGET == HWY_SCALAR
  return false;
#else
  const hn::ScalableTag<float> dw;
  if (hn::Lanes(dw) == 16) {
    // The whole matrix in one vector, row r in 128-bit block r: row reductions
    // inside blocks (two in-block shuffles), column reductions across blocks
    // (two lane permutations) — 2 exp + 2 log per iteration instead of 8 + 2.
    const hn::RebindToSigned<decltype(dw)> di;
    alignas(64) int32_t rot4[16], rot8[16];
    for (int i = 0; i < 16; ++i) rot4[i] = (i + 4) % 16, rot8[i] = (i + 8) % 16;
    const auto by4 = hn::IndicesFromVec(dw, hn::Load(di, rot4));
    const auto by8 = hn::IndicesFromVec(dw, hn::Load(di, rot8));
    auto v = hn::LoadU(dw, m);
    // Linear domain when no entry is below e^-40 of the largest (the usual
    // case): the same iteration as dividing by row and column sums, so exp
    // once and no log; far-apart logits keep the log domain (no underflow).
    const auto gmax = hn::MaxOfLanes(dw, v);
    if (hn::GetLane(hn::Sub(gmax, hn::MinOfLanes(dw, v))) < 40.0f) {
      auto p = hn::Exp(dw, hn::Sub(v, gmax));
      for (int it = 0; it < iterations; ++it) {
        auto rs = hn::Add(p, hn::Shuffle2301(p));
        rs = hn::Add(rs, hn::Shuffle1032(rs));
        p = hn::Div(p, rs);
        auto cs = hn::Add(p, hn::TableLookupLanes(p, by4));
        cs = hn::Add(cs, hn::TableLookupLanes(cs, by8));
        p = hn::Div(p, cs);
      }
      hn::StoreU(p, dw, m);
      return true;
    }
    for (int it = 0; it < iterations; ++it) {
      auto mx = hn::Max(v, hn::Shuffle2301(v));
      mx = hn::Max(mx, hn::Shuffle1032(mx));
      auto e = hn::Exp(dw, hn::Sub(v, mx));
      e = hn::Add(e, hn::Shuffle2301(e));
      e = hn::Add(e, hn::Shuffle1032(e));
      v = hn::Sub(v, hn::Add(mx, hn::Log(dw, e)));
      mx = hn::Max(v, hn::TableLookupLanes(v, by4));
      mx = hn::Max(mx, hn::TableLookupLanes(mx, by8));
      e = hn::Exp(dw, hn::Sub(v, mx));
      e = hn::Add(e, hn::TableLookupLanes(e, by4));
      e = hn::Add(e, hn::TableLookupLanes(e, by8));
      v = hn::Sub(v, hn::Add(mx, hn::Log(dw, e)));
    }
    hn::StoreU(hn::Exp(dw, v), dw, m);
    return true;
  }
  const hn::Full128<float> d;
  auto r0 = hn::LoadU(d, m), r1 = hn::LoadU(d, m + 4), r2 = hn::LoadU(d, m + 8), r3 = hn::LoadU(d, m + 12);
  auto row_lse = [&](decltype(r0) r) {
    const auto mx = hn::MaxOfLanes(d, r);  // broadcast in every lane
    return hn::Add(mx, hn::Log(d, hn::SumOfLanes(d, hn::Exp(d, hn::Sub(r, mx)))));
  };
  for (int it = 0; it < iterations; ++it) {
    r0 = hn::Sub(r0, row_lse(r0));
    r1 = hn::Sub(r1, row_lse(r1));
    r2 = hn::Sub(r2, row_lse(r2));
    r3 = hn::Sub(r3, row_lse(r3));
    const auto mx = hn::Max(hn::Max(r0, r1), hn::Max(r2, r3));
    const auto s = hn::Add(hn::Add(hn::Exp(d, hn::Sub(r0, mx)), hn::Exp(d, hn::Sub(r1, mx))),
                           hn::Add(hn::Exp(d, hn::Sub(r2, mx)), hn::Exp(d, hn::Sub(r3, mx))));
    const auto lse = hn::Add(mx, hn::Log(d, s));
    r0 = hn::Sub(r0, lse);
    r1 = hn::Sub(r1, lse);
    r2 = hn::Sub(r2, lse);
    r3 = hn::Sub(r3, lse);
  }
  hn::StoreU(hn::Exp(d, r0), d, m);
  hn::StoreU(hn::Exp(d, r1), d, m + 4);
  hn::StoreU(hn::Exp(d, r2), d, m + 8);
  hn::StoreU(hn::Exp(d, r3), d, m + 12);
  return true;
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace needle
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace needle {

HWY_EXPORT(ZcRmsNormSimd);
HWY_EXPORT(RmsUnitSimd);
HWY_EXPORT(MulSigmoidSimd);
HWY_EXPORT(SiluScaledSimd);
HWY_EXPORT(MixLanesSimd);
HWY_EXPORT(Sinkhorn4Simd);

void ZcRmsNormFast(const float* x, const float* scale, size_t n, float* out) {
  HWY_DYNAMIC_DISPATCH(ZcRmsNormSimd)(x, scale, n, out);
}
void RmsUnitFast(const float* x, size_t n, float* out) { HWY_DYNAMIC_DISPATCH(RmsUnitSimd)(x, n, out); }
void MulSigmoid(float* o, const float* g, size_t n) { HWY_DYNAMIC_DISPATCH(MulSigmoidSimd)(o, g, n); }
void SiluScaled(float* z, const float* d2, size_t n) { HWY_DYNAMIC_DISPATCH(SiluScaledSimd)(z, d2, n); }
void MixLanesFast(const float* x, const float* y, const float* hres, const float* hpost, uint32_t lanes, uint32_t d,
                  float* out) {
  HWY_DYNAMIC_DISPATCH(MixLanesSimd)(x, y, hres, hpost, lanes, d, out);
}
void SinkhornFast(float* m, size_t n, int iterations) {
  if (n == 4 && HWY_DYNAMIC_DISPATCH(Sinkhorn4Simd)(m, iterations)) return;
  SinkhornInPlace(m, n, iterations);
}

}  // namespace needle
#endif  // HWY_ONCE
