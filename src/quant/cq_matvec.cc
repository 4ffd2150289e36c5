// CQ × int8-activation kernels. The SIMD part is written once with Highway on
// 128-bit vectors (every target has them: SSSE3/SSE4/AVX2/AVX-512 on x86,
// NEON on Arm) and dispatched at run time; the scalar reference below is the
// yardstick the tests compare it with.
#include "quant/cq_matvec.h"

#include "quant/cq_matmul_rows4.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "base/error.h"
#include "base/fp16.h"
#include "base/round.h"
#include "quant/hadamard.h"

// AVX3_DL (Ice Lake and later: VNNI; opted into in CMakeLists.txt): its
// multiply-accumulate is one instruction where AVX3 needs two.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/cq_matvec.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "quant/vnni512.h"  // NEEDLE_VNNI512

HWY_BEFORE_NAMESPACE();
namespace needle {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
using V8 = hn::Vec<hn::Full128<uint8_t>>;
using V32 = hn::Vec<hn::Full128<int32_t>>;
using VF = hn::Vec<hn::Full128<float>>;

// 3-bit fields are packed in natural order (8 codes in 3 bytes), so there is
// no shift+mask plane: a group is first decoded to 128 index bytes (once for
// the whole tile of activations), then looked up and multiplied as below.
// 8 codes (3 bytes) per 8 x u16 lanes: gather the two bytes holding each
// code, shift each lane right by its own bit offset, keep 3 bits; two such
// vectors give 16 index bytes (the low byte of every lane). The per-lane
// shift is a MulHigh by 2^(16 - s) (variable u16 shifts are not on every
// target), so every offset s must be >= 1: each chunk's window starts one
// byte before its 3 bytes, and each code sits at bit 8 + 3i of the window.
// The windows are cut from the group's three 16-byte registers (byte
// alignment, zeros outside the group): no store and reload through memory,
// whose overlapping unaligned loads defeat store forwarding.
template <int kStart>  // the window's first byte in the group, -1..44
HWY_INLINE V8 Window3(const V8 v0, const V8 v1, const V8 v2) {
  const hn::Full128<uint8_t> d8;
  if constexpr (kStart < 0) {
    return hn::ShiftLeftBytes<-kStart>(d8, v0);
  } else if constexpr (kStart < 16) {
    return hn::CombineShiftRightBytes<kStart>(d8, v1, v0);
  } else if constexpr (kStart < 32) {
    return hn::CombineShiftRightBytes<kStart - 16>(d8, v2, v1);
  } else {
    return hn::ShiftRightBytes<kStart - 32>(d8, v2);
  }
}

// Chunks k and k + 1 (16 codes) to 16 index bytes at idx + 8k.
template <int k>
HWY_INLINE void DecodeChunkPair3(const V8 v0, const V8 v1, const V8 v2, uint8_t* idx) {
  const hn::Full128<uint8_t> d8;
  const hn::Full128<uint16_t> d16;
  alignas(16) static constexpr uint8_t kGather[16] = {0, 1, 1, 2, 1, 2, 2, 3, 2, 3, 2, 3, 3, 4, 3, 4};
  alignas(16) static constexpr uint16_t kScale[8] = {1 << 8, 1 << 13, 1 << 10, 1 << 15, 1 << 12, 1 << 9, 1 << 14, 1 << 11};
  const auto gather = hn::Load(d8, kGather);
  const auto scale = hn::Load(d16, kScale);
  const auto seven = hn::Set(d16, 7);
  const auto a = hn::And(hn::MulHigh(hn::BitCast(d16, hn::TableLookupBytes(Window3<3 * k - 1>(v0, v1, v2), gather)), scale), seven);
  const auto b = hn::And(hn::MulHigh(hn::BitCast(d16, hn::TableLookupBytes(Window3<3 * k + 2>(v0, v1, v2), gather)), scale), seven);
  hn::Store(hn::ConcatEven(d8, hn::BitCast(d8, b), hn::BitCast(d8, a)), d8, idx + 8 * k);
}

template <int... kPairs>
HWY_INLINE void DecodeChunkPairs3(const V8 v0, const V8 v1, const V8 v2, uint8_t* idx, std::integer_sequence<int, kPairs...>) {
  (DecodeChunkPair3<2 * kPairs>(v0, v1, v2, idx), ...);
}

HWY_INLINE void DecodeGroup3(const uint8_t* codes, uint8_t* idx) {
  const hn::Full128<uint8_t> d8;
  const V8 v0 = hn::LoadU(d8, codes), v1 = hn::LoadU(d8, codes + 16), v2 = hn::LoadU(d8, codes + 32);
  DecodeChunkPairs3(v0, v1, v2, idx, std::make_integer_sequence<int, 8>());
}

// Integer sums for one (row, group) against kBatch activations, 2-bit fields:
// 32 code bytes; byte i holds columns 4i..4i+3, plane j = (byte >> 2j) & 3.
template <int kBatch, int kFieldBits>
HWY_INLINE void GroupDot(const uint8_t* codes, const V8 table, const int8_t* const* xq,
                         V32* sum) {
  const hn::Full128<uint8_t> d8;
  const hn::Full128<int8_t> di8;
  const hn::Full64<int8_t> dh8;
  const hn::Full128<int16_t> d16;
  const hn::Full128<int32_t> d32;
  constexpr int kPlanes = 8 / kFieldBits;            // fields per byte
  constexpr int kPlaneLen = 128 / kPlanes;           // columns per plane in a group
  constexpr int kLoads = 128 * kFieldBits / 8 / 16;  // 16-byte loads per group
  V32 unused = hn::Zero(d32);
  if constexpr (kFieldBits == 3) {
    alignas(16) uint8_t idx[128];
    DecodeGroup3(codes, idx);
    for (int c = 0; c < 128; c += 16) {
      const auto lvl = hn::BitCast(di8, hn::TableLookupBytes(table, hn::Load(d8, idx + c)));
      const auto lo = hn::PromoteTo(d16, hn::LowerHalf(dh8, lvl));
      const auto hi = hn::PromoteTo(d16, hn::UpperHalf(dh8, lvl));
      for (int b = 0; b < kBatch; ++b) {
        sum[b] = hn::ReorderWidenMulAccumulate(d32, lo, hn::PromoteTo(d16, hn::LoadU(dh8, xq[b] + c)), sum[b], unused);
        sum[b] = hn::ReorderWidenMulAccumulate(d32, hi, hn::PromoteTo(d16, hn::LoadU(dh8, xq[b] + c + 8)), sum[b], unused);
      }
    }
    return;
  }
  const auto mask = hn::Set(d8, static_cast<uint8_t>((1 << kFieldBits) - 1));
  for (int l = 0; l < kLoads; ++l) {
    const auto v = hn::LoadU(d8, codes + 16 * l);
    for (int j = 0; j < kPlanes; ++j) {
      const auto idx = hn::And(hn::ShiftRightSame(v, j * kFieldBits), mask);
      const auto lvl = hn::BitCast(di8, hn::TableLookupBytes(table, idx));
      const auto lo = hn::PromoteTo(d16, hn::LowerHalf(dh8, lvl));
      const auto hi = hn::PromoteTo(d16, hn::UpperHalf(dh8, lvl));
      const size_t slot = static_cast<size_t>(j * kPlaneLen + 16 * l);
      for (int b = 0; b < kBatch; ++b) {
        sum[b] = hn::ReorderWidenMulAccumulate(d32, lo, hn::PromoteTo(d16, hn::LoadU(dh8, xq[b] + slot)), sum[b], unused);
        sum[b] = hn::ReorderWidenMulAccumulate(d32, hi, hn::PromoteTo(d16, hn::LoadU(dh8, xq[b] + slot + 8)), sum[b], unused);
      }
    }
  }
}

template <int kBatch, int kFieldBits>
void MatMulTile(const CqMatrixView& w, const CqLevelsQ8& lv, const ActivationQ8* xs, uint32_t r0, uint32_t r1,
                float* y, uint32_t y_stride) {
  const hn::Full128<uint8_t> d8;
  const hn::Full128<int32_t> d32;
  const hn::Full128<float> df;
  const auto table = hn::LoadU(d8, lv.level_u8);
  const uint32_t groups = static_cast<uint32_t>(CqGroupsPerRow(w.in));
  const uint64_t row_bytes = CqRowBytes(w.in, w.bits);
  const uint32_t group_bytes = 128 * kFieldBits / 8;
  for (uint32_t r = r0; r < r1; ++r) {
    const uint8_t* codes = w.codes + r * row_bytes;
    const uint16_t* norms = w.norms + uint64_t(r) * groups;
    VF acc[kBatch];
    for (int b = 0; b < kBatch; ++b) acc[b] = hn::Zero(df);
    for (uint32_t g = 0; g < groups; ++g) {
      V32 sum[kBatch];
      const int8_t* xq[kBatch];
      for (int b = 0; b < kBatch; ++b) {
        sum[b] = hn::Zero(d32);
        xq[b] = xs[b].q + g * 128;
      }
      GroupDot<kBatch, kFieldBits>(codes + g * group_bytes, table, xq, sum);
      uint16_t nh;
      std::memcpy(&nh, norms + g, 2);
      const float norm = HalfToFloat(nh) * lv.scale;
      for (int b = 0; b < kBatch; ++b) {
        acc[b] = hn::MulAdd(hn::ConvertTo(df, sum[b]), hn::Set(df, norm * xs[b].scale[g]), acc[b]);
      }
    }
    for (int b = 0; b < kBatch; ++b) y[b * y_stride + (r - r0)] = hn::GetLane(hn::SumOfLanes(df, acc[b]));
  }
}

#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX2
#if HWY_TARGET == HWY_AVX3_DL
// DecodeGroup3 in three instructions per 64 codes (AVX512-VBMI): codes
// 8m..8m+7 are bytes 3m..3m+2 of the group; a byte permute puts those three
// bytes at the bottom of 64-bit lane m, and a multishift takes the 8 bits from
// offset 3u for byte u (the upper 5 are masked off).
NEEDLE_VNNI512 HWY_INLINE void DecodeGroup3Vbmi(const uint8_t* codes, uint8_t* idx) {
  alignas(64) static constexpr uint8_t kPerm[64] = {
      0,  1,  2,  0, 0, 0, 0, 0, 3,  4,  5,  0, 0, 0, 0, 0, 6,  7,  8,  0, 0, 0, 0, 0, 9,  10, 11, 0, 0, 0, 0, 0,
      12, 13, 14, 0, 0, 0, 0, 0, 15, 16, 17, 0, 0, 0, 0, 0, 18, 19, 20, 0, 0, 0, 0, 0, 21, 22, 23, 0, 0, 0, 0, 0};
  const __m512i perm = _mm512_load_si512(kPerm);
  const __m512i shifts = _mm512_set1_epi64(0x1512'0F0C'0906'0300ll);
  const __m512i seven = _mm512_set1_epi8(7);
  // Bytes 0-23 from a load of bytes 0-31, bytes 24-47 from one of bytes 16-47
  // (index + 8): plain loads inside the 48-byte group (a masked load of 24
  // bytes was half of the 3-bit decode's time on Zen 4).
  const __m512i lo = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes)));
  const __m512i hi = _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(codes + 16)));
  const __m512i perm_hi = _mm512_add_epi8(perm, _mm512_set1_epi8(8));
  _mm512_store_si512(idx, _mm512_and_si512(_mm512_multishift_epi64_epi8(shifts, _mm512_permutexvar_epi8(perm, lo)), seven));
  _mm512_store_si512(idx + 64, _mm512_and_si512(_mm512_multishift_epi64_epi8(shifts, _mm512_permutexvar_epi8(perm_hi, hi)), seven));
}

