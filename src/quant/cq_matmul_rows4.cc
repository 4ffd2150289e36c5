// CqMatMulA8 with four weight rows per 512-bit vector (AVX3_DL: 512-bit
// VNNI), 2- and 4-bit fields.
//
// The one-row VNNI tile (cq_matvec.cc) gives a row all 16 int32 lanes, so
// every (row, group, activation) pays its own convert, scale and accumulate:
// half the vector work of a prefill tile. Here 128-bit lane L holds row r + L: a
// 16-byte chunk of each row's codes is decoded into its lane, and the
// matching 16 activation bytes are broadcast to all four lanes, so one
// vpdpbusd still does 64 multiply-adds while the float epilogue serves four
// rows. The code unpacking costs about the same per row.
#include "quant/cq_matmul_rows4.h"

#include <algorithm>
#include <cstring>

#include "base/fp16.h"

#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "quant/cq_matmul_rows4.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "quant/vnni512.h"  // NEEDLE_VNNI512

HWY_BEFORE_NAMESPACE();
namespace needle {
namespace HWY_NAMESPACE {

#if HWY_TARGET == HWY_AVX3_DL
// Rows [r0, r1), a multiple of 4, against kBatch activations. Levels are
// biased by +128 to unsigned bytes as in CqMatMulA8's VNNI tile; each row's
// four lanes start at -32 * (the group's activation sum), -128 * sum in all.
template <int kBatch, int kFieldBits>
NEEDLE_VNNI512 void Rows4Tile(const CqMatrixView& w, const CqLevelsQ8& lv, const ActivationQ8* xs, uint32_t r0,
                              uint32_t r1, float* y, uint32_t y_stride) {
  constexpr int kPlanes = 8 / kFieldBits;                 // fields per code byte
  constexpr int kPlaneLen = 128 / kPlanes;                // activation slots per plane
  constexpr uint32_t kGroupBytes = 128 * kFieldBits / 8;  // code bytes per row and group
  constexpr int kChunks = kGroupBytes / 16;               // 16-byte chunks per row and group
  alignas(16) uint8_t biased[16];
  for (int i = 0; i < 16; ++i) biased[i] = lv.level_u8[i] ^ 0x80;
  const __m512i table = _mm512_broadcast_i32x4(_mm_load_si128(reinterpret_cast<const __m128i*>(biased)));
  const __m512i mask = _mm512_set1_epi8(static_cast<char>((1 << kFieldBits) - 1));
  const __m512i spread = _mm512_set_epi32(3, 3, 3, 3, 2, 2, 2, 2, 1, 1, 1, 1, 0, 0, 0, 0);  // lane L <- element L
  const uint32_t groups = static_cast<uint32_t>(CqGroupsPerRow(w.in));
  const uint64_t row_bytes = CqRowBytes(w.in, w.bits);
  for (uint32_t r = r0; r < r1; r += 4) {
    const uint8_t* codes = w.codes + uint64_t(r) * row_bytes;
    __m512 acc[kBatch];
    for (int b = 0; b < kBatch; ++b) acc[b] = _mm512_setzero_ps();
    for (uint32_t g = 0; g < groups; ++g) {
      // The four rows' norms for this group, each across its lane.
      uint16_t nh[4];
      for (int l = 0; l < 4; ++l) std::memcpy(&nh[l], w.norms + uint64_t(r + l) * groups + g, 2);
      const __m128 n4 = _mm_mul_ps(_mm_cvtph_ps(_mm_setr_epi16(short(nh[0]), short(nh[1]), short(nh[2]), short(nh[3]), 0, 0, 0, 0)),
                                   _mm_set1_ps(lv.scale));
      const __m512 norm = _mm512_permutexvar_ps(spread, _mm512_castps128_ps512(n4));
      // lvl[h][j]: plane j of chunk h, row r + L in lane L.
      // The four rows' group codes, transposed by 128-bit blocks: chunk[h]
      // holds the h-th 16 bytes of row r + L in lane L.
      const uint8_t* c = codes + uint64_t(g) * kGroupBytes;
      __m512i chunk[kChunks];
      if constexpr (kChunks == 2) {  // 32 bytes a row: rows 0|1 and 2|3 side by side, then pick block 0 or 1 of each half
        const __m512i v01 = _mm512_inserti64x4(_mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(c))),
                                               _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + row_bytes)), 1);
        const __m512i v23 = _mm512_inserti64x4(
            _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + 2 * row_bytes))),
            _mm256_loadu_si256(reinterpret_cast<const __m256i*>(c + 3 * row_bytes)), 1);
        chunk[0] = _mm512_shuffle_i64x2(v01, v23, 0x88);
        chunk[1] = _mm512_shuffle_i64x2(v01, v23, 0xDD);
      } else {  // 64 bytes a row: a 4x4 transpose of 128-bit blocks
        const __m512i v0 = _mm512_loadu_si512(c), v1 = _mm512_loadu_si512(c + row_bytes);
        const __m512i v2 = _mm512_loadu_si512(c + 2 * row_bytes), v3 = _mm512_loadu_si512(c + 3 * row_bytes);
        const __m512i t0 = _mm512_shuffle_i64x2(v0, v1, 0x44), t1 = _mm512_shuffle_i64x2(v0, v1, 0xEE);
        const __m512i t2 = _mm512_shuffle_i64x2(v2, v3, 0x44), t3 = _mm512_shuffle_i64x2(v2, v3, 0xEE);
        chunk[0] = _mm512_shuffle_i64x2(t0, t2, 0x88);
        chunk[1] = _mm512_shuffle_i64x2(t0, t2, 0xDD);
        chunk[2] = _mm512_shuffle_i64x2(t1, t3, 0x88);
        chunk[3] = _mm512_shuffle_i64x2(t1, t3, 0xDD);
      }
      __m512i lvl[kChunks][kPlanes];
      for (int h = 0; h < kChunks; ++h) {
        for (int j = 0; j < kPlanes; ++j) {
          lvl[h][j] = _mm512_shuffle_epi8(table, _mm512_and_si512(_mm512_srli_epi16(chunk[h], j * kFieldBits), mask));
        }
      }
      for (int b = 0; b < kBatch; ++b) {
        const int8_t* x = xs[b].q + size_t(g) * 128;
        __m512i sum = _mm512_set1_epi32(-32 * xs[b].sum[g]);
        for (int h = 0; h < kChunks; ++h) {
          for (int j = 0; j < kPlanes; ++j) {
            const __m512i xb = _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x + j * kPlaneLen + 16 * h)));
            sum = _mm512_dpbusd_epi32(sum, lvl[h][j], xb);
          }
        }
        acc[b] = _mm512_fmadd_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(sum), _mm512_set1_ps(xs[b].scale[g])), norm, acc[b]);
      }
    }
    // Each lane's four partial sums: element 0 of lane L is row r + L.
    for (int b = 0; b < kBatch; ++b) {
      __m512 t = _mm512_add_ps(acc[b], _mm512_permute_ps(acc[b], 0x4E));
      t = _mm512_add_ps(t, _mm512_permute_ps(t, 0xB1));
      alignas(64) float lanes[16];
      _mm512_store_ps(lanes, t);
      for (int l = 0; l < 4; ++l) y[b * y_stride + (r - r0) + l] = lanes[4 * l];
    }
  }
}
#endif  // HWY_TARGET == HWY_AVX3_DL

