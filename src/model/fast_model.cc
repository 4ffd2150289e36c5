#include "model/fast_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "base/error.h"
#include "kv/budget.h"
#include "model/attention.h"
#include "model/fast_ops.h"
#include "model/ops.h"
#include "quant/hadamard.h"

namespace needle {
namespace {

QMatrix MakeQMatrix(const CactArchive& a, uint32_t index) {
  QMatrix m;
  m.view = a.cq(index);
  m.levels = QuantizeLevels(m.view.levels);
  return m;
}

// One batched matrix product split across the pool by rows.
struct MatMulJob {
  const QMatrix* m;
  uint32_t row_offset;
  const ActivationQ8* xs;
  uint32_t batch;
  float* y;  // y[b * stride + r] for r in [0, rows)
  uint32_t stride;
};

void RunMatMulRange(void* ctx, uint32_t r0, uint32_t r1) {
  const auto* j = static_cast<const MatMulJob*>(ctx);
  CqMatMulA8(j->m->view, j->m->levels, j->xs, j->batch, j->row_offset + r0, j->row_offset + r1, j->y + r0, j->stride);
}

// Several matrices that read the same activations, as one pool job (one
// synchronisation instead of one per matrix). Rows are numbered across segments.
struct MatMulSegment {
  const QMatrix* m;
  uint32_t row_offset, rows;
  float* y;
  uint32_t stride;
};
struct MultiMatMulJob {
  MatMulSegment seg[4];
  uint32_t num_segments;
  const ActivationQ8* xs;
  uint32_t batch;
};

void RunMultiMatMulRange(void* ctx, uint32_t r0, uint32_t r1) {
  const auto* j = static_cast<const MultiMatMulJob*>(ctx);
  uint32_t base = 0;
  for (uint32_t i = 0; i < j->num_segments; ++i) {
    const MatMulSegment& sg = j->seg[i];
    const uint32_t b = std::max(r0, base), e = std::min(r1, base + sg.rows);
    if (b < e) {
      CqMatMulA8(sg.m->view, sg.m->levels, j->xs, j->batch, sg.row_offset + (b - base), sg.row_offset + (e - base),
                 sg.y + (b - base), sg.stride);
    }
    base += sg.rows;
  }
}

// fp32 mode: dots of the rotated (unquantized) activations with the packed rows.
struct MatMulF32Job {
  const QMatrix* m;
  uint32_t row_offset;
  const float* rotated;  // [batch][rot_stride]
  uint32_t rot_stride;
  uint32_t batch;
  float* y;
  uint32_t stride;
};

void RunMatMulF32Range(void* ctx, uint32_t r0, uint32_t r1) {
  const auto* j = static_cast<const MatMulF32Job*>(ctx);
  for (uint32_t b = 0; b < j->batch; ++b) {
    for (uint32_t r = r0; r < r1; ++r) {
      j->y[b * j->stride + r] = CqDotRowReference(j->m->view, j->row_offset + r, j->rotated + size_t(b) * j->rot_stride);
    }
  }
}

// cos/sin of pos * inv_freq[i] (angles reduced in double), computed once per
// position and reused for every head.
void RopeAngles(double pos, const double* inv_freq, uint32_t half, float* cs) {
  for (uint32_t i = 0; i < half; ++i) {
    const double angle = pos * inv_freq[i];
    cs[i] = static_cast<float>(std::cos(angle));
    cs[half + i] = static_cast<float>(std::sin(angle));
  }
}

void RotateWithAngles(float* x, uint32_t hd, const float* cs) {
  const uint32_t half = hd / 2;
  for (uint32_t i = 0; i < half; ++i) {
    const float x1 = x[i], x2 = x[i + half], c = cs[i], sn = cs[half + i];
    x[i] = x1 * c - x2 * sn;
    x[i + half] = x2 * c + x1 * sn;
  }
}

// Attention of every kv-head group of one token, split across the pool by group.
struct AttentionJob {
  const WindowSinkCache* cache;
  uint32_t layer, hd, group, ngk;
  const float *qw, *qs;
  float* o;
  float* scores;
  uint32_t scores_per_group;
  uint32_t n_sink;
  bool sink_scored_as_sink;
  uint32_t win_first_slot, nw, window;
};

void RunAttentionRange(void* ctx, uint32_t g0, uint32_t g1) {
  const auto* j = static_cast<const AttentionJob*>(ctx);
  const WindowSinkCache& c = *j->cache;
  const CacheGeometry& geo = c.geometry();
  const uint32_t row_stride = geo.kv_heads * j->hd, scale_stride = geo.kv_heads * j->ngk;
  for (uint32_t g = g0; g < g1; ++g) {
    KvRun runs[3];
    uint32_t nr = 0;
    if (j->n_sink) {
      runs[nr++] = {c.SinkK(j->layer, 0) + g * j->hd, c.SinkKScale(j->layer, 0) + g * j->ngk,
                    c.SinkV(j->layer, 0) + g * j->hd, c.SinkVScale(j->layer, 0) + g * j->ngk, j->n_sink,
                    j->sink_scored_as_sink};
    }
    if (j->nw) {
      const uint32_t first_count = std::min(j->nw, j->window - j->win_first_slot);
      const uint32_t s0 = j->win_first_slot;
      runs[nr++] = {c.RingK(j->layer, s0) + g * j->hd, c.RingKScale(j->layer, s0) + g * j->ngk,
                    c.RingV(j->layer, s0) + g * j->hd, c.RingVScale(j->layer, s0) + g * j->ngk, first_count, false};
      if (first_count < j->nw) {
        runs[nr++] = {c.RingK(j->layer, 0) + g * j->hd, c.RingKScale(j->layer, 0) + g * j->ngk,
                      c.RingV(j->layer, 0) + g * j->hd, c.RingVScale(j->layer, 0) + g * j->ngk, j->nw - first_count,
                      false};
      }
    }
    AttentionGroupArgs a;
    a.q_window = j->qw + size_t(g) * j->group * j->hd;
    a.q_sink = j->qs + size_t(g) * j->group * j->hd;
    a.heads = j->group;
    a.head_dim = j->hd;
    a.row_stride = row_stride;
    a.scale_stride = scale_stride;
    a.runs = runs;
    a.num_runs = nr;
    a.scores = j->scores + size_t(g) * j->scores_per_group;
    a.out = j->o + size_t(g) * j->group * j->hd;
    AttendGroup(a);
  }
}

// f(p) for p in [0, n), split across the pool in contiguous ranges: the
// per-token work of a chunk (norms, rotations, the MLP) beside the matrix products.
template <class F>
void ForEachToken(ThreadPool* pool, uint32_t n, F& f) {
  if (!pool || n < 2) {
    for (uint32_t p = 0; p < n; ++p) f(p);
    return;
  }
  pool->ParallelFor(
      n,
      [](void* ctx, uint32_t b, uint32_t e) {
        F& fn = *static_cast<F*>(ctx);
        for (uint32_t p = b; p < e; ++p) fn(p);
      },
      &f);
}

// Below this many tokens a chunk attends token by token: a block of 16 lanes
// holding 2-3 query rows wastes more than the per-key sums it saves.
constexpr uint32_t kMinBlockAttentionTokens = 4;

// Prefill (every token past the sinks): blocks of consecutive tokens of one kv
// group through AttendBlock; task = group * blocks + block.
struct BlockAttentionJob {
  AttentionBlockArgs base;  // everything but the group and token offsets
  uint32_t groups, blocks, tokens_per_block, total_tokens, hd, group_heads, ngk;
  KvRun sink_runs[1], window_runs[3];
};

void RunBlockAttentionRange(void* ctx, uint32_t b, uint32_t e) {
  const auto* j = static_cast<const BlockAttentionJob*>(ctx);
  for (uint32_t task = b; task < e; ++task) {
    const uint32_t g = task / j->blocks, blk = task % j->blocks;
    const uint32_t t0 = blk * j->tokens_per_block;
    AttentionBlockArgs a = j->base;
    KvRun sinks[1], window[3];
    for (uint32_t r = 0; r < a.num_sink_runs; ++r) {
      sinks[r] = j->sink_runs[r];
      sinks[r].k += g * j->hd, sinks[r].v += g * j->hd, sinks[r].ks += g * j->ngk, sinks[r].vs += g * j->ngk;
    }
    for (uint32_t r = 0; r < a.num_window_runs; ++r) {
      window[r] = j->window_runs[r];
      window[r].k += g * j->hd, window[r].v += g * j->hd, window[r].ks += g * j->ngk, window[r].vs += g * j->ngk;
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

// Scratch for one chunk of up to C tokens; sized once per state.
struct DecoderState::Scratch {
  uint32_t C = 0;
  std::vector<float> X, nx, u, xin, h, proj_pre, proj_post, proj_res, hpre, hpost, hres;
  std::vector<float> e, ek, ev0, q, k, v, gate, o, a, x1, scores, qw, qs, rope_w, rope_s, mean;
  std::vector<float> rotated;  // [C][in_pad_max]
  std::vector<int8_t> act_q;     // [C][in_pad_max]
  std::vector<float> act_scale;  // [C][groups_max]
  std::vector<int32_t> act_sum;  // [C][groups_max]
  std::vector<ActivationQ8> acts;  // [C]
  // Prefill through AttendBlock: the chunk's sink-rotated queries [C][H*hd], its
  // K/V quantized as the cache stores them ([C][kv], scales [C][G*groups]; the
  // cache slots are written only after the whole chunk attended, since they may
  // still hold keys an earlier query of the chunk sees), each token's window.
  std::vector<float> qs_chunk, cks, cvs;
  std::vector<int8_t> ck, cv;
  std::vector<uint32_t> win_begin, win_end;
  uint32_t in_pad_max = 0;
  bool fp32 = false;
  bool block_attention = false;

  uint64_t bytes() const {
    uint64_t b = 0;
    for (const auto* v : {&X, &nx, &u, &xin, &h, &proj_pre, &proj_post, &proj_res, &hpre, &hpost, &hres, &e, &ek, &ev0,
                          &q, &k, &v, &gate, &o, &a, &x1, &scores, &qw, &qs, &rope_w, &rope_s, &mean, &rotated, &act_scale}) {
      b += v->capacity() * sizeof(float);
    }
    for (const auto* v : {&qs_chunk, &cks, &cvs}) b += v->capacity() * sizeof(float);
    b += ck.capacity() + cv.capacity() + (win_begin.capacity() + win_end.capacity()) * sizeof(uint32_t);
    return b + act_q.capacity() + act_sum.capacity() * sizeof(int32_t) + acts.capacity() * sizeof(ActivationQ8);
  }
};

DecoderState::~DecoderState() = default;

uint64_t DecoderState::bytes() const { return cache_.bytes() + s_->bytes(); }

static CacheGeometry GeometryFor(const FastModel& m, const DecoderOptions& opt) {
  const ModelConfig& c = m.config();
  CacheGeometry g;
  g.layers = c.num_layers;
  g.kv_heads = c.num_kv_heads;
  g.head_dim = c.head_dim();
  g.sink_capacity = opt.sink_length;
  g.window = opt.window ? opt.window : m.window();
  g.d_model = c.d_model;
  g.engram_sites = static_cast<uint32_t>(c.engram_layers.size());
  g.engram_value_history = (ModelConfig::kEngramTaps - 1) * c.engram_dilation() + 1;
  g.float_kv = opt.fp32;
  g.shared_sinks = opt.sinks_from != nullptr;
  g.token_history = 16;
  while (g.token_history < c.engram_dilation() * ModelConfig::kEngramTaps + c.engram_dilation()) g.token_history *= 2;
  return g;
}

DecoderState::DecoderState(const FastModel& model, const DecoderOptions& opt) : cache_(GeometryFor(model, opt)) {
  if (opt.sinks_from) cache_.ShareSinks(opt.sinks_from->cache_);
  const ModelConfig& c = model.config();
  const uint32_t C = std::max<uint32_t>(1, opt.max_chunk);
  const uint32_t d = c.d_model, n = c.mhc_lanes, H = c.num_heads, G = c.num_kv_heads, hd = c.head_dim();
  auto s = std::make_unique<Scratch>();
  s->C = C;
  s->fp32 = opt.fp32;
  s->X.resize(size_t(C) * n * d);
  s->nx.resize(size_t(C) * n * d);
  s->u.resize(size_t(C) * d);
  s->xin.resize(size_t(C) * d);
  s->h.resize(size_t(C) * d);
  s->proj_pre.resize(size_t(C) * n);
  s->proj_post.resize(size_t(C) * n);
  s->proj_res.resize(size_t(C) * n * n);
  s->hpre.resize(size_t(C) * n);
  s->hpost.resize(size_t(C) * n);
  s->hres.resize(size_t(C) * n * n);
  s->e.resize(size_t(C) * d);
  s->ek.resize(size_t(C) * d);
  s->ev0.resize(size_t(C) * d);
  s->q.resize(size_t(C) * H * hd);
  s->k.resize(size_t(C) * G * hd);
  s->v.resize(size_t(C) * G * hd);
  s->gate.resize(size_t(C) * H * hd);
  s->o.resize(size_t(C) * H * hd);
  s->a.resize(size_t(C) * d);
  s->x1.resize(d);
  // Per kv group: [heads in group][sinks + window] scores.
  s->scores.resize(size_t(H) * (size_t(cache_.geometry().sink_capacity) + cache_.geometry().window));
  s->qw.resize(size_t(H) * hd);
  s->qs.resize(size_t(H) * hd);
  // cos/sin per chunk token (window and sink rotations), shared by every layer.
  s->rope_w.resize(size_t(C) * hd);
  s->rope_s.resize(size_t(C) * hd);
  s->block_attention = !opt.fp32 && AttendBlockAvailable(H / G, hd);
  if (s->block_attention) {
    const uint32_t ngk = cache_.groups_per_head();
    s->qs_chunk.resize(size_t(C) * H * hd);
    s->ck.resize(size_t(C) * G * hd);
    s->cv.resize(size_t(C) * G * hd);
    s->cks.resize(size_t(C) * G * ngk);
    s->cvs.resize(size_t(C) * G * ngk);
    s->win_begin.resize(C);
    s->win_end.resize(C);
  }
  s->mean.resize(d);
  // Rows of `rotated` also hold the MLP's Hadamard vector (hada_n) per token.
  s->in_pad_max = static_cast<uint32_t>(
      std::max({CqPaddedIn(n * d), CqPaddedIn(d), CqPaddedIn(H * hd), CqPaddedIn(c.hada_n())}));
  s->rotated.resize(size_t(C) * s->in_pad_max);
  s->act_q.resize(size_t(C) * s->in_pad_max);
  s->act_scale.resize(size_t(C) * s->in_pad_max / kCqGroup);
  s->act_sum.resize(size_t(C) * s->in_pad_max / kCqGroup);
  s->acts.resize(C);
  s_ = std::move(s);
}

FastModel::FastModel(const CactArchive& archive) : archive_(archive), config_(archive.config()) {
  const CactLayout& l = archive.layout();
  window_ = effective_window(config_);
  embedding_ = MakeQMatrix(archive, l.embedding);
  phi_pre_ = MakeQMatrix(archive, l.mhc_phi_pre);
  phi_post_ = MakeQMatrix(archive, l.mhc_phi_post);
  phi_res_ = MakeQMatrix(archive, l.mhc_phi_res);
  for (const LayerTensors& t : l.layers) {
    Layer y;
    y.norm_in = archive.Floats(t.norm_in);
    y.q_norm = archive.Floats(t.q_norm);
    y.k_norm = archive.Floats(t.k_norm);
    y.post_norm = archive.Floats(t.post_norm);
    y.pre_hada = archive.Floats(t.pre_hada);
    y.d1 = archive.Floats(t.d1);
    y.d2 = archive.Floats(t.d2);
    y.d3 = archive.Floats(t.d3);
    y.attn_gate = archive.Floats(t.attn_gate)[0];
    y.q = MakeQMatrix(archive, t.q_proj);
    y.k = MakeQMatrix(archive, t.k_proj);
    y.v = MakeQMatrix(archive, t.v_proj);
    y.gate = MakeQMatrix(archive, t.gate_proj);
    y.out = MakeQMatrix(archive, t.out_proj);
    layers_.push_back(std::move(y));
  }
  site_of_layer_.assign(config_.num_layers, -1);
  for (size_t s = 0; s < l.engram.size(); ++s) {
    Site site;
    site.layer = config_.engram_layers[s];
    site.tables = MakeQMatrix(archive, l.engram[s].tables);
    site.key = MakeQMatrix(archive, l.engram[s].key_proj);
    site.value = MakeQMatrix(archive, l.engram[s].value_proj);
    site.taps = archive.Floats(l.engram[s].taps);
    site_of_layer_[site.layer] = static_cast<int32_t>(s);
    sites_.push_back(std::move(site));
  }
  a_pre_ = archive.Floats(l.mhc_a_pre);
  a_post_ = archive.Floats(l.mhc_a_post);
  a_res_ = archive.Floats(l.mhc_a_res);
  b_pre_ = archive.Floats(l.mhc_b_pre);
  b_post_ = archive.Floats(l.mhc_b_post);
  b_res_ = archive.Floats(l.mhc_b_res);
  final_norm_ = archive.Floats(l.final_norm);
  const uint32_t hd = config_.head_dim();
  for (uint32_t i = 0; i < hd / 2; ++i) inv_freq_.push_back(std::pow(double(config_.rope_theta), -2.0 * i / hd));
}

std::unique_ptr<DecoderState> FastModel::NewState(const DecoderOptions& opt) const {
  const uint32_t window = opt.window ? opt.window : window_;
  const uint32_t budget = budget_window(config_);
  if (uint64_t{opt.sink_length} + window > budget && opt.sink_length > 0) {  // (64-bit: a restored sink_length may be anything)
    throw Error(ErrorCode::kBudget, "the pinned prefix has " + std::to_string(opt.sink_length) +
                                        " tokens but the KV budget leaves " + std::to_string(budget > window ? budget - window : 0) +
                                        " beside the " + std::to_string(window) + "-token window (budget " +
                                        std::to_string(budget) + " positions): use fewer or shorter tools, or retrieval");
  }
  return std::unique_ptr<DecoderState>(new DecoderState(*this, opt));
}

void FastModel::Forward(DecoderState& st, std::span<const int32_t> tokens, float* logits, bool all_logits,
                        ThreadPool* pool) const {
  const uint32_t V = config_.vocab_size;
  for (int32_t t : tokens) {
    if (t < 0 || static_cast<uint32_t>(t) >= V) throw Error(ErrorCode::kInvalidArgument, "token id " + std::to_string(t) + " outside the vocabulary");
  }
  const uint32_t C = st.s_->C;
  for (size_t at = 0; at < tokens.size(); at += C) {
    const uint32_t n = static_cast<uint32_t>(std::min<size_t>(C, tokens.size() - at));
    const bool last = at + n == tokens.size();
    float* out = nullptr;
    if (logits && all_logits) out = logits + at * V;
    if (logits && !all_logits && last) out = logits;
    ForwardChunk(st, tokens.data() + at, n, out, all_logits, pool);
  }
}

// Token by token: store K/V, attend (the ring never holds a key a later query
// still needs). Decode, the sink block, and the fp32 mode.
void FastModel::AttendTokens(DecoderState& st, uint32_t li, uint32_t T, ThreadPool* pool) const {
  const ModelConfig& c = config_;
  const uint32_t H = c.num_heads, G = c.num_kv_heads, hd = c.head_dim();
  const uint32_t kv = G * hd, group = H / G;
  DecoderState::Scratch& s = *st.s_;
  WindowSinkCache& cache = st.cache_;
  const Layer& Ly = layers_[li];
  const int64_t t0 = cache.tokens();
  const int64_t S = cache.geometry().sink_capacity, W = cache.geometry().window;
  for (uint32_t p = 0; p < T; ++p) {
    const int64_t P = t0 + p;
    float* q = &s.q[size_t(p) * H * hd];
    float* k = &s.k[size_t(p) * kv];
    const float* v = &s.v[size_t(p) * kv];
    // Visible keys: sinks [0, min(S, P+1)), window tokens [first, P] (P >= S).
    const int64_t n_sink = std::min<int64_t>(S, P + 1);
    const int64_t first = P >= S ? cache.WindowFirst(P) : P + 1;
    const int64_t nw = P >= S ? P - first + 1 : 0;
    const float* rope_w = &s.rope_w[size_t(p) * hd];
    const float* rope_s = &s.rope_s[size_t(p) * hd];
    for (uint32_t g = 0; g < G; ++g) {
      float* kg = k + g * hd;
      ZcRmsNormFast(kg, Ly.k_norm.data(), hd, kg);
      RotateWithAngles(kg, hd, rope_w);  // sinks: P < S is their own position
      cache.Store(li, P, g, kg, v + g * hd);
    }
    float* qw = s.qw.data();
    float* qs = s.qs.data();
    for (uint32_t hh = 0; hh < H; ++hh) {
      ZcRmsNormFast(q + hh * hd, Ly.q_norm.data(), hd, qw + hh * hd);
      std::memcpy(qs + hh * hd, qw + hh * hd, hd * sizeof(float));
      RotateWithAngles(qw + hh * hd, hd, rope_w);
      RotateWithAngles(qs + hh * hd, hd, rope_s);
      if (!s.fp32) {  // int8 queries, as the keys (attention.h)
        SnapToKvGrid(qw + hh * hd, hd);
        SnapToKvGrid(qs + hh * hd, hd);
      }
    }
    float* o = &s.o[size_t(p) * H * hd];
    if (s.fp32) {
      AttendFloat(cache, li, P, S, n_sink, first, hd, H, group, qw, qs, s.scores.data(), o);
    } else {
      // Window slots of tokens first..P: one or two contiguous runs of the ring.
      const uint32_t ngk = cache.groups_per_head();
      AttentionJob job;
      job.cache = &cache;
      job.layer = li;
      job.hd = hd;
      job.group = group;
      job.ngk = ngk;
      job.qw = qw;
      job.qs = qs;
      job.o = o;
      job.scores = s.scores.data();
      job.scores_per_group = static_cast<uint32_t>(s.scores.size() / G);
      job.n_sink = static_cast<uint32_t>(n_sink);
      job.sink_scored_as_sink = P >= S;
      job.win_first_slot = nw ? cache.RingSlot(first) : 0;
      job.nw = static_cast<uint32_t>(nw);
      job.window = static_cast<uint32_t>(W);
      if (pool) {
        pool->ParallelFor(G, RunAttentionRange, &job);
      } else {
        RunAttentionRange(&job, 0, G);
      }
    }
  }
}
// Prefill past the sinks: the chunk's keys are normalised, rotated and
// quantized exactly as Store would, attended from a chunk buffer together with
// the ring's older keys, and only then written to the cache (their slots may
// still hold keys an earlier query of the chunk sees).
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
      std::memcpy(qs + hh * hd, q + hh * hd, hd * sizeof(float));
      RotateWithAngles(q + hh * hd, hd, rope_w);
      RotateWithAngles(qs + hh * hd, hd, rope_s);
      SnapToKvGrid(q + hh * hd, hd);  // int8 queries, as the keys (attention.h)
      SnapToKvGrid(qs + hh * hd, hd);
    }
  };
  ForEachToken(pool, T, prepare);
  // The window sequence: ring keys first0..t0-1 (one or two runs), then the chunk.
  const int64_t first0 = cache.WindowFirst(t0);
  for (uint32_t p = 0; p < T; ++p) {
    const int64_t P = t0 + p;
    s.win_begin[p] = static_cast<uint32_t>(cache.WindowFirst(P) - first0);
    s.win_end[p] = static_cast<uint32_t>(P + 1 - first0);
  }
  BlockAttentionJob job{};
  AttentionBlockArgs& a = job.base;
  a.q_window = s.q.data();
  a.q_sink = s.qs_chunk.data();
  a.q_stride = H * hd;
  a.heads = group;
  a.head_dim = hd;
  a.row_stride = kv;
  a.scale_stride = G * ngk;
  a.window_begin = s.win_begin.data();
  a.window_end = s.win_end.data();
  a.out = s.o.data();
  a.out_stride = H * hd;
  if (S > 0) {
    job.sink_runs[0] = {cache.SinkK(li, 0), cache.SinkKScale(li, 0), cache.SinkV(li, 0), cache.SinkVScale(li, 0),
                        static_cast<uint32_t>(S), true};
    a.num_sink_runs = 1;
  }
  uint32_t nr = 0;
  const uint32_t old = static_cast<uint32_t>(t0 - first0);
  if (old) {
    const uint32_t s0 = cache.RingSlot(first0);
    const uint32_t n0 = std::min<uint32_t>(old, static_cast<uint32_t>(W) - s0);
    job.window_runs[nr++] = {cache.RingK(li, s0), cache.RingKScale(li, s0), cache.RingV(li, s0), cache.RingVScale(li, s0), n0, false};
    if (n0 < old) {
      job.window_runs[nr++] = {cache.RingK(li, 0), cache.RingKScale(li, 0), cache.RingV(li, 0), cache.RingVScale(li, 0), old - n0, false};
    }
  }
  job.window_runs[nr++] = {s.ck.data(), s.cks.data(), s.cv.data(), s.cvs.data(), T, false};
  a.num_window_runs = nr;
  job.groups = G;
  job.tokens_per_block = std::max<uint32_t>(1, kAttentionBlockRows / group);
  job.blocks = (T + job.tokens_per_block - 1) / job.tokens_per_block;
  job.total_tokens = T;
  job.hd = hd;
  job.group_heads = group;
  job.ngk = ngk;
  if (pool) {
    pool->ParallelFor(G * job.blocks, RunBlockAttentionRange, &job);
  } else {
    RunBlockAttentionRange(&job, 0, G * job.blocks);
  }
  for (uint32_t p = 0; p < T; ++p) {
    cache.StoreQuantized(li, t0 + p, &s.ck[size_t(p) * kv], &s.cks[size_t(p) * G * ngk], &s.cv[size_t(p) * kv],
                         &s.cvs[size_t(p) * G * ngk]);
  }
}

void FastModel::ForwardChunk(DecoderState& st, const int32_t* tokens, uint32_t T, float* logits, bool all_logits,
                             ThreadPool* pool) const {
  const ModelConfig& c = config_;
  const uint32_t d = c.d_model, n = c.mhc_lanes, H = c.num_heads, G = c.num_kv_heads, hd = c.head_dim();
  const uint32_t m = c.hada_n(), kv = G * hd, half = hd / 2;
  DecoderState::Scratch& s = *st.s_;
  WindowSinkCache& cache = st.cache_;
  const int64_t t0 = cache.tokens();
  const int64_t S = cache.geometry().sink_capacity;

  auto tok = [&](int64_t P) -> int32_t { return P < 0 ? 0 : P >= t0 ? tokens[P - t0] : cache.TokenSeen(P); };

  // Row p of `x` (row stride `in`) rotated and quantized for `fb`-bit matrices;
  // called inside other per-token stages (one pool job instead of two).
  auto prepare_row = [&](const float* x, uint32_t in, uint32_t fb, uint32_t p) {
    float* rot = &s.rotated[size_t(p) * s.in_pad_max];
    RotateForCq(x + size_t(p) * in, in, rot);
    ActivationQ8& a = s.acts[p];
    a.q = &s.act_q[size_t(p) * s.in_pad_max];
    a.scale = &s.act_scale[size_t(p) * (s.in_pad_max / kCqGroup)];
    a.sum = &s.act_sum[size_t(p) * (s.in_pad_max / kCqGroup)];
    QuantizeActivation(rot, static_cast<uint32_t>(CqPaddedIn(in)), fb, a);
  };
  // Rows [0, T) of `x` on their own.
  auto prepare = [&](const float* x, uint32_t in, uint32_t fb) {
    auto row = [&](uint32_t p) { prepare_row(x, in, fb, p); };
    ForEachToken(pool, T, row);
  };
  // Re-quantizes the already rotated rows for another field width when needed.
  auto requantize = [&](uint32_t in, uint32_t fb) {
    if (s.acts[0].field_bits == fb) return;
    const uint32_t in_pad = static_cast<uint32_t>(CqPaddedIn(in));
    auto row = [&](uint32_t p) { QuantizeActivation(&s.rotated[size_t(p) * s.in_pad_max], in_pad, fb, s.acts[p]); };
    ForEachToken(pool, T, row);
  };
  auto matmul = [&](const QMatrix& mat, uint32_t row_offset, uint32_t rows, float* y, uint32_t stride) {
    if (s.fp32) {
      MatMulF32Job job{&mat, row_offset, s.rotated.data(), s.in_pad_max, T, y, stride};
      if (pool) {
        pool->ParallelFor(rows, RunMatMulF32Range, &job, 4);
      } else {
        RunMatMulF32Range(&job, 0, rows);
      }
      return;
    }
    requantize(mat.in(), mat.field_bits());
    MatMulJob job{&mat, row_offset, s.acts.data(), T, y, stride};
    if (pool) {
      pool->ParallelFor(rows, RunMatMulRange, &job, 4);
    } else {
      RunMatMulRange(&job, 0, rows);
    }
  };

  // Matrices reading the same prepared rows: one pool job when their widths agree.
  auto matmul_multi = [&](std::initializer_list<MatMulSegment> segs) {
    bool same = true;
    for (const MatMulSegment& sg : segs) same = same && sg.m->field_bits() == segs.begin()->m->field_bits();
    if (s.fp32 || !same || segs.size() > 4) {
      for (const MatMulSegment& sg : segs) matmul(*sg.m, sg.row_offset, sg.rows, sg.y, sg.stride);
      return;
    }
    requantize(segs.begin()->m->in(), segs.begin()->m->field_bits());
    MultiMatMulJob job{};
    uint32_t total = 0;
    for (const MatMulSegment& sg : segs) job.seg[job.num_segments++] = sg, total += sg.rows;
    job.xs = s.acts.data();
    job.batch = T;
    if (pool) {
      pool->ParallelFor(total, RunMultiMatMulRange, &job, 4);
    } else {
      RunMultiMatMulRange(&job, 0, total);
    }
  };

  // RoPE angles of each token (the same for every layer): window rotation at its
  // counter, sink rotation at S + nw - 1 once past the sinks (SPEC §3).
  for (uint32_t p = 0; p < T; ++p) {
    const int64_t P = t0 + p;
    const int64_t first = P >= S ? cache.WindowFirst(P) : P + 1;
    const int64_t nw = P >= S ? P - first + 1 : 0;
    RopeAngles(static_cast<double>(P), inv_freq_.data(), half, &s.rope_w[size_t(p) * hd]);
    RopeAngles(P >= S ? double(S + nw - 1) : double(P), inv_freq_.data(), half, &s.rope_s[size_t(p) * hd]);
  }
  // Prefill past the sinks attends a block of tokens at once (AttendBlock);
  // single tokens (decode) and the sink block go token by token.
  const bool block_attention = s.block_attention && t0 >= S && T >= kMinBlockAttentionTokens;

  ForwardProfile* const prof = st.profile_;
  using Stage = ForwardStage;
  // Embedding rows, scaled, into all lanes.
  const float emb_scale = std::sqrt(static_cast<float>(d));
  std::optional<StageClock> embed_clock(std::in_place, prof, Stage::kEmbed);
  for (uint32_t p = 0; p < T; ++p) {
    float* x0 = &s.X[size_t(p) * n * d];
    CqDequantizeRow(embedding_.view, static_cast<uint32_t>(tokens[p]), x0);
    for (uint32_t i = 0; i < d; ++i) x0[i] *= emb_scale;
    for (uint32_t j = 1; j < n; ++j) std::memcpy(x0 + size_t(j) * d, x0, d * sizeof(float));
    for (uint32_t h = 0; h < st.num_pools_; ++h) st.pools_[h]->Add(x0);  // cell 0: x0 (all lanes equal)
  }
  embed_clock.reset();

  for (uint32_t li = 0; li < c.num_layers; ++li) {
    const Layer& Ly = layers_[li];
    const uint32_t lane = li % n;
    // ---- mHC coefficients
    auto unit = [&](uint32_t p) {
      RmsUnitFast(&s.X[size_t(p) * n * d], n * d, &s.nx[size_t(p) * n * d]);
      prepare_row(s.nx.data(), n * d, phi_pre_.field_bits(), p);
    };
    {
      StageClock sc(prof, Stage::kMhcNorm);
      ForEachToken(pool, T, unit);
    }
    {
      StageClock sc(prof, Stage::kMhcMatmul);
      matmul_multi({{&phi_pre_, li * n, n, s.proj_pre.data(), n},
                    {&phi_post_, li * n, n, s.proj_post.data(), n},
                    {&phi_res_, li * n * n, n * n, s.proj_res.data(), n * n}});
    }
    const int32_t site = site_of_layer_[li];
    auto norm_in = [&](uint32_t p) {
      ZcRmsNormFast(&s.xin[size_t(p) * d], Ly.norm_in.data(), d, &s.h[size_t(p) * d]);
      prepare_row(s.h.data(), d, Ly.q.field_bits(), p);
    };
    auto coefficients = [&](uint32_t p) {
      for (uint32_t j = 0; j < n; ++j) {
        s.hpre[p * n + j] = Sigmoid(a_pre_[li] * s.proj_pre[p * n + j] + b_pre_[li * n + j] + (j == lane ? 4.0f : -4.0f));
        s.hpost[p * n + j] = 2.0f * Sigmoid(a_post_[li] * s.proj_post[p * n + j] + b_post_[li * n + j] + (j == lane ? 0.0f : -4.0f));
      }
      float* hr = &s.hres[size_t(p) * n * n];
      for (uint32_t k = 0; k < n * n; ++k) hr[k] = a_res_[li] * s.proj_res[size_t(p) * n * n + k] + b_res_[li * n * n + k];
      SinkhornFast(hr, n);
      float* u = &s.u[size_t(p) * d];
      const float* X = &s.X[size_t(p) * n * d];
      for (uint32_t i = 0; i < d; ++i) {
        float acc = 0.0f;
        for (uint32_t j = 0; j < n; ++j) acc += s.hpre[p * n + j] * X[j * d + i];
        u[i] = acc;
      }
      std::memcpy(&s.xin[size_t(p) * d], u, d * sizeof(float));
      if (site < 0) norm_in(p);  // no engram here: the attention input is ready
    };
    {
      StageClock sc(prof, Stage::kMhcMix);
      ForEachToken(pool, T, coefficients);
    }

    // ---- engram site: x = u + alpha * ev
    if (const int32_t si = site; si >= 0) {
      const Site& E = sites_[si];
      const uint32_t eh = c.engram_heads_per_order(), sub = c.engram_sub_dim(), slots = c.engram_slots;
      std::optional<StageClock> lookup_clock(std::in_place, prof, Stage::kEngramLookup);
      for (uint32_t p = 0; p < T; ++p) {
        const int64_t P = t0 + p;
        int32_t hist[8];
        for (uint32_t j = 0; j < 8; ++j) hist[j] = tok(P - j);  // hist[j] = token at P - j
        for (uint32_t oi = 0; oi < c.engram_orders.size(); ++oi) {
          const uint32_t order = c.engram_orders[oi];
          const bool ok = P - int64_t(order) + 1 >= 0;
          for (uint32_t hh = 0; hh < eh; ++hh) {
            const uint32_t t = oi * eh + hh;
            float* dst = &s.e[size_t(p) * d + t * sub];
            if (!ok) {
              std::fill(dst, dst + sub, 0.0f);
              continue;
            }
            uint32_t acc = 0x9E3779B9u * (t + 1);
            for (uint32_t j = 0; j < order; ++j) acc = (acc ^ static_cast<uint32_t>(hist[j])) * 0x01000193u;
            acc ^= acc >> 15;
            CqDequantizeRow(E.tables.view, t * slots + acc % slots, dst);
          }
        }
      }
      lookup_clock.reset();
      {
        StageClock sc(prof, Stage::kEngramMatmul);
        prepare(s.e.data(), d, E.key.field_bits());
        matmul_multi({{&E.key, 0, d, s.ek.data(), d}, {&E.value, 0, d, s.ev0.data(), d}});
      }
      StageClock mix_clock(prof, Stage::kEngramMix);
      const uint32_t taps = static_cast<uint32_t>(E.taps.size() / d), dil = c.engram_dilation();
      for (uint32_t p = 0; p < T; ++p) {
        const int64_t P = t0 + p;
        std::memcpy(cache.EngramValue(si, P), &s.ev0[size_t(p) * d], d * sizeof(float));
        float* ev = s.x1.data();  // scratch
        std::fill(ev, ev + d, 0.0f);
        for (uint32_t j = 0; j < taps; ++j) {
          const int64_t src = P - int64_t(j) * dil;
          const float* e0 = cache.EngramValueSeen(si, src);
          if (!e0) continue;
          for (uint32_t i = 0; i < d; ++i) ev[i] += E.taps[j * d + i] * e0[i];
        }
        float* u = &s.u[size_t(p) * d];
        float* ek = &s.ek[size_t(p) * d];
        RmsUnitFast(ek, d, ek);
        float ss = 0.0f;
        for (uint32_t i = 0; i < d; ++i) ss += u[i] * u[i];
        const float inv_u = 1.0f / std::sqrt(ss / d + kNormEps);
        float dot = 0.0f;
        for (uint32_t i = 0; i < d; ++i) dot += u[i] * inv_u * ek[i];
        const float alpha = Sigmoid(dot / std::sqrt(static_cast<float>(d)));
        for (uint32_t i = 0; i < d; ++i) s.xin[size_t(p) * d + i] = u[i] + alpha * ev[i];
      }
    }

    // ---- attention projections (batched over the chunk)
    if (site >= 0) {
      StageClock sc(prof, Stage::kAttnNorm);
      ForEachToken(pool, T, norm_in);
    }
    {
      StageClock sc(prof, Stage::kQkvgMatmul);
      matmul_multi({{&Ly.q, 0, H * hd, s.q.data(), H * hd},
                    {&Ly.k, 0, kv, s.k.data(), kv},
                    {&Ly.v, 0, kv, s.v.data(), kv},
                    {&Ly.gate, 0, H * hd, s.gate.data(), H * hd}});
    }

    // ---- K/V into the cache, attention (gate applied below)
    {
      StageClock sc(prof, Stage::kAttention);
      if (block_attention) {
        AttendChunk(st, li, T, pool);
      } else {
        AttendTokens(st, li, T, pool);
      }
    }
    auto gate = [&](uint32_t p) {
      float* o = &s.o[size_t(p) * H * hd];
      const float* gt = &s.gate[size_t(p) * H * hd];
      MulSigmoid(o, gt, H * hd);
      prepare_row(s.o.data(), H * hd, Ly.out.field_bits(), p);
    };
    {
      StageClock sc(prof, Stage::kGate);
      ForEachToken(pool, T, gate);
    }

    // ---- output projection, post norm, Hadamard MLP, lane update
    {
      StageClock sc(prof, Stage::kOutMatmul);
      matmul(Ly.out, 0, d, s.a.data(), d);
    }
    const float g_attn = Sigmoid(Ly.attn_gate);
    // Per token; x1 and z live in rows of buffers the products above are done
    // with (h: the attention input, rotated: the out projection's activations).
    auto mlp = [&](uint32_t p) {
      float* a = &s.a[size_t(p) * d];
      const float* xin = &s.xin[size_t(p) * d];
      const float* u = &s.u[size_t(p) * d];
      float* x1 = &s.h[size_t(p) * d];
      ZcRmsNormFast(a, Ly.post_norm.data(), d, a);
      for (uint32_t i = 0; i < d; ++i) x1[i] = xin[i] + g_attn * a[i];
      float* z = &s.rotated[size_t(p) * s.in_pad_max];
      ZcRmsNormFast(x1, Ly.pre_hada.data(), d, z);
      for (uint32_t i = 0; i < d; ++i) z[i] *= Ly.d1[i];
      std::fill(z + d, z + m, 0.0f);
      FastWalshHadamard(z, m);
      SiluScaled(z, Ly.d2.data(), m);
      FastWalshHadamard(z, m);
      // y = Block(x) - u, reusing `a` for y.
      for (uint32_t i = 0; i < d; ++i) a[i] = x1[i] + Ly.d3[i] * z[i] - u[i];
      float* X = &s.X[size_t(p) * n * d];
      const float* hr = &s.hres[size_t(p) * n * n];
      float* nxp = &s.nx[size_t(p) * n * d];  // scratch for the new lanes
      MixLanesFast(X, a, hr, &s.hpost[p * n], n, d, nxp);
      std::memcpy(X, nxp, size_t(n) * d * sizeof(float));
    };
    {
      StageClock sc(prof, Stage::kMlp);
      ForEachToken(pool, T, mlp);
    }
    // Head cells, in token order: the mean of the lanes after this layer (SPEC §2).
    for (uint32_t p = 0; p < T && st.num_pools_; ++p) {
      const float* X = &s.X[size_t(p) * n * d];
      float* mean = s.mean.data();
      for (uint32_t i = 0; i < d; ++i) {
        float acc = 0.0f;
        for (uint32_t j = 0; j < n; ++j) acc += X[j * d + i];
        mean[i] = acc / static_cast<float>(n);
      }
      for (uint32_t h = 0; h < st.num_pools_; ++h) st.pools_[h]->Add(mean);
    }
  }

  // ---- bookkeeping: the chunk's tokens are now in the cache
  for (uint32_t p = 0; p < T; ++p) {
    cache.PushToken(t0 + p, tokens[p]);
    cache.Commit(t0 + p);
  }

  // ---- final norm and tied logits for the positions asked for
  if (!logits) return;
  const uint32_t first_out = all_logits ? 0 : T - 1;
  const uint32_t outs = T - first_out;
  std::optional<StageClock> norm_clock(std::in_place, prof, Stage::kLogitsNorm);
  for (uint32_t p = first_out; p < T; ++p) {
    float* mean = s.mean.data();
    std::fill(mean, mean + d, 0.0f);
    const float* X = &s.X[size_t(p) * n * d];
    for (uint32_t j = 0; j < n; ++j) {
      for (uint32_t i = 0; i < d; ++i) mean[i] += X[j * d + i] / static_cast<float>(n);
    }
    ZcRmsNormFast(mean, final_norm_.data(), d, &s.h[size_t(p - first_out) * d]);
  }
  norm_clock.reset();
  StageClock logits_clock(prof, Stage::kLogitsMatmul);
  const uint32_t saved_T = T;
  T = outs;  // prepare/matmul work on the first `outs` rows
  prepare(s.h.data(), d, embedding_.field_bits());
  matmul(embedding_, 0, c.vocab_size, logits, c.vocab_size);
  T = saved_T;
}

}  // namespace needle
