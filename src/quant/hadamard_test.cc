#include "quant/hadamard.h"

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include <cmath>
#include <cstdint>
#include <vector>

namespace needle {
namespace {

// Deterministic uniform(-1, 1) values.
std::vector<float> Pseudorandom(size_t n, uint64_t seed) {
  std::vector<float> v(n);
  uint64_t s = seed;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = static_cast<float>(static_cast<double>(s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
  }
  return v;
}

// Unnormalised Sylvester matrix built literally: H_1 = [1], H_2k = [[H, H], [H, -H]].
std::vector<std::vector<int>> Sylvester(size_t n) {
  std::vector<std::vector<int>> h = {{1}};
  while (h.size() < n) {
    const size_t k = h.size();
    std::vector<std::vector<int>> next(2 * k, std::vector<int>(2 * k));
    for (size_t i = 0; i < k; ++i) {
      for (size_t j = 0; j < k; ++j) {
        next[i][j] = h[i][j];
        next[i][j + k] = h[i][j];
        next[i + k][j] = h[i][j];
        next[i + k][j + k] = -h[i][j];
      }
    }
    h = std::move(next);
  }
  return h;
}

TEST(Hadamard, NextPowerOfTwo) {
  EXPECT_EQ(NextPowerOfTwo(0), 1u);
  EXPECT_EQ(NextPowerOfTwo(1), 1u);
  EXPECT_EQ(NextPowerOfTwo(2), 2u);
  EXPECT_EQ(NextPowerOfTwo(3), 4u);
  EXPECT_EQ(NextPowerOfTwo(96), 128u);
  EXPECT_EQ(NextPowerOfTwo(128), 128u);
  EXPECT_EQ(NextPowerOfTwo(129), 256u);
  EXPECT_TRUE(IsPowerOfTwo(64));
  EXPECT_FALSE(IsPowerOfTwo(0));
  EXPECT_FALSE(IsPowerOfTwo(96));
}

TEST(Hadamard, MatchesExplicitSylvesterProduct) {
  for (size_t n = 1; n <= 256; n *= 2) {
    const auto h = Sylvester(n);
    const std::vector<float> x = Pseudorandom(n, 7 + n);
    std::vector<float> fast = x;
    std::vector<float> raw = x;
    FastWalshHadamard(fast.data(), n);
    FastWalshHadamardUnnormalised(raw.data(), n);
    const double scale = 1.0 / std::sqrt(static_cast<double>(n));
    for (size_t j = 0; j < n; ++j) {
      double expect = 0.0;  // (x · H)_j
      for (size_t i = 0; i < n; ++i) expect += x[i] * h[i][j];
      ASSERT_NEAR(raw[j], expect, 1e-5 * std::sqrt(static_cast<double>(n))) << "n=" << n << " j=" << j;
      ASSERT_NEAR(fast[j], expect * scale, 1e-5) << "n=" << n << " j=" << j;
    }
  }
}

TEST(Hadamard, IsAnInvolution) {
  for (size_t n = 1; n <= 1024; n *= 2) {
    const std::vector<float> x = Pseudorandom(n, 100 + n);
    std::vector<float> y = x;
    FastWalshHadamard(y.data(), n);
    FastWalshHadamard(y.data(), n);
    for (size_t i = 0; i < n; ++i) ASSERT_NEAR(y[i], x[i], 1e-5) << "n=" << n << " i=" << i;
  }
}

TEST(Hadamard, PreservesNorm) {
  for (size_t n = 1; n <= 1024; n *= 2) {
    std::vector<float> x = Pseudorandom(n, 200 + n);
    double before = 0.0, after = 0.0;
    for (float v : x) before += static_cast<double>(v) * v;
    FastWalshHadamard(x.data(), n);
    for (float v : x) after += static_cast<double>(v) * v;
    EXPECT_NEAR(after, before, 1e-5 * before) << "n=" << n;
  }
}

TEST(Hadamard, UnitVectorMapsToRowOfMatrix) {
  // e_0 · W_n = (1/sqrt(n)) * all-ones; e_1 · W_n alternates in sign.
  const size_t n = 8;
  std::vector<float> e0(n, 0.0f), e1(n, 0.0f);
  e0[0] = 1.0f;
  e1[1] = 1.0f;
  FastWalshHadamard(e0.data(), n);
  FastWalshHadamard(e1.data(), n);
  const float s = 1.0f / std::sqrt(8.0f);
  for (size_t j = 0; j < n; ++j) {
    EXPECT_FLOAT_EQ(e0[j], s);
    EXPECT_FLOAT_EQ(e1[j], (j % 2 == 0) ? s : -s);
  }
}

// The SIMD butterflies equal the scalar ones bit for bit, on every compiled target and size.
TEST(Hadamard, SimdEqualsReferenceExactly) {
  for (uint32_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (size_t n = 1; n <= 4096; n <<= 1) {
      std::vector<float> a = Pseudorandom(n, n * 7 + 1), b = a;
      FastWalshHadamardUnnormalised(a.data(), n);
      FastWalshHadamardUnnormalisedReference(b.data(), n);
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(a[i], b[i]) << hwy::TargetName(target) << " n " << n << " i " << i;
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// Normalised, and blocks of 128 in registers (FastWalshHadamard128Blocks, the
// CQ rotation): the reference butterflies times the same float scale, bit for
// bit, on every target, into another buffer and in place.
TEST(Hadamard, NormalisedAndBlocksOf128EqualTheReferenceExactly) {
  for (uint32_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (size_t n = 1; n <= 2048; n <<= 1) {
      std::vector<float> a = Pseudorandom(n, n * 5 + 3), want = a;
      FastWalshHadamardUnnormalisedReference(want.data(), n);
      const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(n)));
      for (float& v : want) v *= scale;
      FastWalshHadamard(a.data(), n);
      for (size_t i = 0; i < n; ++i) ASSERT_EQ(a[i], want[i]) << hwy::TargetName(target) << " n " << n << " i " << i;
    }
    const size_t blocks = 5;
    const std::vector<float> in = Pseudorandom(blocks * 128, 99);
    std::vector<float> want = in, out(in.size()), inplace = in;
    for (size_t b = 0; b < blocks; ++b) FastWalshHadamard(want.data() + b * 128, 128);
    FastWalshHadamard128Blocks(in.data(), out.data(), blocks);
    FastWalshHadamard128Blocks(inplace.data(), inplace.data(), blocks);
    for (size_t i = 0; i < in.size(); ++i) {
      ASSERT_EQ(out[i], want[i]) << hwy::TargetName(target) << " i " << i;
      ASSERT_EQ(inplace[i], want[i]) << hwy::TargetName(target) << " i " << i;
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace
}  // namespace needle
