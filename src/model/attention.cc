#include "model/attention.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "kv/window_sink_cache.h"

// AVX3_DL (Ice Lake and later) brings the byte dot product vpdpbusd: the
// scores of int8 queries against int8 keys in one instruction per 64 products.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "model/attention.cc"
#include "hwy/foreach_target.h"  // IWYU pragma: keep
#include "hwy/highway.h"
#include "quant/vnni512.h"  // NEEDLE_VNNI512
#include "hwy/contrib/math/math-inl.h"

HWY_BEFORE_NAMESPACE();
namespace needle {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

#if HWY_TARGET != HWY_SCALAR
// The lane sums of four vectors, together: two interleave+add steps leave
// each 128-bit block holding [sum a, sum b, sum c, sum d] of that block, then
// the blocks are added. Cheaper than four SumOfLanes on wide vectors.
template <class D, class V>
HWY_INLINE void SumOfLanes4(D df, V a, V b, V c, V d, float* out) {
  const hn::Repartition<uint64_t, D> d64;
  const auto ab = hn::Add(hn::InterleaveLower(df, a, b), hn::InterleaveUpper(df, a, b));
  const auto cd = hn::Add(hn::InterleaveLower(df, c, d), hn::InterleaveUpper(df, c, d));
  const auto lo = hn::BitCast(df, hn::InterleaveLower(d64, hn::BitCast(d64, ab), hn::BitCast(d64, cd)));
  const auto hi = hn::BitCast(df, hn::InterleaveUpper(d64, hn::BitCast(d64, ab), hn::BitCast(d64, cd)));
  alignas(64) float blocks[hn::MaxLanes(df)];
  hn::Store(hn::Add(lo, hi), df, blocks);
  const hn::Full128<float> d4;
  auto sum = hn::Load(d4, blocks);
  for (size_t i = 4; i < hn::Lanes(df); i += 4) sum = hn::Add(sum, hn::Load(d4, blocks + i));
  hn::StoreU(sum, d4, out);  // out: any float of the caller's scratch
}

// Per-(key, head) accumulators reduced four at a time into consecutive floats
// of `out` (the key-major scores).
template <class D>
struct LaneSumWriter {
  using VF = decltype(hn::Zero(D()));
  float* out;
  VF pend[4];
  uint32_t np = 0;
  explicit LaneSumWriter(float* o) : out(o) {}
  HWY_INLINE void Push(VF v) {
    pend[np++] = v;
    if (np == 4) {
      SumOfLanes4(D(), pend[0], pend[1], pend[2], pend[3], out);
      out += 4;
      np = 0;
    }
  }
  HWY_INLINE void Flush() {
    if (!np) return;
    alignas(16) float sums[4];
    for (uint32_t i = np; i < 4; ++i) pend[i] = hn::Zero(D());
    SumOfLanes4(D(), pend[0], pend[1], pend[2], pend[3], sums);
    for (uint32_t i = 0; i < np; ++i) out[i] = sums[i];
    np = 0;
  }
};

#if HWY_TARGET == HWY_AVX3_DL

// Integer scores. The queries arrive on the int8 grid (SnapToKvGrid), so
// QuantizeKvRow gives back their exact int8 values and each 32-value group's
// dot product with a key is an exact integer: vpdpbusd multiplies unsigned by
// signed bytes, so the key bytes are offset by 128 (xor 0x80) and 128 * sum(q)
// is subtracted up front. Then score = sum_g dot_g * qscale_g * kscale_g / sqrt(hd),
// what the float kernels compute up to rounding.

// Decode: H heads, head_dim a multiple of 64 (one key = hd/64 vectors, lanes
// 0-7 of a vector hold group 2c's partial sums and lanes 8-15 group 2c+1's).
// Scores key-major, sc[key * H + h], as the float loop writes them.
template <uint32_t H>
NEEDLE_VNNI512 void GroupScoresVnni(const AttentionGroupArgs& a, float* sc) {
  const hn::ScalableTag<float> df;
  using VF = decltype(hn::Zero(df));
  const uint32_t hd = a.head_dim, chunks = hd / 64;
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(hd));
  const __m512i bias = _mm512_set1_epi8(static_cast<char>(0x80));
  const __m512i halves = _mm512_set_epi32(1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0);
  // [set: window, sink][head][chunk]; the sink set only when a run is scored as sinks.
  __m512i qv[2][H][2], neg[2][H][2];
  __m512 qsv[2][H][2];
  bool any_sink = false;
  for (uint32_t r = 0; r < a.num_runs; ++r) any_sink = any_sink || a.runs[r].sink;
  for (int set = 0; set < (any_sink ? 2 : 1); ++set) {
    const float* q = set ? a.q_sink : a.q_window;
    for (uint32_t h = 0; h < H; ++h) {
      alignas(64) int8_t q8[128];
      float qs[4];
      QuantizeKvRow(q + size_t(h) * hd, hd, q8, qs);
      for (uint32_t c = 0; c < chunks; ++c) {
        qv[set][h][c] = _mm512_load_si512(q8 + 64 * c);
        neg[set][h][c] = _mm512_sub_epi32(_mm512_setzero_si512(),
                                          _mm512_dpbusd_epi32(_mm512_setzero_si512(), bias, qv[set][h][c]));
        qsv[set][h][c] = _mm512_permutexvar_ps(
            halves, _mm512_castps128_ps512(_mm_setr_ps(qs[2 * c] * inv_sqrt, qs[2 * c + 1] * inv_sqrt, 0.0f, 0.0f)));
      }
    }
  }
  LaneSumWriter<decltype(df)> scores(sc);
  for (uint32_t r = 0; r < a.num_runs; ++r) {
    const KvRun& run = a.runs[r];
    const int set = run.sink ? 1 : 0;
    for (uint32_t s = 0; s < run.count; ++s) {
      const int8_t* k = run.k + size_t(s) * a.row_stride;
      const float* ks = run.ks + size_t(s) * a.scale_stride;
      __m512 acc[H];
      for (uint32_t h = 0; h < H; ++h) acc[h] = _mm512_setzero_ps();
      for (uint32_t c = 0; c < chunks; ++c) {
        const __m512i ku = _mm512_xor_si512(_mm512_loadu_si512(k + 64 * c), bias);
        const __m512 ksv = _mm512_permutexvar_ps(
            halves, _mm512_castps128_ps512(_mm_castsi128_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(ks + 2 * c)))));
        for (uint32_t h = 0; h < H; ++h) {
          const __m512i d = _mm512_dpbusd_epi32(neg[set][h][c], ku, qv[set][h][c]);
          acc[h] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(d), _mm512_mul_ps(ksv, qsv[set][h][c]), acc[h]);
        }
      }
      for (uint32_t h = 0; h < H; ++h) {
        VF v;
        v.raw = acc[h];
        scores.Push(v);
      }
    }
  }
  scores.Flush();
}
#endif  // HWY_TARGET == HWY_AVX3_DL

