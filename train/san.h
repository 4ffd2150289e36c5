// The SAN of SPEC §1 (and the probe heads of §2) as a libtorch module, for
// training on packed rows (SPEC §4). Parameter names and shapes follow the
// archive layout so that export is a copy: matrices are [out, in]; the mHC phi
// matrices are kept as rows [L, cols, n*d] (row j of layer l is column j of
// the spec's (n*d, cols) matrix).
#pragma once

#include <ATen/record_function.h>
#include <torch/torch.h>

#include <memory>
#include <optional>
#include <vector>

#include "base/model_config.h"  // ModelConfig
#include "io/cact_archive.h"    // CactArchive
#include "io/cact_layout.h"     // HeadSpec
#include "model/export.h"       // ModelWeights
#include "train/batch.h"        // PackedRows

namespace needle::train {

class LoraImpl;  // train/lora.h

// Names the op family of the code that follows, for `needle train-bench
// --profile` (a profiler user scope: nothing is recorded when no profiler
// runs). Next() closes one family and opens the next.
class OpFamily {
 public:
  explicit OpFamily(const char* name) { Enter(name); }
  void Next(const char* name) {
    scope_.reset();
    Enter(name);
  }

 private:
  void Enter(const char* name) {
    scope_.emplace(at::RecordScope::USER_SCOPE);
    if (scope_->isActive()) scope_->before(name);
  }
  std::optional<at::RecordFunction> scope_;
};

// One packed batch as tensors (int64 / bool / float), on the module's device.
struct TrainBatch {
  torch::Tensor tokens, seg, sink, pos, sink_qpos, targets, engram_idx, engram_ok, tap_ok;
  // Attention is computed per example, not per row: the examples of a batch
  // padded to a multiple of kAttentionBlock and grouped by that length, so a
  // row of several short examples costs the sum of their squares instead of
  // the row length's square. index [n, Lb]: token of slot j of example i in
  // the flattened [rows * length] batch (rows * length for a padding slot);
  // valid, pos, sink [n, Lb]: the slot's flags.
  struct AttentionGroup {
    torch::Tensor index, valid, pos, sink;
  };
  static constexpr int64_t kAttentionBlock = 64;
  std::vector<AttentionGroup> groups;
  static TrainBatch From(const PackedRows& p, const ModelConfig& c, torch::Device device = torch::kCPU);
};

class SanImpl : public torch::nn::Module {
 public:
  SanImpl(const ModelConfig& c, std::vector<HeadSpec> head_specs, uint64_t seed);

  const ModelConfig& config() const { return c_; }
  // Logits [B, T, V] with attention restricted by the packing mask of SPEC §4
  // (same example, causal, within `window` or a sink; window 0 = causal only).
  torch::Tensor forward(const TrainBatch& b, int64_t window);
  // The final-norm hidden states [B, T, d] (forward without the tied vocab
  // projection), and that projection: training projects only target positions.
  torch::Tensor Hidden(const TrainBatch& b, int64_t window, std::vector<torch::Tensor>* cells = nullptr);
  // The head cells of SPEC §2 [B, T, L+1, d]: x0 and the lane mean after each layer.
  torch::Tensor Cells(const TrainBatch& b, int64_t window);
  // heads[head] applied to cells, pooling over the `visible` positions [B, T] (bool).
  torch::Tensor HeadOutput(size_t head, const torch::Tensor& cells, const torch::Tensor& visible);
  torch::Tensor Logits(const torch::Tensor& hidden);

  // fp32 weights in archive order, for ExportArchive; and the reverse.
  ModelWeights Export() const;
  void Import(const CactArchive& archive);  // dequantized weights (parity, fine-tuning)
  const std::vector<HeadSpec>& head_specs() const { return head_specs_; }

