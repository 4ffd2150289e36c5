// `needle train`: language-model training of the SAN on JSONL tool-calling
// data (SPEC §12), with packed rows (SPEC §4), AdamW, linear warmup then
// cosine decay, global-norm clipping, periodic validation and resumable
// checkpoints.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/model_config.h"
#include "text/prompt.h"

namespace needle::train {

struct TrainOptions {
  std::string data, val;            // JSONL paths (val optional)
  std::string tokenizer;            // SentencePiece .model for encoding (embedded at export)
  ModelConfig config;
  std::string out;                  // run directory: checkpoint.pt, model.cact, log.jsonl
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
  std::string bits = "4";           // width of the exported model.cact
};

// Runs training; returns the final validation loss (or training loss without val).
double Train(const TrainOptions& opt);

// Reads a JSONL file of examples and encodes them with the prompt format.
std::vector<EncodedPrompt> LoadExamples(const std::string& path, const PromptEncoder& enc, int64_t max_len,
                                        uint64_t* skipped);

}  // namespace needle::train
