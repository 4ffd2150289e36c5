// `needle train`: language-model training of the SAN on JSONL tool-calling
// data (SPEC §12), with packed rows (SPEC §4), AdamW, linear warmup then
// cosine decay, global-norm clipping, periodic validation and resumable
// checkpoints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <torch/torch.h>

#include "base/model_config.h"
#include "io/tokenizer_blob.h"
#include "text/prompt.h"
#include "train/distributed.h"
#include "train/san.h"

namespace needle::train {

struct TrainOptions {
  std::string data, val;            // JSONL paths (val optional)
  std::string tokenizer;            // SentencePiece .model for encoding (embedded at export)
  ModelConfig config;
  std::string out;                  // run directory: config.json, checkpoint.pt, model.cact, log.jsonl
  int64_t steps = 1000;
  int64_t batch_tokens = 8192;      // tokens per optimizer step (packed rows)
  int64_t max_len = 1024;           // longer examples are truncated
  double lr = 3e-3, min_lr_ratio = 0.1, weight_decay = 0.01, clip = 1.0;
  int64_t warmup = 100;
  int64_t window = 256;             // attention window in training (the engine's window)
  int64_t eval_every = 200, checkpoint_every = 200;
  int64_t threads = 2;
  uint64_t seed = 0;
  bool resume = false;
  std::string init_from;            // start from this base's weights (run DIR, checkpoint.pt or .cact) instead of the SPEC init
  int64_t stop_at = 0;              // stop once this step is done (0 = run to `steps`), the schedule still `steps`'s
  bool checkpoint_at_stop = true;   // false: stop as if killed there (tests of resuming)
  std::string bits = "4";           // width of the exported model.cact
  double mtp_weight = 0;            // > 0: add the MTP block's loss (SPEC §1) with this weight
  std::string device = "cpu";       // where the steps run: "cpu", "cuda" or "cuda:N" (a libtorch built with CUDA)
  Ranks ranks;                      // data-parallel ranks (train/distributed.h); one by default
  std::string matmul = "auto";      // type of the big products: "fp32", "bf16" or "auto" (MatmulType)
};

// The product type a run names, checked: "fp32", "bf16", or "auto": bf16 on a
// CPU that multiplies it natively (AMX or AVX-512 BF16 in /proc/cpuinfo),
// else fp32 (on a GPU, fp32 products already use TF32).
torch::ScalarType MatmulType(const std::string& name, const torch::Device& device);

// The device a run names ("cpu", "cuda", "cuda:N"), checked: one this
// libtorch cannot use is an error naming it (Debian's libtorch has no CUDA).
torch::Device TrainingDevice(const std::string& name);

// Runs training; returns the final validation loss (or training loss without val).
double Train(const TrainOptions& opt);

// Reads a JSONL file of examples and encodes them with the prompt format.
// Examples longer than `max_len` are truncated (counted in *skipped). A line
// that is not JSON, or not an example, is an error naming path:line.
std::vector<EncodedPrompt> LoadExamples(const std::string& path, const PromptEncoder& enc, int64_t max_len,
                                        uint64_t* skipped);

// A SentencePiece .model file, or the tokenizer embedded in a .cact archive.
TokenizerModel LoadTokenizerModel(const std::string& path);

// Shared by `needle train` and `needle finetune`:
// linear warmup over `warmup` steps to `lr`, then cosine decay to lr * min_ratio at `steps`.
double WarmupCosine(double lr, double min_ratio, int64_t warmup, int64_t steps, int64_t step);
// Row length for a batch: the next power of two >= its longest example, at most max_len (SPEC §12).
uint32_t RowLength(const std::vector<const EncodedPrompt*>& batch, int64_t max_len);
// One optimizer step on a packed batch, the same in `needle train` and its
// benchmark: forward (the target loss, plus the MTP loss when o.mtp_weight >
// 0), backward, global-norm clip, the optimizer (its lr already set). The
// phases' seconds are added to *phases when given (CPU: ops are synchronous).
struct StepPhases {
  double forward = 0, backward = 0, optimizer = 0;
};
struct StepResult {
  double loss = 0, mtp_loss = -1;  // the main loss; the MTP loss (-1 without MTP)
};
// With several ranks (`group` given, world > 1) `b` is this rank's share: the
// loss is summed over its targets and divided by the global number, the
// gradients summed over the ranks before the clip, so every rank takes the
// step one rank would take on the whole batch (the MTP loss, a mean per rank,
// is averaged over the ranks).
StepResult TrainStep(San& model, torch::optim::Optimizer& opt, const TrainBatch& b, const TrainOptions& o, StepPhases* phases,
                     Collective* group = nullptr);
// Cross-entropy over the target tokens only (mean or sum).
torch::Tensor TargetLoss(San& model, const TrainBatch& b, int64_t window,
                         torch::nn::functional::CrossEntropyFuncOptions::reduction_t reduction);
// The same from already computed hidden states (shared with the MTP loss).
torch::Tensor TargetLossFromHidden(San& model, const TrainBatch& b, const torch::Tensor& hidden,
                                   torch::nn::functional::CrossEntropyFuncOptions::reduction_t reduction);

}  // namespace needle::train