// Byte products (vpdpbusd: 64 multiply-adds per instruction, twice the int16
// form): the levels, biased by +128 to unsigned bytes, against the signed int8
// activations. The bias adds 128 * (sum of the group's activations), which is
// taken off up front, spread evenly over the 16 lanes (-8 * sum each) so no
// lane carries a large offset into the float accumulation. Integer sums equal
// the int16 path's exactly. Each 64-byte vector of levels is one contiguous run
// of 64 planar slots: 2-bit groups give two planes per vector (the 32 code
// bytes in both halves, shifted by 2j and 2j + 2), 4-bit groups one plane of
// 64, 3-bit groups 64 decoded bytes.
template <int kBatch, int kFieldBits>
NEEDLE_VNNI512 void MatMulTileVnni(const CqMatrixView& w, const CqLevelsQ8& lv, const ActivationQ8* xs, uint32_t r0,
                                   uint32_t r1, float* y, uint32_t y_stride) {
  alignas(16) uint8_t biased[16];
  for (int i = 0; i < 16; ++i) biased[i] = lv.level_u8[i] ^ 0x80;
  const __m512i table = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(biased)));
  const __m512i mask = _mm512_set1_epi8(static_cast<char>((1 << kFieldBits) - 1));
  // 2-bit: per 16-bit lane, shift 2j in the lower half and 2j + 2 in the upper (planes j, j + 1).
  const __m512i shift01 = _mm512_inserti64x4(_mm512_set1_epi16(0), _mm256_set1_epi16(2), 1);
  const __m512i shift23 = _mm512_inserti64x4(_mm512_set1_epi16(4), _mm256_set1_epi16(6), 1);
  constexpr uint32_t kGroupBytes = 128 * kFieldBits / 8;
  const uint32_t groups = static_cast<uint32_t>(CqGroupsPerRow(w.in));
  const uint64_t row_bytes = CqRowBytes(w.in, w.bits);
  // The activations' per-group constants, staged for a span of groups so the
  // inner loop reads them as broadcast operands; rows are summed over the spans.
  constexpr uint32_t kSpan = 32;
  alignas(64) int32_t bias[kSpan][kBatch];  // -8 * the group's sum, in every lane
  alignas(64) float xscale[kSpan][kBatch];
  for (uint32_t g0 = 0; g0 < groups; g0 += kSpan) {
    const uint32_t g1 = std::min(groups, g0 + kSpan);
    for (uint32_t g = g0; g < g1; ++g) {
      for (int b = 0; b < kBatch; ++b) bias[g - g0][b] = -8 * xs[b].sum[g], xscale[g - g0][b] = xs[b].scale[g];
    }
    for (uint32_t r = r0; r < r1; ++r) {
      const uint8_t* codes = w.codes + r * row_bytes;
      const uint16_t* norms = w.norms + uint64_t(r) * groups;
      __m512 acc[kBatch];
      for (int b = 0; b < kBatch; ++b) acc[b] = _mm512_setzero_ps();
      for (uint32_t g = g0; g < g1; ++g) {
        const uint8_t* gc = codes + g * kGroupBytes;
        __m512i lvl[2];
        if constexpr (kFieldBits == 2) {
          const __m512i v = _mm512_broadcast_i64x4(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(gc)));
          lvl[0] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srlv_epi16(v, shift01), mask));
          lvl[1] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srlv_epi16(v, shift23), mask));
        } else if constexpr (kFieldBits == 4) {
          const __m512i v = _mm512_loadu_si512(gc);
          lvl[0] = _mm512_shuffle_epi8(table, _mm512_and_si512(v, mask));
          lvl[1] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(v, 4), mask));
        } else {
          alignas(64) uint8_t idx[128];
          DecodeGroup3Vbmi(gc, idx);
          lvl[0] = _mm512_shuffle_epi8(table, _mm512_load_si512(idx));
          lvl[1] = _mm512_shuffle_epi8(table, _mm512_load_si512(idx + 64));
        }
        uint16_t nh;
        std::memcpy(&nh, norms + g, 2);
        const __m512 norm = _mm512_set1_ps(_cvtsh_ss(nh) * lv.scale);  // F16C: exact, as HalfToFloat
        for (int b = 0; b < kBatch; ++b) {
          const int8_t* x = xs[b].q + size_t(g) * 128;
          __m512i sum = _mm512_set1_epi32(bias[g - g0][b]);
          sum = _mm512_dpbusd_epi32(sum, lvl[0], _mm512_loadu_si512(x));
          sum = _mm512_dpbusd_epi32(sum, lvl[1], _mm512_loadu_si512(x + 64));
          acc[b] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(sum), _mm512_set1_ps(xscale[g - g0][b])), norm, acc[b]);
        }
      }
      for (int b = 0; b < kBatch; ++b) {
        float& out = y[b * y_stride + (r - r0)];
        out = (g0 == 0 ? 0.0f : out) + _mm512_reduce_add_ps(acc[b]);
      }
    }
  }
}
#define NEEDLE_TILE MatMulTileVnni
#else
// Full-width variant for AVX2 / AVX-512: a vector of int16 covers 16 or 32
// columns of one plane, so a 2-bit group needs 4 (AVX-512) or 8 (AVX2)
// multiply-adds instead of 16. Byte tables repeat in every 128-bit block.
template <int kBatch, int kFieldBits>
void MatMulTileWide(const CqMatrixView& w, const CqLevelsQ8& lv, const ActivationQ8* xs, uint32_t r0, uint32_t r1,
                    float* y, uint32_t y_stride) {
  const hn::ScalableTag<int16_t> d16;
  const hn::Rebind<int8_t, decltype(d16)> d8;
  const hn::Rebind<uint8_t, decltype(d16)> du8;
  const hn::Repartition<int32_t, decltype(d16)> d32;
  const hn::Repartition<float, decltype(d16)> df;
  const size_t L = hn::Lanes(d16);
  constexpr int kSteps = kFieldBits == 3 ? 1 : 8 / kFieldBits;  // planes per loaded byte vector
  constexpr uint32_t kLen = 128 / (kFieldBits == 3 ? 1 : 8 / kFieldBits);  // columns per plane
  constexpr uint32_t kGroupBytes = 128 * kFieldBits / 8;
  const auto table = hn::LoadDup128(du8, lv.level_u8);
  const auto mask = hn::Set(du8, static_cast<uint8_t>((1 << kFieldBits) - 1));
  const uint32_t groups = static_cast<uint32_t>(CqGroupsPerRow(w.in));
  const uint64_t row_bytes = CqRowBytes(w.in, w.bits);
  for (uint32_t r = r0; r < r1; ++r) {
    const uint8_t* codes = w.codes + r * row_bytes;
    const uint16_t* norms = w.norms + uint64_t(r) * groups;
    decltype(hn::Zero(df)) acc[kBatch];
    for (int b = 0; b < kBatch; ++b) acc[b] = hn::Zero(df);
    for (uint32_t g = 0; g < groups; ++g) {
      decltype(hn::Zero(d32)) sum[kBatch];
      auto unused = hn::Zero(d32);
      for (int b = 0; b < kBatch; ++b) sum[b] = hn::Zero(d32);
      const uint8_t* gc = codes + g * kGroupBytes;
      // 3-bit groups (natural order) are unpacked to index bytes once, then
      // read as one plane; 2- and 4-bit bytes hold one column of each plane.
      alignas(64) uint8_t idx3[kFieldBits == 3 ? 128 : 1];
      if constexpr (kFieldBits == 3) DecodeGroup3(gc, idx3);
      for (uint32_t c = 0; c < kLen; c += static_cast<uint32_t>(L)) {
        const auto v = hn::LoadU(du8, (kFieldBits == 3 ? idx3 : gc) + c);
        for (int j = 0; j < kSteps; ++j) {
          const auto idx = kFieldBits == 3 ? v : hn::And(hn::ShiftRightSame(v, j * kFieldBits), mask);
          const auto lvl = hn::PromoteTo(d16, hn::BitCast(d8, hn::TableLookupBytes(table, idx)));
          const size_t slot = size_t(g) * 128 + size_t(j) * kLen + c;
          for (int b = 0; b < kBatch; ++b) {
            const auto x = hn::PromoteTo(d16, hn::LoadU(d8, xs[b].q + slot));
            sum[b] = hn::ReorderWidenMulAccumulate(d32, lvl, x, sum[b], unused);
          }
        }
      }
      uint16_t nh;
      std::memcpy(&nh, norms + g, 2);
      const float norm = HalfToFloat(nh) * lv.scale;
      for (int b = 0; b < kBatch; ++b) {
        acc[b] = hn::MulAdd(hn::ConvertTo(df, sum[b]), hn::Set(df, norm * xs[b].scale[g]), acc[b]);
      }
    }
    for (int b = 0; b < kBatch; ++b) y[b * y_stride + (r - r0)] = hn::GetLane(hn::SumOfLanes(df, acc[b]));
  }
}
#define NEEDLE_TILE MatMulTileWide
#endif  // HWY_TARGET == HWY_AVX3_DL
#else
#define NEEDLE_TILE MatMulTile
#endif

