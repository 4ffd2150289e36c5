#include "train/san.h"

#include <cmath>
#include <cstring>
#include <map>

#include "base/error.h"
#include "train/lora.h"
#include "train/san_ops.h"  // RmsUnit, SinkhornExp, LaneReadout, LaneUpdate

#include <ATen/CPUGeneratorImpl.h>

namespace needle::train {
namespace {

torch::Tensor FromVector(const std::vector<float>& v, const TensorSpec& s) {
  std::vector<int64_t> shape(s.shape, s.shape + s.ndim);
  return torch::from_blob(const_cast<float*>(v.data()), shape, torch::kFloat32).clone();
}

torch::Tensor ZcRms(const torch::Tensor& x, const torch::Tensor& scale) { return (1 + scale) * RmsUnit(x); }

// x [B, T, heads, hd] rotated by angles whose cos/sin are [B, T, hd/2].
torch::Tensor Rope(const torch::Tensor& x, const torch::Tensor& cos, const torch::Tensor& sin) {
  const int64_t half = x.size(-1) / 2;
  const auto x1 = x.narrow(-1, 0, half), x2 = x.narrow(-1, half, half);
  const auto c = cos.unsqueeze(2), s = sin.unsqueeze(2);
  return torch::cat({x1 * c - x2 * s, x2 * c + x1 * s}, -1);
}

torch::Tensor HadamardMatrix(int64_t m) {
  std::vector<float> h(size_t(m) * m);
  const float scale = 1.0f / std::sqrt(static_cast<float>(m));
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < m; ++j) h[i * m + j] = (__builtin_popcountll(uint64_t(i & j)) & 1 ? -scale : scale);
  return torch::from_blob(h.data(), {m, m}, torch::kFloat32).clone();
}

std::string ParamName(const std::string& spec_name) {
  std::string s = spec_name;
  for (char& ch : s) ch = ch == '.' ? '_' : ch;
  return s;
}

}  // namespace

TrainBatch TrainBatch::From(const PackedRows& p, const ModelConfig& c, torch::Device device) {
  const int64_t R = p.rows, T = p.length, tables = c.num_engram_tables(), taps = ModelConfig::kEngramTaps;
  auto i64 = [&](const std::vector<int64_t>& v, std::vector<int64_t> shape) {
    return torch::from_blob(const_cast<int64_t*>(v.data()), shape, torch::kInt64).clone().to(device);
  };
  TrainBatch b;
  b.tokens = i64(p.tokens, {R, T});
  b.seg = i64(p.seg, {R, T});
  b.sink = torch::from_blob(const_cast<uint8_t*>(p.sink.data()), {R, T}, torch::kUInt8).clone().to(torch::kBool).to(device);
  b.pos = i64(p.pos, {R, T});
  b.sink_qpos = i64(p.sink_qpos, {R, T});
  b.targets = i64(p.targets, {R, T});
  b.engram_idx = i64(p.engram_idx, {R, T, tables});
  b.engram_ok = torch::from_blob(const_cast<float*>(p.engram_ok.data()), {R, T, tables}, torch::kFloat32).clone().to(device);
  b.tap_ok = torch::from_blob(const_cast<float*>(p.tap_ok.data()), {R, T, taps}, torch::kFloat32).clone().to(device);
  // The examples (runs of one segment id in a row), grouped by padded length.
  struct Span {
    int64_t at, length;
  };
  std::map<int64_t, std::vector<Span>> by_length;
  for (int64_t r = 0; r < R; ++r) {
    for (int64_t t = 0; t < T;) {
      const int64_t seg = p.seg[size_t(r * T + t)];
      int64_t end = t + 1;
      while (end < T && p.seg[size_t(r * T + end)] == seg) ++end;
      if (seg > 0) {
        const int64_t len = end - t, padded = (len + kAttentionBlock - 1) / kAttentionBlock * kAttentionBlock;
        by_length[padded].push_back({r * T + t, len});
      }
      t = end;
    }
  }
  const int64_t dummy = R * T;
  for (const auto& [Lb, spans] : by_length) {
    const size_t n = spans.size();
    std::vector<int64_t> index(n * Lb, dummy), pos(n * Lb, 0);
    std::vector<uint8_t> valid(n * Lb, 0), sink(n * Lb, 0);
    for (size_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < spans[i].length; ++j) {
        const size_t slot = i * Lb + j, tok = size_t(spans[i].at + j);
        index[slot] = int64_t(tok), valid[slot] = 1, pos[slot] = p.pos[tok], sink[slot] = p.sink[tok];
      }
    }
    auto flags = [&](const std::vector<uint8_t>& v) {
      return torch::from_blob(const_cast<uint8_t*>(v.data()), {int64_t(n), Lb}, torch::kUInt8).clone().to(torch::kBool).to(device);
    };
    b.groups.push_back({i64(index, {int64_t(n), Lb}), flags(valid), i64(pos, {int64_t(n), Lb}), flags(sink)});
  }
  return b;
}

