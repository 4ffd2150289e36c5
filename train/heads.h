// `needle train-heads`: the two probe-pooled heads of SPEC §2, trained with
// the body frozen, on exactly the inputs the engine gives them
// (docs/agent.md):
//
// - contrastive (retrieval): (query, tool it calls) pairs from JSONL
//   examples; a query is BOS + its text, a tool BOS + its compact JSON, each
//   on its own (no sinks) at the model's window; in-batch negatives, a
//   symmetric InfoNCE with a learned temperature (log_temp, init log 0.07).
//   Scored before/after on held-out examples: is the called tool the top-1
//   of the declared tools, and is it in the top 5.
// - confidence: rollouts written by `needle eval --rollouts` (the sink block
//   and the turn the engine produced, labelled by whether the call was
//   exactly right); binary cross-entropy; ECE (10 bins) before/after on a
//   held-out share. Both are taken on what the engine reports,
//   min(sigmoid(head), call_p), where a rollout carries the decoder's call
//   probability `call_p` (SPEC §10); a head calibrated on its own reads low
//   once the cap applies.
//
// Writes OUT/checkpoint.pt, OUT/config.json and OUT/model.cact (so OUT is a
// base for the next stage, `needle build` or `needle finetune`).
#pragma once

#include <cstdint>
#include <string>

namespace needle::train {

struct HeadsOptions {
  std::string base;       // run DIR, checkpoint.pt or .cact (LoadBase)
  std::string tokenizer;  // default: the base's embedded tokenizer
  std::string data;       // JSONL examples for the contrastive stage (optional)
  std::string val;        // JSONL examples to score retrieval (optional)
  std::string rollouts;   // JSONL rollouts for the confidence stage (optional)
  std::string out;        // output directory
  int64_t contrastive_steps = 300, pairs_per_step = 32;
  // Per pair, up to this many of its example's other tools join the step's
  // candidates as negatives: the engine ranks a request's own catalogue,
  // where the other tools are often siblings ("set brightness" beside "set
  // colour"), which random in-batch negatives rarely are.
  int64_t hard_negatives = 0;
  // Requests no declared tool serves (examples with no call), per step: their
  // own tools and the step's candidates must all score below no_tool_cosine
  // (a fixed "no tool" candidate at that cosine wins their softmax), and
  // every called tool must score above it. Teaches the head an absolute
  // scale the engine can refuse by (SessionOptions::no_tool_bias), beside
  // the ranking; 0 leaves the loss as it was.
  int64_t refusals_per_step = 0;
  double no_tool_cosine = 0.5;
  int64_t confidence_epochs = 8, confidence_batch = 16;
  double holdout = 0.2;   // share of the rollouts kept for the ECE
  double lr = 1e-3;
  int64_t threads = 2;
  uint64_t seed = 0;
  std::string bits;  // empty: the widths of the base's archive (its .cact, or the one beside it), else 4
};

struct HeadsResult {
  double top1_before = -1, top1_after = -1, top5_before = -1, top5_after = -1;  // retrieval on val (%)
  // On val: how well the best tool's cosine tells requests no tool serves
  // from the others (AUROC), and the shares on the right side of no_tool_cosine.
  double no_tool_auroc_before = -1, no_tool_auroc_after = -1;
  double refusals_below_before = -1, refusals_below_after = -1, calls_above_before = -1, calls_above_after = -1;
  double ece_before = -1, ece_after = -1, bce_before = -1, bce_after = -1;      // confidence on held-out rollouts
  int64_t rollouts = 0, positives = 0;
  int64_t confidence_epoch = 0;  // the epoch whose head was kept (lowest held-out BCE; 0 = untrained)
};

HeadsResult TrainHeads(const HeadsOptions& o);

// Expected calibration error over 10 equal-width bins.
double ExpectedCalibrationError(const float* p, const float* label, size_t n);

}  // namespace needle::train
