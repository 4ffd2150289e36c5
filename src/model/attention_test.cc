#include "model/attention.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include "base/random.h"

namespace needle {
namespace {

// SIMD attention equals the scalar reference, on every compiled target, for
// several GQA group sizes, head sizes and run layouts (sinks + a wrapped window).
TEST(AttendGroup, SimdEqualsReference) {
  for (uint32_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (uint32_t heads : {1u, 2u, 3u, 4u, 6u}) {
      for (uint32_t hd : {24u, 64u, 128u}) {
        SplitMix64 rng(heads * 1000 + hd);
        const uint32_t kv_heads = 3, groups = (hd + 31) / 32, slots = 40;
        const uint32_t row = kv_heads * hd, srow = kv_heads * groups;
        std::vector<int8_t> k(slots * row), v(slots * row);
        std::vector<float> ks(slots * srow), vs(slots * srow), qw(heads * hd), qs(heads * hd);
        for (auto& x : k) x = static_cast<int8_t>(int(rng.Next() % 255) - 127);
        for (auto& x : v) x = static_cast<int8_t>(int(rng.Next() % 255) - 127);
        for (auto& x : ks) x = static_cast<float>(0.01 + rng.Uniform() * 0.02);
        for (auto& x : vs) x = static_cast<float>(0.01 + rng.Uniform() * 0.02);
        for (auto& x : qw) x = static_cast<float>(rng.Normal());
        for (auto& x : qs) x = static_cast<float>(rng.Normal());
        const uint32_t g = 1;  // kv head 1 of 3: exercises the row offsets
        KvRun runs[3] = {
            {&k[0 * row + g * hd], &ks[0 * srow + g * groups], &v[0 * row + g * hd], &vs[0 * srow + g * groups], 7, true},
            {&k[30 * row + g * hd], &ks[30 * srow + g * groups], &v[30 * row + g * hd], &vs[30 * srow + g * groups], 10, false},
            {&k[7 * row + g * hd], &ks[7 * srow + g * groups], &v[7 * row + g * hd], &vs[7 * srow + g * groups], 12, false}};
        std::vector<float> sc1(heads * 29), sc2(heads * 29), out1(heads * hd), out2(heads * hd);
        AttentionGroupArgs a{qw.data(), qs.data(), heads, hd, row, srow, runs, 3, sc1.data(), out1.data()};
        AttendGroupReference(a);
        a.scores = sc2.data();
        a.out = out2.data();
        AttendGroup(a);
        for (size_t i = 0; i < out1.size(); ++i) {
          ASSERT_NEAR(out1[i], out2[i], 1e-4f * (1.0f + std::fabs(out1[i])))
              << hwy::TargetName(target) << " heads " << heads << " hd " << hd << " i " << i;
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

TEST(AttendGroup, NoKeysGivesZeros) {
  std::vector<float> q(64, 1.0f), out(64, 5.0f), sc(1);
  AttentionGroupArgs a{q.data(), q.data(), 1, 64, 64, 2, nullptr, 0, sc.data(), out.data()};
  AttendGroup(a);
  for (float x : out) EXPECT_EQ(x, 0.0f);
}

}  // namespace
}  // namespace needle
