// `needle finetune`: LoRA fine-tuning of a trained base on JSONL tool-calling
// examples (SPEC §12): adapters on q, k, v, gate and out of every layer, the
// base frozen; batches of examples packed into rows (SPEC §4) at the base's
// window, loss on the targets only, AdamW with warmup then cosine decay,
// global-norm clip, a seeded validation split scored every epoch.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace needle::train {

struct FinetuneOptions {
  std::string data;       // JSONL examples
  std::string base;       // run DIR, checkpoint.pt or .cact (train/build.h LoadBase)
  std::string tokenizer;  // SentencePiece .model or .cact; default: the base's embedded tokenizer
  std::string out;        // adapter file; the log goes to OUT.log.jsonl
  int64_t epochs = 3;
  int64_t rank = 16;
  double alpha = 32;
  double lr = 1e-4, min_lr_ratio = 0.0, weight_decay = 0.01, clip = 1.0;
  int64_t batch_size = 16;  // examples per optimizer step
  int64_t max_len = 1024;   // longer examples are truncated
  double val_split = 0.1;
  int64_t warmup = -1;      // steps; -1 = a tenth of all steps
  int64_t threads = 2;
  uint64_t seed = 0;
};

struct FinetuneResult {
  size_t train_examples = 0, val_examples = 0;
  uint64_t truncated = 0;
  int64_t steps = 0;
  int64_t window = 0;              // attention window used (the base's effective window)
  std::vector<double> train_loss;  // per step
  std::vector<double> val_loss;    // [0] before training, then after each epoch (empty without a split)
};

FinetuneResult Finetune(const FinetuneOptions& o);

}  // namespace needle::train
