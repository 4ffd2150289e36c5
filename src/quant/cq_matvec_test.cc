#include "quant/cq_matvec.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include "base/random.h"
#include "quant/codebook.h"

namespace needle {
namespace {

struct Case {
  uint32_t rows, in, bits;
};

struct Prepared {
  std::vector<float> w;
  std::vector<uint8_t> blob;
  CqMatrixView view;
  CqLevelsQ8 lv;
};

const std::array<float, kCodebookLen> kCodebook = ComputeHeaderCodebook(kCqGroup);

Prepared Make(const Case& c, uint64_t seed) {
  Prepared p;
  SplitMix64 rng(seed);
  p.w.resize(size_t(c.rows) * c.in);
  for (float& v : p.w) v = static_cast<float>(rng.Normal() * 0.05);
  p.blob.resize(CqBlobBytes(c.rows, c.in, c.bits));
  CqQuantize(p.w.data(), c.rows, c.in, c.bits, kCodebook, p.blob.data());
  p.view = MakeCqMatrixView(p.blob.data(), c.rows, c.in, c.bits, kCodebook);
  p.lv = QuantizeLevels(p.view.levels);
  return p;
}

struct Act {
  std::vector<float> x, rot;
  std::vector<int8_t> q;
  std::vector<float> scale;
  std::vector<int32_t> sum;
  ActivationQ8 a;
};

Act MakeAct(uint32_t in, uint32_t fb, uint64_t seed) {
  Act r;
  SplitMix64 rng(seed);
  r.x.resize(in);
  for (float& v : r.x) v = static_cast<float>(rng.Normal());
  const uint32_t in_pad = static_cast<uint32_t>(CqPaddedIn(in));
  r.rot.resize(in_pad);
  r.q.resize(in_pad);
  r.scale.resize(in_pad / kCqGroup);
  r.sum.resize(in_pad / kCqGroup);
  r.a.q = r.q.data();
  r.a.scale = r.scale.data();
  r.a.sum = r.sum.data();
  RotateForCq(r.x.data(), in, r.rot.data());
  QuantizeActivation(r.rot.data(), in_pad, fb, r.a);
  return r;
}

// The SIMD quantizer equals the scalar one exactly (codes, planar order, scales),
// on every compiled target and field width, including all-zero groups.
TEST(QuantizeActivation, SimdEqualsReferenceExactly) {
  for (uint32_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (uint32_t fb : {2u, 3u, 4u, 8u}) {
      const uint32_t in = 300, in_pad = static_cast<uint32_t>(CqPaddedIn(in));
      SplitMix64 rng(fb);
      std::vector<float> x(in, 0.0f), rot(in_pad);
      for (uint32_t k = 0; k < 200; ++k) x[k] = static_cast<float>(rng.Normal() * (k % 7 + 1));
      RotateForCq(x.data(), in, rot.data());
      std::fill(rot.begin() + 256, rot.end(), 0.0f);  // the last group all zero
      rot[3] = 127.5f * rot[7] / 127.0f;             // near a rounding tie
      std::vector<int8_t> q1(in_pad, -99), q2(in_pad, -99);
      std::vector<float> s1(in_pad / kCqGroup), s2(in_pad / kCqGroup);
      std::vector<int32_t> sum1(in_pad / kCqGroup, -1), sum2(in_pad / kCqGroup, -1);
      ActivationQ8 a1{q1.data(), s1.data(), sum1.data()}, a2{q2.data(), s2.data(), sum2.data()};
      QuantizeActivationReference(rot.data(), in_pad, fb, a1);
      QuantizeActivation(rot.data(), in_pad, fb, a2);
      ASSERT_EQ(q1, q2) << hwy::TargetName(target) << " field bits " << fb;
      ASSERT_EQ(s1, s2) << hwy::TargetName(target) << " field bits " << fb;
      ASSERT_EQ(sum1, sum2) << hwy::TargetName(target) << " field bits " << fb;
      for (uint32_t g = 0; g < in_pad / kCqGroup; ++g) {  // the sums are of the group's codes
        int32_t total = 0;
        for (uint32_t k = 0; k < kCqGroup; ++k) total += q1[g * kCqGroup + k];
        EXPECT_EQ(sum1[g], total) << "group " << g;
      }
      EXPECT_EQ(a2.field_bits, fb);
      EXPECT_EQ(a2.in_pad, in_pad);
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// {9, 4500, *}: more than 32 groups per row (the VNNI tile stages the activations' constants 32 groups at a time).
const Case kCases[] = {{64, 128, 2}, {33, 96, 2}, {17, 300, 3}, {40, 256, 4}, {31, 129, 4}, {24, 200, 5}, {8, 512, 5}, {9, 4500, 2}, {9, 4500, 3}, {9, 4500, 4}};

TEST(CqMatVecA8, ReferenceApproximatesTheFloatProduct) {
  for (const Case& c : kCases) {
    const Prepared p = Make(c, 1);
    const Act act = MakeAct(c.in, CqFieldBits(c.bits), 2);
    std::vector<float> y(c.rows), deq(c.in);
    CqMatVecA8Reference(p.view, p.lv, act.a, 0, c.rows, y.data());
    double err = 0, ref = 0;
    for (uint32_t r = 0; r < c.rows; ++r) {
      CqDequantizeRow(p.view, r, deq.data());
      double exact = 0;
      for (uint32_t k = 0; k < c.in; ++k) exact += double(deq[k]) * act.x[k];
      err += (y[r] - exact) * (y[r] - exact);
      ref += exact * exact;
    }
    // int8 activations and int8 levels cost well under 1% of the signal.
    EXPECT_LT(std::sqrt(err / ref), 0.02) << c.rows << "x" << c.in << " bits " << c.bits;
  }
}

// Every compiled SIMD target against the scalar reference.
TEST(CqMatVecA8, SimdEqualsReferenceOnEveryTarget) {
  for (uint32_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (const Case& c : kCases) {
      const Prepared p = Make(c, 3);
      const Act act = MakeAct(c.in, CqFieldBits(c.bits), 4);
      std::vector<float> ref(c.rows), fast(c.rows);
      CqMatVecA8Reference(p.view, p.lv, act.a, 0, c.rows, ref.data());
      CqMatVecA8(p.view, p.lv, act.a, 0, c.rows, fast.data());
      for (uint32_t r = 0; r < c.rows; ++r) {
        EXPECT_NEAR(fast[r], ref[r], 1e-4f * (1.0f + std::fabs(ref[r]))) << hwy::TargetName(target) << " bits " << c.bits << " row " << r;
      }
      // A row sub-range writes only its rows.
      std::vector<float> part(c.rows, -7.0f);
      CqMatVecA8(p.view, p.lv, act.a, 3, c.rows - 2, part.data());
      for (uint32_t r = 3; r < c.rows - 2; ++r) EXPECT_NEAR(part[r - 3], ref[r], 1e-4f * (1.0f + std::fabs(ref[r])));
      EXPECT_EQ(part[c.rows - 5 + 1], -7.0f);
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(CqMatMulA8, BatchEqualsOneAtATime) {
  for (const Case& c : kCases) {
    const Prepared p = Make(c, 5);
    std::vector<Act> acts;
    std::vector<ActivationQ8> as;
    for (int b = 0; b < 7; ++b) acts.push_back(MakeAct(c.in, CqFieldBits(c.bits), 10 + b));
    for (auto& a : acts) as.push_back(a.a);
    std::vector<float> batch(7 * c.rows);
    CqMatMulA8(p.view, p.lv, as.data(), 7, 0, c.rows, batch.data(), c.rows);
    for (int b = 0; b < 7; ++b) {
      std::vector<float> one(c.rows);
      CqMatVecA8(p.view, p.lv, as[b], 0, c.rows, one.data());
      for (uint32_t r = 0; r < c.rows; ++r) EXPECT_EQ(batch[b * c.rows + r], one[r]) << "bits " << c.bits;
    }
  }
}

// Batches through CqMatMulA8 (four rows per vector on AVX3_DL, one at a time
// after the last multiple of four): every target, batches 1-11 (a tile of 8
// and a rest), row ranges that start off a multiple of four and end with a
// remainder, against the reference; rows outside the range untouched.
TEST(CqMatMulA8, BatchesEqualTheReferenceOnEveryTarget) {
  for (uint32_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (const Case& c : kCases) {
      const Prepared p = Make(c, 6);
      for (uint32_t batch : {1u, 3u, 11u}) {
        std::vector<Act> acts;
        std::vector<ActivationQ8> as;
        for (uint32_t b = 0; b < batch; ++b) acts.push_back(MakeAct(c.in, CqFieldBits(c.bits), 40 + b));
        for (auto& a : acts) as.push_back(a.a);
        for (auto [r0, r1] : {std::pair<uint32_t, uint32_t>{0, c.rows}, {1, c.rows - 2}}) {
          const uint32_t n = r1 - r0;
          std::vector<float> got(size_t(batch) * (n + 1), -7.0f);
          CqMatMulA8(p.view, p.lv, as.data(), batch, r0, r1, got.data(), n + 1);
          for (uint32_t b = 0; b < batch; ++b) {
            std::vector<float> ref(n);
            CqMatVecA8Reference(p.view, p.lv, as[b], r0, r1, ref.data());
            for (uint32_t r = 0; r < n; ++r) {
              ASSERT_NEAR(got[b * (n + 1) + r], ref[r], 1e-4f * (1.0f + std::fabs(ref[r])))
                  << hwy::TargetName(target) << " bits " << c.bits << " batch " << batch << " b " << b << " row " << r0 + r;
            }
            EXPECT_EQ(got[b * (n + 1) + n], -7.0f) << "wrote past its rows";
          }
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(CqMatVecA8, LevelsQuantization) {
  const CqLevelsQ8 q = QuantizeLevels(MakeCqLevels(2, kCodebook));
  EXPECT_EQ(q.level[3], 127);
  EXPECT_EQ(q.level[0], -127);
  EXPECT_NEAR(q.level[1] * q.scale, kCodebook[1], q.scale / 2);
  const CqLevelsQ8 t = QuantizeLevels(MakeCqLevels(kTernaryBits, kCodebook));
  EXPECT_EQ(t.level[0], 0);
  EXPECT_EQ(t.level[1], 127);  // +c of {0, c, -2c, -c}: the unused -2c saturates
  EXPECT_EQ(t.level[2], -127);
  EXPECT_EQ(t.level[3], -127);
}

}  // namespace
}  // namespace needle
