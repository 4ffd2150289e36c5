#include "base/fp16.h"

#include <cmath>

#include <gtest/gtest.h>

#include "base/random.h"

namespace needle {
namespace {

TEST(Fp16, EveryHalfRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    const float f = HalfToFloat(static_cast<uint16_t>(h));
    if (std::isnan(f)) {
      EXPECT_TRUE(std::isnan(HalfToFloat(FloatToHalf(f))));
      continue;
    }
    EXPECT_EQ(FloatToHalf(f), h) << h;
  }
}

TEST(Fp16, KnownValues) {
  EXPECT_EQ(FloatToHalf(1.0f), 0x3C00);
  EXPECT_EQ(FloatToHalf(-2.0f), 0xC000);
  EXPECT_EQ(FloatToHalf(65504.0f), 0x7BFF);
  EXPECT_EQ(FloatToHalf(1e6f), 0x7C00);               // overflow -> inf
  EXPECT_EQ(FloatToHalf(5.9604645e-8f), 0x0001);      // smallest subnormal
  EXPECT_EQ(FloatToHalf(2.9802322e-8f), 0x0000);      // exactly half of it: ties to even (0)
  EXPECT_EQ(FloatToHalf(1.0f + 1.0f / 2048), 0x3C00);  // tie between 1 and 1+2^-10: to even
  EXPECT_EQ(FloatToHalf(1.0f + 3.0f / 2048), 0x3C02);  // tie: to even (up)
  EXPECT_FLOAT_EQ(HalfToFloat(0x3555), 0.33325195f);
}

// Rounding is to the nearest representable half (checked against neighbours).
TEST(Fp16, RoundsToNearest) {
  SplitMix64 rng(3);
  for (int i = 0; i < 200000; ++i) {
    const float f = static_cast<float>(rng.Normal() * std::pow(10.0, rng.Uniform() * 10 - 7));
    const uint16_t h = FloatToHalf(f);
    const float r = HalfToFloat(h);
    if (std::isinf(r)) continue;
    const float up = HalfToFloat(static_cast<uint16_t>(h + 1)), down = HalfToFloat(static_cast<uint16_t>(h - 1));
    if ((h & 0x7FFF) != 0 && !std::isinf(up) && !std::isnan(up)) {
      EXPECT_LE(std::fabs(r - f), std::fabs(up - f)) << f;
    }
    if ((h & 0x7FFF) != 0 && !std::isnan(down)) {
      EXPECT_LE(std::fabs(r - f), std::fabs(down - f)) << f;
    }
  }
}

}  // namespace
}  // namespace needle