#endif  // HWY_TARGET != HWY_SCALAR

// Returns false when this width has no SIMD kernel (the caller falls back).
bool MatMulSimd(const CqMatrixView& w, const CqLevelsQ8& lv, const ActivationQ8* xs, uint32_t batch, uint32_t r0,
                uint32_t r1, float* y, uint32_t y_stride) {
#if HWY_TARGET == HWY_SCALAR
  return false;
#else
  const uint32_t fb = CqFieldBits(w.bits);
  if (fb != 2 && fb != 3 && fb != 4) return false;
  // Tiles of activations share each decoded code: 8 on AVX-512 (32 registers), else 4.
#if HWY_ARCH_X86 && HWY_TARGET <= HWY_AVX3
  constexpr uint32_t kTile = 8;
#else
  constexpr uint32_t kTile = 4;
#endif
  using TileFn = void (*)(const CqMatrixView&, const CqLevelsQ8&, const ActivationQ8*, uint32_t, uint32_t, float*,
                          uint32_t);
  static constexpr TileFn kTiles2[8] = {NEEDLE_TILE<1, 2>, NEEDLE_TILE<2, 2>, NEEDLE_TILE<3, 2>, NEEDLE_TILE<4, 2>,
                                        NEEDLE_TILE<5, 2>, NEEDLE_TILE<6, 2>, NEEDLE_TILE<7, 2>, NEEDLE_TILE<8, 2>};
  static constexpr TileFn kTiles4[8] = {NEEDLE_TILE<1, 4>, NEEDLE_TILE<2, 4>, NEEDLE_TILE<3, 4>, NEEDLE_TILE<4, 4>,
                                        NEEDLE_TILE<5, 4>, NEEDLE_TILE<6, 4>, NEEDLE_TILE<7, 4>, NEEDLE_TILE<8, 4>};
  // 3-bit groups are unpacked to index bytes first (DecodeGroup3), then go the same way.
  static constexpr TileFn kTiles3[8] = {NEEDLE_TILE<1, 3>, NEEDLE_TILE<2, 3>, NEEDLE_TILE<3, 3>, NEEDLE_TILE<4, 3>,
                                        NEEDLE_TILE<5, 3>, NEEDLE_TILE<6, 3>, NEEDLE_TILE<7, 3>, NEEDLE_TILE<8, 3>};
  for (uint32_t b0 = 0; b0 < batch; b0 += kTile) {
    const uint32_t nb = std::min<uint32_t>(kTile, batch - b0);
    (fb == 2 ? kTiles2 : fb == 3 ? kTiles3 : kTiles4)[nb - 1](w, lv, xs + b0, r0, r1, y + b0 * y_stride, y_stride);
  }
  return true;
#endif
}
#undef NEEDLE_TILE