SanImpl::SanImpl(const ModelConfig& c, std::vector<HeadSpec> head_specs, uint64_t seed)
    : c_(c), head_specs_(std::move(head_specs)) {
  const ModelWeights w = RandomWeights(c, head_specs_, seed);  // SPEC §1 reference initialisation
  specs_ = w.specs;
  CactLayout lay;
  BuildTensorSpecs(c, head_specs_, &lay);
  std::vector<torch::Tensor> t(specs_.size());
  for (size_t i = 0; i < specs_.size(); ++i) {
    t[i] = FromVector(w.tensors[i], specs_[i]);
    if (specs_[i].map_key == "heads.manifest") {
      t[i] = register_buffer(ParamName(specs_[i].name), t[i]);
    } else {
      t[i] = register_parameter(ParamName(specs_[i].name), t[i]);
    }
  }
  embedding = t[lay.embedding];
  for (const LayerTensors& l : lay.layers) {
    layers.push_back({t[l.norm_in], t[l.q_proj], t[l.k_proj], t[l.v_proj], t[l.q_norm], t[l.k_norm], t[l.gate_proj],
                      t[l.out_proj], t[l.post_norm], t[l.attn_gate], t[l.pre_hada], t[l.d1], t[l.d2], t[l.d3]});
  }
  a_pre = t[lay.mhc_a_pre], a_post = t[lay.mhc_a_post], a_res = t[lay.mhc_a_res];
  b_pre = t[lay.mhc_b_pre], b_post = t[lay.mhc_b_post], b_res = t[lay.mhc_b_res];
  phi_pre = t[lay.mhc_phi_pre], phi_post = t[lay.mhc_phi_post], phi_res = t[lay.mhc_phi_res];
  for (const EngramSiteTensors& e : lay.engram) sites.push_back({t[e.tables], t[e.key_proj], t[e.value_proj], t[e.taps]});
  final_norm = t[lay.final_norm];
  for (const HeadTensors& h : lay.heads) heads.push_back({h.spec, t[h.probes], t[h.proj], t[h.bias]});
  hadamard_ = register_buffer("hadamard", HadamardMatrix(c.hada_n()));
  std::vector<double> inv(c.head_dim() / 2);
  for (size_t i = 0; i < inv.size(); ++i) inv[i] = std::pow(double(c.rope_theta), -2.0 * double(i) / c.head_dim());
  inv_freq_ = register_buffer("inv_freq", torch::from_blob(inv.data(), {int64_t(inv.size())}, torch::kFloat64).clone());
}

