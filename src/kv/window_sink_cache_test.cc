#include "kv/window_sink_cache.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/random.h"

namespace needle {
namespace {

// Rows of several lengths (a short last group included), with zeros and
// exact ties of the rounding.
std::vector<std::vector<float>> Rows() {
  SplitMix64 rng(5);
  std::vector<std::vector<float>> rows;
  for (uint32_t n : {1u, 24u, 32u, 64u, 100u, 128u}) {
    std::vector<float> x(n);
    for (auto& v : x) v = static_cast<float>(rng.Normal() * 3.0);
    rows.push_back(x);
  }
  rows.push_back(std::vector<float>(40, 0.0f));
  std::vector<float> ties(32);
  for (uint32_t i = 0; i < 32; ++i) ties[i] = (static_cast<float>(i) - 15.5f) * (127.0f / 15.5f) / 127.0f * 2.0f;
  rows.push_back(ties);
  return rows;
}

// The window floor narrows the window from the old end: the first visible
// token is the latest of the sinks' end, W back and the floor; a reset clears it.
TEST(WindowSinkCache, TheFloorNarrowsTheWindow) {
  CacheGeometry g;
  g.layers = 1, g.kv_heads = 1, g.head_dim = 32, g.sink_capacity = 4, g.window = 8, g.token_history = 16;
  WindowSinkCache cache(g);
  for (int64_t t = 0; t < 20; ++t) cache.Commit(t);
  EXPECT_EQ(cache.window_valid(), 8u);
  EXPECT_EQ(cache.WindowFirst(20), 13);  // W back
  cache.SetWindowFloor(2);               // below the sinks' end: no change
  EXPECT_EQ(cache.WindowFirst(20), 13);
  cache.SetWindowFloor(17);
  EXPECT_EQ(cache.window_valid(), 3u);   // tokens 17, 18, 19
  EXPECT_EQ(cache.WindowFirst(20), 17);
  EXPECT_EQ(cache.WindowFirst(30), 23);  // W back passes the floor
  cache.ResetToSinks();
  EXPECT_EQ(cache.window_floor(), 0);
  EXPECT_EQ(cache.window_valid(), 0u);
  EXPECT_EQ(cache.WindowFirst(5), 4);
}

// Scales are kept by kv head and group (attention loads sixteen slots' at
// once) and read back where they were stored, through Store and
// StoreQuantized; saved files keep them slot by slot, as files written before
// that layout did, and restore to the same cache.
TEST(WindowSinkCache, ScalesByGroupInMemorySlotBySlotInSavedFiles) {
  CacheGeometry g;
  g.layers = 2, g.kv_heads = 3, g.head_dim = 64, g.sink_capacity = 3, g.window = 5, g.token_history = 4;
  const uint32_t groups = 2, hd = g.head_dim;
  WindowSinkCache cache(g);
  // Row (layer, t, head, kind): value 1 everywhere but one entry per group
  // whose size makes every scale distinct.
  auto row = [&](uint32_t l, int64_t t, uint32_t h, int kind) {
    std::vector<float> x(hd, 0.01f);
    for (uint32_t q = 0; q < groups; ++q) x[q * 32 + 5] = float(1 + kind + 2 * q + 4 * h + 12 * t + 200 * l);
    return x;
  };
  auto scale = [&](uint32_t l, int64_t t, uint32_t h, int kind, uint32_t q) { return row(l, t, h, kind)[q * 32 + 5] / 127.0f; };
  const int64_t tokens = 3 + 5;
  for (int64_t t = 0; t < tokens; ++t) {
    for (uint32_t l = 0; l < g.layers; ++l) {
      if (t % 2) {  // every other token through StoreQuantized: [kv heads][hd] and [kv heads][groups]
        std::vector<int8_t> k(g.kv_heads * hd), v(k.size());
        std::vector<float> ks(g.kv_heads * groups), vs(ks.size());
        for (uint32_t h = 0; h < g.kv_heads; ++h) {
          QuantizeKvRow(row(l, t, h, 0).data(), hd, &k[h * hd], &ks[h * groups]);
          QuantizeKvRow(row(l, t, h, 1).data(), hd, &v[h * hd], &vs[h * groups]);
        }
        cache.StoreQuantized(l, t, k.data(), ks.data(), v.data(), vs.data());
      } else {
        for (uint32_t h = 0; h < g.kv_heads; ++h) cache.Store(l, t, h, row(l, t, h, 0).data(), row(l, t, h, 1).data());
      }
    }
    cache.Commit(t);
  }
  for (uint32_t l = 0; l < g.layers; ++l) {
    for (int64_t t = 0; t < tokens; ++t) {
      for (uint32_t h = 0; h < g.kv_heads; ++h) {
        for (uint32_t q = 0; q < groups; ++q) {
          const bool sink = t < 3;
          const uint32_t slot = sink ? uint32_t(t) : cache.RingSlot(t);
          const uint32_t gs = sink ? cache.SinkScaleGroupStride() : cache.RingScaleGroupStride();
          const float* ks = sink ? cache.SinkKScale(l, slot, h) : cache.RingKScale(l, slot, h);
          const float* vs = sink ? cache.SinkVScale(l, slot, h) : cache.RingVScale(l, slot, h);
          ASSERT_FLOAT_EQ(ks[q * gs], scale(l, t, h, 0, q)) << l << " " << t << " " << h << " " << q;
          ASSERT_FLOAT_EQ(vs[q * gs], scale(l, t, h, 1, q));
          if (t + 1 < tokens && sink == (t + 1 < 3)) {  // the next slot's scale is the next float
            ASSERT_FLOAT_EQ(ks[q * gs + 1], scale(l, t + 1, h, 0, q));
          }
        }
      }
    }
  }
  // The file: a 32-byte header, the four int8 arrays, then the scales, each
  // array as a 64-bit count and its values.
  std::string file;
  cache.Serialize(file);
  size_t at = 32;
  auto skip = [&](size_t elem) {
    uint64_t n;
    std::memcpy(&n, file.data() + at, 8);
    at += 8 + n * elem;
  };
  for (int i = 0; i < 4; ++i) skip(1);
  for (int kind = 0; kind < 2; ++kind) {  // ks_sink, vs_sink: [layers][slots][kv heads][groups]
    uint64_t n;
    std::memcpy(&n, file.data() + at, 8);
    ASSERT_EQ(n, g.layers * 3u * g.kv_heads * groups);
    const char* p = file.data() + at + 8;
    for (uint32_t l = 0; l < g.layers; ++l) {
      for (uint32_t slot = 0; slot < 3; ++slot) {
        for (uint32_t h = 0; h < g.kv_heads; ++h) {
          for (uint32_t q = 0; q < groups; ++q, p += 4) {
            float x;
            std::memcpy(&x, p, 4);
            ASSERT_FLOAT_EQ(x, scale(l, slot, h, kind, q)) << "saved " << kind << " " << l << " " << slot << " " << h << " " << q;
          }
        }
      }
    }
    skip(4);
  }
  WindowSinkCache restored(g);
  std::string_view in(file);
  restored.Restore(in);
  EXPECT_TRUE(in.empty());
  std::string again;
  restored.Serialize(again);
  EXPECT_EQ(again, file);
  EXPECT_EQ(restored.RingKScale(1, cache.RingSlot(6), 2)[cache.RingScaleGroupStride()], scale(1, 6, 2, 0, 1));
}

TEST(QuantizeKvRow, ScalePerGroupAndRoundHalfEven) {
  for (const auto& x : Rows()) {
    const uint32_t n = static_cast<uint32_t>(x.size()), groups = (n + 31) / 32;
    std::vector<int8_t> q(n);
    std::vector<float> scales(groups);
    QuantizeKvRow(x.data(), n, q.data(), scales.data());
    for (uint32_t g = 0; g < groups; ++g) {
      float mx = 0.0f;
      for (uint32_t i = g * 32; i < std::min(n, g * 32 + 32); ++i) mx = std::max(mx, std::fabs(x[i]));
      const float scale = mx > 0.0f ? mx / 127.0f : 1.0f;
      ASSERT_EQ(scales[g], scale);
      for (uint32_t i = g * 32; i < std::min(n, g * 32 + 32); ++i) {
        ASSERT_EQ(q[i], static_cast<int8_t>(std::lrint(x[i] * (1.0f / scale)))) << "n " << n << " i " << i;
      }
    }
  }
}

// A snapped row is what its int8 form stands for, and quantizing it again
// gives back the same int8 values: the attention kernels rely on this to score
// snapped queries as int8.
TEST(SnapToKvGrid, EqualsDequantizedFormAndIsStable) {
  for (const auto& x : Rows()) {
    const uint32_t n = static_cast<uint32_t>(x.size()), groups = (n + 31) / 32;
    std::vector<int8_t> q(n), q2(n);
    std::vector<float> scales(groups), scales2(groups);
    QuantizeKvRow(x.data(), n, q.data(), scales.data());
    std::vector<float> y = x;
    SnapToKvGrid(y.data(), n);
    for (uint32_t i = 0; i < n; ++i) ASSERT_EQ(y[i], static_cast<float>(q[i]) * scales[i / 32]);
    QuantizeKvRow(y.data(), n, q2.data(), scales2.data());
    EXPECT_EQ(q, q2);
    std::vector<float> z = y;
    SnapToKvGrid(z.data(), n);
    for (uint32_t i = 0; i < n; ++i) ASSERT_NEAR(z[i], y[i], 1e-6f * (1.0f + std::fabs(y[i])));
  }
}

}  // namespace
}  // namespace needle
