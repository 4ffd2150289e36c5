// SPEC §3's required properties of the bounded cache, on random-weights archives.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <new>
#include <string>

#include <gtest/gtest.h>

#include "base/error.h"
#include "base/random.h"
#include "kv/budget.h"
#include "model/fast_model.h"
#include "model/reference_model.h"
#include "model/testing/archives.h"

// ---- allocation hook: counts heap allocations while armed -----------------------
// Sanitizers replace operator new themselves, so the hook (and its test) is off there.
#if defined(__SANITIZE_ADDRESS__)
#define NEEDLE_ALLOC_HOOK 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NEEDLE_ALLOC_HOOK 0
#endif
#endif
#ifndef NEEDLE_ALLOC_HOOK
#define NEEDLE_ALLOC_HOOK 1
#endif
namespace {
thread_local bool g_count_allocs = false;
thread_local uint64_t g_allocs = 0;
}  // namespace
#if NEEDLE_ALLOC_HOOK
// Replacement new/delete pair malloc with free by design.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void* operator new(size_t n) {
  if (g_count_allocs) ++g_allocs;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](size_t n) { return operator new(n); }
void* operator new(size_t n, const std::nothrow_t&) noexcept {
  if (g_count_allocs) ++g_allocs;
  return std::malloc(n ? n : 1);
}
void* operator new[](size_t n, const std::nothrow_t& t) noexcept { return operator new(n, t); }
void operator delete(void* p) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
void operator delete[](void* p, size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
#endif

namespace needle {
namespace {

using testing::RandomTokens;

uint64_t ResidentKb() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

// (a) The ring buffer with the positions rule equals the naive reference that
// keeps every K/V, over a 3,000-token session with 150 sinks and a 256 window.
TEST(WindowSinkCache, RingEqualsNaiveReferenceOverLongSession) {
  const ModelConfig c = testing::SmallConfig();
  const CactArchive archive = CactArchive::FromBytes(testing::NonTrivialArchive(c, "4", 11));
  const FastModel fast(archive);
  const ReferenceModel ref(archive);
  const auto tokens = RandomTokens(3000, c.vocab_size, 5);
  const uint32_t S = 150, W = 256, V = c.vocab_size;

  ReferenceState rs = ref.NewState({S, W});
  const std::vector<float> want = ref.Forward(rs, tokens);

  auto st = fast.NewState({.sink_length = S, .window = W, .max_chunk = 64, .fp32 = true});
  std::vector<float> got(tokens.size() * V);
  fast.Forward(*st, std::span(tokens.data(), S), got.data(), true);  // the sink block in one prefill
  for (size_t p = S; p < tokens.size(); ++p) fast.Forward(*st, std::span(&tokens[p], 1), &got[p * V]);
  float worst = 0, scale = 0;
  for (size_t i = 0; i < got.size(); ++i) {
    worst = std::max(worst, std::fabs(got[i] - want[i]));
    scale = std::max(scale, std::fabs(want[i]));
  }
  std::printf("[ ring vs naive ] 3000 tokens, S=%u W=%u: max |dlogit| %.2e (logit scale %.1f)\n", S, W, worst, scale);
  EXPECT_GT(scale, 1.0f);  // the logits are not trivially small
  EXPECT_LE(worst, 1e-3f);
}

// (b) Chunked prefill (1, 7, 64, 300) equals token-by-token decoding, across the
// point where eviction starts (S = 40, W = 64, 500 tokens).
TEST(WindowSinkCache, ChunkedPrefillEqualsTokenByToken) {
  const ModelConfig c = testing::SmallConfig();
  const CactArchive archive = CactArchive::FromBytes(testing::NonTrivialArchive(c, "2", 12));
  const FastModel model(archive);
  const auto tokens = RandomTokens(500, c.vocab_size, 6);
  const uint32_t V = c.vocab_size;
  for (bool fp32 : {false, true}) {
    auto one = model.NewState({.sink_length = 40, .window = 64, .fp32 = fp32});
    std::vector<float> seq(tokens.size() * V);
    for (size_t p = 0; p < tokens.size(); ++p) model.Forward(*one, std::span(&tokens[p], 1), &seq[p * V]);
    for (uint32_t chunk : {1u, 7u, 64u, 300u}) {
      auto st = model.NewState({.sink_length = 40, .window = 64, .max_chunk = 32, .fp32 = fp32});
      std::vector<float> got(tokens.size() * V);
      for (size_t at = 0; at < tokens.size(); at += chunk) {
        const size_t len = std::min<size_t>(chunk, tokens.size() - at);
        model.Forward(*st, std::span(tokens.data() + at, len), &got[at * V], true);
      }
      float worst = 0;
      for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::fabs(got[i] - seq[i]));
      EXPECT_LE(worst, 1e-4f) << "chunk " << chunk << (fp32 ? " fp32" : " int8");
    }
  }
}

// (b2) With head_dim 32 prefill attends in blocks (AttendBlock), the sink
// block too: chunks inside the sinks, one across their end and chunks past
// them equal token-by-token decoding, at 1 and 2 threads; a chunk that
// reaches past the sinks still gets the next sink-free chunk's blocks.
TEST(WindowSinkCache, SinkBlockInBlocksEqualsTokenByToken) {
  ModelConfig c = testing::SmallConfig();
  c.d_model = 128;  // head_dim 32
  const CactArchive archive = CactArchive::FromBytes(testing::NonTrivialArchive(c, "2", 13));
  const FastModel model(archive);
  const auto tokens = RandomTokens(200, c.vocab_size, 7);
  const uint32_t V = c.vocab_size, S = 70;
  auto one = model.NewState({.sink_length = S, .window = 64});
  std::vector<float> seq(tokens.size() * V);
  for (size_t p = 0; p < tokens.size(); ++p) model.Forward(*one, std::span(&tokens[p], 1), &seq[p * V]);
  ThreadPool pool(2);
  for (uint32_t chunk : {5u, 32u, 200u}) {
    for (ThreadPool* tp : {static_cast<ThreadPool*>(nullptr), &pool}) {
      auto st = model.NewState({.sink_length = S, .window = 64, .max_chunk = 32});
      std::vector<float> got(tokens.size() * V);
      for (size_t at = 0; at < tokens.size(); at += chunk) {
        const size_t len = std::min<size_t>(chunk, tokens.size() - at);
        model.Forward(*st, std::span(tokens.data() + at, len), &got[at * V], true, tp);
      }
      float worst = 0, scale = 0;
      double mean = 0;
      for (size_t i = 0; i < got.size(); ++i) {
        const float diff = std::fabs(got[i] - seq[i]);
        worst = std::max(worst, diff);
        mean += diff / got.size();
        scale = std::max(scale, std::fabs(seq[i]));
      }
      std::printf("[ blocks vs one by one ] chunk %u%s: max |dlogit| %.2e, mean %.2e (logit scale %.1f)\n", chunk,
                  tp ? ", 2 threads" : "", worst, mean, scale);
      // Only float rounding apart (the block's online softmax), which an int8
      // rounding downstream may turn into one step: rare and small.
      EXPECT_LE(worst, 1e-3f * scale) << "chunk " << chunk << (tp ? ", 2 threads" : "");
      EXPECT_LE(mean, 1e-4) << "chunk " << chunk << (tp ? ", 2 threads" : "");
    }
  }
}

// (c) Once the window has filled, neither the cache nor the process grows.
TEST(WindowSinkCache, MemoryStopsGrowingAfterTheWindowFills) {
  const ModelConfig c = testing::SmallConfig();
  const CactArchive archive = CactArchive::FromBytes(testing::NonTrivialArchive(c, "2", 13));
  const FastModel model(archive);
  auto st = model.NewState({.sink_length = 32, .window = 64});
  const auto tokens = RandomTokens(10000 + 200, c.vocab_size, 7);
  std::vector<float> logits(c.vocab_size);
  model.Forward(*st, std::span(tokens.data(), 200), logits.data());  // sinks + a full window
  const uint64_t bytes_full = st->bytes(), rss_full = ResidentKb();
  for (size_t p = 200; p < tokens.size(); ++p) model.Forward(*st, std::span(&tokens[p], 1), logits.data());
  const uint64_t rss_end = ResidentKb();
  std::printf("[ memory ] state %llu bytes; RSS after fill %llu kB, after 10,000 more steps %llu kB\n",
              (unsigned long long)bytes_full, (unsigned long long)rss_full, (unsigned long long)rss_end);
  EXPECT_EQ(st->bytes(), bytes_full);
  EXPECT_LE(rss_end, rss_full + 256);  // allocator noise only
}

// (d) The int8 fast path agrees with the fp32 path on greedy decoding.
TEST(FastModel, Int8AgreesWithFp32OnGreedyDecoding) {
  const ModelConfig c = testing::SmallConfig();
  for (const char* bits : {"4", "3", "2", "ternary"}) {
    const CactArchive archive = CactArchive::FromBytes(testing::NonTrivialArchive(c, bits, 14));
    const FastModel model(archive);
    auto fast = model.NewState({.sink_length = 20, .window = 64});
    auto exact = model.NewState({.sink_length = 20, .window = 64, .fp32 = true});
    const auto prompt = RandomTokens(20, c.vocab_size, 8);
    const uint32_t V = c.vocab_size;
    std::vector<float> lf(V), le(V);
    model.Forward(*fast, prompt, lf.data());
    model.Forward(*exact, prompt, le.data());
    int agree = 0;
    const int steps = 1000;
    std::vector<bool> seen(V);
    int distinct = 0;
    SplitMix64 rng(99);
    for (int i = 0; i < steps; ++i) {
      const int32_t a = static_cast<int32_t>(std::max_element(lf.begin(), lf.end()) - lf.begin());
      const int32_t b = static_cast<int32_t>(std::max_element(le.begin(), le.end()) - le.begin());
      agree += a == b;
      // Greedy, except every 8th step a random token so the stream cannot settle into a loop.
      const int32_t next = i % 8 == 7 ? static_cast<int32_t>(14 + rng.Next() % (V - 14)) : a;
      if (!seen[next]) seen[next] = true, ++distinct;
      model.Forward(*fast, std::span(&next, 1), lf.data());
      model.Forward(*exact, std::span(&next, 1), le.data());  // teacher-forced on the same stream
    }
    std::printf("[ int8 vs fp32 ] %s bits: top-1 agreement %.1f%% over %d greedy steps (%d distinct tokens)\n", bits,
                100.0 * agree / steps, steps, distinct);
    RecordProperty(std::string("agreement_") + bits, std::to_string(double(agree) / steps));
    EXPECT_GE(agree, steps * 0.9) << bits;
  }
}

// (e) A decode step allocates nothing on the heap.
TEST(FastModel, DecodeStepDoesNotAllocate) {
  if (!NEEDLE_ALLOC_HOOK) GTEST_SKIP() << "allocation hook disabled under sanitizers";
  const ModelConfig c = testing::SmallConfig();
  const CactArchive archive = CactArchive::FromBytes(testing::NonTrivialArchive(c, "2", 15));
  const FastModel model(archive);
  ThreadPool pool(2);
  auto st = model.NewState({.sink_length = 16, .window = 32});
  const auto tokens = RandomTokens(200, c.vocab_size, 9);
  std::vector<float> logits(c.vocab_size);
  model.Forward(*st, std::span(tokens.data(), 16), logits.data(), false, &pool);
  g_allocs = 0;
  g_count_allocs = true;
  for (size_t p = 16; p < tokens.size(); ++p) model.Forward(*st, std::span(&tokens[p], 1), logits.data(), false, &pool);
  g_count_allocs = false;
  EXPECT_EQ(g_allocs, 0u);
}

// (e2) Nor does a batched decoding step (BatchDecoder) over several states.
TEST(FastModel, BatchedDecodeStepDoesNotAllocate) {
  if (!NEEDLE_ALLOC_HOOK) GTEST_SKIP() << "allocation hook disabled under sanitizers";
  const ModelConfig c = testing::SmallConfig();
  const CactArchive archive = CactArchive::FromBytes(testing::NonTrivialArchive(c, "2", 16));
  const FastModel model(archive);
  ThreadPool pool(2);
  std::vector<std::unique_ptr<DecoderState>> states;
  std::vector<DecoderState*> members;
  for (uint64_t i = 0; i < 3; ++i) {
    states.push_back(model.NewState({.sink_length = 16, .window = 32}));
    model.Forward(*states.back(), RandomTokens(20 + i, c.vocab_size, 30 + i), nullptr, false, &pool);
    members.push_back(states.back().get());
  }
  BatchDecoder decoder(model, 4);
  std::vector<float> logits(3 * c.vocab_size);
  const auto tokens = RandomTokens(3 * 100, c.vocab_size, 10);
  g_allocs = 0;
  g_count_allocs = true;
  for (size_t p = 0; p < 100; ++p) decoder.Step(members, std::span(&tokens[3 * p], 3), logits.data(), &pool);
  g_count_allocs = false;
  EXPECT_EQ(g_allocs, 0u);
}

// (f) An archive whose kv_window exceeds the budget runs at the budget window.
TEST(FastModel, WindowAboveBudgetRunsAtBudget) {
  ModelConfig c = testing::SmallConfig();
  c.num_layers = 40;  // per position cost large enough to make the budget bind
  c.d_model = 512;
  c.num_heads = 8;
  c.num_kv_heads = 8;
  c.max_seq_len = 8192;
  auto bytes = testing::NonTrivialArchive(c, "2", 16);
  const uint32_t huge = 100000;
  std::memcpy(bytes.data() + 12, &huge, 4);  // header.kv_window
  const CactArchive archive = CactArchive::FromBytes(bytes);
  ASSERT_EQ(archive.header().kv_window, huge);
  const FastModel model(archive);
  EXPECT_EQ(model.window(), budget_window(archive.config()));
  EXPECT_LT(model.window(), huge);
  auto st = model.NewState({.sink_length = 0});
  EXPECT_EQ(st->window(), budget_window(archive.config()));
  // The window already takes the whole budget: any sink block is a clear error, not an overflow.
  try {
    model.NewState({.sink_length = 8});
    ADD_FAILURE() << "a sink block beyond the budget was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kBudget);
    EXPECT_NE(std::string(e.what()).find("8 tokens"), std::string::npos) << e.what();
  }
}

// A window floor (a session showing only its recent requests) hides the
// tokens before it: two conversations that differ only there give the same
// logits after it, bit for bit, in prefill and in decode — the engram hashes
// and taps too, which read the sink block's tail below the floor. And what
// follows the floor is computed as if it followed the sinks directly (up to
// the rounding of RoPE at another counter): a request behind the floor reads
// as a session's first one.
TEST(FastModel, TheWindowFloorHidesWhatCameBefore) {
  // head_dim 32: prefill goes through the block attention path too.
  ModelConfig c = testing::SmallConfig();
  c.d_model = 128;
  const CactArchive archive = CactArchive::FromBytes(testing::NonTrivialArchive(c, "4", 21));
  const FastModel model(archive);
  const auto ids = RandomTokens(64, c.vocab_size, 9);
  const uint32_t V = c.vocab_size;
  auto pick = [&](size_t from, size_t n) {
    std::vector<int32_t> out(n);
    for (size_t i = 0; i < n; ++i) out[i] = ids[(from + i) % ids.size()];
    return out;
  };
  const std::vector<int32_t> sinks = pick(0, 5), post = pick(30, 12);
  auto run = [&](const std::vector<int32_t>& before, bool floor, bool one_by_one, bool fp32) {
    auto st = model.NewState({.sink_length = 5, .window = 64, .fp32 = fp32});
    std::vector<float> logits(V);
    model.Forward(*st, sinks, logits.data());
    if (!before.empty()) model.Forward(*st, before, logits.data());
    if (floor) st->cache().SetWindowFloor(st->cache().tokens());
    if (one_by_one) {
      for (size_t p = 0; p < post.size(); ++p) model.Forward(*st, std::span(&post[p], 1), logits.data());
    } else {
      model.Forward(*st, post, logits.data());
    }
    return logits;
  };
  auto max_diff = [&](const std::vector<float>& x, const std::vector<float>& y) {
    float diff = 0;
    for (uint32_t v = 0; v < V; ++v) diff = std::max(diff, std::fabs(x[v] - y[v]));
    return diff;
  };
  const std::vector<int32_t> a = pick(5, 20), b = pick(25, 20);
  ASSERT_NE(a.back(), b.back());  // (the tokens right before the floor differ too)
  for (bool one_by_one : {false, true}) {
    EXPECT_EQ(run(a, true, one_by_one, false), run(b, true, one_by_one, false)) << "one by one " << one_by_one;
    EXPECT_GT(max_diff(run(a, false, one_by_one, false), run(b, false, one_by_one, false)), 1e-3f)
        << "without the floor the earlier tokens are seen";
    // Behind the floor as right after the sinks (fp32: only RoPE's rounding differs).
    const std::vector<float> first = run({}, false, one_by_one, true);
    EXPECT_LT(max_diff(run(a, true, one_by_one, true), first), 1e-3f) << "one by one " << one_by_one;
    EXPECT_GT(max_diff(run(a, false, one_by_one, true), first), 1e-2f);
  }
}

// A copied state decodes exactly as the original: the same logits, bit for
// bit, in the window's first lap and after it wrapped; a copy that skips the
// sink rows is exact when they are equal, and differs when they are not.
TEST(FastModel, ACopiedStateDecodesAsTheOriginal) {
  ModelConfig c = testing::SmallConfig();
  c.d_model = 128;
  const CactArchive archive = CactArchive::FromBytes(testing::NonTrivialArchive(c, "4", 23));
  const FastModel model(archive);
  const uint32_t V = c.vocab_size;
  const auto ids = RandomTokens(200, V, 4);
  const std::vector<int32_t> sinks(ids.begin(), ids.begin() + 6), other_sinks(ids.begin() + 6, ids.begin() + 12);
  for (size_t fed : {20u, 150u}) {  // window 64: 150 has wrapped the ring
    auto original = model.NewState({.sink_length = 6, .window = 64});
    std::vector<float> logits(V), copy_logits(V);
    model.Forward(*original, sinks, logits.data());
    auto copy = model.NewState({.sink_length = 6, .window = 64, .max_chunk = 1});
    model.Forward(*copy, other_sinks, copy_logits.data());
    auto stale = model.NewState({.sink_length = 6, .window = 64});
    model.Forward(*stale, other_sinks, copy_logits.data());
    model.Forward(*original, std::span(ids.data() + 12, fed), logits.data());
    copy->CopyFrom(*original);
    stale->CopyFrom(*original, /*with_sinks=*/false);
    // A state reading the original's sink rows: exact, and without their bytes.
    auto sharing = model.NewState({.sink_length = 6, .window = 64, .max_chunk = 1, .sinks_from = original.get()});
    const uint64_t sink_row_bytes = uint64_t(c.num_layers) * 6 * c.num_kv_heads * 2 * (c.head_dim() + 4 * ((c.head_dim() + 31) / 32));
    EXPECT_EQ(sharing->cache().bytes() + sink_row_bytes, copy->cache().bytes());
    EXPECT_THROW(sharing->CopyFrom(*original), Error);  // (the sink rows are not its own)
    sharing->CopyFrom(*original, /*with_sinks=*/false);
    std::vector<float> stale_logits(V), sharing_logits(V);
    for (size_t p = 0; p < 8; ++p) {
      const int32_t t = ids[12 + fed + p];
      model.Forward(*original, std::span(&t, 1), logits.data());
      model.Forward(*copy, std::span(&t, 1), copy_logits.data());
      model.Forward(*stale, std::span(&t, 1), stale_logits.data());
      model.Forward(*sharing, std::span(&t, 1), sharing_logits.data());
      ASSERT_EQ(logits, copy_logits) << "fed " << fed << ", step " << p;
      ASSERT_EQ(logits, sharing_logits) << "fed " << fed << ", step " << p;
      ASSERT_NE(logits, stale_logits) << "the sink rows were not copied, and they differ";
    }
    // Sink tokens go to the cache that owns the rows, never to one sharing them.
    auto fresh = model.NewState({.sink_length = 6, .window = 64, .sinks_from = original.get()});
    EXPECT_THROW(model.Forward(*fresh, sinks, logits.data()), Error);
    EXPECT_EQ(copy->cache().tokens(), original->cache().tokens());
    auto other = model.NewState({.sink_length = 5, .window = 64});
    EXPECT_THROW(other->CopyFrom(*original), Error);
  }
}

// A sink block held apart (a lean owner: window 1) starts states that decode
// exactly as if they had been fed the sink tokens themselves: in the window's
// first lap and after it wrapped, after a reset to the sinks, and through a
// state that shares from a sharing state (beam hypotheses of such a session).
TEST(FastModel, ASharedSinkBlockStartsStatesThatDecodeAsIfFedTheSinks) {
  ModelConfig c = testing::SmallConfig();
  c.d_model = 128;
  const CactArchive archive = CactArchive::FromBytes(testing::NonTrivialArchive(c, "4", 29));
  const FastModel model(archive);
  const uint32_t V = c.vocab_size;
  const auto ids = RandomTokens(220, V, 8);
  const std::vector<int32_t> sinks(ids.begin(), ids.begin() + 6);
  auto block = model.NewState({.sink_length = 6, .window = 1});
  model.Forward(*block, sinks, nullptr);
  for (size_t fed : {20u, 150u}) {  // window 64: 150 has wrapped the ring
    auto alone = model.NewState({.sink_length = 6, .window = 64});
    auto shared = model.NewState({.sink_length = 6, .window = 64, .sinks_from = block.get()});
    std::vector<float> want(V), got(V), hyp_logits(V);
    model.Forward(*alone, sinks, nullptr);
    shared->StartAfterSinks(*block);
    EXPECT_EQ(shared->cache().tokens(), 6);
    for (int pass = 0; pass < 2; ++pass) {  // the second after ResetToSinks
      model.Forward(*alone, std::span(ids.data() + 6, fed), want.data());
      model.Forward(*shared, std::span(ids.data() + 6, fed), got.data());
      ASSERT_EQ(want, got) << "fed " << fed << ", pass " << pass;
      auto hyp = model.NewState({.sink_length = 6, .window = 64, .max_chunk = 1, .sinks_from = shared.get()});
      hyp->CopyFrom(*shared, /*with_sinks=*/false);
      for (size_t p = 0; p < 4; ++p) {
        const int32_t t = ids[6 + fed + p];
        model.Forward(*alone, std::span(&t, 1), want.data());
        model.Forward(*shared, std::span(&t, 1), got.data());
        model.Forward(*hyp, std::span(&t, 1), hyp_logits.data());
        ASSERT_EQ(want, got) << "fed " << fed << ", pass " << pass << ", step " << p;
        ASSERT_EQ(want, hyp_logits) << "fed " << fed << ", pass " << pass << ", step " << p;
      }
      alone->cache().ResetToSinks();
      shared->cache().ResetToSinks();
    }
  }
  // Only a block of exactly its sink tokens starts a state.
  auto longer = model.NewState({.sink_length = 6, .window = 64});
  model.Forward(*longer, std::span(ids.data(), 9), nullptr);
  auto state = model.NewState({.sink_length = 6, .window = 64, .sinks_from = block.get()});
  EXPECT_THROW(state->StartAfterSinks(*longer), Error);
  auto other = model.NewState({.sink_length = 5, .window = 64});
  EXPECT_THROW(other->StartAfterSinks(*block), Error);
}

}  // namespace
}  // namespace needle
