#include "kv/window_sink_cache.h"

#include <cmath>
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
