#include "base/round.h"

#include <cmath>
#include <cstdint>
#include <cstring>

#include <gtest/gtest.h>

namespace needle {
namespace {

// Equal to lrint (round half to even) on the quantizers' range [-130, 130]:
// a million spread bit patterns (tiny to large), every tie k + 0.5 and the
// floats just beside each tie and each integer.
TEST(RoundHalfEven, EqualsLrintOnTheQuantizerRange) {
  auto check = [](float x) {
    for (float v : {x, -x}) ASSERT_EQ(RoundHalfEven(v), static_cast<float>(std::lrint(v))) << v;
  };
  uint64_t checked = 0;
  for (uint32_t bits = 0; bits < 0x80000000u; bits += 1009) {
    float x;
    std::memcpy(&x, &bits, 4);
    if (!(x <= 130.0f)) break;  // positive floats increase with their bits
    check(x);
    ++checked;
  }
  EXPECT_GT(checked, 1000000u);
  for (int k = 0; k <= 130; ++k) {
    for (float base : {static_cast<float>(k), k + 0.5f}) {
      check(base);
      check(std::nextafter(base, 0.0f));
      check(std::nextafter(base, 1000.0f));
    }
  }
}

}  // namespace
}  // namespace needle
