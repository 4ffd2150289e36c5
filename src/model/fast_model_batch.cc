// BatchDecoder: one token for each of several decoder states through
// FastModel::ForwardChunk at once (ChunkTokens with one state per token).
#include <algorithm>
#include <string>

#include "base/error.h"
#include "kv/budget.h"
#include "model/fast_model.h"
#include "model/fast_model_internal.h"

namespace needle {

BatchDecoder::BatchDecoder(const FastModel& model, uint32_t max_states) : model_(model), capacity_(max_states) {
  if (max_states == 0) throw Error(ErrorCode::kInvalidArgument, "batch decoder: capacity must be at least 1 state");
  const ModelConfig& c = model.config();
  // Scores for the longest cache a state of this model can have (sinks + window <= the KV budget).
  const uint32_t slots = std::max(budget_window(c), model.window());
  const uint32_t ngk = (c.head_dim() + kKvGroup - 1) / kKvGroup;
  if (max_states > kMaxBatchTokens) {
    throw Error(ErrorCode::kInvalidArgument, "batch decoder: at most " + std::to_string(kMaxBatchTokens) + " states, not " +
                                                 std::to_string(max_states));
  }
  s_ = DecoderState::MakeScratch(model, max_states, /*fp32=*/false, slots, ngk, /*block_attention=*/false);
  // Query and score buffers per state: the batch's attention is one pool job.
  s_->qw.resize(s_->qw.size() * max_states);
  s_->qs.resize(s_->qs.size() * max_states);
  s_->scores.resize(s_->scores.size() * max_states);
  s_->attention_per_token = true;
  positions_.assign(max_states, 0);
}

BatchDecoder::~BatchDecoder() = default;

void BatchDecoder::Step(std::span<DecoderState* const> states, std::span<const int32_t> tokens, float* logits,
                        ThreadPool* pool) {
  const size_t n = states.size();
  if (n != tokens.size()) {
    throw Error(ErrorCode::kInvalidArgument, "batch decoder: " + std::to_string(n) + " states but " +
                                                 std::to_string(tokens.size()) + " tokens");
  }
  if (n > capacity_) {
    throw Error(ErrorCode::kInvalidArgument, "batch decoder: " + std::to_string(n) + " states exceed its capacity of " +
                                                 std::to_string(capacity_));
  }
  if (n == 0) return;
  if (!logits) throw Error(ErrorCode::kInvalidArgument, "batch decoder: no logits buffer");
  const ModelConfig& c = model_.config();
  const uint32_t slots = static_cast<uint32_t>(s_->scores.size() / capacity_ / c.num_heads);
  for (size_t i = 0; i < n; ++i) {
    const DecoderState* st = states[i];
    if (!st) throw Error(ErrorCode::kInvalidArgument, "batch decoder: state " + std::to_string(i) + " is null");
    const CacheGeometry& g = st->cache_.geometry();
    if (g.float_kv || st->s_->fp32) {
      throw Error(ErrorCode::kInvalidArgument, "batch decoder: state " + std::to_string(i) + " is in fp32 mode");
    }
    if (g.layers != c.num_layers || g.kv_heads != c.num_kv_heads || g.head_dim != c.head_dim() ||
        g.d_model != c.d_model || uint64_t{g.sink_capacity} + g.window > slots) {
      throw Error(ErrorCode::kInvalidArgument, "batch decoder: state " + std::to_string(i) + " belongs to another model");
    }
    if (tokens[i] < 0 || static_cast<uint32_t>(tokens[i]) >= c.vocab_size) {
      throw Error(ErrorCode::kInvalidArgument, "token id " + std::to_string(tokens[i]) + " outside the vocabulary");
    }
    for (size_t j = 0; j < i; ++j) {
      if (states[j] == st) {
        throw Error(ErrorCode::kInvalidArgument, "batch decoder: state " + std::to_string(i) + " is given twice");
      }
    }
    positions_[i] = st->cache_.tokens();
  }
  ChunkTokens ct;
  ct.each = states.data();
  ct.positions = positions_.data();
  model_.ForwardChunk(*s_, ct, tokens.data(), static_cast<uint32_t>(n), logits, /*all_logits=*/true, pool, nullptr);
}

}  // namespace needle
