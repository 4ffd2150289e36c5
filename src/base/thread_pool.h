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
  // The same with items that stay on a thread: thread i (the caller is 0)
  // starts on its home range [n*i/T, n*(i+1)/T), one item at a time from the
  // front; a thread done with its own takes items from the back of the others'.
  // With the same n, consecutive calls give each thread about the same items
  // (exactly the same when the cores run at the same speed), so per-item data
  // one stage writes is read by the next from the same core's cache, while a
  // slower core (a busy neighbour) is still covered. For per-token work.
  void ParallelForAffine(uint32_t n, RangeFn fn, void* ctx);

 private:
  void WorkerLoop(uint32_t self);
  void Run(uint32_t n, RangeFn fn, void* ctx, uint32_t grain, bool affine);
  void RunClaims(uint32_t self);  // claims and runs ranges of the current job until none is left
  void RunAffine(uint32_t self);  // its home items, then the others' from their back

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
  bool affine_ = false;  // a ParallelForAffine job
  // ParallelForAffine: per thread, the home items not yet taken, [begin, end)
  // packed as begin | end << 32; the owner takes from the front, others from the back.
  struct alignas(64) HomeRange {
    std::atomic<uint64_t> left{0};
  };
  std::vector<HomeRange> home_;
  alignas(64) std::atomic<uint32_t> next_{0};  // start of the next unclaimed range
  alignas(64) std::atomic<uint32_t> pending_{0};
  std::atomic<bool> caller_sleeping_{false};  // the caller in (or about to enter) pending_.wait
};

}  // namespace needle
