#include "model/attention.h"

#include <algorithm>
#include <cmath>

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "model/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace needle {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// kHeads is a compile-time constant so the per-head accumulators stay in registers.
template <uint32_t kHeads>
bool AttendGroupSimdT(const AttentionGroupArgs& a) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di32;
  const hn::Rebind<int8_t, decltype(df)> di8;
  const size_t N = hn::Lanes(df);
  const uint32_t hd = a.head_dim;
  constexpr uint32_t H = kHeads;
  if (hd % 32 != 0 || 32 % N != 0) return false;
  uint32_t total = 0;
  for (uint32_t r = 0; r < a.num_runs; ++r) total += a.runs[r].count;
  if (total == 0) {
    std::fill(a.out, a.out + size_t(H) * hd, 0.0f);
    return true;
  }
  const uint32_t groups = hd / 32;
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(hd));

  // ---- scores: dequantize each key chunk once, use it for every head of the group
  uint32_t j = 0;
  for (uint32_t r = 0; r < a.num_runs; ++r) {
    const KvRun& run = a.runs[r];
    const float* q = run.sink ? a.q_sink : a.q_window;
    for (uint32_t s = 0; s < run.count; ++s, ++j) {
      const int8_t* k = run.k + size_t(s) * a.row_stride;
      const float* ks = run.ks + size_t(s) * a.scale_stride;
      decltype(hn::Zero(df)) acc[H];
      for (uint32_t h = 0; h < H; ++h) acc[h] = hn::Zero(df);
      for (uint32_t g = 0; g < groups; ++g) {
        const auto scale = hn::Set(df, ks[g] * inv_sqrt);
        for (uint32_t i = g * 32; i < g * 32 + 32; i += static_cast<uint32_t>(N)) {
          const auto kf = hn::Mul(hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, k + i))), scale);
          for (uint32_t h = 0; h < H; ++h) acc[h] = hn::MulAdd(hn::LoadU(df, q + h * hd + i), kf, acc[h]);
        }
      }
      for (uint32_t h = 0; h < H; ++h) a.scores[size_t(h) * total + j] = hn::GetLane(hn::SumOfLanes(df, acc[h]));
    }
  }
  // ---- softmax per head (vectorised exp)
  for (uint32_t h = 0; h < H; ++h) {
    float* sc = a.scores + size_t(h) * total;
    float mx = sc[0];
    for (uint32_t i = 1; i < total; ++i) mx = std::max(mx, sc[i]);
    const auto vmx = hn::Set(df, mx);
    auto vsum = hn::Zero(df);
    uint32_t i = 0;
    for (; i + N <= total; i += static_cast<uint32_t>(N)) {
      const auto e = hn::Exp(df, hn::Sub(hn::LoadU(df, sc + i), vmx));
      hn::StoreU(e, df, sc + i);
      vsum = hn::Add(vsum, e);
    }
    float sum = hn::GetLane(hn::SumOfLanes(df, vsum));
    for (; i < total; ++i) sum += (sc[i] = std::exp(sc[i] - mx));
    const float inv = 1.0f / sum;
    for (i = 0; i < total; ++i) sc[i] *= inv;
  }
  // ---- values: out[h] = sum_j p[h][j] * v_j, accumulators in registers per chunk
  for (uint32_t c0 = 0; c0 < hd; c0 += static_cast<uint32_t>(N)) {
    const uint32_t g = c0 / 32;
    decltype(hn::Zero(df)) acc[H];
    for (uint32_t h = 0; h < H; ++h) acc[h] = hn::Zero(df);
    j = 0;
    for (uint32_t r = 0; r < a.num_runs; ++r) {
      const KvRun& run = a.runs[r];
      for (uint32_t s = 0; s < run.count; ++s, ++j) {
        const int8_t* v = run.v + size_t(s) * a.row_stride;
        const float vscale = run.vs[size_t(s) * a.scale_stride + g];
        const auto vf = hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, v + c0)));
        for (uint32_t h = 0; h < H; ++h) acc[h] = hn::MulAdd(hn::Set(df, a.scores[size_t(h) * total + j] * vscale), vf, acc[h]);
      }
    }
    for (uint32_t h = 0; h < H; ++h) hn::StoreU(acc[h], df, a.out + size_t(h) * hd + c0);
  }
  return true;
}

bool AttendGroupSimd(const AttentionGroupArgs& a) {
  switch (a.heads) {
    case 1: return AttendGroupSimdT<1>(a);
    case 2: return AttendGroupSimdT<2>(a);
    case 3: return AttendGroupSimdT<3>(a);
    case 4: return AttendGroupSimdT<4>(a);
    default: return false;  // larger GQA groups: the scalar reference
  }
}

}  // namespace HWY_NAMESPACE
}  // namespace needle
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace needle {

HWY_EXPORT(AttendGroupSimd);

void AttendGroupReference(const AttentionGroupArgs& a) {
  const uint32_t hd = a.head_dim, H = a.heads;
  const uint32_t groups = (hd + 31) / 32;
  uint32_t total = 0;
  for (uint32_t r = 0; r < a.num_runs; ++r) total += a.runs[r].count;
  std::fill(a.out, a.out + size_t(H) * hd, 0.0f);
  if (total == 0) return;
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(hd));
  for (uint32_t h = 0; h < H; ++h) {
    float* sc = a.scores + size_t(h) * total;
    uint32_t j = 0;
    for (uint32_t r = 0; r < a.num_runs; ++r) {
      const KvRun& run = a.runs[r];
      const float* q = (run.sink ? a.q_sink : a.q_window) + size_t(h) * hd;
      for (uint32_t s = 0; s < run.count; ++s, ++j) {
        const int8_t* k = run.k + size_t(s) * a.row_stride;
        const float* ks = run.ks + size_t(s) * a.scale_stride;
        float acc = 0.0f;
        for (uint32_t g = 0; g < groups; ++g) {
          float part = 0.0f;
          for (uint32_t i = g * 32; i < std::min(hd, g * 32 + 32); ++i) part += q[i] * k[i];
          acc += part * ks[g];
        }
        sc[j] = acc * inv_sqrt;
      }
    }
    const float mx = *std::max_element(sc, sc + total);
    float sum = 0.0f;
    for (uint32_t i = 0; i < total; ++i) sum += (sc[i] = std::exp(sc[i] - mx));
    float* o = a.out + size_t(h) * hd;
    j = 0;
    for (uint32_t r = 0; r < a.num_runs; ++r) {
      const KvRun& run = a.runs[r];
      for (uint32_t s = 0; s < run.count; ++s, ++j) {
        const int8_t* v = run.v + size_t(s) * a.row_stride;
        const float* vs = run.vs + size_t(s) * a.scale_stride;
        const float p = sc[j] / sum;
        for (uint32_t i = 0; i < hd; ++i) o[i] += p * vs[i / 32] * v[i];
      }
    }
  }
}

void AttendGroup(const AttentionGroupArgs& a) {
  if (!HWY_DYNAMIC_DISPATCH(AttendGroupSimd)(a)) AttendGroupReference(a);
}

}  // namespace needle
#endif  // HWY_ONCE