// Float scores (every other target): each key chunk dequantized once and used
// for every head of the group; sc[key * H + h].
template <uint32_t H>
void GroupScoresFloat(const AttentionGroupArgs& a, float* sc) {
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di32;
  const hn::Rebind<int8_t, decltype(df)> di8;
  using VF = decltype(hn::Zero(df));
  const size_t N = hn::Lanes(df);
  const uint32_t hd = a.head_dim, groups = hd / 32;
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(hd));
  LaneSumWriter<decltype(df)> scores(sc);
  for (uint32_t r = 0; r < a.num_runs; ++r) {
    const KvRun& run = a.runs[r];
    const float* q = run.sink ? a.q_sink : a.q_window;
    for (uint32_t s = 0; s < run.count; ++s) {
      const int8_t* k = run.k + size_t(s) * a.row_stride;
      const float* ks = run.ks + size_t(s) * a.scale_stride;
      VF acc[H];
      for (uint32_t h = 0; h < H; ++h) acc[h] = hn::Zero(df);
      for (uint32_t g = 0; g < groups; ++g) {
        const auto scale = hn::Set(df, ks[g] * inv_sqrt);
        for (uint32_t i = g * 32; i < g * 32 + 32; i += static_cast<uint32_t>(N)) {
          const auto kf = hn::Mul(hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, k + i))), scale);
          for (uint32_t h = 0; h < H; ++h) acc[h] = hn::MulAdd(hn::LoadU(df, q + h * hd + i), kf, acc[h]);
        }
      }
      for (uint32_t h = 0; h < H; ++h) scores.Push(acc[h]);
    }
  }
  scores.Flush();
}