std::vector<const torch::Tensor*> SanImpl::Ordered() const {
  // Same order as BuildTensorSpecs: rebuild it from the layout.
  std::vector<const torch::Tensor*> out;
  out.push_back(&embedding);
  for (const Layer& l : layers) {
    for (const torch::Tensor* p : {&l.norm_in, &l.q_proj, &l.k_proj, &l.v_proj, &l.q_norm, &l.k_norm, &l.gate_proj,
                                   &l.out_proj, &l.post_norm, &l.attn_gate, &l.pre_hada, &l.d1, &l.d2, &l.d3}) {
      out.push_back(p);
    }
  }
  for (const torch::Tensor* p : {&a_pre, &a_post, &a_res, &b_pre, &b_post, &b_res, &phi_pre, &phi_post, &phi_res}) out.push_back(p);
  for (const Site& s : sites) {
    for (const torch::Tensor* p : {&s.tables, &s.key_proj, &s.value_proj, &s.taps}) out.push_back(p);
  }
  out.push_back(&final_norm);
  return out;
}

std::vector<torch::Tensor*> SanImpl::Ordered() {
  std::vector<torch::Tensor*> out;
  for (const torch::Tensor* p : std::as_const(*this).Ordered()) out.push_back(const_cast<torch::Tensor*>(p));
  return out;
}

ModelWeights SanImpl::Export() const {
  ModelWeights w = ZeroWeights(c_, head_specs_);
  const auto core = Ordered();
  size_t i = 0;
  auto copy = [&](const torch::Tensor& t) {
    const torch::Tensor f = t.detach().to(torch::kCPU, torch::kFloat32).contiguous();
    if (static_cast<size_t>(f.numel()) != w.tensors[i].size()) throw Error(ErrorCode::kInternal, "export: size mismatch at " + w.specs[i].name);
    std::memcpy(w.tensors[i].data(), f.data_ptr<float>(), w.tensors[i].size() * sizeof(float));
    ++i;
  };
  for (const torch::Tensor* p : core) copy(*p);
  if (!heads.empty()) {
    for (size_t h = 0; h < heads.size(); ++h) w.tensors[i][h] = static_cast<float>(static_cast<uint32_t>(heads[h].spec.kind));
    ++i;
    for (const Head& h : heads) {
      copy(h.probes);
      copy(h.proj);
      copy(h.bias);
    }
  }
  return w;
}

void SanImpl::Import(const CactArchive& archive) {
  torch::NoGradGuard no_grad;
  const CactLayout& lay = archive.layout();
  if (archive.config().d_model != c_.d_model || archive.config().num_layers != c_.num_layers || archive.config().vocab_size != c_.vocab_size) {
    throw Error(ErrorCode::kInvalidArgument, "import: the archive's geometry differs from the model's");
  }
  const auto core = Ordered();
  for (size_t i = 0; i < core.size(); ++i) {
    const std::vector<float> v = archive.Dequantized(i);
    if (static_cast<size_t>(core[i]->numel()) != v.size()) throw Error(ErrorCode::kInvalidArgument, "import: size mismatch at tensor " + std::to_string(i));
    core[i]->copy_(torch::from_blob(const_cast<float*>(v.data()), core[i]->sizes(), torch::kFloat32));
  }
  for (Head& h : heads) {
    const HeadTensors* src = lay.FindHead(h.spec.kind);
    if (!src) continue;
    for (auto [dst, idx] : {std::pair{&h.probes, src->probes}, {&h.proj, src->proj}, {&h.bias, src->bias}}) {
      const std::vector<float> v = archive.Dequantized(idx);
      if (static_cast<size_t>(dst->numel()) == v.size()) dst->copy_(torch::from_blob(const_cast<float*>(v.data()), dst->sizes(), torch::kFloat32));
    }
  }
}

torch::Tensor SanImpl::Matmul(const torch::Tensor& a, const torch::Tensor& b) const {
  if (matmul_type_ == torch::kFloat32) return torch::matmul(a, b);
  return torch::matmul(a.to(matmul_type_), b.to(matmul_type_)).to(torch::kFloat32);
}

