// `needle train-bench`: the trainer's own step (TrainStep) timed on real
// packed batches, by phase (packing, forward, backward, optimizer) and, with
// the profiler, by op family (the OpFamily scopes of san.cc), forward and
// backward apart; tokens/s and model FLOP utilisation against the machine's
// own large-matmul rate. Issue N's measure: a benchmark, never a timed test.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "train/trainer.h"

namespace needle::train {

struct BenchOptions {
  TrainOptions train;          // data, tokenizer, config, batch_tokens, max_len, window, mtp_weight, seed
  std::vector<int64_t> threads = {1, 2};
  std::vector<std::string> matmul = {"auto"};  // product types (MatmulType): one run per type and thread count
  int64_t warmup_steps = 2;    // untimed steps first (allocator, caches)
  int64_t steps = 6;           // timed steps per thread count
  bool profile = false;        // one more step under the profiler: time by op family
  int64_t examples = 4000;     // examples read from the data file (the head of it)
};

// Self time (ms) per op family of one step, split by the autograd pass that
// spent it. Ops outside any family scope count as "unscoped".
struct FamilyTimes {
  std::map<std::string, double> forward_ms, backward_ms;
  std::map<std::string, double> op_ms;  // self time by op or backward node name
};

// One profiler event as the attribution reads it: a range opens (push) or
// closes (pop) at `us`; `seq` is the autograd sequence number (-1: none).
struct ProfileEvent {
  bool push = true;
  std::string name;  // of a push
  double us = 0;
  int64_t seq = -1;  // of a push
  uint64_t id = 0;   // a pop closes the open push with its id
};

// Attributes the events of each thread (ranges nest per thread) to families:
// a forward op's self time to its innermost family scope, a backward node's
// ("autograd::engine::evaluate_function: ...") to the family of the forward
// op with its sequence number. `families` are the scope names.
FamilyTimes AttributeToFamilies(const std::vector<std::vector<ProfileEvent>>& threads, const std::vector<std::string>& families);

// Model FLOPs of one token's forward pass at `row_length` (the matmuls as the
// trainer computes them; attention over the keys each query may see is
// `visible_keys`), for MFU: training counts 3x.
double ForwardFlopsPerToken(const ModelConfig& c, double visible_keys, double target_fraction);

// The sustained fp32 rate of a large square matmul on `threads` threads (FLOP/s):
// the ceiling MFU is measured against.
double MatmulPeakFlops(int64_t threads);

// Runs the benchmark; the JSON report (per thread count: tokens/s, ms per
// step by phase, MFU, and by family when profiled).
nlohmann::json RunTrainBench(const BenchOptions& o);

}  // namespace needle::train
