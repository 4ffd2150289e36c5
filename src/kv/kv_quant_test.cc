#include "kv/kv_quant.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include "base/random.h"

namespace needle {
namespace {

// SIMD and reference give the same bytes, scales and snapped floats, on every
// compiled target: whole and partial groups, all-zero groups, ties (x.5 after
// scaling), signed zeros, denormals and values spanning many binades.
TEST(KvQuant, SimdEqualsReferenceExactly) {
  for (uint32_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (uint32_t n : {1u, 24u, 32u, 64u, 100u, 128u, 257u}) {
      for (int kind = 0; kind < 4; ++kind) {
        SplitMix64 rng(n * 10 + kind);
        std::vector<float> x(n);
        for (uint32_t i = 0; i < n; ++i) {
          switch (kind) {
            case 0: x[i] = static_cast<float>(rng.Normal()); break;
            case 1: x[i] = (i / 32) % 2 ? 0.0f : -0.0f; break;  // all-zero groups
            case 2: x[i] = static_cast<float>(int(rng.Next() % 254) - 127) + 0.5f; break;  // group 0: ties (scale 1)
            default: x[i] = static_cast<float>(std::ldexp(rng.Normal(), int(rng.Next() % 80) - 140)); break;
          }
        }
        if (kind == 2) x[0] = 127.0f;  // scale 1: x.5 values are exact ties
        const uint32_t groups = (n + 31) / 32;
        std::vector<int8_t> q1(n), q2(n);
        std::vector<float> s1(groups), s2(groups), a = x, b = x;
        QuantizeKvRowReference(x.data(), n, q1.data(), s1.data());
        QuantizeKvRow(x.data(), n, q2.data(), s2.data());
        EXPECT_EQ(q1, q2) << hwy::TargetName(target) << " n " << n << " kind " << kind;
        EXPECT_EQ(0, std::memcmp(s1.data(), s2.data(), groups * sizeof(float))) << hwy::TargetName(target);
        SnapToKvGridReference(a.data(), n);
        SnapToKvGrid(b.data(), n);
        EXPECT_EQ(0, std::memcmp(a.data(), b.data(), n * sizeof(float))) << hwy::TargetName(target) << " n " << n;
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

}  // namespace
}  // namespace needle