torch::Tensor SanImpl::Block(const Layer& L, int64_t lora_layer, const torch::Tensor& x, const AttentionInputs& att) {
  const int64_t B = x.size(0), T = x.size(1), H = c_.num_heads, G = c_.num_kv_heads, hd = c_.head_dim();
  const int64_t d = c_.d_model, m = c_.hada_n(), half = hd / 2;
  // x W^T, plus the adapter's low-rank update when one is attached.
  auto proj = [&](LoraTarget t, const torch::Tensor& in, const torch::Tensor& w) {
    auto y = Matmul(in, w.t());
    return lora_ && lora_layer >= 0 ? y + lora_->Delta(static_cast<size_t>(lora_layer), t, in) : y;
  };
  OpFamily family("attention_projections");
  const auto h = ZcRms(x, L.norm_in);
  auto q = ZcRms(proj(LoraTarget::kQ, h, L.q_proj).view({B, T, H, hd}), L.q_norm);
  auto k = ZcRms(proj(LoraTarget::kK, h, L.k_proj).view({B, T, G, hd}), L.k_norm);
  auto v = proj(LoraTarget::kV, h, L.v_proj).view({B, T, G, hd});
  const auto& rope = att.rope_q;
  const auto qw = Rope(q, rope.narrow(-1, 0, half), rope.narrow(-1, half, half));  // [B, T, H, hd]
  const auto qs = Rope(q, att.rope_qs.narrow(-1, 0, half), att.rope_qs.narrow(-1, half, half));
  auto kr = Rope(k, rope.narrow(-1, 0, half), rope.narrow(-1, half, half));  // [B, T, G, hd]
  if (H != G) {
    kr = kr.repeat_interleave(H / G, 2);
    v = v.repeat_interleave(H / G, 2);
  }
  // Window keys see the query at its own position, sink keys the query at the
  // sink-relative position (SPEC §3): one product over concatenated halves,
  // [qw | qs] . [k * !sink | k * sink], instead of two score matrices.
  family.Next("attention_scores");
  const double scale = 1.0 / std::sqrt(static_cast<double>(hd));
  // Flattened to [B*T + 1, H, .]: the extra zero row is what padding slots gather.
  auto flat = [&](const torch::Tensor& t) {
    const auto f = t.reshape({B * T, H, t.size(-1)});
    return torch::cat({f, torch::zeros({1, H, t.size(-1)}, f.options())}, 0);
  };
  // Queries, keys and values side by side, gathered for all groups at once and
  // split per group: per-group gathers would each send a full-size gradient
  // back (zeros plus index_add) for the engine to sum, 3 x groups per layer.
  const auto qkv = flat(torch::cat({torch::cat({qw, qs}, -1) * scale, kr * (1 - att.sink_key), kr * att.sink_key, v}, -1));
  std::vector<int64_t> group_sizes;
  for (const auto& idx : att.index) group_sizes.push_back(idx.numel());
  const auto gathered = qkv.index_select(0, att.all_index).split_with_sizes(group_sizes, 0);
  std::vector<torch::Tensor> outs;
  for (size_t g = 0; g < att.index.size(); ++g) {
    const int64_t n = att.index[g].size(0), Lb = att.index[g].size(1);
    const auto parts = gathered[g].view({n, Lb, H, 5 * hd}).transpose(1, 2).split_with_sizes({2 * hd, 2 * hd, hd}, -1);
    const auto attn = torch::softmax(Matmul(parts[0], parts[1].transpose(-1, -2)) + att.bias[g], -1);  // [n, H, Lb, Lb]
    outs.push_back(Matmul(attn, parts[2]).transpose(1, 2).reshape({n * Lb, H * hd}));
  }
  // Back to the rows; padding slots land on the extra row, dropped.
  auto o = torch::zeros({B * T + 1, H * hd}, x.options());
  if (!outs.empty()) o = o.index_add(0, att.all_index, torch::cat(outs, 0));
  o = o.narrow(0, 0, B * T).view({B, T, H * hd});
  family.Next("attention_projections");
  o = o * torch::sigmoid(proj(LoraTarget::kGate, h, L.gate_proj));
  const auto a = proj(LoraTarget::kOut, o, L.out_proj);
  const auto x1 = x + torch::sigmoid(L.attn_gate) * ZcRms(a, L.post_norm);
  family.Next("hadamard_mlp");
  const auto h2 = ZcRms(x1, L.pre_hada);
  auto z = m > d ? torch::constant_pad_nd(h2, {0, m - d}) : h2;
  z = Matmul(z * L.d1, hadamard_);
  z = Matmul(torch::silu(L.d2 * z), hadamard_);
  z = (L.d3 * z).narrow(-1, 0, d);
  return x1 + z;
}

