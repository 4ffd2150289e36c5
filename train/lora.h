// LoRA adapters for fine-tuning (SPEC §12): a low-rank update on the five
// attention projections (q, k, v, gate, out) of every layer,
//   y = x W^T + (alpha / rank) * (x A^T) B^T,   A [rank, in] ~ N(0,1)/rank,  B [out, rank] = 0,
// so an adapter fresh from initialisation leaves the model unchanged. While
// attached, only A and B train (the base is frozen); `needle build` merges
// W' = W + (alpha / rank) B A and quantizes.
//
// The adapter file is a libtorch archive: the A/B tensors, rank, alpha and the
// base's config and weights fingerprint, so that an adapter offered to a base
// of another geometry is refused with the differing fields named.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "base/model_config.h"
#include "train/san.h"

namespace needle::train {

enum class LoraTarget : int { kQ = 0, kK, kV, kGate, kOut };
inline constexpr int kNumLoraTargets = 5;
const char* LoraTargetName(LoraTarget t);  // "q_proj", "k_proj", "v_proj", "gate_proj", "out_proj"

class LoraImpl : public torch::nn::Module {
 public:
  // Shapes from the base geometry `c`; A drawn from `seed` (SplitMix64, so the
  // same seed gives the same adapter on every platform).
  LoraImpl(const ModelConfig& c, int64_t rank, double alpha, uint64_t seed);

  int64_t rank() const { return rank_; }
  double alpha() const { return alpha_; }
  double scale() const { return alpha_ / double(rank_); }
  const ModelConfig& config() const { return c_; }
  size_t num_layers() const { return a_.size(); }

  // (alpha / rank) * (x A^T) B^T for projection `t` of layer `layer`.
  torch::Tensor Delta(size_t layer, LoraTarget t, const torch::Tensor& x) const;
  // (alpha / rank) * B A: the update of the [out, in] weight matrix.
  torch::Tensor MergedDelta(size_t layer, LoraTarget t) const;

  torch::Tensor& A(size_t layer, LoraTarget t) { return a_[layer][int(t)]; }
  torch::Tensor& B(size_t layer, LoraTarget t) { return b_[layer][int(t)]; }

 private:
  ModelConfig c_;
  int64_t rank_;
  double alpha_;
  std::vector<std::array<torch::Tensor, kNumLoraTargets>> a_, b_;
};
TORCH_MODULE(Lora);

// Hooks the adapter into `model`'s attention projections and freezes every
// base parameter (requires_grad false): an optimizer over lora->parameters()
// then trains A and B only. Throws when the geometries differ.
void AttachLora(San& model, const Lora& lora);
// Unhooks the adapter and unfreezes the base.
void DetachLora(San& model);
// W' = W + (alpha / rank) B A on every adapted projection, then unhooks: the
// model alone now computes what base + adapter computed.
void MergeLora(San& model, const Lora& lora);

// A digest of the base's core weights (embedding through final_norm, fp32
// bytes): tells whether an adapter is applied to the weights it was trained on.
uint64_t WeightsFingerprint(const San& model);

struct AdapterFile {
  Lora lora{nullptr};
  ModelConfig base_config;
  uint64_t base_fingerprint = 0;
  std::string base_source;  // the base path given to `needle finetune` (informative)
};
void SaveAdapter(const std::string& path, const Lora& lora, const ModelConfig& base_config, uint64_t base_fingerprint,
                 const std::string& base_source);
// Throws Error(kInvalidArgument) naming the file when it is not an adapter.
AdapterFile LoadAdapter(const std::string& path);
// Throws Error(kInvalidArgument) naming every geometry field that differs
// between the base the adapter was trained on and `base`.
void CheckAdapterMatches(const AdapterFile& adapter, const ModelConfig& base, const std::string& adapter_path);
// The geometry fields (those that fix the core weights' shapes and meaning)
// on which `have` differs from `want`, as "key want (have_name: have), ...";
// empty when the core weights of one fit the other.
std::string GeometryMismatch(const ModelConfig& want, const ModelConfig& have, const char* have_name);

}  // namespace needle::train