// kHeads is a compile-time constant so the per-head accumulators stay in
// registers. Scores live key-major ([key][head]) so the four lane sums reduced
// together land contiguously; the softmax then runs on that interleaved layout
// (lane l belongs to head l % kHeads), and 1/sum is applied to the outputs.
template <uint32_t kHeads>
bool AttendGroupSimdT(const AttentionGroupArgs& a) {
  static_assert(4 % kHeads == 0, "heads must divide 4");
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di32;
  const hn::Rebind<int8_t, decltype(df)> di8;
  using VF = decltype(hn::Zero(df));
  const size_t N = hn::Lanes(df);
  const uint32_t hd = a.head_dim;
  constexpr uint32_t H = kHeads;
  if (hd % 32 != 0 || 32 % N != 0 || N < 4) return false;
  uint32_t total = 0;
  for (uint32_t r = 0; r < a.num_runs; ++r) total += a.runs[r].count;
  if (total == 0) {
    std::fill(a.out, a.out + size_t(H) * hd, 0.0f);
    return true;
  }
  float* sc = a.scores;  // [key][head]

  // ---- scores, key-major
#if HWY_TARGET == HWY_AVX3_DL
  if (hd % 64 == 0 && hd <= 128) {
    GroupScoresVnni<H>(a, sc);
  } else {
    GroupScoresFloat<H>(a, sc);
  }
#else
  GroupScoresFloat<H>(a, sc);
#endif

  // ---- softmax on the interleaved scores: per-head max, exp, per-head sum
  const uint32_t n = total * H;
  alignas(64) float lanes[hn::MaxLanes(df)];
  float mx[H], sum[H];
  for (uint32_t h = 0; h < H; ++h) mx[h] = -INFINITY, sum[h] = 0.0f;
  uint32_t i = 0;
  if (n >= N) {
    auto vmax = hn::LoadU(df, sc);
    for (i = static_cast<uint32_t>(N); i + N <= n; i += static_cast<uint32_t>(N)) vmax = hn::Max(vmax, hn::LoadU(df, sc + i));
    hn::Store(vmax, df, lanes);
    for (size_t l = 0; l < N; ++l) mx[l % H] = std::max(mx[l % H], lanes[l]);
  }
  for (uint32_t t = i; t < n; ++t) mx[t % H] = std::max(mx[t % H], sc[t]);
  for (size_t l = 0; l < N; ++l) lanes[l] = mx[l % H];  // N is a multiple of H
  const auto vmx = hn::Load(df, lanes);
  auto vsum = hn::Zero(df);
  for (i = 0; i + N <= n; i += static_cast<uint32_t>(N)) {
    const auto e = hn::Exp(df, hn::Sub(hn::LoadU(df, sc + i), vmx));
    hn::StoreU(e, df, sc + i);
    vsum = hn::Add(vsum, e);
  }
  hn::Store(vsum, df, lanes);
  for (size_t l = 0; l < N; ++l) sum[l % H] += lanes[l];
  for (; i < n; ++i) sum[i % H] += (sc[i] = std::exp(sc[i] - mx[i % H]));

  // ---- values: out[h] = (sum_j p[h][j] * v_j) / sum[h]. Key by key when every
  // head's whole output fits in registers (each V row read once).
  constexpr uint32_t kMaxChunks = 8;
  const uint32_t chunks = hd / static_cast<uint32_t>(N);
  if (chunks <= kMaxChunks) {
    VF acc[H][kMaxChunks];
    for (uint32_t h = 0; h < H; ++h) {
      for (uint32_t c = 0; c < chunks; ++c) acc[h][c] = hn::Zero(df);
    }
    uint32_t j = 0;
    for (uint32_t r = 0; r < a.num_runs; ++r) {
      const KvRun& run = a.runs[r];
      for (uint32_t s = 0; s < run.count; ++s, ++j) {
        const int8_t* v = run.v + size_t(s) * a.row_stride;
        const float* vs = run.vs + size_t(s) * a.scale_stride;
        VF p[H];
        for (uint32_t h = 0; h < H; ++h) p[h] = hn::Set(df, sc[j * H + h]);
        for (uint32_t c = 0; c < chunks; ++c) {
          const uint32_t c0 = c * static_cast<uint32_t>(N);
          const auto vf = hn::Mul(hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, v + c0))), hn::Set(df, vs[c0 / 32]));
          for (uint32_t h = 0; h < H; ++h) acc[h][c] = hn::MulAdd(p[h], vf, acc[h][c]);
        }
      }
    }
    for (uint32_t h = 0; h < H; ++h) {
      const auto inv = hn::Set(df, 1.0f / sum[h]);
      for (uint32_t c = 0; c < chunks; ++c) hn::StoreU(hn::Mul(acc[h][c], inv), df, a.out + size_t(h) * hd + c * N);
    }
    return true;
  }
  for (uint32_t c0 = 0; c0 < hd; c0 += static_cast<uint32_t>(N)) {
    const uint32_t g = c0 / 32;
    VF acc[H];
    for (uint32_t h = 0; h < H; ++h) acc[h] = hn::Zero(df);
    uint32_t j = 0;
    for (uint32_t r = 0; r < a.num_runs; ++r) {
      const KvRun& run = a.runs[r];
      for (uint32_t s = 0; s < run.count; ++s, ++j) {
        const int8_t* v = run.v + size_t(s) * a.row_stride;
        const auto vf = hn::Mul(hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, v + c0))),
                                hn::Set(df, run.vs[size_t(s) * a.scale_stride + g]));
        for (uint32_t h = 0; h < H; ++h) acc[h] = hn::MulAdd(hn::Set(df, sc[j * H + h]), vf, acc[h]);
      }
    }
    for (uint32_t h = 0; h < H; ++h) hn::StoreU(hn::Mul(acc[h], hn::Set(df, 1.0f / sum[h])), df, a.out + size_t(h) * hd + c0);
  }
  return true;
}

