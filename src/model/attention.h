// Attention of one GQA group (the query heads that share kv head g) over the
// int8 cache: sink slots scored with the sink-rotated query, window slots with
// the window-rotated query, one softmax over both, int8 V accumulated in fp32.
// A Highway kernel (head_dim a multiple of 32) with a scalar reference beside it.
//
// Queries come on the int8 grid of the keys (SnapToKvGrid: one scale per 32
// values), so a kernel may score them as int8: on AVX3_DL (VNNI) the scores are
// exact integer dot products per 32-value group, scaled once; elsewhere float
// multiply-adds of the same values. Both agree with the reference to rounding.
#pragma once

#include <cstdint>

namespace needle {

// A run of consecutive cache slots: rows [first, first+count) of a slot array
// whose rows are `row_stride` int8 values apart. Group q's scale of the run's
// slot s is ks[s * scale_stride + q * scale_group_stride]: [slot][group]
// (scale_stride = the groups of all kv heads, group stride 1: a chunk's own
// rows) or [group][slot] (scale_stride 1, group stride = the slots: the
// cache's layout, where sixteen keys' scales of a group are one load).
struct KvRun {
  const int8_t* k = nullptr;  // row of slot `first`, already offset to kv head g
  const float* ks = nullptr;  // group 0's scale of slot `first` (of kv head g)
  const int8_t* v = nullptr;
  const float* vs = nullptr;
  uint32_t count = 0;
  bool sink = false;  // scored with the sink-rotated query
  uint32_t scale_stride = 0, scale_group_stride = 0;
};

struct AttentionGroupArgs {
  const float* q_window;  // [heads][head_dim]
  const float* q_sink;    // [heads][head_dim]
  uint32_t heads;         // query heads in the group (H / G)
  uint32_t head_dim;
  uint32_t row_stride;    // int8 values between consecutive slots (kv_heads * head_dim)
  const KvRun* runs;
  uint32_t num_runs;
  float* scores;  // scratch, [heads][total slots]
  float* out;     // [heads][head_dim]
};

void AttendGroupReference(const AttentionGroupArgs& a);
void AttendGroup(const AttentionGroupArgs& a);  // SIMD when head_dim % 32 == 0

// Prefill: a block of consecutive query tokens of one GQA group at once. Every
// token sees all the sink keys (scored with its sink-rotated query) and an
// interval of the window keys (its causal window), one softmax over both.
// Query rows (token, head) sit in vector lanes, so each key is dequantized
// once for the whole block and every product is a vertical multiply-add — no
// per-key horizontal sums as in AttendGroup; the softmax runs online over key
// blocks, so the scratch is a few stack buffers whatever the cache length.
inline constexpr uint32_t kAttentionBlockRows = 16;  // tokens * heads per call
inline constexpr uint32_t kAttentionBlockMaxHeadDim = 128;

struct AttentionBlockArgs {
  const float* q_window;  // token t, head h at q_window + t * q_stride + h * head_dim
  const float* q_sink;    // the same layout, rotated for the sink scores
  uint32_t q_stride;
  uint32_t tokens;  // tokens * heads <= kAttentionBlockRows
  uint32_t heads, head_dim;
  uint32_t row_stride;  // as in AttentionGroupArgs (same for every run)
  const KvRun* sink_runs;  // visible to every token
  uint32_t num_sink_runs;
  const KvRun* window_runs;  // the window keys in position order
  uint32_t num_window_runs;
  const uint32_t* window_begin;  // per token: visible window keys [begin, end) of that sequence
  const uint32_t* window_end;
  float* out;  // token t, head h at out + t * out_stride + h * head_dim
  uint32_t out_stride;
};

// Token by token through AttendGroupReference; scores: heads * (sink + window keys) floats.
void AttendBlockReference(const AttentionBlockArgs& a, float* scores);
// false (nothing written) when this target or geometry has no block kernel:
// head_dim % 32 != 0 or > kAttentionBlockMaxHeadDim, too many rows, no SIMD.
bool AttendBlock(const AttentionBlockArgs& a);
// Whether AttendBlock runs on this machine for this geometry (tokens * heads <= 16 rows).
bool AttendBlockAvailable(uint32_t heads, uint32_t head_dim);

}  // namespace needle