SanImpl::AttentionInputs SanImpl::MakeAttentionInputs(const TrainBatch& b, int64_t window,
                                                      const torch::TensorOptions& options) const {
  OpFamily family("mask_and_rope");
  AttentionInputs a;
  // Packing mask (SPEC §4) within each example: causal, within the window or a
  // sink key; padding slots attend to themselves (no NaN), real queries never to them.
  std::vector<torch::Tensor> all;
  for (const TrainBatch::AttentionGroup& g : b.groups) {
    const int64_t Lb = g.index.size(1);
    const auto idx = torch::arange(Lb, b.tokens.options());
    auto visible = (idx.unsqueeze(1) >= idx.unsqueeze(0)).unsqueeze(0) & g.valid.unsqueeze(1);  // [n, Lb, Lb]
    if (window > 0) {
      const auto near = (g.pos.unsqueeze(2) - g.pos.unsqueeze(1)) < window;
      visible = visible & (near | g.sink.unsqueeze(1));
    }
    visible = visible | torch::eye(Lb, g.valid.options()).unsqueeze(0);
    a.bias.push_back(
        torch::zeros(visible.sizes(), options).masked_fill(visible.logical_not(), -std::numeric_limits<float>::infinity()).unsqueeze(1));
    a.index.push_back(g.index);
    all.push_back(g.index.reshape({-1}));
  }
  a.all_index = all.empty() ? torch::zeros({0}, b.tokens.options()) : torch::cat(all, 0);
  a.sink_key = b.sink.to(torch::kFloat32).unsqueeze(-1).unsqueeze(-1);  // [B, T, 1, 1]
  auto angles = [&](const torch::Tensor& pos) {
    const auto r = pos.to(torch::kFloat64).unsqueeze(-1) * inv_freq_;
    return torch::cat({torch::cos(r), torch::sin(r)}, -1).to(torch::kFloat32);  // [B, T, hd]
  };
  a.rope_q = angles(b.pos);
  a.rope_qs = angles(b.sink_qpos);
  return a;
}

void SanImpl::EnableMtp(uint64_t seed) {
  if (mtp_enabled_) return;
  torch::NoGradGuard no_grad;
  const int64_t d = c_.d_model;
  const Layer& last = layers.back();
  auto copy = [&](const char* name, const torch::Tensor& t) { return register_parameter(std::string("mtp_") + name, t.detach().clone()); };
  mtp_block = {copy("norm_in", last.norm_in),     copy("q_proj", last.q_proj),       copy("k_proj", last.k_proj),
               copy("v_proj", last.v_proj),       copy("q_norm", last.q_norm),       copy("k_norm", last.k_norm),
               copy("gate_proj", last.gate_proj), copy("out_proj", last.out_proj),   copy("post_norm", last.post_norm),
               copy("attn_gate", last.attn_gate), copy("pre_hada", last.pre_hada),   copy("d1", last.d1),
               copy("d2", last.d2),               copy("d3", last.d3)};
  // [I | small]: at first the block sees the hidden state plus a little of the next token.
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  auto combine = torch::cat({torch::eye(d), torch::randn({d, d}, gen) * 0.02}, 1);
  mtp_combine = register_parameter("mtp_combine", combine);
  mtp_emb_norm = register_parameter("mtp_emb_norm", torch::zeros({d}));
  mtp_norm = register_parameter("mtp_norm", torch::zeros({d}));
  mtp_enabled_ = true;
}

