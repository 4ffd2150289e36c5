// The probe-pooled heads of SPEC §2, computed online by the decoder.
//
// A head pools the "cells" of a token sequence — for every position the L+1
// vectors [x0, mean_lanes(X after layer 0), ..., mean_lanes(X after layer
// L-1)] — with P learned probes: per probe, a softmax over all cells of
// cell·probe / sqrt(d), then the weighted sum of the cells. The P pooled
// vectors, concatenated, go through `proj` (+ bias).
//
// The softmax runs over every cell seen so far, so the decoder folds cells in
// as it computes them (running max, denominator and weighted sum per probe,
// the online-softmax recurrence): bounded memory whatever the sequence
// length, and exactly the batch result up to float rounding. A pool is a
// plain value: copy it to snapshot (e.g. after the sink block) and restore.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "io/cact_archive.h"  // CactArchive
#include "io/cact_layout.h"   // HeadKind

namespace needle {

struct HeadWeights {
  HeadKind kind = HeadKind::kContrastive;
  uint32_t probes = 0, out = 0, d = 0;
  std::vector<float> probe;  // [probes, d]
  std::vector<float> proj;   // [out, probes * d]
  std::vector<float> bias;   // [out]
};

// The head of this kind in the archive, or nullopt when it has none.
std::optional<HeadWeights> LoadHead(const CactArchive& archive, HeadKind kind);

class ProbePool {
 public:
  ProbePool() = default;
  explicit ProbePool(const HeadWeights& w);

  void Reset();
  // Folds one cell (d floats) into every probe's softmax.
  void Add(const float* cell);
  uint64_t cells() const { return cells_; }
  // proj(concat of pooled vectors) + bias into out[w.out]. With no cell yet
  // the pooled vectors are zero (the output is the bias).
  void Output(float* out) const;

  // For saved sessions: the running sums (the weights are not included).
  void Serialize(std::string& out) const;
  void Restore(std::string_view& in);  // Error(kInvalidArgument) on a size mismatch

 private:
  const HeadWeights* w_ = nullptr;
  float inv_sqrt_d_ = 1.0f;
  uint64_t cells_ = 0;
  std::vector<float> max_, denom_, acc_;  // [P], [P], [P * d]
};

// The contrastive embedding: Output L2-normalised in place (out[w.out]).
void NormalizeEmbedding(float* v, uint32_t n);

}  // namespace needle
