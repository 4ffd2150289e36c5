// The fp32 reference forward pass of the SAN (SPEC §1): every weight
// dequantized once, plain loops that read like the spec. It is the yardstick
// the fast path, the trainer (parity) and the golden logits are checked against.
//
// It keeps every position's K/V (no eviction) and applies the attention span
// and the positions rule of SPEC §3 directly, key by key — the "naive
// reference" that the ring-buffer cache must reproduce.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "base/model_config.h"  // ModelConfig
#include "io/cact_archive.h"    // CactArchive

namespace needle {

// Which keys a query sees (SPEC §3): the first `sinks` positions always, plus
// the most recent `window` non-sink positions (itself included), causally.
// window = 0 means plain causal attention over everything.
struct AttentionSpan {
  uint32_t sinks = 0;
  uint32_t window = 0;
};

// The position rule: the query's RoPE position and each visible key's.
// For query q (absolute index), `first_window_key` is the oldest visible
// non-sink key; keys before it (and >= sinks) are invisible.
struct QueryPositions {
  int64_t first_window_key;  // absolute index
  int64_t query_position;    // RoPE position of the query
  // Position of a visible key k: k for sinks, query_position - (q - k) for window keys.
};
QueryPositions PositionsFor(int64_t q, AttentionSpan span);

// Dequantized weights, named as in SPEC §1. Matrices are [out, in] row-major.
struct ReferenceWeights {
  ModelConfig config;
  std::vector<float> embedding;  // [V, d]
  struct Layer {
    std::vector<float> norm_in, q_proj, k_proj, v_proj, q_norm, k_norm, gate_proj, out_proj, post_norm;
    float attn_gate = 0.0f;
    std::vector<float> pre_hada, d1, d2, d3;  // pre_hada [d]; d1..d3 [hada_n]
  };
  std::vector<Layer> layers;
  std::vector<float> a_pre, a_post, a_res;        // [L]
  std::vector<float> b_pre, b_post, b_res;        // [L, n], [L, n], [L, n, n]
  std::vector<float> phi_pre, phi_post, phi_res;  // rows [L*n, n*d], [L*n, n*d], [L*n*n, n*d]
  struct EngramSite {
    uint32_t layer = 0;
    std::vector<float> tables;                // [tables*slots, sub_dim]
    std::vector<float> key_proj, value_proj;  // [d, d]
    std::vector<float> taps;                  // [taps, d]
  };
  std::vector<EngramSite> sites;
  std::vector<float> final_norm;  // [d]

  static ReferenceWeights FromArchive(const CactArchive& a);
};

// Everything the reference keeps for a sequence: all tokens, and per layer the
// K (after k_norm, before RoPE) and V of every position.
struct ReferenceState {
  AttentionSpan span;
  std::vector<int32_t> tokens;
  std::vector<std::vector<float>> k, v;   // [L][T * G*hd]
  std::vector<std::vector<float>> ev0;    // [sites][T * d] engram value projections (for the taps)
};

class ReferenceModel {
 public:
  explicit ReferenceModel(const CactArchive& archive);
  explicit ReferenceModel(ReferenceWeights weights);

  const ModelConfig& config() const { return w_.config; }
  const ReferenceWeights& weights() const { return w_; }

  ReferenceState NewState(AttentionSpan span) const;
  // Appends `tokens` to the state and returns their logits, [tokens.size(), V].
  // One call with the whole sequence is a prefill; calls of one token decode.
  std::vector<float> Forward(ReferenceState& state, std::span<const int32_t> tokens) const;

  // Engram table indices of position p of `tokens` ([tables] values, t = order index × heads + head).
  std::vector<uint32_t> EngramIndices(std::span<const int32_t> tokens, int64_t p) const;

 private:
  ReferenceWeights w_;
  std::vector<double> inv_freq_;  // theta^(-2i/hd)
};

}  // namespace needle
