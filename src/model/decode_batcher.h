// Batched decoding for sessions that run on their own threads (the server's
// --parallel sessions): single-token steps that several threads ask for at
// the same time are joined into one BatchDecoder step, one pass over the
// weights for all of them. A step asked for while another runs waits for it
// and joins the next one; a thread alone runs at once. The logits equal
// FastModel::Forward's bit for bit, so sessions answer exactly as unbatched.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <exception>
#include <mutex>
#include <vector>

#include "base/thread_pool.h"
#include "model/fast_model.h"

namespace needle {

class DecodeBatcher {
 public:
  // Up to max_states (1-64) steps per batch.
  DecodeBatcher(const FastModel& model, uint32_t max_states);
  DecodeBatcher(const DecodeBatcher&) = delete;
  DecodeBatcher& operator=(const DecodeBatcher&) = delete;

  const FastModel& model() const { return model_; }

  // model.Forward(state, {token}, logits) — batched with the steps other
  // threads ask for meanwhile. The thread that runs a batch uses its own
  // `pool` (nullptr: one thread). A state must not be stepped by two threads
  // at once. Errors are Forward's, thrown to the thread whose step caused them.
  void Forward(DecoderState& state, int32_t token, float* logits, ThreadPool* pool);

  struct Stats {
    uint64_t steps = 0;    // tokens decoded
    uint64_t batches = 0;  // BatchDecoder steps run (steps / batches: the mean batch size)
  };
  Stats stats() const;

 private:
  struct Request {
    DecoderState* state;
    int32_t token;
    float* logits;
    bool done = false;
    std::exception_ptr error;
  };
  void RunBatch(std::vector<Request*>& batch, ThreadPool* pool);

  const FastModel& model_;
  BatchDecoder decoder_;
  mutable std::mutex mu_;
  std::condition_variable done_;
  std::vector<Request*> pending_;  // waiting for the next batch
  bool running_ = false;           // a thread is running a batch
  Stats stats_;
  // The running batch (used by the leading thread only).
  std::vector<Request*> batch_;
  std::vector<DecoderState*> states_;
  std::vector<int32_t> tokens_;
  std::vector<float> logits_;
};

}  // namespace needle