torch::Tensor SanImpl::MtpLoss(const TrainBatch& b, int64_t window, const torch::Tensor& hidden) {
  if (!mtp_enabled_) throw Error(ErrorCode::kInternal, "MtpLoss without EnableMtp");
  const int64_t B = b.tokens.size(0), T = b.tokens.size(1), d = c_.d_model;
  // The next token of each position (PAD past the row's end).
  const auto next = torch::cat({b.tokens.narrow(1, 1, T - 1), torch::full({B, 1}, int64_t(c_.pad_token_id), b.tokens.options())}, 1);
  const auto e = ZcRms(embedding.index_select(0, next.reshape({-1})).view({B, T, d}) * std::sqrt(static_cast<double>(d)), mtp_emb_norm);
  const auto x = Matmul(torch::cat({hidden, e}, -1), mtp_combine.t());
  const AttentionInputs att = MakeAttentionInputs(b, window, hidden.options());
  const auto h2 = ZcRms(Block(mtp_block, -1, x, att), mtp_norm);
  // Position t predicts the target of position t + 1 (the token at t + 2), same example only.
  const auto t2 = torch::cat({b.targets.narrow(1, 1, T - 1), torch::full({B, 1}, int64_t(-100), b.targets.options())}, 1);
  const auto same = torch::cat({b.seg.narrow(1, 1, T - 1) == b.seg.narrow(1, 0, T - 1), torch::zeros({B, 1}, b.seg.options().dtype(torch::kBool))}, 1);
  const auto flat = torch::where(same, t2, torch::full_like(t2, -100)).reshape({-1});
  const auto at = (flat != -100).nonzero().squeeze(1);
  if (at.numel() == 0) return torch::zeros({}, hidden.options());
  const auto logits = Logits(h2.reshape({-1, d}).index_select(0, at));
  return torch::nn::functional::cross_entropy(logits, flat.index_select(0, at));
}

torch::Tensor SanImpl::forward(const TrainBatch& b, int64_t window) { return Logits(Hidden(b, window)); }

torch::Tensor SanImpl::Cells(const TrainBatch& b, int64_t window) {
  std::vector<torch::Tensor> cells;
  Hidden(b, window, &cells);
  return torch::stack(cells, 2);  // [B, T, L + 1, d]
}

torch::Tensor SanImpl::HeadOutput(size_t head, const torch::Tensor& cells, const torch::Tensor& visible) {
  const Head& h = heads.at(head);
  const int64_t B = cells.size(0), d = c_.d_model, P = h.probes.size(0);
  // Scores of every (position, layer) cell against every probe; softmax over
  // the visible cells per probe (SPEC §2), then the weighted sum of the cells.
  auto scores = torch::matmul(cells, h.probes.t()) / std::sqrt(static_cast<double>(d));  // [B, T, L+1, P]
  scores = scores.masked_fill(visible.logical_not().unsqueeze(-1).unsqueeze(-1), -std::numeric_limits<float>::infinity());
  const auto w = torch::softmax(scores.reshape({B, -1, P}), 1);                          // [B, N, P]
  const auto pooled = torch::matmul(w.transpose(1, 2), cells.reshape({B, -1, d}));        // [B, P, d]
  return torch::matmul(pooled.reshape({B, P * d}), h.proj.t()) + h.bias;
}

torch::Tensor SanImpl::Logits(const torch::Tensor& hidden) { return Matmul(hidden, embedding.t()); }