// Per group of 128: max |x| (vector), x / scale rounded half-even (NearestInt,
// as RoundHalfEven) to int8 in natural order and summed, then de-interleaved
// into the planar order of 2- and 4-bit fields. The same values as the reference.
bool QuantizeActivationSimd(const float* rotated, uint32_t in_pad, uint32_t field_bits, int8_t* q, float* scales,
                            int32_t* sums) {
#if HWY_TARGET == HWY_SCALAR
  return false;
#else
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di32;
  const hn::Rebind<int8_t, decltype(df)> dq8;
  const hn::CappedTag<int8_t, 32> d8;  // a plane of a 2-bit group is 32 slots
  const size_t N = hn::Lanes(df), N8 = hn::Lanes(d8);
  if (kCqGroup % N || 32 % N8) return false;
  alignas(64) int8_t natural[kCqGroup];
  for (uint32_t g = 0; g < in_pad / kCqGroup; ++g) {
    const float* x = rotated + size_t(g) * kCqGroup;
    auto vmax = hn::Zero(df);
    for (size_t k = 0; k < kCqGroup; k += N) vmax = hn::Max(vmax, hn::Abs(hn::LoadU(df, x + k)));
    const float mx = hn::GetLane(hn::MaxOfLanes(df, vmax));
    const float scale = mx > 0.0f ? mx / 127.0f : 1.0f;
    scales[g] = scale;
    const auto inv = hn::Set(df, 1.0f / scale);
    int8_t* out = q + size_t(g) * kCqGroup;
    int8_t* nat = field_bits == 2 || field_bits == 4 ? natural : out;
    auto vsum = hn::Zero(di32);
    for (size_t k = 0; k < kCqGroup; k += N) {
      const auto r = hn::NearestInt(hn::Mul(hn::LoadU(df, x + k), inv));
      vsum = hn::Add(vsum, r);
      hn::StoreU(hn::DemoteTo(dq8, r), dq8, nat + k);
    }
    sums[g] = hn::GetLane(hn::SumOfLanes(di32, vsum));
    if (field_bits == 2) {  // slot j*32 + i holds column 4i + j
      for (size_t i0 = 0; i0 < 32; i0 += N8) {
        decltype(hn::Zero(d8)) p0, p1, p2, p3;
        hn::LoadInterleaved4(d8, natural + 4 * i0, p0, p1, p2, p3);
        hn::StoreU(p0, d8, out + i0);
        hn::StoreU(p1, d8, out + 32 + i0);
        hn::StoreU(p2, d8, out + 64 + i0);
        hn::StoreU(p3, d8, out + 96 + i0);
      }
    } else if (field_bits == 4) {  // slot j*64 + i holds column 2i + j
      for (size_t i0 = 0; i0 < 64; i0 += N8) {
        decltype(hn::Zero(d8)) p0, p1;
        hn::LoadInterleaved2(d8, natural + 2 * i0, p0, p1);
        hn::StoreU(p0, d8, out + i0);
        hn::StoreU(p1, d8, out + 64 + i0);
      }
    }
  }
  return true;
#endif
}

