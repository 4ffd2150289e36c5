#include "model/fast_model.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>

#include "base/error.h"
#include "kv/budget.h"
#include "model/attention.h"
#include "model/fast_model_internal.h"
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

// Below this many multiply-adds a product runs on the calling thread: waking
// the pool costs more than splitting saves (decode's mHC products, 24 rows).
constexpr uint64_t kMinParallelMacs = 96 * 1024;

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

}  // namespace

void RopeAngles(double pos, const double* inv_freq, uint32_t half, float* cs) {
  for (uint32_t i = 0; i < half; ++i) {
    const double angle = pos * inv_freq[i];
    cs[i] = static_cast<float>(std::cos(angle));
    cs[half + i] = static_cast<float>(std::sin(angle));
  }
}

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
  const CacheGeometry& g = cache_.geometry();
  s_ = MakeScratch(model, std::max<uint32_t>(1, opt.max_chunk), opt.fp32, g.sink_capacity + g.window,
                   cache_.groups_per_head(), !opt.fp32);
}

std::unique_ptr<DecoderState::Scratch> DecoderState::MakeScratch(const FastModel& model, uint32_t C, bool fp32,
                                                                 uint32_t score_slots, uint32_t ngk,
                                                                 bool block_attention) {
  const ModelConfig& c = model.config();
  const uint32_t d = c.d_model, n = c.mhc_lanes, H = c.num_heads, G = c.num_kv_heads, hd = c.head_dim();
  auto s = std::make_unique<Scratch>();
  s->C = C;
  s->fp32 = fp32;
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
  s->scores.resize(size_t(H) * score_slots);
  s->qw.resize(size_t(H) * hd);
  s->qs.resize(size_t(H) * hd);
  // cos/sin per chunk token (window and sink rotations), shared by every layer.
  s->rope_w.resize(size_t(C) * hd);
  s->rope_s.resize(size_t(C) * hd);
  s->block_attention = block_attention && AttendBlockAvailable(H / G, hd);
  if (s->block_attention) {
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
  return s;
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
    ChunkTokens ct;
    ct.one = &st;
    ct.t0 = st.cache_.tokens();
    ForwardChunk(*st.s_, ct, tokens.data() + at, n, out, all_logits, pool, st.profile_);
  }
}

// Token by token: store K/V, attend (the ring never holds a key a later query
// still needs). Decode, the sink block, and the fp32 mode.
void FastModel::ForwardChunk(DecoderState::Scratch& s, const ChunkTokens& ct, const int32_t* tokens, uint32_t T,
                             float* logits, bool all_logits, ThreadPool* pool, ForwardProfile* prof) const {
  const ModelConfig& c = config_;
  const uint32_t d = c.d_model, n = c.mhc_lanes, H = c.num_heads, G = c.num_kv_heads, hd = c.head_dim();
  const uint32_t m = c.hada_n(), kv = G * hd, half = hd / 2;

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
    if (pool && uint64_t{rows} * mat.in() * T >= kMinParallelMacs) {
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
    if (pool && uint64_t{total} * segs.begin()->m->in() * T >= kMinParallelMacs) {
      pool->ParallelFor(total, RunMultiMatMulRange, &job, 4);
    } else {
      RunMultiMatMulRange(&job, 0, total);
    }
  };

  // RoPE angles of each token (the same for every layer): window rotation at its
  // counter, sink rotation at S + nw - 1 once past the sinks (SPEC §3).
  for (uint32_t p = 0; p < T; ++p) {
    const WindowSinkCache& cache = ct.cache(p);
    const int64_t P = ct.pos(p), S = cache.geometry().sink_capacity;
    const int64_t first = P >= S ? cache.WindowFirst(P) : P + 1;
    const int64_t nw = P >= S ? P - first + 1 : 0;
    RopeAngles(static_cast<double>(P), inv_freq_.data(), half, &s.rope_w[size_t(p) * hd]);
    RopeAngles(P >= S ? double(S + nw - 1) : double(P), inv_freq_.data(), half, &s.rope_s[size_t(p) * hd]);
  }
  // Prefill attends blocks of tokens at once (AttendBlock): past the sinks, or
  // wholly inside the sink block of a cache that holds its own sinks. Single
  // tokens (decode), a chunk across the sink boundary and fp32 go token by token.
  const bool block_attention = [&] {
    if (ct.batched() || !s.block_attention || T < kMinBlockAttentionTokens) return false;
    const CacheGeometry& geo = ct.one->cache_.geometry();
    return ct.t0 >= geo.sink_capacity || (ct.t0 + T <= geo.sink_capacity && !geo.shared_sinks);
  }();

  using Stage = ForwardStage;
  // Embedding rows, scaled, into all lanes.
  const float emb_scale = std::sqrt(static_cast<float>(d));
  std::optional<StageClock> embed_clock(std::in_place, prof, Stage::kEmbed);
  for (uint32_t p = 0; p < T; ++p) {
    float* x0 = &s.X[size_t(p) * n * d];
    CqDequantizeRow(embedding_.view, static_cast<uint32_t>(tokens[p]), x0);
    for (uint32_t i = 0; i < d; ++i) x0[i] *= emb_scale;
    for (uint32_t j = 1; j < n; ++j) std::memcpy(x0 + size_t(j) * d, x0, d * sizeof(float));
    const DecoderState& owner = ct.state(p);
    for (uint32_t h = 0; h < owner.num_pools_; ++h) owner.pools_[h]->Add(x0);  // cell 0: x0 (all lanes equal)
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
      // u = sum_j hpre[j] * lane j, lane by lane (the loops vectorize over i;
      // each u[i] sums its lanes in order j = 0, 1, ..., as the reference).
      float* u = &s.u[size_t(p) * d];
      const float* X = &s.X[size_t(p) * n * d];
      const float* hp = &s.hpre[p * n];
      for (uint32_t i = 0; i < d; ++i) u[i] = hp[0] * X[i];
      for (uint32_t j = 1; j < n; ++j) {
        for (uint32_t i = 0; i < d; ++i) u[i] += hp[j] * X[j * d + i];
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
        const int64_t P = ct.pos(p);
        int32_t hist[8];
        for (uint32_t j = 0; j < 8; ++j) hist[j] = ct.TokenAt(tokens, p, P - j);  // hist[j] = token at P - j
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
        const int64_t P = ct.pos(p);
        WindowSinkCache& cache = ct.cache(p);
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
        AttendChunk(*ct.one, li, T, pool);
      } else {
        AttendTokens(s, ct, li, T, pool);
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
    for (uint32_t p = 0; p < T; ++p) {
      const DecoderState& owner = ct.state(p);
      if (!owner.num_pools_) continue;
      const float* X = &s.X[size_t(p) * n * d];
      float* mean = s.mean.data();
      std::memcpy(mean, X, d * sizeof(float));  // lanes summed in order, vectorized over i
      for (uint32_t j = 1; j < n; ++j) {
        for (uint32_t i = 0; i < d; ++i) mean[i] += X[j * d + i];
      }
      for (uint32_t i = 0; i < d; ++i) mean[i] /= static_cast<float>(n);
      for (uint32_t h = 0; h < owner.num_pools_; ++h) owner.pools_[h]->Add(mean);
    }
  }

  // ---- bookkeeping: the chunk's tokens are now in the cache
  for (uint32_t p = 0; p < T; ++p) {
    ct.cache(p).PushToken(ct.pos(p), tokens[p]);
    ct.cache(p).Commit(ct.pos(p));
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
