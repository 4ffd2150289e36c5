#include "model/attention.h"

#include <cmath>
#include <vector>

#include <gtest/gtest.h>
#include <hwy/targets.h>

#include "base/random.h"
#include "kv/window_sink_cache.h"

namespace needle {
namespace {

// Each head's slice of a query buffer (hd floats apart) onto the int8 grid.
void SnapToHeads(std::vector<float>& q, uint32_t hd) {
  for (size_t i = 0; i + hd <= q.size(); i += hd) SnapToKvGrid(q.data() + i, hd);
}

// A test's K/V scales, [slot][kv head][group], and the same by group
// ([kv head][group][slot]): a run points into either, as a chunk's own rows
// and the cache do.
struct Scales {
  Scales(const std::vector<float>& k, const std::vector<float>& v, uint32_t slots, uint32_t srow, uint32_t groups)
      : ks(k), vs(v), ks_by_group(k.size()), vs_by_group(v.size()), slots(slots), srow(srow), groups(groups) {
    for (uint32_t s = 0; s < slots; ++s) {
      for (uint32_t i = 0; i < srow; ++i) {
        ks_by_group[size_t(i) * slots + s] = ks[size_t(s) * srow + i];
        vs_by_group[size_t(i) * slots + s] = vs[size_t(s) * srow + i];
      }
    }
  }
  // r with the scales of kv head g from slot `first` on.
  KvRun Point(KvRun r, bool by_group, uint32_t g, uint32_t first) const {
    if (by_group) {
      const size_t at = size_t(g) * groups * slots + first;
      r.ks = &ks_by_group[at], r.vs = &vs_by_group[at], r.scale_stride = 1, r.scale_group_stride = slots;
    } else {
      const size_t at = size_t(first) * srow + size_t(g) * groups;
      r.ks = &ks[at], r.vs = &vs[at], r.scale_stride = srow, r.scale_group_stride = 1;
    }
    return r;
  }
  // Kv head g's rows from slot `first` on (rows `row` values apart), with their scales.
  KvRun Run(const std::vector<int8_t>& k, const std::vector<int8_t>& v, uint32_t row, uint32_t hd, uint32_t g,
            uint32_t first, uint32_t count, bool sink, bool by_group) const {
    const size_t at = size_t(first) * row + size_t(g) * hd;
    return Point({&k[at], nullptr, &v[at], nullptr, count, sink}, by_group, g, first);
  }
  const std::vector<float>& ks;
  const std::vector<float>& vs;
  std::vector<float> ks_by_group, vs_by_group;
  uint32_t slots, srow, groups;
};

// SIMD attention equals the scalar reference, on every compiled target, for
// several GQA group sizes, head sizes and run layouts (sinks + a wrapped
// window), with the scales in either layout.
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
        SnapToHeads(qw, hd);  // queries on the int8 grid, as the model passes them
        SnapToHeads(qs, hd);
        const uint32_t g = 1;  // kv head 1 of 3: exercises the row offsets
        const Scales scales(ks, vs, slots, srow, groups);
        for (bool by_group : {false, true}) {
          auto run = [&](uint32_t first, uint32_t count, bool sink) {
            return scales.Run(k, v, row, hd, g, first, count, sink, by_group);
          };
          KvRun runs[3] = {run(0, 7, true), run(30, 10, false), run(7, 12, false)};
          // The kernel's scratch may start at any float (a kv group's share of the
          // session's scratch): one float past an aligned start.
          std::vector<float> sc1(heads * 29), sc2(heads * 29 + 1), out1(heads * hd), out2(heads * hd);
          AttentionGroupArgs a{qw.data(), qs.data(), heads, hd, row, runs, 3, sc1.data(), out1.data()};
          AttendGroupReference(a);
          a.scores = sc2.data() + 1;
          a.out = out2.data();
          AttendGroup(a);
          for (size_t i = 0; i < out1.size(); ++i) {
            ASSERT_NEAR(out1[i], out2[i], 1e-4f * (1.0f + std::fabs(out1[i])))
                << hwy::TargetName(target) << " heads " << heads << " hd " << hd << " by group " << by_group << " i " << i;
          }
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// Decode-length windows: the integer kernel's 16-key blocks with a partial
// last block in every run, odd totals (a value pair padded with a zero weight),
// the most keys it takes (1008) and more (the float path), extreme int8 values
// (-128 as a restored file may hold, with flat scores: the largest integer
// sums) and peaked scores (weights far below the largest).
TEST(AttendGroup, LongWindowsEqualReference) {
  for (uint32_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (uint32_t heads : {1u, 2u, 4u}) {
      for (uint32_t hd : {64u, 128u}) {
        for (uint32_t total : {17u, 252u + 256u, 509u, 1008u, 1200u}) {
          for (int kind = 0; kind < 3; ++kind) {  // random, extreme values with flat scores, peaked scores
            SplitMix64 rng(heads * 7919 + hd * 31 + total + kind);
            const uint32_t kv_heads = 2, groups = hd / 32, slots = total + 5;
            const uint32_t row = kv_heads * hd, srow = kv_heads * groups;
            std::vector<int8_t> k(slots * row), v(slots * row);
            std::vector<float> ks(slots * srow), vs(slots * srow), qw(heads * hd), qs(heads * hd);
            for (auto& x : k) x = kind == 1 ? int8_t(0) : static_cast<int8_t>(int(rng.Next() % 255) - 127);
            for (auto& x : v) x = kind == 1 ? int8_t(rng.Next() % 2 ? -128 : 127) : static_cast<int8_t>(int(rng.Next() % 255) - 127);
            for (auto& x : ks) x = static_cast<float>(0.01 + rng.Uniform() * (kind == 2 ? 0.2 : 0.02));
            for (auto& x : vs) x = static_cast<float>(0.001 + rng.Uniform() * 0.03);
            for (auto& x : qw) x = static_cast<float>(rng.Normal() * (kind == 2 ? 4.0 : 1.0));
            for (auto& x : qs) x = static_cast<float>(rng.Normal());
            SnapToHeads(qw, hd);
            SnapToHeads(qs, hd);
            const uint32_t g = 1, sinks = total / 3, tail = std::min(20u, (total - sinks) / 2), first = total - sinks - tail;  // runs: sinks, a wrapped ring
            const Scales scales(ks, vs, slots, srow, groups);
            for (bool by_group : {false, true}) {
              auto run = [&](uint32_t slot, uint32_t count, bool sink) {
                return scales.Run(k, v, row, hd, g, slot, count, sink, by_group);
              };
              KvRun runs[3] = {run(0, sinks, true), run(sinks + 5, first, false), run(sinks, tail, false)};
              std::vector<float> sc1(heads * total), sc2(heads * total), out1(heads * hd), out2(heads * hd, 9.0f);
              AttentionGroupArgs a{qw.data(), qs.data(), heads, hd, row, runs, 3, sc1.data(), out1.data()};
              AttendGroupReference(a);
              a.scores = sc2.data();
              a.out = out2.data();
              AttendGroup(a);
              for (size_t i = 0; i < out1.size(); ++i) {
                ASSERT_NEAR(out1[i], out2[i], 1e-4f * (1.0f + std::fabs(out1[i])))
                    << hwy::TargetName(target) << " heads " << heads << " hd " << hd << " total " << total << " kind "
                    << kind << " by group " << by_group << " i " << i;
              }
            }
          }
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
}

// The block kernel (query rows in lanes, online softmax) equals the token-by-token
// reference: several GQA sizes, head sizes, token counts, sinks or none, a
// wrapped window plus a chunk run, windows that start at different keys
// (some blocks entirely invisible to some tokens).
TEST(AttendBlock, SimdEqualsReference) {
  uint32_t checked = 0;
  for (uint32_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (uint32_t heads : {1u, 2u, 4u}) {
      for (uint32_t hd : {32u, 64u, 128u}) {
        for (uint32_t sinks : {0u, 45u}) {
          SplitMix64 rng(heads * 1000 + hd + sinks);
          const uint32_t kv_heads = 2, groups = hd / 32, slots = 150;
          const uint32_t row = kv_heads * hd, srow = kv_heads * groups;
          std::vector<int8_t> k(slots * row), v(slots * row);
          std::vector<float> ks(slots * srow), vs(slots * srow);
          for (auto& x : k) x = static_cast<int8_t>(int(rng.Next() % 255) - 127);
          for (auto& x : v) x = static_cast<int8_t>(int(rng.Next() % 255) - 127);
          for (auto& x : ks) x = static_cast<float>(0.01 + rng.Uniform() * 0.05);
          for (auto& x : vs) x = static_cast<float>(0.01 + rng.Uniform() * 0.02);
          const uint32_t tokens = 16 / heads;
          const uint32_t qstride = 3 * heads * hd;  // room around the group's heads
          std::vector<float> qw(tokens * qstride), qs(tokens * qstride);
          for (auto& x : qw) x = static_cast<float>(rng.Normal());
          for (auto& x : qs) x = static_cast<float>(rng.Normal());
          SnapToHeads(qw, hd);
          SnapToHeads(qs, hd);
          const uint32_t g = 1;
          const Scales scales(ks, vs, slots, srow, groups);
          for (bool by_group : {false, true}) {
            auto run = [&](uint32_t first, uint32_t count) {
              return scales.Run(k, v, row, hd, g, first, count, false, by_group);
            };
            KvRun sink_runs[1] = {run(0, sinks)};
            // Window sequence: 40 keys at slots 100.., 37 at slots 50.. (a wrapped ring), then the chunk.
            KvRun window_runs[3] = {run(100, 40), run(50, 37), run(60, tokens)};
            std::vector<uint32_t> begin(tokens), end(tokens);
            for (uint32_t t = 0; t < tokens; ++t) {
              end[t] = 77 + t + 1;
              begin[t] = t % 3 == 0 ? 0 : std::min<uint32_t>(end[t] - 1, 33 + 3 * t);  // some windows skip whole blocks
            }
            AttentionBlockArgs a{};
            a.q_window = qw.data() + heads * hd;
            a.q_sink = qs.data() + heads * hd;
            a.q_stride = qstride;
            a.tokens = tokens;
            a.heads = heads;
            a.head_dim = hd;
            a.row_stride = row;
            a.sink_runs = sink_runs;
            a.num_sink_runs = sinks ? 1 : 0;
            a.window_runs = window_runs;
            a.num_window_runs = 3;
            a.window_begin = begin.data();
            a.window_end = end.data();
            std::vector<float> out1(tokens * qstride, 7.0f), out2(tokens * qstride, 7.0f);
            std::vector<float> scores(heads * (sinks + 77 + tokens));
            a.out = out1.data();
            a.out_stride = qstride;
            AttendBlockReference(a, scores.data());
            a.out = out2.data();
            if (!AttendBlock(a)) continue;  // a target without the kernel: the caller falls back
            ++checked;
            for (size_t i = 0; i < out1.size(); ++i) {
              ASSERT_NEAR(out1[i], out2[i], 1e-4f * (1.0f + std::fabs(out1[i])))
                  << hwy::TargetName(target) << " heads " << heads << " hd " << hd << " sinks " << sinks << " by group "
                  << by_group << " i " << i;
            }
          }
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
  EXPECT_GT(checked, 0u);  // x86 and Arm always have a target with the kernel
}

// Long blocks (the online softmax over many key blocks): a full needle2 window
// and longer, with extreme values (-128) and flat scores, peaked scores, and V
// scales spread over 300x.
TEST(AttendBlock, LongBlocksEqualReference) {
  uint32_t checked = 0;
  for (uint32_t target : hwy::SupportedAndGeneratedTargets()) {
    hwy::SetSupportedTargetsForTest(target);
    for (uint32_t hd : {64u, 128u}) {
      for (uint32_t total : {252u + 256u, 1008u, 1200u}) {
        for (int kind = 0; kind < 4; ++kind) {  // random, extreme with flat scores, peaked, spread scales
          SplitMix64 rng(hd * 31 + total + kind);
          const uint32_t heads = 2, tokens = 8, kv_heads = 2, groups = hd / 32, slots = total + 8;
          const uint32_t row = kv_heads * hd, srow = kv_heads * groups, sinks = total / 2;
          std::vector<int8_t> k(slots * row), v(slots * row);
          std::vector<float> ks(slots * srow), vs(slots * srow), qw(tokens * heads * hd), qs(tokens * heads * hd);
          for (auto& x : k) x = kind == 1 ? int8_t(0) : static_cast<int8_t>(int(rng.Next() % 255) - 127);
          for (auto& x : v) x = kind == 1 ? int8_t(rng.Next() % 2 ? -128 : 127) : static_cast<int8_t>(int(rng.Next() % 255) - 127);
          for (auto& x : ks) x = static_cast<float>(0.01 + rng.Uniform() * (kind == 2 ? 0.2 : 0.02));
          for (auto& x : vs) x = static_cast<float>(kind == 3 ? 0.0001 + rng.Uniform() * 0.03 : 0.01 + rng.Uniform() * 0.02);
          for (auto& x : qw) x = static_cast<float>(rng.Normal() * (kind == 2 ? 4.0 : 1.0));
          for (auto& x : qs) x = static_cast<float>(rng.Normal());
          SnapToHeads(qw, hd);
          SnapToHeads(qs, hd);
          const uint32_t g = 1, window = total - sinks;
          const Scales scales(ks, vs, slots, srow, groups);
          for (bool by_group : {false, true}) {
            auto run = [&](uint32_t first, uint32_t count) {
              return scales.Run(k, v, row, hd, g, first, count, false, by_group);
            };
            KvRun sink_runs[1] = {run(0, sinks)};
            KvRun window_runs[2] = {run(sinks + 30, window - 30), run(sinks, 30)};  // a wrapped ring
            std::vector<uint32_t> begin(tokens), end(tokens);
            for (uint32_t t = 0; t < tokens; ++t) end[t] = window - tokens + t + 1, begin[t] = t;  // sliding
            AttentionBlockArgs a{};
            a.q_window = qw.data();
            a.q_sink = qs.data();
            a.q_stride = heads * hd;
            a.tokens = tokens;
            a.heads = heads;
            a.head_dim = hd;
            a.row_stride = row;
            a.sink_runs = sink_runs;
            a.num_sink_runs = 1;
            a.window_runs = window_runs;
            a.num_window_runs = 2;
            a.window_begin = begin.data();
            a.window_end = end.data();
            a.out_stride = heads * hd;
            std::vector<float> out1(tokens * heads * hd), out2(tokens * heads * hd, 7.0f), scores(heads * total);
            a.out = out1.data();
            AttendBlockReference(a, scores.data());
            a.out = out2.data();
            if (!AttendBlock(a)) continue;
            ++checked;
            for (size_t i = 0; i < out1.size(); ++i) {
              ASSERT_NEAR(out1[i], out2[i], 1e-4f * (1.0f + std::fabs(out1[i])))
                  << hwy::TargetName(target) << " hd " << hd << " total " << total << " kind " << kind << " by group "
                  << by_group << " i " << i;
            }
          }
        }
      }
    }
  }
  hwy::SetSupportedTargetsForTest(0);
  EXPECT_GT(checked, 0u);
}

TEST(AttendBlock, RefusesWhatItCannotDo) {
  std::vector<float> q(16 * 256), out(16 * 256);
  uint32_t b = 0, e = 1;
  AttentionBlockArgs a{};
  a.q_window = a.q_sink = q.data();
  a.tokens = 1;
  a.heads = 1;
  a.head_dim = 24;  // not a multiple of 32
  a.window_begin = &b;
  a.window_end = &e;
  a.out = out.data();
  EXPECT_FALSE(AttendBlock(a));
  a.head_dim = 256;  // over the stack buffers
  EXPECT_FALSE(AttendBlock(a));
  a.head_dim = 64;
  a.tokens = 17;  // more rows than lanes
  EXPECT_FALSE(AttendBlock(a));
}

TEST(AttendGroup, NoKeysGivesZeros) {
  std::vector<float> q(64, 1.0f), out(64, 5.0f), sc(1);
  AttentionGroupArgs a{q.data(), q.data(), 1, 64, 64, nullptr, 0, sc.data(), out.data()};
  AttendGroup(a);
  for (float x : out) EXPECT_EQ(x, 0.0f);
}

}  // namespace
}  // namespace needle
