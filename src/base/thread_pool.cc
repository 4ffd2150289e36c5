#include "base/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define NEEDLE_PAUSE() _mm_pause()
#else
#define NEEDLE_PAUSE() ((void)0)
#endif

namespace needle {

ThreadPool::ThreadPool(uint32_t threads) : threads_(std::max<uint32_t>(1, threads)), home_(threads_) {
  for (uint32_t i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_seq_cst);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::ParallelFor(uint32_t n, RangeFn fn, void* ctx, uint32_t align) {
  if (threads_ == 1 || n <= align) {
    fn(ctx, 0, n);
    return;
  }
  // Ranges are claimed, not assigned: about four per thread, so a thread that
  // was slowed (another process, a busier range) is covered by the others.
  const uint32_t blocks = (n + align - 1) / align;
  Run(n, fn, ctx, std::max<uint32_t>(1, blocks / (threads_ * 4)) * align, false);
}

void ThreadPool::ParallelForAffine(uint32_t n, RangeFn fn, void* ctx) {
  if (threads_ == 1 || n <= 1) {
    fn(ctx, 0, n);
    return;
  }
  for (uint32_t i = 0; i < threads_; ++i) {
    const uint64_t b = uint64_t{n} * i / threads_, e = uint64_t{n} * (i + 1) / threads_;
    home_[i].left.store(b | e << 32, std::memory_order_relaxed);  // published by Run's seq_cst bump
  }
  Run(n, fn, ctx, 1, true);
}

void ThreadPool::Run(uint32_t n, RangeFn fn, void* ctx, uint32_t grain, bool affine) {
  grain_ = grain;
  affine_ = affine;
  fn_ = fn, ctx_ = ctx, n_ = n;
  next_.store(0, std::memory_order_relaxed);
  pending_.store(threads_ - 1, std::memory_order_relaxed);
  // seq_cst pairs with a worker's (sleeping_workers_ += 1; load generation_):
  // either it sees the new generation or this sees it going to sleep.
  generation_.fetch_add(1, std::memory_order_seq_cst);
  if (sleeping_workers_.load(std::memory_order_seq_cst) != 0) generation_.notify_all();
  RunClaims(0);
  // Spin briefly (the usual case: the other cores finish within microseconds),
  // then sleep, so an oversubscribed machine is not burned by waiting.
  for (int spin = 0; spin < 4000; ++spin) {
    if (pending_.load(std::memory_order_acquire) == 0) return;
    NEEDLE_PAUSE();
  }
  caller_sleeping_.store(true, std::memory_order_seq_cst);
  for (uint32_t p = pending_.load(std::memory_order_seq_cst); p != 0; p = pending_.load(std::memory_order_seq_cst)) {
    pending_.wait(p, std::memory_order_seq_cst);
  }
  caller_sleeping_.store(false, std::memory_order_relaxed);
}

void ThreadPool::RunAffine(uint32_t self) {
  // Own items from the front.
  std::atomic<uint64_t>& own = home_[self].left;
  for (uint64_t v = own.load(std::memory_order_acquire);;) {
    const uint32_t b = static_cast<uint32_t>(v), e = static_cast<uint32_t>(v >> 32);
    if (b >= e) break;
    if (!own.compare_exchange_weak(v, (b + 1) | uint64_t{e} << 32, std::memory_order_acq_rel)) continue;
    fn_(ctx_, b, b + 1);
    v = own.load(std::memory_order_acquire);
  }
  // Then the others' from their back, the next thread's first.
  for (uint32_t k = 1; k < threads_; ++k) {
    std::atomic<uint64_t>& other = home_[(self + k) % threads_].left;
    for (uint64_t v = other.load(std::memory_order_acquire);;) {
      const uint32_t b = static_cast<uint32_t>(v), e = static_cast<uint32_t>(v >> 32);
      if (b >= e) break;
      if (!other.compare_exchange_weak(v, b | uint64_t{e - 1} << 32, std::memory_order_acq_rel)) continue;
      fn_(ctx_, e - 1, e);
      v = other.load(std::memory_order_acquire);
    }
  }
}

void ThreadPool::RunClaims(uint32_t self) {
  if (affine_) {
    RunAffine(self);
    return;
  }
  for (;;) {
    const uint32_t b = next_.fetch_add(grain_, std::memory_order_relaxed);
    if (b >= n_) return;
    fn_(ctx_, b, std::min(n_, b + grain_));
  }
}

void ThreadPool::WorkerLoop(uint32_t self) {
  uint32_t seen = 0;
  for (;;) {
    uint32_t g = generation_.load(std::memory_order_acquire);
    for (int spin = 0; g == seen && spin < 4000; ++spin) {
      NEEDLE_PAUSE();
      g = generation_.load(std::memory_order_acquire);
    }
    if (g == seen) {
      sleeping_workers_.fetch_add(1, std::memory_order_seq_cst);
      // wait() returns only once the value differs from `seen` (or spuriously; re-checked).
      while ((g = generation_.load(std::memory_order_seq_cst)) == seen) generation_.wait(seen, std::memory_order_seq_cst);
      sleeping_workers_.fetch_sub(1, std::memory_order_relaxed);
    }
    seen = g;
    if (stop_.load(std::memory_order_acquire)) return;
    RunClaims(self);
    // The last worker wakes the caller only if it said it sleeps (seq_cst pairs
    // with its store of caller_sleeping_ before reading pending_).
    if (pending_.fetch_sub(1, std::memory_order_seq_cst) == 1 && caller_sleeping_.load(std::memory_order_seq_cst)) {
      pending_.notify_one();
    }
  }
}

}  // namespace needle