#endif  // HWY_TARGET != HWY_SCALAR

bool AttendGroupSimd(const AttentionGroupArgs& a) {
#if HWY_TARGET == HWY_SCALAR
  return false;  // the scalar reference
#else
  switch (a.heads) {
    case 1: return AttendGroupSimdT<1>(a);
    case 2: return AttendGroupSimdT<2>(a);
    case 4: return AttendGroupSimdT<4>(a);
    default: return false;  // other GQA groups: the scalar reference
  }
#endif
}


// Rows (token, head) in lanes: kRows = kAttentionBlockRows split into RV vectors.
constexpr uint32_t kKeyBlock = 32;  // keys dequantized and scored together
constexpr uint32_t kRows = kAttentionBlockRows;

#if HWY_TARGET == HWY_AVX3_DL
// Prefill: the block's query rows (16, one per lane) as int8 for BlockScoresVnni.
struct BlockQueriesQ8 {
  alignas(64) int32_t quads[kAttentionBlockMaxHeadDim / 4][kRows];  // bytes 4i..4i+3 of each row
  alignas(64) int32_t neg[kAttentionBlockMaxHeadDim / 32][kRows];   // -128 * the group's sum
  alignas(64) float scale[kAttentionBlockMaxHeadDim / 32][kRows];   // the group's scale / sqrt(hd)
};

// Rows past `rows` stay zero (they score 0 and are never written out).
void QuantizeBlockQueries(const float* q, uint32_t q_stride, uint32_t heads, uint32_t rows, uint32_t hd,
                          BlockQueriesQ8* out) {
  std::memset(out, 0, sizeof(*out));
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(hd));
  for (uint32_t r = 0; r < rows; ++r) {
    alignas(64) int8_t q8[kAttentionBlockMaxHeadDim];
    float qs[kAttentionBlockMaxHeadDim / 32];
    QuantizeKvRow(q + size_t(r / heads) * q_stride + size_t(r % heads) * hd, hd, q8, qs);
    for (uint32_t i = 0; i < hd; i += 4) std::memcpy(&out->quads[i / 4][r], q8 + i, 4);
    for (uint32_t g = 0; g < hd / 32; ++g) {
      int32_t sum = 0;
      for (uint32_t i = g * 32; i < g * 32 + 32; ++i) sum += q8[i];
      out->neg[g][r] = -128 * sum;
      out->scale[g][r] = qs[g] * inv_sqrt;
    }
  }
}

