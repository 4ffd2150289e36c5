// Attention kernel benchmarks at needle2's geometry (head_dim 64, two query
// heads per kv head, a full cache: 252 sink keys and a 256-key window, each
// kv head's rows interleaved with three others as in the cache): decode's
// AttendGroup against its scalar reference, and a 16-row prefill block.
#include <benchmark/benchmark.h>

#include <vector>

#include "base/random.h"
#include "kv/kv_quant.h"
#include "model/attention.h"

namespace needle {
namespace {

constexpr uint32_t kHeadDim = 64, kKvHeads = 4, kGroupHeads = 2, kSinks = 252, kWindow = 256;
constexpr uint32_t kGroups = kHeadDim / 32;
constexpr uint32_t kSlots = kSinks + kWindow;
constexpr uint32_t kRowStride = kKvHeads * kHeadDim;

struct Fixture {
  std::vector<int8_t> k, v;  // [slot][kv head][hd], sinks then window
  std::vector<float> ks, vs;  // [kv head][group][slot], as the cache keeps them
  std::vector<float> q_window, q_sink;  // [16 rows][hd]
  std::vector<float> scores, out;
  KvRun runs[2];

  Fixture() {
    SplitMix64 rng(7);
    k.resize(size_t(kSlots) * kRowStride), v.resize(k.size());
    ks.resize(size_t(kSlots) * kKvHeads * kGroups), vs.resize(ks.size());
    std::vector<float> row(kRowStride);
    float scale[kGroups];
    for (uint32_t s = 0; s < kSlots; ++s) {
      for (int kv = 0; kv < 2; ++kv) {
        for (float& x : row) x = static_cast<float>(rng.Normal());
        for (uint32_t g = 0; g < kKvHeads; ++g) {
          QuantizeKvRow(row.data() + g * kHeadDim, kHeadDim, (kv ? v : k).data() + size_t(s) * kRowStride + g * kHeadDim, scale);
          for (uint32_t q = 0; q < kGroups; ++q) (kv ? vs : ks)[(size_t(g) * kGroups + q) * kSlots + s] = scale[q];
        }
      }
    }
    q_window.resize(size_t(kAttentionBlockRows) * kHeadDim), q_sink.resize(q_window.size());
    for (float& x : q_window) x = static_cast<float>(rng.Normal() * 3);
    for (float& x : q_sink) x = static_cast<float>(rng.Normal() * 3);
    for (uint32_t r = 0; r < kAttentionBlockRows; ++r) {
      SnapToKvGrid(q_window.data() + r * kHeadDim, kHeadDim);
      SnapToKvGrid(q_sink.data() + r * kHeadDim, kHeadDim);
    }
    scores.resize(size_t(kAttentionBlockRows) * kSlots);
    out.resize(size_t(kAttentionBlockRows) * kHeadDim);
    runs[0] = {k.data(), ks.data(), v.data(), vs.data(), kSinks, true, 1, kSlots};
    runs[1] = {k.data() + size_t(kSinks) * kRowStride, ks.data() + kSinks, v.data() + size_t(kSinks) * kRowStride,
               vs.data() + kSinks, kWindow, false, 1, kSlots};
  }

  AttentionGroupArgs Group() {
    AttentionGroupArgs a;
    a.q_window = q_window.data(), a.q_sink = q_sink.data();
    a.heads = kGroupHeads, a.head_dim = kHeadDim;
    a.row_stride = kRowStride;
    a.runs = runs, a.num_runs = 2;
    a.scores = scores.data(), a.out = out.data();
    return a;
  }
};

void SetKeyRate(benchmark::State& state, double rows) {
  state.counters["key_rows/s"] =
      benchmark::Counter(rows * (kSinks + kWindow), benchmark::Counter::kIsIterationInvariantRate);
}

void BM_AttendGroupReference(benchmark::State& state) {
  Fixture f;
  const AttentionGroupArgs a = f.Group();
  for (auto _ : state) {
    AttendGroupReference(a);
    benchmark::DoNotOptimize(f.out.data());
  }
  SetKeyRate(state, kGroupHeads);
}

// One decode token's group: 2 heads over 508 keys.
void BM_AttendGroup(benchmark::State& state) {
  Fixture f;
  const AttentionGroupArgs a = f.Group();
  for (auto _ : state) {
    AttendGroup(a);
    benchmark::DoNotOptimize(f.out.data());
  }
  SetKeyRate(state, kGroupHeads);
}

// One decode token's attention over a whole needle2 cache: 27 layers x 4 kv
// heads, 7 MB, more than the L2 holds: what decode pays, cache misses included.
void BM_AttendToken27Layers(benchmark::State& state) {
  std::vector<Fixture> layers(27);
  // Each kv head's runs: the rows of head g, as the engine passes them.
  std::vector<KvRun> runs(layers.size() * kKvHeads * 2);
  std::vector<AttentionGroupArgs> groups;
  for (size_t l = 0; l < layers.size(); ++l) {
    for (uint32_t g = 0; g < kKvHeads; ++g) {
      KvRun* r = &runs[(l * kKvHeads + g) * 2];
      for (int i = 0; i < 2; ++i) {
        r[i] = layers[l].runs[i];
        const size_t so = size_t(g) * kGroups * kSlots;  // kv head g's scales
        r[i].k += g * kHeadDim, r[i].v += g * kHeadDim, r[i].ks += so, r[i].vs += so;
      }
      AttentionGroupArgs a = layers[l].Group();
      a.runs = r;
      groups.push_back(a);
    }
  }
  for (auto _ : state) {
    for (const AttentionGroupArgs& a : groups) AttendGroup(a);
    benchmark::DoNotOptimize(layers.back().out.data());
  }
  SetKeyRate(state, double(kGroupHeads) * kKvHeads * 27);
}

// A prefill block of 8 tokens x 2 heads at the window's end: every token sees
// the sinks and the whole window (causal masking aside).
void BM_AttendBlock(benchmark::State& state) {
  Fixture f;
  const uint32_t tokens = kAttentionBlockRows / kGroupHeads;
  std::vector<uint32_t> begin(tokens, 0), end(tokens, kWindow);
  AttentionBlockArgs a;
  a.q_window = f.q_window.data(), a.q_sink = f.q_sink.data();
  a.q_stride = kGroupHeads * kHeadDim;
  a.tokens = tokens, a.heads = kGroupHeads, a.head_dim = kHeadDim;
  a.row_stride = kRowStride;
  a.sink_runs = &f.runs[0], a.num_sink_runs = 1;
  a.window_runs = &f.runs[1], a.num_window_runs = 1;
  a.window_begin = begin.data(), a.window_end = end.data();
  a.out = f.out.data(), a.out_stride = kGroupHeads * kHeadDim;
  if (!AttendBlockAvailable(kGroupHeads, kHeadDim)) {
    state.SkipWithError("no block kernel on this machine");
    return;
  }
  for (auto _ : state) {
    AttendBlock(a);
    benchmark::DoNotOptimize(f.out.data());
  }
  SetKeyRate(state, kAttentionBlockRows);
}

BENCHMARK(BM_AttendGroupReference);
BENCHMARK(BM_AttendGroup);
BENCHMARK(BM_AttendToken27Layers);
BENCHMARK(BM_AttendBlock);

}  // namespace
}  // namespace needle
