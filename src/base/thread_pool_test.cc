#include "base/thread_pool.h"

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

namespace needle {
namespace {

TEST(ThreadPool, CoversEveryIndexExactlyOnce) {
  for (uint32_t threads : {1u, 2u, 3u, 4u}) {
    ThreadPool pool(threads);
    for (uint32_t n : {0u, 1u, 5u, 64u, 1000u, 4097u}) {
      for (uint32_t align : {1u, 4u, 32u}) {
        std::vector<std::atomic<int>> hits(n);
        struct Ctx {
          std::vector<std::atomic<int>>* hits;
          uint32_t align;
        } ctx{&hits, align};
        pool.ParallelFor(
            n,
            [](void* p, uint32_t b, uint32_t e) {
              auto* c = static_cast<Ctx*>(p);
              EXPECT_TRUE(b % c->align == 0 || b == e);
              for (uint32_t i = b; i < e; ++i) (*c->hits)[i].fetch_add(1);
            },
            &ctx, align);
        for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(hits[i].load(), 1) << threads << " " << n << " " << i;
      }
    }
  }
}

TEST(ThreadPool, ManyShortJobs) {
  ThreadPool pool(2);
  std::atomic<uint64_t> sum{0};
  for (int rep = 0; rep < 20000; ++rep) {
    pool.ParallelFor(
        8, [](void* p, uint32_t b, uint32_t e) { static_cast<std::atomic<uint64_t>*>(p)->fetch_add(e - b); }, &sum);
  }
  EXPECT_EQ(sum.load(), 20000u * 8);
}

// ParallelForAffine: every index once, whatever the thread count; a thread
// that stalls has most of its items taken by the others.
TEST(ThreadPool, AffineCoversEveryIndexOnceAndTakesOverAStalledThread) {
  struct Ctx {
    std::vector<std::atomic<int>> hits;
    std::vector<std::thread::id> who;
    std::thread::id slow;  // sleeps on each item it runs
    explicit Ctx(uint32_t n) : hits(n), who(n) {}
  };
  for (uint32_t threads : {1u, 2u, 3u, 4u}) {
    ThreadPool pool(threads);
    for (uint32_t n : {0u, 1u, 2u, 5u, 32u, 1000u}) {
      Ctx ctx(n);
      auto fn = [](void* p, uint32_t b, uint32_t e) {
        auto* c = static_cast<Ctx*>(p);
        for (uint32_t i = b; i < e; ++i) {
          c->hits[i].fetch_add(1);
          c->who[i] = std::this_thread::get_id();
          if (c->who[i] == c->slow) std::this_thread::sleep_for(std::chrono::microseconds(300));
        }
      };
      pool.ParallelForAffine(n, fn, &ctx);
      for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(ctx.hits[i].load(), 1) << threads << " " << n << " " << i;
      // The caller slowed down: the others take over its items from the back.
      if (threads == 1) continue;
      ctx.slow = std::this_thread::get_id();
      for (auto& h : ctx.hits) h.store(0);
      pool.ParallelForAffine(n, fn, &ctx);
      uint32_t by_caller = 0;
      for (uint32_t i = 0; i < n; ++i) {
        ASSERT_EQ(ctx.hits[i].load(), 1) << threads << " " << n << " " << i;
        by_caller += ctx.who[i] == ctx.slow;
      }
      if (n >= 32) {
        EXPECT_LT(by_caller, n / threads) << "a stalled thread's items were not taken";
      }
    }
  }
}

}  // namespace
}  // namespace needle