// Scores of keys s0..s0+nk-1 of a run for the 16 rows: sc[j * kRows + row].
// Eight keys at a time, each group's eight 4-byte quads broadcast against the
// rows' quads.
NEEDLE_VNNI512 void BlockScoresVnni(const KvRun& run, uint32_t s0, uint32_t nk, uint32_t hd, uint32_t row_stride,
                                    uint32_t scale_stride, const BlockQueriesQ8& q, float* sc) {
  alignas(64) uint8_t kb[kKeyBlock * kAttentionBlockMaxHeadDim];  // keys + 128, [key][i]
  const __m256i bias = _mm256_set1_epi8(static_cast<char>(0x80));
  for (uint32_t j = 0; j < nk; ++j) {
    const int8_t* k = run.k + size_t(s0 + j) * row_stride;
    for (uint32_t i = 0; i < hd; i += 32) {
      _mm256_store_si256(reinterpret_cast<__m256i*>(kb + j * hd + i),
                         _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(k + i)), bias));
    }
  }
  const uint32_t groups = hd / 32;
  for (uint32_t j0 = 0; j0 < nk; j0 += 8) {
    uint32_t key[8];  // past the block's end: repeat its last key (scored, not stored)
    for (uint32_t u = 0; u < 8; ++u) key[u] = std::min(j0 + u, nk - 1);
    __m512 s[8];
    for (int u = 0; u < 8; ++u) s[u] = _mm512_setzero_ps();
    for (uint32_t g = 0; g < groups; ++g) {
      __m512i acc[8];
      const __m512i neg = _mm512_load_si512(q.neg[g]);
      for (int u = 0; u < 8; ++u) acc[u] = neg;
      for (uint32_t iq = g * 8; iq < g * 8 + 8; ++iq) {
        const __m512i qv = _mm512_load_si512(q.quads[iq]);
        for (int u = 0; u < 8; ++u) {
          int32_t kq;
          std::memcpy(&kq, kb + key[u] * hd + iq * 4, 4);
          acc[u] = _mm512_dpbusd_epi32(acc[u], _mm512_set1_epi32(kq), qv);
        }
      }
      const __m512 qs = _mm512_load_ps(q.scale[g]);
      for (int u = 0; u < 8; ++u) {
        const float ks = run.ks[size_t(s0 + key[u]) * scale_stride + g];
        s[u] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(acc[u]), _mm512_mul_ps(qs, _mm512_set1_ps(ks)), s[u]);
      }
    }
    for (uint32_t u = 0; u < 8 && j0 + u < nk; ++u) _mm512_store_ps(sc + (j0 + u) * kRows, s[u]);
  }
}
#endif  // HWY_TARGET == HWY_AVX3_DL