const char* TargetName() { return hwy::TargetName(HWY_TARGET); }

}  // namespace HWY_NAMESPACE
}  // namespace needle
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace needle {

HWY_EXPORT(MatMulSimd);
HWY_EXPORT(TargetName);
HWY_EXPORT(QuantizeActivationSimd);

namespace {

// Slot of column k inside the planar activation layout for a field width.
inline uint32_t PlanarSlot(uint32_t k, uint32_t field_bits) {
  const uint32_t g = k / 128, c = k % 128;
  if (field_bits == 2) return g * 128 + (c % 4) * 32 + c / 4;
  if (field_bits == 4) return g * 128 + (c % 2) * 64 + c / 2;
  return k;
}

inline uint32_t ReadField(const uint8_t* row, uint64_t k, uint32_t fb) {
  const uint64_t bit = k * fb;
  uint32_t v = row[bit / 8];
  if ((bit % 8) + fb > 8) v |= uint32_t(row[bit / 8 + 1]) << 8;
  return (v >> (bit % 8)) & ((1u << fb) - 1);
}

}  // namespace

CqLevelsQ8 QuantizeLevels(const CqLevels& levels) {
  CqLevelsQ8 q;
  // Ternary tables are {0, +c, -2c, -c}; code 2 is never written, so scale by c
  // (full int8 precision for the real levels) and let -2c saturate.
  const bool ternary = levels.count == 4 && levels.value[0] == 0.0f;
  float mx = 0.0f;
  for (uint32_t i = 0; i < levels.count; ++i) {
    if (!(ternary && i == 2)) mx = std::max(mx, std::fabs(levels.value[i]));
  }
  q.scale = mx > 0.0f ? mx / 127.0f : 1.0f;
  for (uint32_t i = 0; i < levels.count; ++i) {
    const long v = std::lround(levels.value[i] / q.scale);
    q.level[i] = static_cast<int16_t>(std::clamp(v, -127l, 127l));
    q.level_u8[i] = static_cast<uint8_t>(static_cast<int8_t>(q.level[i]));
  }
  return q;
}

void RotateForCq(const float* x, uint32_t in, float* rotated) {
  static_assert(kCqGroup == 128);
  const uint32_t in_pad = static_cast<uint32_t>(CqPaddedIn(in));
  const uint32_t full = in / kCqGroup;  // whole groups straight from x
  FastWalshHadamard128Blocks(x, rotated, full);
  if (full * kCqGroup < in_pad) {  // the last group, zero-padded
    float* tail = rotated + size_t(full) * kCqGroup;
    std::memcpy(tail, x + size_t(full) * kCqGroup, sizeof(float) * (in - full * kCqGroup));
    std::fill(tail + (in - full * kCqGroup), rotated + in_pad, 0.0f);
    FastWalshHadamard128Blocks(tail, tail, 1);
  }
}

void QuantizeActivation(const float* rotated, uint32_t in_pad, uint32_t field_bits, ActivationQ8& out) {
  out.in_pad = in_pad;
  out.field_bits = field_bits;
  if (!HWY_DYNAMIC_DISPATCH(QuantizeActivationSimd)(rotated, in_pad, field_bits, out.q, out.scale, out.sum)) {
    QuantizeActivationReference(rotated, in_pad, field_bits, out);
  }
}

void QuantizeActivationReference(const float* rotated, uint32_t in_pad, uint32_t field_bits, ActivationQ8& out) {
  out.in_pad = in_pad;
  out.field_bits = field_bits;
  for (uint32_t g = 0; g < in_pad / kCqGroup; ++g) {
    const float* x = rotated + g * kCqGroup;
    float mx = 0.0f;
    for (uint32_t k = 0; k < kCqGroup; ++k) mx = std::max(mx, std::fabs(x[k]));
    const float scale = mx > 0.0f ? mx / 127.0f : 1.0f;
    const float inv = 1.0f / scale;
    out.scale[g] = scale;
    int32_t sum = 0;
    for (uint32_t k = 0; k < kCqGroup; ++k) {
      const uint32_t col = g * kCqGroup + k;
      const auto q = static_cast<int8_t>(RoundHalfEven(x[k] * inv));
      out.q[PlanarSlot(col, field_bits)] = q;
      sum += q;
    }
    out.sum[g] = sum;
  }
}

void CqMatVecA8Reference(const CqMatrixView& w, const CqLevelsQ8& lv, const ActivationQ8& x, uint32_t r0,
                         uint32_t r1, float* y) {
  const uint32_t fb = CqFieldBits(w.bits);
  if (x.field_bits != fb) throw Error(ErrorCode::kInternal, "activation prepared for another field width");
  const uint32_t groups = static_cast<uint32_t>(CqGroupsPerRow(w.in));
  const uint64_t row_bytes = CqRowBytes(w.in, w.bits);
  for (uint32_t r = r0; r < r1; ++r) {
    const uint8_t* row = w.codes + r * row_bytes;
    float acc = 0.0f;
    for (uint32_t g = 0; g < groups; ++g) {
      int32_t isum = 0;
      for (uint32_t c = 0; c < kCqGroup; ++c) {
        const uint32_t k = g * kCqGroup + c;
        isum += int32_t(x.q[PlanarSlot(k, fb)]) * lv.level[ReadField(row, k, fb)];
      }
      uint16_t nh;
      std::memcpy(&nh, w.norms + uint64_t(r) * groups + g, 2);
      acc += static_cast<float>(isum) * (HalfToFloat(nh) * lv.scale * x.scale[g]);
    }
    y[r - r0] = acc;
  }
}

void CqMatMulA8(const CqMatrixView& w, const CqLevelsQ8& lv, const ActivationQ8* xs, uint32_t batch, uint32_t r0,
                uint32_t r1, float* y, uint32_t y_stride) {
  // Four rows per vector where there is such a kernel; the rows after the last
  // multiple of four (from r0) one at a time. Callers split rows at multiples
  // of four, so a row takes the same kernel whatever the split.
  const uint32_t done = CqMatMulRows4(w, lv, xs, batch, r0, r1, y, y_stride);
  r0 += done, y += done;
  if (r0 == r1) return;
  if (HWY_DYNAMIC_DISPATCH(MatMulSimd)(w, lv, xs, batch, r0, r1, y, y_stride)) return;
  for (uint32_t b = 0; b < batch; ++b) CqMatVecA8Reference(w, lv, xs[b], r0, r1, y + b * y_stride);
}

void CqMatVecA8(const CqMatrixView& w, const CqLevelsQ8& lv, const ActivationQ8& x, uint32_t r0, uint32_t r1,
                float* y) {
  CqMatMulA8(w, lv, &x, 1, r0, r1, y, r1 - r0);
}

const char* CqKernelTarget() { return HWY_DYNAMIC_DISPATCH(TargetName)(); }

}  // namespace needle
#endif  // HWY_ONCE
