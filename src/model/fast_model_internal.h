// What fast_model.cc and fast_model_attention.cc share: the per-state
// scratch, per-token work across the pool, RoPE helpers. Private to model/.
#pragma once

#include <cstdint>
#include <vector>

#include "base/thread_pool.h"
#include "model/fast_model.h"
#include "quant/cq_matvec.h"

namespace needle {

// Scratch for one chunk of up to C tokens; sized once per state.
struct DecoderState::Scratch {
  uint32_t C = 0;
  std::vector<float> X, nx, u, xin, h, proj_pre, proj_post, proj_res, hpre, hpost, hres;
  std::vector<float> e, ek, ev0, q, k, v, gate, o, a, x1, scores, qw, qs, rope_w, rope_s, mean;
  std::vector<float> rotated;  // [C][in_pad_max]
  std::vector<int8_t> act_q;     // [C][in_pad_max]
  std::vector<float> act_scale;  // [C][groups_max]
  std::vector<int32_t> act_sum;  // [C][groups_max]
  std::vector<ActivationQ8> acts;  // [C]
  // Prefill through AttendBlock: the chunk's sink-rotated queries [C][H*hd], its
  // K/V quantized as the cache stores them ([C][kv], scales [C][G*groups]; the
  // cache slots are written only after the whole chunk attended, since they may
  // still hold keys an earlier query of the chunk sees), each token's window.
  std::vector<float> qs_chunk, cks, cvs;
  std::vector<int8_t> ck, cv;
  std::vector<uint32_t> win_begin, win_end;
  uint32_t in_pad_max = 0;
  bool fp32 = false;
  bool block_attention = false;
  // qw, qs and scores hold a buffer per token (C of each): the attention of a
  // batch of independent tokens runs as one pool job (BatchDecoder).
  bool attention_per_token = false;

  uint64_t bytes() const {
    uint64_t b = 0;
    for (const auto* v : {&X, &nx, &u, &xin, &h, &proj_pre, &proj_post, &proj_res, &hpre, &hpost, &hres, &e, &ek, &ev0,
                          &q, &k, &v, &gate, &o, &a, &x1, &scores, &qw, &qs, &rope_w, &rope_s, &mean, &rotated, &act_scale}) {
      b += v->capacity() * sizeof(float);
    }
    for (const auto* v : {&qs_chunk, &cks, &cvs}) b += v->capacity() * sizeof(float);
    b += ck.capacity() + cv.capacity() + (win_begin.capacity() + win_end.capacity()) * sizeof(uint32_t);
    return b + act_q.capacity() + act_sum.capacity() * sizeof(int32_t) + acts.capacity() * sizeof(ActivationQ8);
  }
};

// The most tokens a BatchDecoder step takes (its attention jobs live on the stack).
inline constexpr uint32_t kMaxBatchTokens = 64;

// The tokens of one forward chunk: consecutive positions t0, t0+1, ... of one
// state (Forward), or one token of each of several states, each at its own
// cache's next position (BatchDecoder).
struct ChunkTokens {
  DecoderState* one = nullptr;
  int64_t t0 = 0;
  DecoderState* const* each = nullptr;  // [T], with their positions:
  const int64_t* positions = nullptr;   // [T]

  bool batched() const { return each != nullptr; }
  DecoderState& state(uint32_t p) const { return each ? *each[p] : *one; }
  WindowSinkCache& cache(uint32_t p) const { return state(p).cache_; }
  int64_t pos(uint32_t p) const { return each ? positions[p] : t0 + int64_t(p); }
  // The token at position P <= pos(p) of token p's sequence: this chunk's, or one its cache has seen.
  int32_t TokenAt(const int32_t* tokens, uint32_t p, int64_t P) const {
    if (P < 0) return 0;
    const int64_t own0 = each ? positions[p] : t0;  // the first position this chunk feeds that sequence
    if (P >= own0) return tokens[(each ? p : 0) + static_cast<uint32_t>(P - own0)];
    return cache(p).TokenSeen(P);
  }
};

// f(p) for p in [0, n), split across the pool in contiguous ranges: the
// per-token work of a chunk (norms, rotations, the MLP) beside the matrix
// products. Each thread gets about the same tokens in every stage of the
// chunk (ParallelForAffine), so a token's rows stay in one core's cache.
template <class F>
void ForEachToken(ThreadPool* pool, uint32_t n, F& f) {
  if (!pool || n < 2) {
    for (uint32_t p = 0; p < n; ++p) f(p);
    return;
  }
  pool->ParallelForAffine(
      n,
      [](void* ctx, uint32_t b, uint32_t e) {
        F& fn = *static_cast<F*>(ctx);
        for (uint32_t p = b; p < e; ++p) fn(p);
      },
      &f);
}

// Below this many tokens a chunk attends token by token: a block of 16 lanes
// holding 2-3 query rows wastes more than the per-key sums it saves.
constexpr uint32_t kMinBlockAttentionTokens = 4;

// cos/sin of pos * inv_freq[i] (angles reduced in double), computed once per
// position and reused for every head.
void RopeAngles(double pos, const double* inv_freq, uint32_t half, float* cs);
// x (one head, hd values) rotated by the angles RopeAngles gave.
void RotateWithAngles(float* x, uint32_t hd, const float* cs);

}  // namespace needle
