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

class CactArchive;

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
// The widths `a` stores its CQ tensors at, by name (4 for any other tensor).
BitsMap BitsMapOf(const CactArchive& a);

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
//
// With `unchanged_from` (the archive the weights were loaded from), a CQ tensor
// whose values are bit for bit what that archive's same-named tensor
// dequantizes to, at the width the bits map asks, is copied from it byte for
// byte. Quantizing reconstructed values again is not the identity (the group
// scales and codes move), so without this a stage that froze the body
// (train-heads, a build at the base's width) would still perturb it.
// `counts`, when given, says how many CQ tensors were copied and how many quantized.
struct ExportCounts {
  size_t copied = 0, quantized = 0;
};
std::vector<uint8_t> ExportArchive(const ModelWeights& w, const BitsMap& bits, const TokenizerModel& tokenizer,
                                   const CactArchive* unchanged_from = nullptr, ExportCounts* counts = nullptr);

}  // namespace needle
