// The server's sessions: N over one mapped model, a bounded queue of waiting
// requests, and the tool prefill kept for the N most recently seen setups.
// A request asks for a session set up with its (tools, system facts, pins);
// an idle session that has exactly that setup is reused as it is (its sink
// cache holds the tools' prefilled K/V, so the request pays no tool
// prefill), else the least recently used idle session is set up anew.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "agent/session.h"

namespace needle::server {

class SessionPool {
 public:
  using Clock = std::chrono::steady_clock;

  // batch_decoding: the sessions' single-token steps that run at the same
  // time share one pass over the weights (model/decode_batcher.h);
  // share_sinks: sessions with the same setup read one prefilled sink block,
  // the N most recent kept (agent/sink_blocks.h). Answers are the same
  // either way; both need two sessions or more.
  SessionPool(std::shared_ptr<const Model> model, SessionOptions options, uint32_t sessions, uint32_t max_waiting,
              bool batch_decoding = true, bool share_sinks = true);

  // A session held by one request; back to the pool when destroyed.
  class Lease {
   public:
    Lease(Lease&& other) noexcept : pool_(other.pool_), slot_(other.slot_) { other.pool_ = nullptr; }
    Lease& operator=(Lease&&) = delete;
    ~Lease();
    Session& session();
    // Whether the session had this setup already (no tool prefill to pay).
    bool reused() const { return reused_; }

   private:
    friend class SessionPool;
    Lease(SessionPool* pool, size_t slot, bool reused) : pool_(pool), slot_(slot), reused_(reused) {}
    SessionPool* pool_;
    size_t slot_;
    bool reused_ = false;
  };

  enum class Wait { kOk, kQueueFull, kDeadline, kStopping };
  // A session with the setup `key`, set up by `setup(session)` when it had
  // another one (a throw leaves the session without a setup and is passed
  // on). Waits for a free session until `deadline`, unless max_waiting
  // requests wait already. On kOk `*lease` holds it.
  template <typename Setup>
  Wait Acquire(const std::string& key, Clock::time_point deadline, Setup&& setup, std::unique_ptr<Lease>* lease);

  // Serves `model` from now on: idle sessions are replaced at once, busy
  // ones when their request is done (it finishes on the old model).
  void SetModel(std::shared_ptr<const Model> model);

  // Wakes every waiter with kStopping; later Acquire calls get it at once.
  void Stop();

  struct Stats {
    uint32_t sessions, busy, waiting;
    uint64_t served, reused, queue_full, timed_out;
    uint64_t decode_steps, decode_batches;  // batched decoding: tokens, and the passes that decoded them
    SinkBlocks::Stats sink_blocks;          // shared sink blocks (all zero when off)
  };
  Stats stats() const;

 private:
  struct Slot {
    std::unique_ptr<Session> session;
    std::string key;  // its setup ("" none)
    bool busy = false, stale = false;  // stale: to be rebuilt on model_ when released
    uint64_t last_used = 0;
  };
  // Under mu_: a free slot for `key` (its own setup first, else the least
  // recently used), or -1.
  int PickSlot(const std::string& key) const;
  void Release(size_t slot);

  // Under mu_: a session for model_, with the pool's batcher.
  std::unique_ptr<Session> NewSession() const;

  mutable std::mutex mu_;
  std::condition_variable freed_;
  std::shared_ptr<const Model> model_;
  bool batch_decoding_ = true;
  std::shared_ptr<DecodeBatcher> batcher_;  // model_'s (nullptr: one session, or batching off)
  std::shared_ptr<SinkBlocks> sink_blocks_;  // model_'s (nullptr: one session, or sharing off)
  bool share_sinks_ = true;
  SinkBlocks::Stats retired_blocks_;  // counts of the blocks of earlier models
  DecodeBatcher::Stats retired_{};          // the steps of batchers of models served before
  SessionOptions options_;
  std::vector<Slot> slots_;
  uint32_t max_waiting_, waiting_ = 0;
  uint64_t tick_ = 0, served_ = 0, reused_ = 0, queue_full_ = 0, timed_out_ = 0;
  bool stopping_ = false;
};

template <typename Setup>
SessionPool::Wait SessionPool::Acquire(const std::string& key, Clock::time_point deadline, Setup&& setup,
                                       std::unique_ptr<Lease>* lease) {
  std::unique_lock<std::mutex> lock(mu_);
  int slot = stopping_ ? -1 : PickSlot(key);
  if (slot < 0) {
    if (stopping_) return Wait::kStopping;
    if (waiting_ >= max_waiting_) return ++queue_full_, Wait::kQueueFull;
    ++waiting_;
    const bool woke = freed_.wait_until(lock, deadline, [&] { return stopping_ || (slot = PickSlot(key)) >= 0; });
    --waiting_;
    if (stopping_) return Wait::kStopping;
    if (!woke) return ++timed_out_, Wait::kDeadline;
  }
  Slot& s = slots_[size_t(slot)];
  s.busy = true;
  s.last_used = ++tick_;
  ++served_;
  const bool reused = s.key == key;
  reused_ += reused;
  lock.unlock();
  std::unique_ptr<Lease> held(new Lease(this, size_t(slot), reused));  // released on a throw below
  s.session->Reset();
  if (!reused) {
    s.key.clear();
    setup(*s.session);
    s.key = key;
  }
  *lease = std::move(held);
  return Wait::kOk;
}

}  // namespace needle::server
