#include "kv/budget.h"

#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace needle {
namespace {

TEST(Budget, Needle2WorkedValues) {
  ModelConfig c = PresetConfig("needle2");
  EXPECT_EQ(KvBytesPerPosition(c), 16704u);
  EXPECT_EQ(budget_window(c), 704u);
  EXPECT_EQ(effective_window(c), 256u);  // published kv_window 256
  c.kv_window = 0;
  EXPECT_EQ(effective_window(c), 704u);
}

TEST(Budget, NeedleLargeWorkedValues) {
  ModelConfig c = PresetConfig("needle-large");
  EXPECT_EQ(KvBytesPerPosition(c), 25056u);
  EXPECT_EQ(budget_window(c), 480u);
  EXPECT_EQ(effective_window(c), 256u);
}

TEST(Budget, WindowAboveBudgetIsCapped) {
  ModelConfig c = PresetConfig("needle2");
  c.kv_window = 4096;
  EXPECT_EQ(effective_window(c), 704u);
}

TEST(Budget, MinimumAndMaxSeqLen) {
  ModelConfig c = PresetConfig("needle-large");
  c.num_layers = 200;  // enormous per-position cost
  EXPECT_EQ(budget_window(c), kKvWindowMin);
  ModelConfig small = PresetConfig("needle2");
  small.num_layers = 1;
  small.max_seq_len = 512;
  EXPECT_EQ(budget_window(small), 512u);
}

TEST(Budget, MatchesGoldenFile) {
  std::ifstream in(std::string(NEEDLE_GOLDEN_DIR) + "/budget_windows.json");
  ASSERT_TRUE(in) << "golden budget_windows.json missing";
  const auto j = nlohmann::json::parse(in);
  for (const char* name : {"needle2", "needle-large"}) {
    ModelConfig c = PresetConfig(name);
    EXPECT_EQ(budget_window(c), j[name]["budget_window"].get<uint32_t>()) << name;
    EXPECT_EQ(effective_window(c), j[name]["effective_window"].get<uint32_t>()) << name;
  }
}

}  // namespace
}  // namespace needle
