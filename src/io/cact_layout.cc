#include "io/cact_layout.h"

namespace needle {

const char* TensorFamilyName(TensorFamily f) {
  switch (f) {
    case TensorFamily::kEmbedding: return "embedding";
    case TensorFamily::kAttention: return "attention";
    case TensorFamily::kMlp: return "hadamard_mlp";
    case TensorFamily::kNorm: return "norms";
    case TensorFamily::kMhc: return "mhc";
    case TensorFamily::kEngram: return "engram";
    case TensorFamily::kHeads: return "heads";
    case TensorFamily::kTokenizer: return "tokenizer";
  }
  return "?";
}

uint64_t TensorSpec::NumElements() const {
  if (ndim == 0) return 0;
  uint64_t n = 1;
  for (uint32_t i = 0; i < ndim; ++i) n *= shape[i];
  return n;
}

HeadSpec DefaultHeadSpec(HeadKind kind, const ModelConfig& c) {
  return kind == HeadKind::kContrastive ? HeadSpec{kind, 4, c.contrastive_dim} : HeadSpec{kind, 8, 1};
}

const HeadTensors* CactLayout::FindHead(HeadKind kind) const {
  for (const auto& h : heads) {
    if (h.spec.kind == kind) return &h;
  }
  return nullptr;
}

uint32_t CoreTensorCount(const ModelConfig& c) {
  return 1 + 14 * c.num_layers + 9 + 4 * static_cast<uint32_t>(c.engram_layers.size()) + 1;
}

std::vector<TensorSpec> BuildTensorSpecs(const ModelConfig& c, std::span<const HeadSpec> heads, CactLayout* layout) {
  std::vector<TensorSpec> specs;
  CactLayout lay;
  auto add = [&](std::string name, std::string key, TensorFamily fam, TensorStorage st,
                 std::initializer_list<uint32_t> shape) {
    TensorSpec s{std::move(name), std::move(key), fam, st, static_cast<uint32_t>(shape.size()), {0, 0, 0, 0}};
    uint32_t i = 0;
    for (uint32_t v : shape) s.shape[i++] = v;
    specs.push_back(std::move(s));
    return static_cast<uint32_t>(specs.size() - 1);
  };
  const uint32_t d = c.d_model, hd = c.head_dim(), H = c.num_heads, G = c.num_kv_heads, L = c.num_layers;
  const uint32_t n = c.mhc_lanes, m = c.hada_n();
  using F = TensorFamily;
  using S = TensorStorage;

  lay.embedding = add("embedding", "embedding", F::kEmbedding, S::kQuantized, {c.vocab_size, d});
  for (uint32_t i = 0; i < L; ++i) {
    const std::string p = "layer" + std::to_string(i) + ".";
    LayerTensors t;
    t.norm_in = add(p + "norm_in", "norm_in", F::kNorm, S::kFloat, {d});
    t.q_proj = add(p + "attn.q_proj", "attn.q_proj", F::kAttention, S::kQuantized, {H * hd, d});
    t.k_proj = add(p + "attn.k_proj", "attn.k_proj", F::kAttention, S::kQuantized, {G * hd, d});
    t.v_proj = add(p + "attn.v_proj", "attn.v_proj", F::kAttention, S::kQuantized, {G * hd, d});
    t.q_norm = add(p + "attn.q_norm", "attn.q_norm", F::kNorm, S::kFloat, {hd});
    t.k_norm = add(p + "attn.k_norm", "attn.k_norm", F::kNorm, S::kFloat, {hd});
    t.gate_proj = add(p + "attn.gate_proj", "attn.gate_proj", F::kAttention, S::kQuantized, {H * hd, d});
    t.out_proj = add(p + "attn.out_proj", "attn.out_proj", F::kAttention, S::kQuantized, {d, H * hd});
    t.post_norm = add(p + "post_norm", "post_norm", F::kNorm, S::kFloat, {d});
    t.attn_gate = add(p + "attn_gate", "attn_gate", F::kAttention, S::kFloat, {1});
    t.pre_hada = add(p + "pre_hada", "pre_hada", F::kNorm, S::kFloat, {d});
    t.d1 = add(p + "mlp.d1", "mlp.d1", F::kMlp, S::kFloat, {m});
    t.d2 = add(p + "mlp.d2", "mlp.d2", F::kMlp, S::kFloat, {m});
    t.d3 = add(p + "mlp.d3", "mlp.d3", F::kMlp, S::kFloat, {m});
    lay.layers.push_back(t);
  }
  lay.mhc_a_pre = add("mhc.a_pre", "mhc.a_pre", F::kMhc, S::kFloat, {L});
  lay.mhc_a_post = add("mhc.a_post", "mhc.a_post", F::kMhc, S::kFloat, {L});
  lay.mhc_a_res = add("mhc.a_res", "mhc.a_res", F::kMhc, S::kFloat, {L});
  lay.mhc_b_pre = add("mhc.b_pre", "mhc.b_pre", F::kMhc, S::kFloat, {L, n});
  lay.mhc_b_post = add("mhc.b_post", "mhc.b_post", F::kMhc, S::kFloat, {L, n});
  lay.mhc_b_res = add("mhc.b_res", "mhc.b_res", F::kMhc, S::kFloat, {L, n, n});
  // phi (L, n*d, cols) is stored as rows (L*cols, n*d): row l*cols + j is column j of layer l.
  lay.mhc_phi_pre = add("mhc.phi_pre", "mhc.phi_pre", F::kMhc, S::kQuantized, {L * n, n * d});
  lay.mhc_phi_post = add("mhc.phi_post", "mhc.phi_post", F::kMhc, S::kQuantized, {L * n, n * d});
  lay.mhc_phi_res = add("mhc.phi_res", "mhc.phi_res", F::kMhc, S::kQuantized, {L * n * n, n * d});
  for (size_t s = 0; s < c.engram_layers.size(); ++s) {
    const std::string p = "engram" + std::to_string(s) + ".";
    EngramSiteTensors e;
    e.tables = add(p + "tables", "engram.tables", F::kEngram, S::kQuantized,
                   {c.num_engram_tables() * c.engram_slots, c.engram_sub_dim()});
    e.key_proj = add(p + "key_proj", "engram.key_proj", F::kEngram, S::kQuantized, {d, d});
    e.value_proj = add(p + "value_proj", "engram.value_proj", F::kEngram, S::kQuantized, {d, d});
    e.taps = add(p + "taps", "engram.taps", F::kEngram, S::kFloat, {ModelConfig::kEngramTaps, d});
    lay.engram.push_back(e);
  }
  lay.final_norm = add("final_norm", "final_norm", F::kNorm, S::kFloat, {d});
  if (!heads.empty()) {
    lay.heads_manifest = static_cast<int32_t>(
        add("heads.manifest", "heads.manifest", F::kHeads, S::kFloat, {static_cast<uint32_t>(heads.size())}));
    for (const HeadSpec& h : heads) {
      const std::string p = h.kind == HeadKind::kContrastive ? "heads.contrastive." : "heads.confidence.";
      HeadTensors t{h, 0, 0, 0};
      t.probes = add(p + "probes", "heads.probes", F::kHeads, S::kFloat, {h.probes, d});
      t.proj = add(p + "proj", "heads.proj", F::kHeads, S::kFloat, {h.out, h.probes * d});
      t.bias = add(p + "bias", "heads.bias", F::kHeads, S::kFloat, {h.out});
      lay.heads.push_back(t);
    }
  }
  lay.tokenizer = add("tokenizer", "tokenizer", F::kTokenizer, S::kRaw, {});
  if (layout) *layout = std::move(lay);
  return specs;
}

}  // namespace needle
