// Turning fp32 weights into a `.cact` archive: the bits map, quantization of
// every CQ family, and the random initialisation of SPEC §1 (`needle random`).
// The trainer's `needle build` uses the same ExportArchive.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "base/model_config.h"  // ModelConfig
#include "io/cact_layout.h"     // TensorSpec, HeadSpec
#include "io/tokenizer_blob.h"  // TokenizerModel

namespace needle {

// Per-tensor CQ widths: "2", "3", "4", "ternary" (or "1.58"), or a map such as
// "default=2,attn.v_proj=4,engram0.tables=3". A key is a tensor name
// ("layer3.attn.q_proj", "engram0.tables") or a family key ("attn.q_proj",
// "engram.tables", "embedding", "mhc.phi_res"); the most specific key wins.
struct BitsMap {
  uint32_t default_bits = 4;  // record bits: 2, 3, 4, or 5 (ternary)
  std::vector<std::pair<std::string, uint32_t>> overrides;
  uint32_t BitsFor(const TensorSpec& spec) const;
  std::string ToString() const;
};
// Throws Error(kInvalidArgument) for an unknown width or a key that names no tensor.
BitsMap ParseBitsMap(const std::string& text, const std::vector<TensorSpec>& specs);

// fp32 weights in the positional order of BuildTensorSpecs (the tokenizer excluded).
struct ModelWeights {
  ModelConfig config;
  std::vector<HeadSpec> heads;
  std::vector<TensorSpec> specs;
  std::vector<std::vector<float>> tensors;  // tensors[i] has specs[i].NumElements() values
};

// Allocates zeroed tensors with the layout of `config` (+ heads).
ModelWeights ZeroWeights(const ModelConfig& config, const std::vector<HeadSpec>& heads);
// SPEC §1 initialisation, deterministic for a seed: matrices normal(0.02),
// residual-writing projections (attention out, engram value) normal(0.02/sqrt(2L)),
// norm scales 0, d1 = d2 = 1, d3 = 0.02, mHC a = 0.01, b_res = 4·I, taps row 0 ones,
// head probes/proj normal(0.02), biases 0.
ModelWeights RandomWeights(const ModelConfig& config, const std::vector<HeadSpec>& heads, uint64_t seed);

// Quantizes and lays out the archive. The header records the effective window
// (SPEC §3): kv_window capped by the budget, or 0 when the config leaves it to the budget.
std::vector<uint8_t> ExportArchive(const ModelWeights& w, const BitsMap& bits, const TokenizerModel& tokenizer);

}  // namespace needle
