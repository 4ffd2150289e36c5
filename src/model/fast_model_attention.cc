// FastModel's attention: K/V into the window-sink cache, then each token's
// attention over the sinks and its window: token by token (decode, the sink
// block) or in blocks of consecutive tokens (prefill), int8 or fp32.
#include <algorithm>
#include <cmath>
#include <cstring>

#include "kv/window_sink_cache.h"
#include "model/attention.h"
#include "model/fast_model.h"
#include "model/fast_model_internal.h"
#include "model/fast_ops.h"

namespace needle {
namespace {

// One token's attention, split across the pool by kv-head group: each group
// first stores its K/V row and prepares its query heads (normalised, rotated
// for the window and the sinks, snapped to the int8 grid), then attends.
struct AttentionJob {
  WindowSinkCache* cache;
  uint32_t layer, hd, group, ngk;
  // This token's projections and what prepares them.
  int64_t P;
  float* k;        // [kv_heads][hd], normalised and rotated in place
  const float* v;  // [kv_heads][hd]
  const float* q;  // [heads][hd]
  const float *k_norm, *q_norm, *rope_w, *rope_s;
  bool prepare;  // false: the caller prepared every group already
  float *qw, *qs;  // the prepared queries, [heads][hd]
  float* o;
  float* scores;
  uint32_t scores_per_group;
  uint32_t n_sink;
  bool sink_scored_as_sink;
  uint32_t win_first_slot, nw, window;
};

// K/V of group g into the cache; the group's query heads into qw (window
// rotation) and qs (sink rotation), on the int8 grid unless fp32.
void PrepareGroup(const AttentionJob& j, uint32_t g, bool fp32) {
  const uint32_t hd = j.hd;
  float* kg = j.k + g * hd;
  ZcRmsNormFast(kg, j.k_norm, hd, kg);
  RotateWithAngles(kg, hd, j.rope_w);  // sinks: P < S is their own position
  j.cache->Store(j.layer, j.P, g, kg, j.v + g * hd);
  for (uint32_t hh = g * j.group; hh < (g + 1) * j.group; ++hh) {
    float* qw = j.qw + hh * hd;
    float* qs = j.qs + hh * hd;
    ZcRmsNormFast(j.q + hh * hd, j.q_norm, hd, qw);
    std::memcpy(qs, qw, hd * sizeof(float));
    RotateWithAngles(qw, hd, j.rope_w);
    RotateWithAngles(qs, hd, j.rope_s);
    if (!fp32) {  // int8 queries, as the keys (attention.h)
      SnapToKvGrid(qw, hd);
      SnapToKvGrid(qs, hd);
    }
  }
}

void RunAttentionRange(void* ctx, uint32_t g0, uint32_t g1) {
  const auto* j = static_cast<const AttentionJob*>(ctx);
  const WindowSinkCache& c = *j->cache;
  const CacheGeometry& geo = c.geometry();
  const uint32_t row_stride = geo.kv_heads * j->hd;
  const uint32_t sink_gs = c.SinkScaleGroupStride(), ring_gs = c.RingScaleGroupStride();
  for (uint32_t g = g0; g < g1; ++g) {
    if (j->prepare) PrepareGroup(*j, g, false);
    KvRun runs[3];
    uint32_t nr = 0;
    if (j->n_sink) {
      runs[nr++] = {c.SinkK(j->layer, 0) + g * j->hd, c.SinkKScale(j->layer, 0, g), c.SinkV(j->layer, 0) + g * j->hd,
                    c.SinkVScale(j->layer, 0, g), j->n_sink, j->sink_scored_as_sink, 1, sink_gs};
    }
    if (j->nw) {
      const uint32_t first_count = std::min(j->nw, j->window - j->win_first_slot);
      const uint32_t s0 = j->win_first_slot;
      runs[nr++] = {c.RingK(j->layer, s0) + g * j->hd, c.RingKScale(j->layer, s0, g), c.RingV(j->layer, s0) + g * j->hd,
                    c.RingVScale(j->layer, s0, g), first_count, false, 1, ring_gs};
      if (first_count < j->nw) {
        runs[nr++] = {c.RingK(j->layer, 0) + g * j->hd, c.RingKScale(j->layer, 0, g), c.RingV(j->layer, 0) + g * j->hd,
                      c.RingVScale(j->layer, 0, g), j->nw - first_count, false, 1, ring_gs};
      }
    }
    AttentionGroupArgs a;
    a.q_window = j->qw + size_t(g) * j->group * j->hd;
    a.q_sink = j->qs + size_t(g) * j->group * j->hd;
    a.heads = j->group;
    a.head_dim = j->hd;
    a.row_stride = row_stride;
    a.runs = runs;
    a.num_runs = nr;
    a.scores = j->scores + size_t(g) * j->scores_per_group;
    a.out = j->o + size_t(g) * j->group * j->hd;
    AttendGroup(a);
  }
}


// Prefill: blocks of consecutive tokens of one kv group through AttendBlock;
// task = block * groups + group, so the pool's home ranges follow the tokens
// as ForEachToken's do.
struct BlockAttentionJob {
  AttentionBlockArgs base;  // everything but the group and token offsets
  uint32_t groups, blocks, tokens_per_block, total_tokens, hd, group_heads, ngk;
  KvRun sink_runs[1], window_runs[3];
};

void RunBlockAttentionRange(void* ctx, uint32_t b, uint32_t e) {
  const auto* j = static_cast<const BlockAttentionJob*>(ctx);
  for (uint32_t task = b; task < e; ++task) {
    const uint32_t blk = task / j->groups, g = task % j->groups;
    const uint32_t t0 = blk * j->tokens_per_block;
    AttentionBlockArgs a = j->base;
    KvRun sinks[1], window[3];
    for (uint32_t r = 0; r < a.num_sink_runs; ++r) {
      sinks[r] = j->sink_runs[r];
      const size_t so = size_t(g) * j->ngk * sinks[r].scale_group_stride;  // kv head g's scales
      sinks[r].k += g * j->hd, sinks[r].v += g * j->hd, sinks[r].ks += so, sinks[r].vs += so;
    }
    for (uint32_t r = 0; r < a.num_window_runs; ++r) {
      window[r] = j->window_runs[r];
      const size_t so = size_t(g) * j->ngk * window[r].scale_group_stride;
      window[r].k += g * j->hd, window[r].v += g * j->hd, window[r].ks += so, window[r].vs += so;
    }
    a.sink_runs = sinks;
    a.window_runs = window;
    const size_t head_off = size_t(g) * j->group_heads * j->hd;
    a.q_window += size_t(t0) * a.q_stride + head_off;
    a.q_sink += size_t(t0) * a.q_stride + head_off;
    a.out += size_t(t0) * a.out_stride + head_off;
    a.window_begin += t0;
    a.window_end += t0;
    a.tokens = std::min(j->tokens_per_block, j->total_tokens - t0);
    AttendBlock(a);
  }
}

// fp32 mode: the same attention over fp32 K/V, plainly.
void AttendFloat(const WindowSinkCache& cache, uint32_t li, int64_t P, int64_t S, int64_t n_sink, int64_t first,
                 uint32_t hd, uint32_t H, uint32_t group, const float* qw, const float* qs, float* sc, float* out) {
  const float inv_sqrt_hd = 1.0f / std::sqrt(static_cast<float>(hd));
  for (uint32_t hh = 0; hh < H; ++hh) {
    const uint32_t g = hh / group;
    const float* qwh = qw + hh * hd;
    const float* qsh = (P >= S ? qs : qw) + hh * hd;
    uint32_t nk = 0;
    float mx = -INFINITY;
    auto dot = [&](const float* a, const float* b) {
      float acc = 0.0f;
      for (uint32_t i = 0; i < hd; ++i) acc += a[i] * b[i];
      return acc * inv_sqrt_hd;
    };
    for (int64_t ks = 0; ks < n_sink; ++ks) {
      sc[nk] = dot(cache.SinkKf(li, static_cast<uint32_t>(ks)) + g * hd, qsh);
      mx = std::max(mx, sc[nk++]);
    }
    for (int64_t kt = first; kt <= P; ++kt) {
      sc[nk] = dot(cache.RingKf(li, cache.RingSlot(kt)) + g * hd, qwh);
      mx = std::max(mx, sc[nk++]);
    }
    float sum = 0.0f;
    for (uint32_t j = 0; j < nk; ++j) sum += (sc[j] = std::exp(sc[j] - mx));
    float* o = out + hh * hd;
    std::fill(o, o + hd, 0.0f);
    uint32_t j = 0;
    for (int64_t ks = 0; ks < n_sink; ++ks, ++j) {
      const float* vf = cache.SinkVf(li, static_cast<uint32_t>(ks)) + g * hd;
      for (uint32_t i = 0; i < hd; ++i) o[i] += sc[j] / sum * vf[i];
    }
    for (int64_t kt = first; kt <= P; ++kt, ++j) {
      const float* vf = cache.RingVf(li, cache.RingSlot(kt)) + g * hd;
      for (uint32_t i = 0; i < hd; ++i) o[i] += sc[j] / sum * vf[i];
    }
  }
}

}  // namespace

void RotateWithAngles(float* x, uint32_t hd, const float* cs) {
  const uint32_t half = hd / 2;
  for (uint32_t i = 0; i < half; ++i) {
    const float x1 = x[i], x2 = x[i + half], c = cs[i], sn = cs[half + i];
    x[i] = x1 * c - x2 * sn;
    x[i + half] = x2 * c + x1 * sn;
  }
}

void FastModel::AttendTokens(DecoderState::Scratch& s, const ChunkTokens& ct, uint32_t li, uint32_t T,
                             ThreadPool* pool) const {
  const ModelConfig& c = config_;
  const uint32_t H = c.num_heads, G = c.num_kv_heads, hd = c.head_dim();
  const uint32_t kv = G * hd, group = H / G;
  const Layer& Ly = layers_[li];
  // Tokens of different states (a batch) are independent: with per-token
  // query and score buffers, all (token, group) pairs are one pool job.
  // Consecutive tokens of one state go in order (each sees the previous one's key).
  const bool together = ct.batched() && !s.fp32 && s.attention_per_token && T <= kMaxBatchTokens;
  AttentionJob jobs[kMaxBatchTokens];
  for (uint32_t p = 0; p < T; ++p) {
    WindowSinkCache& cache = ct.cache(p);
    const int64_t S = cache.geometry().sink_capacity, W = cache.geometry().window;
    const int64_t P = ct.pos(p);
    // Visible keys: sinks [0, min(S, P+1)), window tokens [first, P] (P >= S).
    const int64_t n_sink = std::min<int64_t>(S, P + 1);
    const int64_t first = P >= S ? cache.WindowFirst(P) : P + 1;
    const int64_t nw = P >= S ? P - first + 1 : 0;
    AttentionJob& job = jobs[together ? p : 0];
    job.cache = &cache;
    job.layer = li;
    job.hd = hd;
    job.group = group;
    job.ngk = cache.groups_per_head();
    job.P = P;
    job.k = &s.k[size_t(p) * kv];
    job.v = &s.v[size_t(p) * kv];
    job.q = &s.q[size_t(p) * H * hd];
    job.k_norm = Ly.k_norm.data();
    job.q_norm = Ly.q_norm.data();
    job.rope_w = &s.rope_w[size_t(p) * hd];
    job.rope_s = &s.rope_s[size_t(p) * hd];
    const size_t slot = together ? p : 0;  // this token's query and score buffers
    job.qw = &s.qw[slot * H * hd];
    job.qs = &s.qs[slot * H * hd];
    float* o = &s.o[size_t(p) * H * hd];
    job.o = o;
    // A sink row into a cache that shares its sinks is an error Store throws:
    // thrown here, on the calling thread, never inside a pool job.
    job.prepare = !s.fp32 && !(cache.IsSink(P) && cache.geometry().shared_sinks);
    if (!job.prepare) {
      for (uint32_t g = 0; g < G; ++g) PrepareGroup(job, g, s.fp32);
    }
    if (s.fp32) {
      AttendFloat(cache, li, P, S, n_sink, first, hd, H, group, job.qw, job.qs, s.scores.data(), o);
      continue;
    }
    // Window slots of tokens first..P: one or two contiguous runs of the ring.
    const size_t score_floats = s.scores.size() / (together ? s.C : 1);
    job.scores = &s.scores[slot * score_floats];
    job.scores_per_group = static_cast<uint32_t>(score_floats / G);
    job.n_sink = static_cast<uint32_t>(n_sink);
    job.sink_scored_as_sink = P >= S;
    job.win_first_slot = nw ? cache.RingSlot(first) : 0;
    job.nw = static_cast<uint32_t>(nw);
    job.window = static_cast<uint32_t>(W);
    if (together) continue;
    if (pool) {
      pool->ParallelFor(G, RunAttentionRange, &job);
    } else {
      RunAttentionRange(&job, 0, G);
    }
  }
  if (together) {
    struct Batch {
      const AttentionJob* jobs;
      uint32_t groups;
    } batch{jobs, G};
    auto run = [](void* ctx, uint32_t b, uint32_t e) {
      const auto* bt = static_cast<const Batch*>(ctx);
      for (uint32_t t = b; t < e; ++t) {
        RunAttentionRange(const_cast<AttentionJob*>(&bt->jobs[t / bt->groups]), t % bt->groups, t % bt->groups + 1);
      }
    };
    if (pool) {
      pool->ParallelFor(T * G, run, &batch);
    } else {
      run(&batch, 0, T * G);
    }
  }
}
// Prefill in blocks: the chunk's keys are normalised, rotated and quantized
// exactly as Store would, attended from a chunk buffer together with the
// older keys, and only then written to the cache (past the sinks, their ring
// slots may still hold keys an earlier query of the chunk sees). A chunk
// inside the sink block sees the sinks before it and itself, causally, as a
// window sequence: a sink token's query is rotated at its own position.
void FastModel::AttendChunk(DecoderState& st, uint32_t li, uint32_t T, ThreadPool* pool) const {
  const ModelConfig& c = config_;
  const uint32_t H = c.num_heads, G = c.num_kv_heads, hd = c.head_dim();
  const uint32_t kv = G * hd, group = H / G;
  DecoderState::Scratch& s = *st.s_;
  WindowSinkCache& cache = st.cache_;
  const Layer& Ly = layers_[li];
  const int64_t t0 = cache.tokens();
  const int64_t S = cache.geometry().sink_capacity, W = cache.geometry().window;
  const uint32_t ngk = cache.groups_per_head();
  const bool in_sinks = t0 < S;  // then the whole chunk is (ForwardChunk)
  auto prepare = [&](uint32_t p) {
    const float* rope_w = &s.rope_w[size_t(p) * hd];
    const float* rope_s = &s.rope_s[size_t(p) * hd];
    float* k = &s.k[size_t(p) * kv];
    const float* v = &s.v[size_t(p) * kv];
    for (uint32_t g = 0; g < G; ++g) {
      float* kg = k + g * hd;
      ZcRmsNormFast(kg, Ly.k_norm.data(), hd, kg);
      RotateWithAngles(kg, hd, rope_w);
      QuantizeKvRow(kg, hd, &s.ck[size_t(p) * kv + g * hd], &s.cks[(size_t(p) * G + g) * ngk]);
      QuantizeKvRow(v + g * hd, hd, &s.cv[size_t(p) * kv + g * hd], &s.cvs[(size_t(p) * G + g) * ngk]);
    }
    float* q = &s.q[size_t(p) * H * hd];  // normalised and window-rotated in place
    float* qs = &s.qs_chunk[size_t(p) * H * hd];
    for (uint32_t hh = 0; hh < H; ++hh) {
      ZcRmsNormFast(q + hh * hd, Ly.q_norm.data(), hd, q + hh * hd);
      if (!in_sinks) std::memcpy(qs + hh * hd, q + hh * hd, hd * sizeof(float));
      RotateWithAngles(q + hh * hd, hd, rope_w);
      SnapToKvGrid(q + hh * hd, hd);  // int8 queries, as the keys (attention.h)
      if (in_sinks) continue;  // no key is scored with the sink rotation
      RotateWithAngles(qs + hh * hd, hd, rope_s);
      SnapToKvGrid(qs + hh * hd, hd);
    }
  };
  ForEachToken(pool, T, prepare);
  // The window sequence: ring keys first0..t0-1 (one or two runs), then the
  // chunk; inside the sinks, sink keys 0..t0-1, then the chunk.
  const int64_t first0 = in_sinks ? 0 : cache.WindowFirst(t0);
  for (uint32_t p = 0; p < T; ++p) {
    const int64_t P = t0 + p;
    s.win_begin[p] = in_sinks ? 0 : static_cast<uint32_t>(cache.WindowFirst(P) - first0);
    s.win_end[p] = static_cast<uint32_t>(P + 1 - first0);
  }
  BlockAttentionJob job{};
  AttentionBlockArgs& a = job.base;
  a.q_window = s.q.data();
  a.q_sink = in_sinks ? s.q.data() : s.qs_chunk.data();  // (unread inside the sinks: no sink run)
  a.q_stride = H * hd;
  a.heads = group;
  a.head_dim = hd;
  a.row_stride = kv;
  a.window_begin = s.win_begin.data();
  a.window_end = s.win_end.data();
  a.out = s.o.data();
  a.out_stride = H * hd;
  if (S > 0 && !in_sinks) {
    job.sink_runs[0] = {cache.SinkK(li, 0), cache.SinkKScale(li, 0, 0), cache.SinkV(li, 0), cache.SinkVScale(li, 0, 0),
                        static_cast<uint32_t>(S), true, 1, cache.SinkScaleGroupStride()};
    a.num_sink_runs = 1;
  }
  uint32_t nr = 0;
  const uint32_t old = static_cast<uint32_t>(t0 - first0);
  if (old && in_sinks) {
    job.window_runs[nr++] = {cache.SinkK(li, 0), cache.SinkKScale(li, 0, 0), cache.SinkV(li, 0), cache.SinkVScale(li, 0, 0),
                             old, false, 1, cache.SinkScaleGroupStride()};
  } else if (old) {
    const uint32_t s0 = cache.RingSlot(first0);
    const uint32_t n0 = std::min<uint32_t>(old, static_cast<uint32_t>(W) - s0);
    const uint32_t gs = cache.RingScaleGroupStride();
    job.window_runs[nr++] = {cache.RingK(li, s0), cache.RingKScale(li, s0, 0), cache.RingV(li, s0), cache.RingVScale(li, s0, 0),
                             n0, false, 1, gs};
    if (n0 < old) {
      job.window_runs[nr++] = {cache.RingK(li, 0), cache.RingKScale(li, 0, 0), cache.RingV(li, 0), cache.RingVScale(li, 0, 0),
                               old - n0, false, 1, gs};
    }
  }
  job.window_runs[nr++] = {s.ck.data(), s.cks.data(), s.cv.data(), s.cvs.data(), T, false, G * ngk, 1};  // the chunk's own rows
  a.num_window_runs = nr;
  job.groups = G;
  job.tokens_per_block = std::max<uint32_t>(1, kAttentionBlockRows / group);
  job.blocks = (T + job.tokens_per_block - 1) / job.tokens_per_block;
  job.total_tokens = T;
  job.hd = hd;
  job.group_heads = group;
  job.ngk = ngk;
  if (pool) {
    pool->ParallelForAffine(G * job.blocks, RunBlockAttentionRange, &job);
  } else {
    RunBlockAttentionRange(&job, 0, G * job.blocks);
  }
  for (uint32_t p = 0; p < T; ++p) {
    cache.StoreQuantized(li, t0 + p, &s.ck[size_t(p) * kv], &s.cks[size_t(p) * G * ngk], &s.cv[size_t(p) * kv],
                         &s.cvs[size_t(p) * G * ngk]);
  }
}

}  // namespace needle