torch::Tensor SanImpl::Hidden(const TrainBatch& b, int64_t window, std::vector<torch::Tensor>* cells) {
  const int64_t B = b.tokens.size(0), T = b.tokens.size(1), d = c_.d_model, n = c_.mhc_lanes, L = c_.num_layers;
  OpFamily family("embedding");
  const auto x0 = embedding.index_select(0, b.tokens.reshape({-1})).view({B, T, d}) * std::sqrt(static_cast<double>(d));
  auto X = x0.unsqueeze(2).expand({B, T, n, d}).contiguous();
  if (cells) cells->assign(1, x0);

  const AttentionInputs att = MakeAttentionInputs(b, window, x0.options());

  std::vector<float> pre_off(n), post_off(n);
  for (int64_t li = 0; li < L; ++li) {
    family.Next("mhc_lanes");
    const int64_t lane = li % n;
    for (int64_t j = 0; j < n; ++j) pre_off[j] = j == lane ? 4.0f : -4.0f, post_off[j] = j == lane ? 0.0f : -4.0f;
    const auto poff = torch::from_blob(pre_off.data(), {n}, torch::kFloat32).clone().to(X.device());
    const auto qoff = torch::from_blob(post_off.data(), {n}, torch::kFloat32).clone().to(X.device());
    // The three mHC projections as one product: [pre (n) | post (n) | res (n*n)] rows of phi.
    const auto nx = RmsUnit(X.reshape({B, T, n * d}));
    const auto phi = torch::cat({phi_pre.view({L, n, n * d})[li], phi_post.view({L, n, n * d})[li],
                                 phi_res.view({L, n * n, n * d})[li]}, 0);
    const auto proj = Matmul(nx, phi.t());  // [B, T, 2n + n*n]
    const auto pre = proj.narrow(-1, 0, n), post = proj.narrow(-1, n, n);
    const auto res = proj.narrow(-1, 2 * n, n * n).view({B, T, n, n}) * a_res[li] + b_res[li];
    const auto hpre = torch::sigmoid(a_pre[li] * pre + b_pre[li] + poff);
    const auto hpost = 2 * torch::sigmoid(a_post[li] * post + b_post[li] + qoff);
    family.Next("sinkhorn");
    const auto hres = SinkhornExp(res, 20);
    family.Next("mhc_lanes");
    const auto u = LaneReadout(X, hpre);
    auto xin = u;
    for (size_t s = 0; s < sites.size(); ++s) {
      if (c_.engram_layers[s] != static_cast<uint32_t>(li)) continue;
      family.Next("engram");
      const Site& E = sites[s];
      const int64_t tables = c_.num_engram_tables(), sub = c_.engram_sub_dim(), dil = c_.engram_dilation();
      const auto e = (E.tables.index_select(0, b.engram_idx.reshape({-1})).view({B, T, tables, sub}) * b.engram_ok.unsqueeze(-1))
                         .view({B, T, d});
      const auto ek = Matmul(e, E.key_proj.t());
      const auto ev0 = Matmul(e, E.value_proj.t());
      auto ev = torch::zeros_like(ev0);
      for (int64_t j = 0; j < E.taps.size(0); ++j) {
        const int64_t sh = j * dil;
        if (sh >= T) break;
        const auto shifted = sh ? torch::cat({torch::zeros({B, sh, d}, ev0.options()), ev0.narrow(1, 0, T - sh)}, 1) : ev0;
        ev = ev + E.taps[j] * shifted * b.tap_ok.narrow(-1, j, 1);
      }
      const auto alpha = torch::sigmoid((RmsUnit(u) * RmsUnit(ek)).sum(-1, true) / std::sqrt(static_cast<double>(d)));
      xin = u + alpha * ev;
    }
    family.Next("mhc_lanes");  // the block's own ops name their families
    const auto y = Block(layers[size_t(li)], li, xin, att) - u;
    X = LaneUpdate(X, hres, hpost, y);
    if (cells) cells->push_back(X.mean(2));
  }
  family.Next("final_norm");
  return ZcRms(X.mean(2), final_norm);
}

}  // namespace needle::train
