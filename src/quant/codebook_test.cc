#include "quant/codebook.h"

#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "base/error.h"

namespace needle {
namespace {

TEST(LloydMax, TwoBitKnownValues) {
  const auto c = LloydMaxGaussian(4);
  ASSERT_EQ(c.size(), 4u);
  EXPECT_NEAR(c[0], -1.5104176, 1e-6);
  EXPECT_NEAR(c[1], -0.4527800, 1e-6);
  EXPECT_NEAR(c[2], 0.4527800, 1e-6);
  EXPECT_NEAR(c[3], 1.5104176, 1e-6);
}

TEST(LloydMax, TernaryLevel) {
  const auto c = LloydMaxGaussian(3);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[1], 0.0);
  EXPECT_NEAR(c[2], kTernaryLevel, 1e-6);
  EXPECT_NEAR(c[0], -kTernaryLevel, 1e-6);
  EXPECT_NEAR(c[2], 1.2240064, 1e-6);
}

TEST(LloydMax, SymmetricAscendingAndSelfConsistent) {
  for (int levels : {2, 3, 4, 8, 16}) {
    const auto c = LloydMaxGaussian(levels);
    ASSERT_EQ(c.size(), static_cast<size_t>(levels));
    for (size_t i = 0; i < c.size(); ++i) {
      EXPECT_EQ(c[i], -c[c.size() - 1 - i]) << "levels=" << levels << " i=" << i;
      if (i > 0) {
        EXPECT_LT(c[i - 1], c[i]);
      }
    }
    // Fixed point: each centroid is the conditional mean of its cell.
    const double inv_sqrt2 = 1.0 / std::sqrt(2.0);
    const auto pdf = [](double x) { return std::isinf(x) ? 0.0 : std::exp(-0.5 * x * x) / std::sqrt(2.0 * std::numbers::pi); };
    const auto cdf = [&](double x) { return 0.5 * std::erfc(-x * inv_sqrt2); };
    for (size_t i = 0; i < c.size(); ++i) {
      const double a = i == 0 ? -INFINITY : 0.5 * (c[i - 1] + c[i]);
      const double b = i + 1 == c.size() ? INFINITY : 0.5 * (c[i] + c[i + 1]);
      const double mean = (pdf(a) - pdf(b)) / (cdf(b) - cdf(a));
      EXPECT_NEAR(c[i], mean, 1e-9) << "levels=" << levels << " i=" << i;
    }
  }
  EXPECT_NEAR(LloydMaxGaussian(2)[1], std::sqrt(2.0 / std::numbers::pi), 1e-14);  // one bit: E|X|
}

TEST(LloydMax, KnownDistortion) {
  EXPECT_NEAR(LloydMaxGaussianMse(LloydMaxGaussian(4)), 0.1175, 1e-4);
  EXPECT_NEAR(LloydMaxGaussianMse(LloydMaxGaussian(8)), 0.03455, 1e-4);
  EXPECT_NEAR(LloydMaxGaussianMse(LloydMaxGaussian(16)), 0.009497, 1e-5);
  EXPECT_NEAR(LloydMaxGaussianMse(LloydMaxGaussian(2)), 1.0 - 2.0 / std::numbers::pi, 1e-12);
  EXPECT_NEAR(LloydMaxGaussianMse(LloydMaxGaussian(3)), 0.1902, 1e-4);
  EXPECT_NEAR(LloydMaxGaussianMse({0.0}), 1.0, 1e-12);  // one level: the variance
}

TEST(LloydMax, KnownFourAndThreeBitLevels) {
  // Max (1960): 8 levels ±0.2451, ±0.7560, ±1.3440, ±2.1520; 16 levels ±0.1284 ... ±2.7326.
  const auto c8 = LloydMaxGaussian(8);
  EXPECT_NEAR(c8[4], 0.2451, 1e-4);
  EXPECT_NEAR(c8[5], 0.7560, 1e-4);
  EXPECT_NEAR(c8[6], 1.3439, 1e-4);
  EXPECT_NEAR(c8[7], 2.1519, 1e-4);
  const auto c16 = LloydMaxGaussian(16);
  EXPECT_NEAR(c16[8], 0.1284, 1e-4);
  EXPECT_NEAR(c16[15], 2.7326, 1e-4);
}

TEST(LloydMax, BadLevelsThrow) {
  EXPECT_THROW(LloydMaxGaussian(0), Error);
  EXPECT_THROW(ComputeHeaderCodebook(0), Error);
}

TEST(HeaderCodebook, LayoutAndScaling) {
  const auto cb = ComputeHeaderCodebook(128);
  const double s = 1.0 / std::sqrt(128.0);
  EXPECT_EQ(CodebookOffset(2), 0);
  EXPECT_EQ(CodebookOffset(3), 4);
  EXPECT_EQ(CodebookOffset(4), 12);
  for (int bits = 2; bits <= 4; ++bits) {
    const auto c = LloydMaxGaussian(1 << bits);
    for (size_t i = 0; i < c.size(); ++i) {
      EXPECT_EQ(cb[CodebookOffset(bits) + i], static_cast<float>(c[i] * s)) << "bits=" << bits << " i=" << i;
    }
  }
  EXPECT_NEAR(cb[2], 0.4527800 / std::sqrt(128.0), 1e-7);  // ≈ 0.04002
}

}  // namespace
}  // namespace needle
