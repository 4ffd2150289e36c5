// Attention of one GQA group (the query heads that share kv head g) over the
// int8 cache: sink slots scored with the sink-rotated query, window slots with
// the window-rotated query, one softmax over both, int8 V accumulated in fp32.
// A Highway kernel (head_dim a multiple of 32) with a scalar reference beside it.
#pragma once

#include <cstdint>

namespace needle {

// A run of consecutive cache slots: rows [first, first+count) of a slot array
// whose rows are `row_stride` int8 values apart (scales `scale_stride` floats apart).
struct KvRun {
  const int8_t* k = nullptr;  // row of slot `first`, already offset to kv head g
  const float* ks = nullptr;
  const int8_t* v = nullptr;
  const float* vs = nullptr;
  uint32_t count = 0;
  bool sink = false;  // scored with the sink-rotated query
};

struct AttentionGroupArgs {
  const float* q_window;  // [heads][head_dim]
  const float* q_sink;    // [heads][head_dim]
  uint32_t heads;         // query heads in the group (H / G)
  uint32_t head_dim;
  uint32_t row_stride;    // int8 values between consecutive slots (kv_heads * head_dim)
  uint32_t scale_stride;  // floats between consecutive slots' scales (kv_heads * groups)
  const KvRun* runs;
  uint32_t num_runs;
  float* scores;  // scratch, [heads][total slots]
  float* out;     // [heads][head_dim]
};

void AttendGroupReference(const AttentionGroupArgs& a);
void AttendGroup(const AttentionGroupArgs& a);  // SIMD when head_dim % 32 == 0

}  // namespace needle
