// The fast forward pass: CQ weights consumed packed, straight from the mapped
// archive; int8 activations at every matrix input; int8 K/V in a
// WindowSinkCache. It computes the same function as ReferenceModel (SPEC §1)
// up to int8 rounding; the tests bound the difference.
//
// A FastModel is immutable and shared; each session owns a DecoderState
// (cache + scratch), sized once at creation — the decode loop allocates nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "base/model_config.h"    // ModelConfig
#include "base/thread_pool.h"     // ThreadPool
#include "io/cact_archive.h"      // CactArchive
#include "kv/window_sink_cache.h" // WindowSinkCache
#include "model/forward_profile.h" // ForwardProfile
#include "model/heads.h"          // ProbePool
#include "quant/cq_matvec.h"      // CqLevelsQ8, ActivationQ8

namespace needle {

// A CQ matrix with its int8 level table.
struct QMatrix {
  CqMatrixView view;
  CqLevelsQ8 levels;
  uint32_t rows() const { return view.rows; }
  uint32_t in() const { return view.in; }
  uint32_t field_bits() const { return CqFieldBits(view.bits); }
};

class DecoderState;

struct DecoderOptions {
  uint32_t sink_length = 0;  // S: tokens of the pinned prefix (must be fed first)
  uint32_t window = 0;       // 0: the archive's effective window
  uint32_t max_chunk = 32;   // tokens per internal prefill step (bounds scratch memory)
  // Reference precision: fp32 activations into the packed weights (no int8
  // rounding) and fp32 K/V, through the same ring-buffer cache. Tests use it to
  // check the cache and positions rule exactly against ReferenceModel.
  bool fp32 = false;
  // Read the sink rows from this state's cache instead of holding a copy
  // (WindowSinkCache::ShareSinks): it must outlive the new state's use, and
  // the new state is fed conversation tokens only (copied in with CopyFrom).
  const DecoderState* sinks_from = nullptr;
};

class FastModel;
class BatchDecoder;
struct ChunkTokens;

// Per-session state. Not copyable (the cache is megabytes): see Copy-free moves only.
class DecoderState {
 public:
  ~DecoderState();
  DecoderState(const DecoderState&) = delete;
  DecoderState& operator=(const DecoderState&) = delete;

  WindowSinkCache& cache() { return cache_; }
  const WindowSinkCache& cache() const { return cache_; }
  uint32_t window() const { return cache_.geometry().window; }
  uint32_t sink_length() const { return cache_.geometry().sink_capacity; }
  // Bytes of the cache and every scratch buffer: constant for the state's life.
  uint64_t bytes() const;

  // Becomes a copy of `other`, a state of the same model and options: what
  // is fed next decodes exactly as it would in `other` (the scratch holds
  // nothing between calls). with_sinks false skips the sink rows, for copies
  // of one state taken after its sink block (a beam search's hypotheses);
  // a state made with sinks_from, or the state it shares, copies only so.
  // Error(kInvalidArgument) when the geometries differ. No allocation.
  void CopyFrom(const DecoderState& other, bool with_sinks = true) { cache_.CopyFrom(other.cache_, with_sinks); }
  // The state right after `owner`'s sink block (WindowSinkCache::StartAfterSinks),
  // for a state made with sinks_from = owner (any window).
  void StartAfterSinks(const DecoderState& owner) { cache_.StartAfterSinks(owner.cache_); }

  // Probe pools (model/heads.h) that receive every cell of every token fed
  // from now on; nullptr / 0 detaches them. The pools must outlive their use.
  void AttachPools(ProbePool* const* pools, uint32_t count) {
    pools_ = pools;
    num_pools_ = pools ? count : 0;
  }
  // A profile that receives the time of each stage of every Forward from now
  // on; nullptr detaches it. It must outlive its use.
  void AttachProfile(ForwardProfile* profile) { profile_ = profile; }

