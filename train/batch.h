// Packing encoded examples into training rows (SPEC §4), and everything the
// SAN needs per token that depends only on the token ids and the packing:
// example ids, sink flags, positions (the positions rule of SPEC §3 applied per
// example), engram table indices and their visibility factors. Plain arrays,
// no libtorch, so it is testable on its own and cheap to compute.
#pragma once

#include <cstdint>
#include <vector>

#include "base/model_config.h"  // ModelConfig
#include "text/prompt.h"        // EncodedPrompt

namespace needle::train {

struct PackedRows {
  uint32_t rows = 0, length = 0;  // [rows, length] row-major
  std::vector<int64_t> tokens;    // PAD where unused
  std::vector<int64_t> seg;       // example id within the row, 1-based; 0 = padding
  std::vector<uint8_t> sink;      // 1 for the pinned prefix of its example
  std::vector<int64_t> pos;       // position within the example (window keys, queries)
  std::vector<int64_t> sink_qpos; // the query position used against sink keys: S + nw - 1 (pos inside the sink block)
  std::vector<int64_t> targets;   // next token id (-100 where no loss)
  std::vector<int64_t> engram_idx;  // [rows, length, tables] row of table t (already offset by t*slots)
  std::vector<float> engram_ok;     // [rows, length, tables] 1 if the n-gram is complete in the example
  std::vector<float> tap_ok;        // [rows, length, taps] 1 if p - j*dilation is in the example
  uint64_t target_tokens = 0;
};

// Greedy first-fit packing of examples (each at most `length` tokens; longer
// ones are truncated) into rows of `length`, then the per-token arrays for a
// model `c` trained with window `window` (0 = full causal).
PackedRows PackExamples(const std::vector<EncodedPrompt>& examples, uint32_t length, const ModelConfig& c,
                        uint32_t window);

}  // namespace needle::train
