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

// Rows (token, head) in lanes: kRows = kAttentionBlockRows split into RV vectors.
constexpr uint32_t kKeyBlock = 32;  // keys dequantized and scored together
constexpr uint32_t kRows = kAttentionBlockRows;

#if HWY_TARGET == HWY_AVX3_DL
#include "model/attention_vnni-inl.h"  // AttendGroupVnni, BlockQueriesQ8, BlockScoresVnni
#endif

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
      const float* ks = run.ks + size_t(s) * run.scale_stride;
      VF acc[H];
      for (uint32_t h = 0; h < H; ++h) acc[h] = hn::Zero(df);
      for (uint32_t g = 0; g < groups; ++g) {
        const auto scale = hn::Set(df, ks[g * run.scale_group_stride] * inv_sqrt);
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
#if HWY_TARGET == HWY_AVX3_DL
  if (AttendGroupVnni<H>(a, total)) return true;
#endif
  float* sc = a.scores;  // [key][head]

  // ---- scores, key-major
  GroupScoresFloat<H>(a, sc);

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
        const float* vs = run.vs + size_t(s) * run.scale_stride;
        VF p[H];
        for (uint32_t h = 0; h < H; ++h) p[h] = hn::Set(df, sc[j * H + h]);
        for (uint32_t c = 0; c < chunks; ++c) {
          const uint32_t c0 = c * static_cast<uint32_t>(N);
          const auto vscale = hn::Set(df, vs[c0 / 32 * run.scale_group_stride]);
          const auto vf = hn::Mul(hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, v + c0))), vscale);
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
                                hn::Set(df, run.vs[size_t(s) * run.scale_stride + g * run.scale_group_stride]));
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
      const float* ks = run.ks + size_t(s0 + j) * run.scale_stride;
      const float* vs = run.vs + size_t(s0 + j) * run.scale_stride;
      for (uint32_t g = 0; g < hd / 32; ++g) {
        const uint32_t gs = g * run.scale_group_stride;
        const auto kscale = hn::Set(df, ks[gs] * inv_sqrt), vscale = hn::Set(df, vs[gs]);
        for (uint32_t i = g * 32; i < g * 32 + 32; i += static_cast<uint32_t>(N)) {
          if (!kIntScores) {
            hn::Store(hn::Mul(hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, k + i))), kscale), df, kf + j * hd + i);
          }
          hn::Store(hn::Mul(hn::ConvertTo(df, hn::PromoteTo(di32, hn::LoadU(di8, v + i))), vscale), df, vf + j * hd + i);
        }
      }
    }
#if HWY_TARGET == HWY_AVX3_DL
    BlockScoresVnni(run, s0, nk, hd, a.row_stride, sink ? qs8 : qw8, sc);
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
        const float* ks = run.ks + size_t(s) * run.scale_stride;
        float acc = 0.0f;
        for (uint32_t g = 0; g < groups; ++g) {
          float part = 0.0f;
          for (uint32_t i = g * 32; i < std::min(hd, g * 32 + 32); ++i) part += q[i] * k[i];
          acc += part * ks[g * run.scale_group_stride];
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
        const float* vs = run.vs + size_t(s) * run.scale_stride;
        const float p = sc[j] / sum;
        for (uint32_t i = 0; i < hd; ++i) o[i] += p * vs[i / 32 * run.scale_group_stride] * v[i];
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
        runs[nr++] = {run.k + size_t(s) * a.row_stride, run.ks + size_t(s) * run.scale_stride,
                      run.v + size_t(s) * a.row_stride, run.vs + size_t(s) * run.scale_stride, e - b, false,
                      run.scale_stride, run.scale_group_stride};
      }
      w0 += run.count;
    }
    AttentionGroupArgs g;
    g.q_window = a.q_window + size_t(t) * a.q_stride;
    g.q_sink = a.q_sink + size_t(t) * a.q_stride;
    g.heads = a.heads;
    g.head_dim = a.head_dim;
    g.row_stride = a.row_stride;
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