 private:
  friend class FastModel;
  friend class BatchDecoder;
  friend struct ChunkTokens;
  DecoderState(const FastModel& model, const DecoderOptions& opt);
  struct Scratch;
  // Scratch for chunks of up to `tokens` tokens whose scores hold `score_slots` keys per head.
  static std::unique_ptr<Scratch> MakeScratch(const FastModel& model, uint32_t tokens, bool fp32, uint32_t score_slots,
                                              uint32_t groups_per_head, bool block_attention);
  WindowSinkCache cache_;
  std::unique_ptr<Scratch> s_;
  ProbePool* const* pools_ = nullptr;
  uint32_t num_pools_ = 0;
  ForwardProfile* profile_ = nullptr;
};

class FastModel {
 public:
  // The archive must outlive the model (weights are used in place).
  explicit FastModel(const CactArchive& archive);

  const ModelConfig& config() const { return config_; }
  const CactArchive& archive() const { return archive_; }
  // Effective window of the archive (SPEC §3).
  uint32_t window() const { return window_; }

  std::unique_ptr<DecoderState> NewState(const DecoderOptions& opt) const;

  // Appends tokens to the state. logits: nullptr, or room for the last
  // token's logits [V] (all_logits = false) or every token's [n, V].
  void Forward(DecoderState& st, std::span<const int32_t> tokens, float* logits, bool all_logits = false,
               ThreadPool* pool = nullptr) const;

 private:
  friend class DecoderState;
  struct Layer {
    std::vector<float> norm_in, q_norm, k_norm, post_norm, pre_hada, d1, d2, d3;
    float attn_gate = 0.0f;
    QMatrix q, k, v, gate, out;
  };
  struct Site {
    uint32_t layer = 0;
    QMatrix tables, key, value;
    std::vector<float> taps;  // [taps, d]
  };

  friend class BatchDecoder;
  // The chunk's T tokens (ChunkTokens: whose state each is, at which position)
  // through every layer, with scratch s; logits as Forward's.
  void ForwardChunk(DecoderState::Scratch& s, const ChunkTokens& ct, const int32_t* tokens, uint32_t T, float* logits,
                    bool all_logits, ThreadPool* pool, ForwardProfile* prof) const;
  // Layer li's K/V store and attention for the chunk's T tokens (q, k, v in the
  // scratch), token by token, each in its own state's cache.
  void AttendTokens(DecoderState::Scratch& s, const ChunkTokens& ct, uint32_t li, uint32_t T, ThreadPool* pool) const;
  void AttendChunk(DecoderState& st, uint32_t li, uint32_t T, ThreadPool* pool) const;

  const CactArchive& archive_;
  ModelConfig config_;
  uint32_t window_ = 0;
  QMatrix embedding_, phi_pre_, phi_post_, phi_res_;
  std::vector<Layer> layers_;
  std::vector<Site> sites_;
  std::vector<int32_t> site_of_layer_;  // -1 or the engram site index
  std::vector<float> a_pre_, a_post_, a_res_, b_pre_, b_post_, b_res_, final_norm_;
  std::vector<double> inv_freq_;
};

// Batched decoding across sessions: one token for each of several states in
// one pass over the weights. The matrix products take every state's token
// at once (each weight code is unpacked once for all of them); everything
// else runs per state, in its own cache. Each state's logits equal what
// Forward of that token alone gives, bit for bit. Holds scratch for
// `max_states` tokens; Step allocates nothing. One Step at a time per decoder.
class BatchDecoder {
 public:
  BatchDecoder(const FastModel& model, uint32_t max_states);  // 1-64 states
  ~BatchDecoder();
  BatchDecoder(const BatchDecoder&) = delete;
  BatchDecoder& operator=(const BatchDecoder&) = delete;

  uint32_t capacity() const { return capacity_; }
  // Appends tokens[i] to *states[i] and writes its next-token logits to
  // logits + i * V. Error(kInvalidArgument): more states than capacity(),
  // sizes that differ, a state given twice, a state of another model or in
  // fp32 mode, a token outside the vocabulary; nothing is changed then.
  void Step(std::span<DecoderState* const> states, std::span<const int32_t> tokens, float* logits,
            ThreadPool* pool = nullptr);

 private:
  const FastModel& model_;
  uint32_t capacity_;
  std::unique_ptr<DecoderState::Scratch> s_;
  std::vector<int64_t> positions_;
};

}  // namespace needle
