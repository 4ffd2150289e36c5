// Which tensor sits at which position of a `.cact` directory, and what shape
// it must have, derived from the header geometry alone (SPEC §6). The reader
// validates against it, the writer and `needle random` produce it, the model
// indexes tensors through CactLayout.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "base/model_config.h"  // ModelConfig

namespace needle {

// What a tensor is for: `needle inspect` reports bytes per family.
enum class TensorFamily : uint8_t { kEmbedding, kAttention, kMlp, kNorm, kMhc, kEngram, kHeads, kTokenizer };
const char* TensorFamilyName(TensorFamily f);  // "embedding", "attention", ...

// How a tensor is stored: CQ matrices, small float tensors (fp16, or fp32), the tokenizer.
enum class TensorStorage : uint8_t { kQuantized, kFloat, kRaw };

struct TensorSpec {
  std::string name;      // e.g. "layer3.attn.q_proj", "engram0.tables", "heads.confidence.proj"
  std::string map_key;   // bits-map family key: "attn.q_proj", "engram.tables", "embedding", ...
  TensorFamily family;
  TensorStorage storage;
  uint32_t ndim;
  uint32_t shape[4];
  uint64_t NumElements() const;
};

// Probe-pooling heads (SPEC §2), in canonical manifest order.
enum class HeadKind : uint32_t { kContrastive = 1, kConfidence = 2 };
struct HeadSpec {
  HeadKind kind;
  uint32_t probes;  // P: 4 contrastive, 8 confidence
  uint32_t out;     // contrastive_dim, or 1
};
HeadSpec DefaultHeadSpec(HeadKind kind, const ModelConfig& c);

struct LayerTensors {
  uint32_t norm_in, q_proj, k_proj, v_proj, q_norm, k_norm, gate_proj, out_proj, post_norm, attn_gate,
      pre_hada, d1, d2, d3;
};
struct EngramSiteTensors {
  uint32_t tables, key_proj, value_proj, taps;
};
struct HeadTensors {
  HeadSpec spec;
  uint32_t probes, proj, bias;
};

// Directory positions of every tensor.
struct CactLayout {
  uint32_t embedding = 0;
  std::vector<LayerTensors> layers;
  uint32_t mhc_a_pre = 0, mhc_a_post = 0, mhc_a_res = 0, mhc_b_pre = 0, mhc_b_post = 0, mhc_b_res = 0;
  uint32_t mhc_phi_pre = 0, mhc_phi_post = 0, mhc_phi_res = 0;
  std::vector<EngramSiteTensors> engram;
  uint32_t final_norm = 0;
  int32_t heads_manifest = -1;  // -1: no heads
  std::vector<HeadTensors> heads;
  uint32_t tokenizer = 0;
  const HeadTensors* FindHead(HeadKind kind) const;
};

// Number of tensors from the embedding through final_norm.
uint32_t CoreTensorCount(const ModelConfig& c);

// The full positional list (heads may be empty: then no manifest either).
std::vector<TensorSpec> BuildTensorSpecs(const ModelConfig& c, std::span<const HeadSpec> heads, CactLayout* layout);

}  // namespace needle
