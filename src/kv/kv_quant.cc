#include "kv/kv_quant.h"

#include <algorithm>
#include <cstring>

#include "base/round.h"
#include "kv/budget.h"  // kKvGroup

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "kv/kv_quant.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"

HWY_BEFORE_NAMESPACE();
namespace needle {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Whole groups of 32 with vectors; returns how many values were done (the
// caller finishes a shorter last group with the reference). The scale is
// computed as the reference does (integer max of the magnitude bits, then
// scalar division), and NearestInt / Round round half to even like RoundHalfEven.
uint32_t KvQuantSimd(const float* x, uint32_t n, int8_t* q, float* scales, float* snapped) {
#if HWY_TARGET == HWY_SCALAR
  return 0;
#else
  const hn::ScalableTag<float> df;
  const hn::RebindToSigned<decltype(df)> di;
  const hn::Rebind<int8_t, decltype(df)> d8;
  const uint32_t N = static_cast<uint32_t>(hn::Lanes(df));
  if (kKvGroup % N) return 0;
  const auto magnitude = hn::Set(di, 0x7fffffff);
  uint32_t g = 0;
  for (; (g + 1) * kKvGroup <= n; ++g) {
    const float* xg = x + g * kKvGroup;
    auto mx = hn::Zero(di);
    for (uint32_t i = 0; i < kKvGroup; i += N) mx = hn::Max(mx, hn::And(hn::BitCast(di, hn::LoadU(df, xg + i)), magnitude));
    const int32_t bits = hn::GetLane(hn::MaxOfLanes(di, mx));
    float m;
    std::memcpy(&m, &bits, 4);
    const float scale = m > 0.0f ? m / 127.0f : 1.0f;
    const auto inv = hn::Set(df, 1.0f / scale);
    if (snapped) {
      const auto s = hn::Set(df, scale), zero = hn::Zero(df);
      for (uint32_t i = 0; i < kKvGroup; i += N) {
        // + 0: a negative value rounded to zero is +0, as RoundHalfEven's (x + M) - M gives.
        const auto r = hn::Add(hn::Round(hn::Mul(hn::LoadU(df, xg + i), inv)), zero);
        hn::StoreU(hn::Mul(r, s), df, snapped + g * kKvGroup + i);
      }
    } else {
      scales[g] = scale;
      for (uint32_t i = 0; i < kKvGroup; i += N) {
        hn::StoreU(hn::DemoteTo(d8, hn::NearestInt(hn::Mul(hn::LoadU(df, xg + i), inv))), d8, q + g * kKvGroup + i);
      }
    }
  }
  return g * kKvGroup;
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace needle
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace needle {
namespace {

// max |x| over n floats as the bit pattern of a non-negative float: the bits
// of non-negative floats order like unsigned integers.
float MaxAbs(const float* x, uint32_t n) {
  uint32_t m = 0;
  for (uint32_t i = 0; i < n; ++i) {
    uint32_t b;
    std::memcpy(&b, x + i, 4);
    b &= 0x7fffffffu;
    m = b > m ? b : m;
  }
  float mx;
  std::memcpy(&mx, &m, 4);
  return mx;
}

// The int8 scale of one group of n values (1 for an all-zero group).
float KvGroupScale(const float* x, uint32_t n) {
  const float mx = MaxAbs(x, n);
  return mx > 0.0f ? mx / 127.0f : 1.0f;
}

}  // namespace

HWY_EXPORT(KvQuantSimd);

void QuantizeKvRowReference(const float* x, uint32_t n, int8_t* q, float* scales) {
  for (uint32_t g = 0; g * kKvGroup < n; ++g) {
    const uint32_t b = g * kKvGroup, e = std::min(n, b + kKvGroup);
    const float scale = KvGroupScale(x + b, e - b);
    const float inv = 1.0f / scale;
    scales[g] = scale;
    for (uint32_t i = b; i < e; ++i) q[i] = static_cast<int8_t>(static_cast<int32_t>(RoundHalfEven(x[i] * inv)));
  }
}

void SnapToKvGridReference(float* x, uint32_t n) {
  for (uint32_t b = 0; b < n; b += kKvGroup) {
    const uint32_t e = std::min(n, b + kKvGroup);
    const float scale = KvGroupScale(x + b, e - b);
    const float inv = 1.0f / scale;
    for (uint32_t i = b; i < e; ++i) x[i] = RoundHalfEven(x[i] * inv) * scale;
  }
}

void QuantizeKvRow(const float* x, uint32_t n, int8_t* q, float* scales) {
  const uint32_t done = HWY_DYNAMIC_DISPATCH(KvQuantSimd)(x, n, q, scales, nullptr);
  if (done < n) QuantizeKvRowReference(x + done, n - done, q + done, scales + done / kKvGroup);
}

void SnapToKvGrid(float* x, uint32_t n) {
  const uint32_t done = HWY_DYNAMIC_DISPATCH(KvQuantSimd)(x, n, nullptr, nullptr, x);
  if (done < n) SnapToKvGridReference(x + done, n - done);
}

}  // namespace needle
#endif  // HWY_ONCE