  // Low-rank adapters added to the attention projections (train/lora.h:
  // AttachLora / DetachLora); null = none. Not a submodule, so checkpoints and
  // parameters() of the base are unchanged by an attached adapter.
  void set_lora(std::shared_ptr<LoraImpl> lora) { lora_ = std::move(lora); }
  const std::shared_ptr<LoraImpl>& lora() const { return lora_; }

  // The type the big products run in: kFloat32 (default, what the engine
  // computes) or kBFloat16 (mixed precision: bf16 operands and products, the
  // weights, norms, softmax and loss in fp32; on a CPU with AMX, oneDNN
  // multiplies bf16 about 7x faster than OpenBLAS does fp32).
  void set_matmul_type(torch::ScalarType t) { matmul_type_ = t; }
  torch::ScalarType matmul_type() const { return matmul_type_; }

  struct Layer {
    torch::Tensor norm_in, q_proj, k_proj, v_proj, q_norm, k_norm, gate_proj, out_proj, post_norm, attn_gate, pre_hada,
        d1, d2, d3;
  };
  struct Site {
    torch::Tensor tables, key_proj, value_proj, taps;
  };
  struct Head {
    HeadSpec spec;
    torch::Tensor probes, proj, bias;
  };

  // Multi-token prediction (SPEC §1, training aid, never exported): predicts
  // the token after next from concat(h, ZCRMSNorm(E[next] * sqrt(d))) through
  // a 2d -> d combine, one Block, a norm and the tied head. Registered only
  // by EnableMtp (initialised from the last layer), so checkpoints without it
  // load as before and checkpoints with it load into models without it.
  void EnableMtp(uint64_t seed);
  bool has_mtp() const { return mtp_enabled_; }
  // Mean cross-entropy of the token after next, over the positions whose
  // next position is a target of the same example. `hidden` = Hidden(b, window).
  torch::Tensor MtpLoss(const TrainBatch& b, int64_t window, const torch::Tensor& hidden);
  Layer mtp_block;
  torch::Tensor mtp_combine, mtp_emb_norm, mtp_norm;
  torch::Tensor embedding;
  std::vector<Layer> layers;
  torch::Tensor a_pre, a_post, a_res, b_pre, b_post, b_res, phi_pre, phi_post, phi_res;
  std::vector<Site> sites;
  torch::Tensor final_norm;
  std::vector<Head> heads;

 private:
  // Tensors in archive order (excluding the tokenizer), aligned with BuildTensorSpecs.
  std::vector<torch::Tensor*> Ordered();
  std::vector<const torch::Tensor*> Ordered() const;
  // The packing mask as an additive bias per example group [n, 1, Lb, Lb],
  // the group indices flattened (for gathering and scattering back) and the
  // RoPE angles, shared by every block.
  struct AttentionInputs {
    std::vector<torch::Tensor> bias, index;
    torch::Tensor all_index;  // the groups' indices concatenated [sum n * Lb]
    torch::Tensor sink_key, rope_q, rope_qs;
  };
  // One Block of SPEC §1 with weights L; `lora_layer` < 0: no adapter.
  torch::Tensor Block(const Layer& L, int64_t lora_layer, const torch::Tensor& x, const AttentionInputs& att);
  // a @ b in matmul_type_, the result in fp32.
  torch::Tensor Matmul(const torch::Tensor& a, const torch::Tensor& b) const;
  AttentionInputs MakeAttentionInputs(const TrainBatch& b, int64_t window, const torch::TensorOptions& options) const;

  ModelConfig c_;
  std::vector<HeadSpec> head_specs_;
  std::vector<TensorSpec> specs_;
  torch::Tensor hadamard_;  // [m, m] normalised Walsh–Hadamard matrix
  torch::Tensor inv_freq_;  // [hd/2] float64
  std::shared_ptr<LoraImpl> lora_;
  bool mtp_enabled_ = false;
  torch::ScalarType matmul_type_ = torch::kFloat32;
};
TORCH_MODULE(San);

}  // namespace needle::train
