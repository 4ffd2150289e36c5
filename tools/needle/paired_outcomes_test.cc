#include "paired_outcomes.h"

#include <gtest/gtest.h>

namespace needle::cli {
namespace {

PairedOutcomes Make(uint64_t both, uint64_t lost, uint64_t gained, uint64_t neither) {
  PairedOutcomes p;
  for (uint64_t i = 0; i < both; ++i) p.Add(true, true);
  for (uint64_t i = 0; i < lost; ++i) p.Add(true, false);
  for (uint64_t i = 0; i < gained; ++i) p.Add(false, true);
  for (uint64_t i = 0; i < neither; ++i) p.Add(false, false);
  return p;
}

TEST(PairedOutcomes, CountsEachKindOfPair) {
  const PairedOutcomes p = Make(20, 7, 4, 69);
  EXPECT_EQ(p.both, 20u);
  EXPECT_EQ(p.lost, 7u);
  EXPECT_EQ(p.gained, 4u);
  EXPECT_EQ(p.neither, 69u);
  EXPECT_EQ(p.pairs(), 100u);
  EXPECT_DOUBLE_EQ(p.DifferencePoints(), -3.0);  // 24% after vs 27% before
  PairedOutcomes q = Make(1, 0, 2, 0);
  q.Merge(p);
  EXPECT_EQ(q.pairs(), 103u);
  EXPECT_EQ(q.gained, 6u);
}

// Reference values: the exact binomial sums and the Agresti-Min formula
// evaluated independently (Python, fractions).
TEST(PairedOutcomes, McNemarExactP) {
  EXPECT_NEAR(Make(20, 7, 4, 69).McNemarP(), 1124.0 / 2048.0, 1e-12);  // 2 * (1+11+55+165+330) / 2^11
  EXPECT_NEAR(Make(0, 10, 0, 40).McNemarP(), 2.0 / 1024.0, 1e-12);
  EXPECT_NEAR(Make(0, 30, 60, 910).McNemarP(), 0.002060265680963076, 1e-12);
  EXPECT_EQ(Make(5, 0, 0, 5).McNemarP(), 1.0);   // nothing changed
  EXPECT_EQ(Make(0, 3, 3, 0).McNemarP(), 1.0);   // evenly split: capped at 1
  EXPECT_LT(Make(0, 2000, 1000, 0).McNemarP(), 1e-30);  // large counts stay finite
}

TEST(PairedOutcomes, Interval95) {
  double lo, hi;
  Make(20, 7, 4, 69).Interval95(&lo, &hi);
  EXPECT_NEAR(lo, -9.573046032652563, 1e-9);
  EXPECT_NEAR(hi, 3.690693091476093, 1e-9);
  Make(0, 30, 60, 910).Interval95(&lo, &hi);
  EXPECT_NEAR(lo, 1.137289059011408, 1e-9);
  EXPECT_NEAR(hi, 4.8507348930844, 1e-9);
  Make(50, 0, 0, 50).Interval95(&lo, &hi);  // no change in 100 cases: still about +-2 points
  EXPECT_NEAR(lo, -1.9215333333333335, 1e-9);
  EXPECT_NEAR(hi, 1.9215333333333335, 1e-9);
  Make(0, 10, 0, 0).Interval95(&lo, &hi);  // clamped to [-100, 100]
  EXPECT_GE(lo, -100.0);
  EXPECT_LE(hi, 100.0);
}

}  // namespace
}  // namespace needle::cli
