// A small fixed pool for splitting row ranges of one matrix product across
// cores. No allocation, no std::function, no locks and no system call on the
// hot path: the caller publishes (fn, ctx, n) and bumps a generation counter;
// workers spin a while (~100 us: longer than the gaps between the jobs of a
// forward pass), then sleep on the atomic (C++20 wait/notify). A wake-up
// (futex) is sent only to a thread that said it is going to sleep.
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace needle {

class ThreadPool {
 public:
  using RangeFn = void (*)(void* ctx, uint32_t begin, uint32_t end);

  explicit ThreadPool(uint32_t threads);  // total threads including the caller; >= 1
  ~ThreadPool();
  ThreadPool(const ThreadPool&) = delete;
  ThreadPool& operator=(const ThreadPool&) = delete;

  uint32_t threads() const { return threads_; }
  // Runs fn(ctx, b, e) over [0, n) in contiguous ranges (multiples of `align`)
  // that the threads, the caller included, claim until none is left; a thread
  // may get several. Returns when all are done.
  void ParallelFor(uint32_t n, RangeFn fn, void* ctx, uint32_t align = 1);

 private:
  void WorkerLoop();
  void RunClaims();  // claims and runs ranges of the current job until none is left

  uint32_t threads_;
  std::vector<std::thread> workers_;
  // The atomics each thread polls or bumps live on their own cache lines: a
  // worker spinning on generation_ does not pull the line the claims bump
  // (next_) or the one finished workers count down (pending_).
  // 32-bit atomics: the futex width, so wait/notify need no proxy.
  alignas(64) std::atomic<uint32_t> generation_{0};
  std::atomic<uint32_t> sleeping_workers_{0};  // workers in (or about to enter) generation_.wait
  std::atomic<bool> stop_{false};
  // The job of the current generation (written before generation_ is bumped).
  RangeFn fn_ = nullptr;
  void* ctx_ = nullptr;
  uint32_t n_ = 0, grain_ = 1;
  alignas(64) std::atomic<uint32_t> next_{0};  // start of the next unclaimed range
  alignas(64) std::atomic<uint32_t> pending_{0};
  std::atomic<bool> caller_sleeping_{false};  // the caller in (or about to enter) pending_.wait
};

}  // namespace needle
