#include "model/reference_model.h"

#include <cmath>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/ops.h"

namespace needle {
namespace {

const std::string kGolden = NEEDLE_GOLDEN_DIR;

struct Golden {
  std::vector<int32_t> ids;
  std::vector<std::vector<float>> full, window16;
  std::vector<int> argmax;
};

Golden LoadGolden(const std::string& name) {
  const auto j = nlohmann::json::parse(std::ifstream(kGolden + "/golden-" + name + ".logits.json"));
  return {j["token_ids"].get<std::vector<int32_t>>(), j["logits_full_causal"].get<std::vector<std::vector<float>>>(),
          j["logits_window16_no_sinks"].get<std::vector<std::vector<float>>>(), j["argmax_full"].get<std::vector<int>>()};
}

float MaxAbsDiff(const std::vector<float>& ours, const std::vector<std::vector<float>>& ref, size_t V) {
  float worst = 0.0f;
  for (size_t p = 0; p < ref.size(); ++p) {
    for (size_t v = 0; v < V; ++v) worst = std::max(worst, std::fabs(ours[p * V + v] - ref[p][v]));
  }
  return worst;
}

class GoldenLogits : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenLogits, FullCausalByOnePrefill) {
  const CactArchive archive = CactArchive::Open(kGolden + "/golden-" + GetParam() + ".cact");
  const ReferenceModel model(archive);
  const Golden g = LoadGolden(GetParam());
  ReferenceState st = model.NewState({0, 0});
  const auto logits = model.Forward(st, g.ids);
  const float diff = MaxAbsDiff(logits, g.full, model.config().vocab_size);
  RecordProperty("max_abs_diff", std::to_string(diff));
  EXPECT_LE(diff, 5e-3f) << GetParam();
}

TEST_P(GoldenLogits, FullCausalTokenByToken) {
  const CactArchive archive = CactArchive::Open(kGolden + "/golden-" + GetParam() + ".cact");
  const ReferenceModel model(archive);
  const Golden g = LoadGolden(GetParam());
  ReferenceState st = model.NewState({0, 0});
  std::vector<float> logits;
  for (int32_t t : g.ids) {
    const auto step = model.Forward(st, std::span(&t, 1));
    logits.insert(logits.end(), step.begin(), step.end());
  }
  EXPECT_LE(MaxAbsDiff(logits, g.full, model.config().vocab_size), 5e-3f) << GetParam();
}

TEST_P(GoldenLogits, Window16NoSinks) {
  const CactArchive archive = CactArchive::Open(kGolden + "/golden-" + GetParam() + ".cact");
  const ReferenceModel model(archive);
  const Golden g = LoadGolden(GetParam());
  ReferenceState st = model.NewState({0, 16});
  const auto logits = model.Forward(st, g.ids);
  EXPECT_LE(MaxAbsDiff(logits, g.window16, model.config().vocab_size), 5e-3f) << GetParam();
  // Token by token too, in uneven chunks.
  ReferenceState st2 = model.NewState({0, 16});
  std::vector<float> chunked;
  for (size_t at = 0; at < g.ids.size();) {
    const size_t len = std::min<size_t>(at % 7 + 1, g.ids.size() - at);
    const auto part = model.Forward(st2, std::span(g.ids.data() + at, len));
    chunked.insert(chunked.end(), part.begin(), part.end());
    at += len;
  }
  EXPECT_LE(MaxAbsDiff(chunked, g.window16, model.config().vocab_size), 5e-3f) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(All, GoldenLogits, ::testing::Values("b4", "b3", "b2", "mixed", "ternary"));

TEST(EngramIndices, MatchGolden) {
  const CactArchive archive = CactArchive::Open(kGolden + "/golden-b4.cact");
  const ReferenceModel model(archive);
  const auto j = nlohmann::json::parse(std::ifstream(kGolden + "/engram_indices.json"));
  const auto ids = j["token_ids"].get<std::vector<int32_t>>();
  const auto want = j["indices"].get<std::vector<std::vector<uint32_t>>>();
  for (size_t p = 0; p < ids.size(); ++p) EXPECT_EQ(model.EngramIndices(ids, int64_t(p)), want[p]) << p;
}

TEST(EngramIndices, MatchGoldenNeedle2Geometry) {
  const auto j = nlohmann::json::parse(std::ifstream(kGolden + "/engram_indices_needle2.json"));
  const auto ids = j["token_ids"].get<std::vector<int32_t>>();
  const auto want = j["indices"].get<std::vector<std::vector<uint32_t>>>();
  const ModelConfig c = PresetConfig("needle2");
  ASSERT_EQ(c.engram_heads_per_order(), j["heads_per_order"].get<uint32_t>());
  for (size_t p = 0; p < ids.size(); ++p) {
    std::vector<uint32_t> got;
    for (uint32_t oi = 0; oi < 2; ++oi)
      for (uint32_t h = 0; h < 2; ++h) got.push_back(EngramIndex(oi * 2 + h, c.engram_orders[oi], ids.data(), int64_t(p), c.engram_slots));
    EXPECT_EQ(got, want[p]) << p;
  }
}

TEST(PositionsRule, WindowSitsRightAfterTheSinks) {
  // No eviction: absolute positions.
  EXPECT_EQ(PositionsFor(10, {4, 16}).query_position, 10);
  EXPECT_EQ(PositionsFor(10, {4, 16}).first_window_key, 4);
  // After eviction: S + nw - 1 with nw = W.
  const QueryPositions p = PositionsFor(1000, {150, 256});
  EXPECT_EQ(p.first_window_key, 1000 - 255);
  EXPECT_EQ(p.query_position, 150 + 256 - 1);
  // Inside the sink block.
  EXPECT_EQ(PositionsFor(3, {150, 256}).query_position, 3);
  EXPECT_EQ(PositionsFor(3, {150, 256}).first_window_key, 4);
}

}  // namespace
}  // namespace needle