bool AttendBlockSimd(const AttentionBlockArgs& a) {
#if HWY_TARGET == HWY_SCALAR
  return false;
#else
  const hn::ScalableTag<float> df;
  const hn::Rebind<int32_t, decltype(df)> di32;
  const hn::Rebind<int8_t, decltype(df)> di8;
  const size_t N = hn::Lanes(df);
  const uint32_t hd = a.head_dim, rows = a.tokens * a.heads;
  if (N > kRows || kRows % N || hd % 32 || hd > kAttentionBlockMaxHeadDim || rows == 0 || rows > kRows) return false;
  const uint32_t RV = static_cast<uint32_t>(kRows / N);
  const float inv_sqrt = 1.0f / std::sqrt(static_cast<float>(hd));
  using VF = decltype(hn::Zero(df));

  // Queries transposed: [i][row], padding rows zero.
  alignas(64) float qw_t[kAttentionBlockMaxHeadDim * kRows];
  alignas(64) float qs_t[kAttentionBlockMaxHeadDim * kRows];
  alignas(64) float o_t[kAttentionBlockMaxHeadDim * kRows];  // output accumulators [i][row]
  alignas(64) float kf[kKeyBlock * kAttentionBlockMaxHeadDim];  // [key][i], scaled by 1/sqrt(hd)
  alignas(64) float vf[kKeyBlock * kAttentionBlockMaxHeadDim];
  alignas(64) float sc[kKeyBlock * kRows];  // scores, then probabilities [key][row]
  alignas(64) float m[kRows], l[kRows];
  alignas(64) int32_t wb[kRows], we[kRows];
#if HWY_TARGET == HWY_AVX3_DL
  constexpr bool kIntScores = true;  // BlockScoresVnni reads the int8 queries below, not qw_t / qs_t
#else
  constexpr bool kIntScores = false;
#endif
  if (!kIntScores) {
    std::fill(qw_t, qw_t + hd * kRows, 0.0f);
    std::fill(qs_t, qs_t + hd * kRows, 0.0f);
  }
  std::fill(o_t, o_t + hd * kRows, 0.0f);
  for (uint32_t r = 0; r < kRows; ++r) {
    m[r] = -INFINITY;
    l[r] = 0.0f;
    wb[r] = we[r] = 0;  // padding rows see no window key
  }
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t t = r / a.heads, h = r % a.heads;
    const float* qw = a.q_window + size_t(t) * a.q_stride + size_t(h) * hd;
    const float* qs = a.q_sink + size_t(t) * a.q_stride + size_t(h) * hd;
    for (uint32_t i = 0; i < hd && !kIntScores; ++i) {
      qw_t[i * kRows + r] = qw[i];
      qs_t[i * kRows + r] = qs[i];
    }
    wb[r] = static_cast<int32_t>(a.window_begin[t]);
    we[r] = static_cast<int32_t>(a.window_end[t]);
  }
#if HWY_TARGET == HWY_AVX3_DL
  static_assert(kRows == 16, "one row per lane of a 512-bit vector");
  BlockQueriesQ8 qw8, qs8;
  QuantizeBlockQueries(a.q_window, a.q_stride, a.heads, rows, hd, &qw8);
  if (a.num_sink_runs) QuantizeBlockQueries(a.q_sink, a.q_stride, a.heads, rows, hd, &qs8);
#endif

  // One block of nk keys (slots s0.. of a run); window keys are numbered from w0.
  // masked: window keys some row must not see; sink: scored with the sink-rotated queries.
  auto block = [&](const KvRun& run, uint32_t s0, uint32_t nk, bool sink, bool masked, uint32_t w0) {
    for (uint32_t j = 0; j < nk; ++j) {
      const int8_t* k = run.k + size_t(s0 + j) * a.row_stride;
      const int8_t* v = run.v + size_t(s0 + j) * a.row_stride;
      const float* ks = run.ks + size_t(s0 + j) * a.scale_stride;
      const float* vs = run.vs + size_t(s0 + j) * a.scale_stride;
      for (uint32_t g = 0; g < hd / 32; ++g) {
        const auto kscale = hn::Set(df, ks[g] * inv_sqrt), vscale = hn::Set(df, vs[g]);
        for (uint32_t i = g * 32; i < g * 32 + 32; i += static_cast<uint32_t>(N)) {
          if (!kIntScores) {
            hn::Store(hn::Mul(hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, k + i))), kscale), df, kf + j * hd + i);
          }
          hn::Store(hn::Mul(hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, v + i))), vscale), df, vf + j * hd + i);
        }
      }
    }
#if HWY_TARGET == HWY_AVX3_DL
    BlockScoresVnni(run, s0, nk, hd, a.row_stride, a.scale_stride, sink ? qs8 : qw8, sc);
