#include "model/decode_batcher.h"

#include <algorithm>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"
#include "model/testing/archives.h"

namespace needle {
namespace {

using testing::RandomTokens;

int32_t Argmax(const std::vector<float>& x) { return static_cast<int32_t>(std::max_element(x.begin(), x.end()) - x.begin()); }

// Six threads decode greedily through one batcher, each its own state; every
// logit equals the same state decoded alone, and steps were joined into batches.
TEST(DecodeBatcher, ThreadsGetExactlyTheirUnbatchedLogits) {
  ModelConfig c = testing::SmallConfig();
  c.d_model = 256;  // head_dim 64: the integer attention kernels
  const CactArchive archive = CactArchive::FromBytes(testing::NonTrivialArchive(c, "2", 31));
  const FastModel model(archive);
  const uint32_t V = c.vocab_size, kThreads = 6, kSteps = 60;
  // What each thread's state gives decoded alone, one token at a time.
  std::vector<std::vector<int32_t>> want_tokens(kThreads);
  std::vector<std::vector<float>> want_last(kThreads);
  for (uint32_t t = 0; t < kThreads; ++t) {
    auto st = model.NewState({.sink_length = 8 + t, .window = 32});
    std::vector<float> logits(V);
    model.Forward(*st, RandomTokens(12 + 2 * t, V, 40 + t), logits.data());
    for (uint32_t s = 0; s < kSteps; ++s) {
      const int32_t next = Argmax(logits);
      want_tokens[t].push_back(next);
      model.Forward(*st, std::span(&next, 1), logits.data());
    }
    want_last[t] = logits;
  }
  DecodeBatcher batcher(model, 4);  // fewer than the threads: full batches queue
  std::vector<std::vector<int32_t>> got_tokens(kThreads);
  std::vector<std::vector<float>> got_last(kThreads, std::vector<float>(V));
  std::vector<std::thread> threads;
  for (uint32_t t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      ThreadPool pool(t % 2 ? 2 : 1);
      auto st = model.NewState({.sink_length = 8 + t, .window = 32});
      std::vector<float>& logits = got_last[t];
      model.Forward(*st, RandomTokens(12 + 2 * t, V, 40 + t), logits.data());
      for (uint32_t s = 0; s < kSteps; ++s) {
        const int32_t next = Argmax(logits);
        got_tokens[t].push_back(next);
        batcher.Forward(*st, next, logits.data(), &pool);
      }
    });
  }
  for (auto& th : threads) th.join();
  for (uint32_t t = 0; t < kThreads; ++t) {
    EXPECT_EQ(got_tokens[t], want_tokens[t]) << "thread " << t;
    EXPECT_EQ(got_last[t], want_last[t]) << "thread " << t;  // bit for bit
  }
  const DecodeBatcher::Stats stats = batcher.stats();
  EXPECT_EQ(stats.steps, uint64_t{kThreads} * kSteps);
  EXPECT_LT(stats.batches, stats.steps);  // some steps ran together
}

// A bad step fails on its own thread; the other steps of its batch go on.
TEST(DecodeBatcher, AnErrorReachesOnlyItsOwnThread) {
  const ModelConfig c = testing::SmallConfig();
  const CactArchive archive = CactArchive::FromBytes(testing::NonTrivialArchive(c, "2", 32));
  const FastModel model(archive);
  DecodeBatcher batcher(model, 4);
  auto a = model.NewState({.sink_length = 4, .window = 16});
  std::vector<float> logits(c.vocab_size);
  model.Forward(*a, RandomTokens(6, c.vocab_size, 1), logits.data());
  EXPECT_THROW(batcher.Forward(*a, static_cast<int32_t>(c.vocab_size), logits.data(), nullptr), Error);
  EXPECT_EQ(a->cache().tokens(), 6);
  batcher.Forward(*a, 20, logits.data(), nullptr);
  EXPECT_EQ(a->cache().tokens(), 7);
}

}  // namespace
}  // namespace needle
