#include "model/fast_ops.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include "base/random.h"
#include "model/ops.h"

namespace needle {
namespace {

std::vector<float> Normal(size_t n, uint64_t seed, double sd = 1.0) {
  SplitMix64 rng(seed);
  std::vector<float> v(n);
  for (float& x : v) x = static_cast<float>(rng.Normal() * sd);
  return v;
}

void ExpectClose(const std::vector<float>& want, const std::vector<float>& got, float rel, const char* what,
                 uint32_t target) {
  ASSERT_EQ(want.size(), got.size());
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_NEAR(got[i], want[i], rel * (1.0f + std::fabs(want[i]))) << what << " " << hwy::TargetName(target) << " i " << i;
  }
}

// Every SIMD op against its scalar yardstick, on every compiled target, with
// lengths that leave a scalar tail.
TEST(FastOps, AgreeWithTheScalarOps) {
  for (uint32_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (size_t n : {1u, 7u, 64u, 512u, 517u}) {
      const std::vector<float> x = Normal(n, n), scale = Normal(n, n + 1, 0.3), g = Normal(n, n + 2, 4.0);
      std::vector<float> want(n), got(n);
      ZcRmsNorm(x.data(), scale.data(), n, want.data());
      ZcRmsNormFast(x.data(), scale.data(), n, got.data());
      ExpectClose(want, got, 1e-5f, "ZcRmsNorm", target);
      RmsUnit(x.data(), n, want.data());
      got = x;
      RmsUnitFast(got.data(), n, got.data());  // in place
      ExpectClose(want, got, 1e-5f, "RmsUnit", target);
      for (size_t i = 0; i < n; ++i) want[i] = x[i] * Sigmoid(g[i]);
      got = x;
      MulSigmoid(got.data(), g.data(), n);
      ExpectClose(want, got, 1e-5f, "MulSigmoid", target);
      for (size_t i = 0; i < n; ++i) want[i] = Silu(scale[i] * g[i]);
      got = g;
      SiluScaled(got.data(), scale.data(), n);
      ExpectClose(want, got, 1e-5f, "SiluScaled", target);
    }
    for (uint32_t lanes : {1u, 4u}) {
      const uint32_t d = 77;
      const std::vector<float> x = Normal(lanes * d, 5), y = Normal(d, 6), hres = Normal(lanes * lanes, 7),
                               hpost = Normal(lanes, 8);
      std::vector<float> want(lanes * d), got(lanes * d);
      for (uint32_t r = 0; r < lanes; ++r) {
        for (uint32_t i = 0; i < d; ++i) {
          float acc = hpost[r] * y[i];
          for (uint32_t c = 0; c < lanes; ++c) acc += hres[r * lanes + c] * x[c * d + i];
          want[r * d + i] = acc;
        }
      }
      MixLanesFast(x.data(), y.data(), hres.data(), hpost.data(), lanes, d, got.data());
      ExpectClose(want, got, 1e-5f, "MixLanes", target);
    }
    for (size_t n : {3u, 4u}) {
      for (uint64_t seed = 0; seed < 20; ++seed) {
        std::vector<float> want = Normal(n * n, 100 + seed, 3.0), got = want;
        SinkhornInPlace(want.data(), n);
        SinkhornFast(got.data(), n);
        ExpectClose(want, got, 2e-5f, "Sinkhorn", target);
        // The last pass normalises columns: each sums to 1.
        for (size_t c = 0; c < n; ++c) {
          float col = 0.0f;
          for (size_t r = 0; r < n; ++r) col += got[r * n + c];
          EXPECT_NEAR(col, 1.0f, 1e-5f);
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace
}  // namespace needle