#endif
    // Scores: eight keys at a time (independent accumulation chains, enough
    // to cover the multiply-add latency on two ports).
    const float* qt = sink ? qs_t : qw_t;
    for (uint32_t rv = 0; rv < RV && !kIntScores; ++rv) {
      const uint32_t lane0 = rv * static_cast<uint32_t>(N);
      uint32_t j = 0;
      for (; j + 8 <= nk; j += 8) {
        VF acc[8];
        for (int u = 0; u < 8; ++u) acc[u] = hn::Zero(df);
        const float* k0 = kf + j * hd;
        for (uint32_t i = 0; i < hd; ++i) {
          const auto q = hn::Load(df, qt + i * kRows + lane0);
          for (int u = 0; u < 8; ++u) acc[u] = hn::MulAdd(hn::Set(df, k0[u * hd + i]), q, acc[u]);
        }
        for (int u = 0; u < 8; ++u) hn::Store(acc[u], df, sc + (j + u) * kRows + lane0);
      }
      for (; j < nk; ++j) {
        VF a0 = hn::Zero(df);
        for (uint32_t i = 0; i < hd; ++i) a0 = hn::MulAdd(hn::Set(df, kf[j * hd + i]), hn::Load(df, qt + i * kRows + lane0), a0);
        hn::Store(a0, df, sc + j * kRows + lane0);
      }
    }
    // Online softmax: new running max, rescale what was accumulated, probabilities
    // (zero outside each row's window), then the values.
    for (uint32_t rv = 0; rv < RV; ++rv) {
      const uint32_t lane0 = rv * static_cast<uint32_t>(N);
      const auto vb = hn::Load(di32, wb + lane0), ve = hn::Load(di32, we + lane0);
      auto visible = [&](uint32_t j) {
        const auto w = hn::Set(di32, static_cast<int32_t>(w0 + j));
        return hn::RebindMask(df, hn::AndNot(hn::Lt(w, vb), hn::Lt(w, ve)));
      };
      const auto neg_inf = hn::Set(df, -INFINITY);
      const auto m_old = hn::Load(df, m + lane0);
      auto m_new = m_old;
      for (uint32_t j = 0; j < nk; ++j) {
        auto s = hn::Load(df, sc + j * kRows + lane0);
        if (masked) s = hn::IfThenElse(visible(j), s, neg_inf);
        m_new = hn::Max(m_new, s);
      }
      // Lanes with no visible key yet keep m = -inf: use 0 there so no inf - inf.
      const auto finite = hn::Gt(m_new, neg_inf);
      const auto m_use = hn::IfThenElseZero(finite, m_new);
      const auto corr = hn::IfThenElseZero(finite, hn::Exp(df, hn::Sub(m_old, m_use)));
      auto lsum = hn::Mul(hn::Load(df, l + lane0), corr);
      for (uint32_t j = 0; j < nk; ++j) {
        auto p = hn::Exp(df, hn::Sub(hn::Load(df, sc + j * kRows + lane0), m_use));
        if (masked) p = hn::IfThenElseZero(visible(j), p);
        else p = hn::IfThenElseZero(finite, p);
        hn::Store(p, df, sc + j * kRows + lane0);
        lsum = hn::Add(lsum, p);
      }
      hn::Store(m_new, df, m + lane0);
      hn::Store(lsum, df, l + lane0);
      // Values: 16 output dims held in registers across the block's keys.
      for (uint32_t i0 = 0; i0 < hd; i0 += 16) {
        VF acc[16];
        for (uint32_t ii = 0; ii < 16; ++ii) acc[ii] = hn::Mul(hn::Load(df, o_t + (i0 + ii) * kRows + lane0), corr);
        for (uint32_t j = 0; j < nk; ++j) {
          const auto p = hn::Load(df, sc + j * kRows + lane0);
          const float* vj = vf + j * hd + i0;
          for (uint32_t ii = 0; ii < 16; ++ii) acc[ii] = hn::MulAdd(hn::Set(df, vj[ii]), p, acc[ii]);
        }
        for (uint32_t ii = 0; ii < 16; ++ii) hn::Store(acc[ii], df, o_t + (i0 + ii) * kRows + lane0);
      }
    }
  };

  for (uint32_t r = 0; r < a.num_sink_runs; ++r) {
    for (uint32_t s0 = 0; s0 < a.sink_runs[r].count; s0 += kKeyBlock) {
      block(a.sink_runs[r], s0, std::min(kKeyBlock, a.sink_runs[r].count - s0), true, false, 0);
    }
  }
  uint32_t w0 = 0;
  for (uint32_t r = 0; r < a.num_window_runs; ++r) {
    const KvRun& run = a.window_runs[r];
    for (uint32_t s0 = 0; s0 < run.count; s0 += kKeyBlock) {
      const uint32_t nk = std::min(kKeyBlock, run.count - s0);
      // Skip blocks no row can see.
      bool any = false;
      for (uint32_t t = 0; t < a.tokens && !any; ++t) any = w0 + s0 < a.window_end[t] && w0 + s0 + nk > a.window_begin[t];
      // Blocks every token sees whole need no mask (like the sinks).
      bool all = true;
      for (uint32_t t = 0; t < a.tokens && all; ++t) all = a.window_begin[t] <= w0 + s0 && w0 + s0 + nk <= a.window_end[t];
      if (any) block(run, s0, nk, false, !all, w0 + s0);
    }
    w0 += run.count;
  }
  for (uint32_t r = 0; r < rows; ++r) {
    const uint32_t t = r / a.heads, h = r % a.heads;
    float* o = a.out + size_t(t) * a.out_stride + size_t(h) * hd;
    const float inv = l[r] > 0.0f ? 1.0f / l[r] : 0.0f;
    for (uint32_t i = 0; i < hd; ++i) o[i] = o_t[i * kRows + r] * inv;
  }
  return true;
