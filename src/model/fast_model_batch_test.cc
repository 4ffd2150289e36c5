// BatchDecoder: several states decoded in one pass equal each decoded alone.
#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"
#include "model/fast_model.h"
#include "model/testing/archives.h"

namespace needle {
namespace {

using testing::RandomTokens;

int32_t Argmax(const float* x, uint32_t n) { return static_cast<int32_t>(std::max_element(x, x + n) - x); }

// Head dims of 16 (the float kernels) and 64 (the integer attention kernels).
ModelConfig WideHeads() {
  ModelConfig c = testing::SmallConfig();
  c.d_model = 256;
  return c;
}

// Five sessions with their own sink lengths, windows and prompts decode greedily
// for 120 steps; sessions join and leave the batch at different steps, so batch
// sizes 1-5 and every mix of positions occur (windows wrap, one state shares
// another's sinks). Every batched logit equals the one-at-a-time twin's, bit for bit,
// with a pool of two threads on the batched side and none on the other.
TEST(BatchDecoder, EqualsEachStateDecodedAlone) {
  for (const ModelConfig& c : {testing::SmallConfig(), WideHeads()}) {
    for (const char* bits : {"2", "4"}) {
      const CactArchive archive = CactArchive::FromBytes(testing::NonTrivialArchive(c, bits, 21));
      const FastModel model(archive);
      const uint32_t V = c.vocab_size;
      const uint32_t kStates = 5;
      const uint32_t sinks[kStates] = {20, 7, 33, 20, 1};
      const uint32_t windows[kStates] = {64, 32, 16, 64, 48};
      std::vector<std::unique_ptr<DecoderState>> batched, alone;
      std::vector<std::vector<float>> last(kStates, std::vector<float>(V));
      for (uint32_t i = 0; i < kStates; ++i) {
        const bool shared = i == 3;  // state 3 reads state 0's sink rows
        const auto prompt = RandomTokens(sinks[i] + 5 + 3 * i, V, shared ? 100 : 100 + i);
        auto b = model.NewState({.sink_length = sinks[i], .window = windows[i], .max_chunk = 16});
        auto a = model.NewState({.sink_length = sinks[i], .window = windows[i], .max_chunk = 16});
        if (shared) {
          b = model.NewState({.sink_length = sinks[i], .window = windows[i], .sinks_from = batched[0].get()});
          a = model.NewState({.sink_length = sinks[i], .window = windows[i], .sinks_from = alone[0].get()});
          b->CopyFrom(*batched[0], false);  // a hypothesis branching off state 0, then its own tokens
          a->CopyFrom(*alone[0], false);
          model.Forward(*b, prompt, last[i].data());
          model.Forward(*a, prompt, last[i].data());
        } else {
          model.Forward(*b, prompt, last[i].data());
          model.Forward(*a, prompt, last[i].data());
        }
        batched.push_back(std::move(b));
        alone.push_back(std::move(a));
      }
      ThreadPool pool(2);
      BatchDecoder decoder(model, kStates);
      std::vector<float> logits(kStates * V), one(V);
      uint64_t compared = 0;
      for (uint32_t step = 0; step < 120; ++step) {
        std::vector<DecoderState*> members;
        std::vector<int32_t> next;
        std::vector<uint32_t> who;
        for (uint32_t i = 0; i < kStates; ++i) {
          if (step < 10 * i || (i == 2 && step % 7 == 3)) continue;  // joins late; state 2 sits some steps out
          members.push_back(batched[i].get());
          next.push_back(Argmax(last[i].data(), V));
          who.push_back(i);
        }
        decoder.Step(members, next, logits.data(), &pool);
        for (size_t m = 0; m < who.size(); ++m) {
          const uint32_t i = who[m];
          model.Forward(*alone[i], std::span(&next[m], 1), one.data());
          for (uint32_t k = 0; k < V; ++k) ASSERT_EQ(logits[m * V + k], one[k]) << "state " << i << " step " << step;
          std::copy(one.begin(), one.end(), last[i].begin());
          compared += V;
        }
      }
      for (uint32_t i = 0; i < kStates; ++i) EXPECT_EQ(batched[i]->cache().tokens(), alone[i]->cache().tokens());
      EXPECT_GT(compared, 400u * V);
    }
  }
}

TEST(BatchDecoder, BadBatchesAreNamedErrorsAndChangeNothing) {
  const ModelConfig c = testing::SmallConfig();
  const CactArchive archive = CactArchive::FromBytes(testing::NonTrivialArchive(c, "2", 22));
  const FastModel model(archive);
  auto a = model.NewState({.sink_length = 4, .window = 16});
  auto b = model.NewState({.sink_length = 4, .window = 16});
  auto f = model.NewState({.sink_length = 4, .window = 16, .fp32 = true});
  const auto prompt = RandomTokens(6, c.vocab_size, 3);
  model.Forward(*a, prompt, nullptr);
  model.Forward(*b, prompt, nullptr);
  BatchDecoder decoder(model, 2);
  std::vector<float> logits(3 * c.vocab_size);
  auto expect_error = [&](std::vector<DecoderState*> states, std::vector<int32_t> tokens, const char* what) {
    try {
      decoder.Step(states, tokens, logits.data());
      ADD_FAILURE() << "no error: " << what;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << what;
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
    EXPECT_EQ(a->cache().tokens(), 6);
    EXPECT_EQ(b->cache().tokens(), 6);
  };
  expect_error({a.get(), b.get(), a.get()}, {20, 21, 22}, "exceed its capacity");
  expect_error({a.get(), a.get()}, {20, 21}, "given twice");
  expect_error({a.get(), b.get()}, {20}, "2 states but 1 tokens");
  expect_error({a.get(), f.get()}, {20, 21}, "fp32");
  expect_error({a.get(), b.get()}, {20, static_cast<int32_t>(c.vocab_size)}, "outside the vocabulary");
  expect_error({a.get(), nullptr}, {20, 21}, "null");
  EXPECT_THROW(BatchDecoder(model, 0), Error);
  // A state of another model (other geometry) is refused.
  const ModelConfig wide = WideHeads();
  const CactArchive other_archive = CactArchive::FromBytes(testing::NonTrivialArchive(wide, "2", 23));
  const FastModel other(other_archive);
  auto o = other.NewState({.sink_length = 4, .window = 16});
  expect_error({a.get(), o.get()}, {20, 21}, "another model");
}

}  // namespace
}  // namespace needle