// Rows done from r0 (a multiple of 4; 0 where this target or width has no kernel).
uint32_t MatMulRows4Simd(const CqMatrixView& w, const CqLevelsQ8& lv, const ActivationQ8* xs, uint32_t batch,
                         uint32_t r0, uint32_t r1, float* y, uint32_t y_stride) {
#if HWY_TARGET == HWY_AVX3_DL
  const uint32_t fb = CqFieldBits(w.bits);
  const uint32_t rows = (r1 - r0) / 4 * 4;
  if ((fb != 2 && fb != 4) || rows == 0) return 0;
  using TileFn = void (*)(const CqMatrixView&, const CqLevelsQ8&, const ActivationQ8*, uint32_t, uint32_t, float*,
                          uint32_t);
  static constexpr TileFn kTiles2[8] = {Rows4Tile<1, 2>, Rows4Tile<2, 2>, Rows4Tile<3, 2>, Rows4Tile<4, 2>,
                                        Rows4Tile<5, 2>, Rows4Tile<6, 2>, Rows4Tile<7, 2>, Rows4Tile<8, 2>};
  static constexpr TileFn kTiles4[8] = {Rows4Tile<1, 4>, Rows4Tile<2, 4>, Rows4Tile<3, 4>, Rows4Tile<4, 4>,
                                        Rows4Tile<5, 4>, Rows4Tile<6, 4>, Rows4Tile<7, 4>, Rows4Tile<8, 4>};
  for (uint32_t b0 = 0; b0 < batch; b0 += 8) {
    const uint32_t nb = std::min<uint32_t>(8, batch - b0);
    (fb == 2 ? kTiles2 : kTiles4)[nb - 1](w, lv, xs + b0, r0, r0 + rows, y + size_t(b0) * y_stride, y_stride);
  }
  return rows;
#else
  (void)w, (void)lv, (void)xs, (void)batch, (void)r0, (void)r1, (void)y, (void)y_stride;
  return 0;
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace needle
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace needle {

HWY_EXPORT(MatMulRows4Simd);

uint32_t CqMatMulRows4(const CqMatrixView& w, const CqLevelsQ8& lv, const ActivationQ8* xs, uint32_t batch, uint32_t r0,
                       uint32_t r1, float* y, uint32_t y_stride) {
  return HWY_DYNAMIC_DISPATCH(MatMulRows4Simd)(w, lv, xs, batch, r0, r1, y, y_stride);
}

}  // namespace needle
#endif  // HWY_ONCE
