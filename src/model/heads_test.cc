// The online probe pooling equals the batch softmax over all cells.
#include "model/heads.h"

#include <gtest/gtest.h>

#include <cmath>

#include "base/random.h"

namespace needle {
namespace {

TEST(ProbePool, OnlineEqualsBatchSoftmax) {
  HeadWeights w;
  w.probes = 3, w.out = 2, w.d = 16;
  SplitMix64 rng(5);
  for (uint32_t i = 0; i < w.probes * w.d; ++i) w.probe.push_back(float(rng.Normal()));
  for (uint32_t i = 0; i < w.out * w.probes * w.d; ++i) w.proj.push_back(float(rng.Normal() * 0.1));
  w.bias = {0.5f, -0.25f};
  const int N = 200;
  std::vector<float> cells(size_t(N) * w.d);
  for (float& c : cells) c = float(rng.Normal() * 3.0);
  ProbePool pool(w);
  for (int i = 0; i < N; ++i) pool.Add(&cells[size_t(i) * w.d]);
  float got[2];
  pool.Output(got);
  // Batch: softmax per probe over all cells, pooled vectors, projection.
  std::vector<double> pooled(size_t(w.probes) * w.d, 0.0);
  for (uint32_t p = 0; p < w.probes; ++p) {
    std::vector<double> s(N);
    double mx = -1e300, z = 0;
    for (int i = 0; i < N; ++i) {
      double dot = 0;
      for (uint32_t k = 0; k < w.d; ++k) dot += double(cells[size_t(i) * w.d + k]) * w.probe[p * w.d + k];
      s[i] = dot / std::sqrt(double(w.d));
      mx = std::max(mx, s[i]);
    }
    for (int i = 0; i < N; ++i) z += std::exp(s[i] - mx);
    for (int i = 0; i < N; ++i) {
      for (uint32_t k = 0; k < w.d; ++k) pooled[p * w.d + k] += std::exp(s[i] - mx) / z * cells[size_t(i) * w.d + k];
    }
  }
  for (uint32_t o = 0; o < w.out; ++o) {
    double want = w.bias[o];
    for (size_t j = 0; j < pooled.size(); ++j) want += double(w.proj[o * pooled.size() + j]) * pooled[j];
    EXPECT_NEAR(got[o], want, 1e-4 * (1 + std::fabs(want)));
  }
  // A copy is a snapshot; Reset gives the bias.
  ProbePool snap = pool;
  pool.Reset();
  float empty[2];
  pool.Output(empty);
  EXPECT_FLOAT_EQ(empty[0], 0.5f);
  float again[2];
  snap.Output(again);
  EXPECT_FLOAT_EQ(again[0], got[0]);
}

}  // namespace
}  // namespace needle