#endif
}

// Lanes of the block kernel's float vectors on this target; 0 when it has none.
uint32_t AttendBlockLanes() {
#if HWY_TARGET == HWY_SCALAR
  return 0;
#else
  const size_t n = hn::Lanes(hn::ScalableTag<float>());
  return n <= kRows && kRows % n == 0 ? static_cast<uint32_t>(n) : 0;
#endif
}

}  // namespace HWY_NAMESPACE
}  // namespace needle
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace needle {

HWY_EXPORT(AttendGroupSimd);
HWY_EXPORT(AttendBlockSimd);
HWY_EXPORT(AttendBlockLanes);

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

void AttendBlockReference(const AttentionBlockArgs& a, float* scores) {
  for (uint32_t t = 0; t < a.tokens; ++t) {
    // The token's keys as runs: every sink run, then the slice [begin, end) of the window runs.
    KvRun runs[16];
    uint32_t nr = 0;
    for (uint32_t r = 0; r < a.num_sink_runs && nr < 16; ++r) runs[nr] = a.sink_runs[r], runs[nr++].sink = true;
    uint32_t w0 = 0;
    for (uint32_t r = 0; r < a.num_window_runs && nr < 16; ++r) {
      const KvRun& run = a.window_runs[r];
      const uint32_t b = std::max(w0, a.window_begin[t]), e = std::min(w0 + run.count, a.window_end[t]);
      if (b < e) {
        const uint32_t s = b - w0;
        runs[nr++] = {run.k + size_t(s) * a.row_stride, run.ks + size_t(s) * a.scale_stride,
                      run.v + size_t(s) * a.row_stride, run.vs + size_t(s) * a.scale_stride, e - b, false};
      }
      w0 += run.count;
    }
    AttentionGroupArgs g;
    g.q_window = a.q_window + size_t(t) * a.q_stride;
    g.q_sink = a.q_sink + size_t(t) * a.q_stride;
    g.heads = a.heads;
    g.head_dim = a.head_dim;
    g.row_stride = a.row_stride;
    g.scale_stride = a.scale_stride;
    g.runs = runs;
    g.num_runs = nr;
    g.scores = scores;
    g.out = a.out + size_t(t) * a.out_stride;
    AttendGroupReference(g);
  }
}

bool AttendBlock(const AttentionBlockArgs& a) { return HWY_DYNAMIC_DISPATCH(AttendBlockSimd)(a); }

bool AttendBlockAvailable(uint32_t heads, uint32_t head_dim) {
  return heads >= 1 && heads <= kAttentionBlockRows && head_dim % 32 == 0 && head_dim <= kAttentionBlockMaxHeadDim &&
         HWY_DYNAMIC_DISPATCH(AttendBlockLanes)() != 0;
}

void AttendGroup(const AttentionGroupArgs& a) {
  if (!HWY_DYNAMIC_DISPATCH(AttendGroupSimd)(a)) AttendGroupReference(a);
}

}  // namespace needle
#endif  // HWY_ONCE
