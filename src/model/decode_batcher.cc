#include "model/decode_batcher.h"

#include <algorithm>
#include <span>

namespace needle {

DecodeBatcher::DecodeBatcher(const FastModel& model, uint32_t max_states)
    : model_(model), decoder_(model, max_states) {
  pending_.reserve(1024);
  batch_.reserve(max_states);
  states_.reserve(max_states);
  tokens_.reserve(max_states);
  logits_.resize(size_t(max_states) * model.config().vocab_size);
}

DecodeBatcher::Stats DecodeBatcher::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void DecodeBatcher::Forward(DecoderState& state, int32_t token, float* logits, ThreadPool* pool) {
  Request request{&state, token, logits, false, nullptr};
  std::unique_lock<std::mutex> lock(mu_);
  pending_.push_back(&request);
  while (!request.done) {
    if (running_) {
      done_.wait(lock);
      continue;
    }
    // Lead a batch: every waiting step (the oldest first), up to the capacity.
    running_ = true;
    const size_t n = std::min<size_t>(pending_.size(), decoder_.capacity());
    batch_.assign(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
    lock.unlock();
    RunBatch(batch_, pool);
    lock.lock();
    for (Request* r : batch_) r->done = true;
    stats_.steps += batch_.size();
    stats_.batches += 1;
    running_ = false;
    done_.notify_all();
  }
  if (request.error) std::rethrow_exception(request.error);
}

void DecodeBatcher::RunBatch(std::vector<Request*>& batch, ThreadPool* pool) {
  const uint32_t V = model_.config().vocab_size;
  if (batch.size() == 1) {  // alone: the plain path
    Request& r = *batch[0];
    try {
      model_.Forward(*r.state, std::span(&r.token, 1), r.logits, false, pool);
    } catch (...) {
      r.error = std::current_exception();
    }
    return;
  }
  states_.clear();
  tokens_.clear();
  for (Request* r : batch) states_.push_back(r->state), tokens_.push_back(r->token);
  try {
    decoder_.Step(states_, tokens_, logits_.data(), pool);
    for (size_t i = 0; i < batch.size(); ++i) std::copy_n(&logits_[i * V], V, batch[i]->logits);
  } catch (...) {
    // Step changes nothing when it refuses a batch (a bad token, a state of
    // another geometry): each step alone, so the error reaches its own thread.
    for (Request* r : batch) {
      try {
        model_.Forward(*r->state, std::span(&r->token, 1), r->logits, false, pool);
      } catch (...) {
        r->error = std::current_exception();
      }
    }
  }
}

}  // namespace needle
