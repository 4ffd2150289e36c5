#include "base/thread_pool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define NEEDLE_PAUSE() _mm_pause()
#else
#define NEEDLE_PAUSE() ((void)0)
#endif

namespace needle {
namespace {

// Range of worker `i` of `parts` over [0, n), boundaries on multiples of `align`.
inline void Split(uint32_t n, uint32_t parts, uint32_t i, uint32_t align, uint32_t* b, uint32_t* e) {
  const uint32_t blocks = (n + align - 1) / align;
  const uint32_t per = blocks / parts, extra = blocks % parts;
  const uint32_t start = i * per + std::min(i, extra);
  const uint32_t count = per + (i < extra ? 1 : 0);
  *b = std::min(n, start * align);
  *e = std::min(n, (start + count) * align);
}

}  // namespace

ThreadPool::ThreadPool(uint32_t threads) : threads_(std::max<uint32_t>(1, threads)) {
  for (uint32_t i = 1; i < threads_; ++i) workers_.emplace_back([this, i] { WorkerLoop(i); });
}

ThreadPool::~ThreadPool() {
  stop_.store(true, std::memory_order_release);
  generation_.fetch_add(1, std::memory_order_acq_rel);
  generation_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::ParallelFor(uint32_t n, RangeFn fn, void* ctx, uint32_t align) {
  if (threads_ == 1 || n <= align) {
    fn(ctx, 0, n);
    return;
  }
  fn_ = fn, ctx_ = ctx, n_ = n, align_ = align;
  pending_.store(threads_ - 1, std::memory_order_relaxed);
  generation_.fetch_add(1, std::memory_order_release);
  generation_.notify_all();
  uint32_t b, e;
  Split(n, threads_, 0, align, &b, &e);
  if (b < e) fn(ctx, b, e);
  // Spin briefly (the usual case: the other cores finish within microseconds),
  // then sleep, so an oversubscribed machine is not burned by waiting.
  for (int spin = 0; spin < 4000; ++spin) {
    if (pending_.load(std::memory_order_acquire) == 0) return;
    NEEDLE_PAUSE();
  }
  for (uint32_t p = pending_.load(std::memory_order_acquire); p != 0; p = pending_.load(std::memory_order_acquire)) {
    pending_.wait(p, std::memory_order_acquire);
  }
}

void ThreadPool::WorkerLoop(uint32_t index) {
  uint64_t seen = 0;
  for (;;) {
    uint64_t g = generation_.load(std::memory_order_acquire);
    for (int spin = 0; g == seen && spin < 4000; ++spin) {
      NEEDLE_PAUSE();
      g = generation_.load(std::memory_order_acquire);
    }
    while (g == seen) {
      generation_.wait(seen, std::memory_order_acquire);
      g = generation_.load(std::memory_order_acquire);
    }
    seen = g;
    if (stop_.load(std::memory_order_acquire)) return;
    uint32_t b, e;
    Split(n_, threads_, index, align_, &b, &e);
    if (b < e) fn_(ctx_, b, e);
    if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) pending_.notify_one();
  }
}

}  // namespace needle
