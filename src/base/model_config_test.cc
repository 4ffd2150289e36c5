#include "base/model_config.h"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.h"

namespace needle {
namespace {

TEST(ModelConfig, Presets) {
  const ModelConfig n2 = PresetConfig("needle2");
  EXPECT_NO_THROW(n2.Validate());
  EXPECT_EQ(n2.num_layers, 27u);
  EXPECT_EQ(n2.head_dim(), 64u);
  EXPECT_EQ(n2.hada_n(), 512u);
  EXPECT_EQ(n2.engram_heads_per_order(), 2u);
  EXPECT_EQ(n2.num_engram_tables(), 4u);
  EXPECT_EQ(n2.engram_sub_dim(), 128u);
  EXPECT_EQ(n2.engram_dilation(), 3u);
  EXPECT_EQ(n2.kv_window, 256u);
  EXPECT_NEAR(n2.ParameterCount() / 1e6, 43.4, 2.0);  // "45M" in the published notes, heads excluded
  const ModelConfig large = PresetConfig("needle-large");
  EXPECT_NO_THROW(large.Validate());
  EXPECT_EQ(large.head_dim(), 64u);
  EXPECT_EQ(large.hada_n(), 1024u);
  EXPECT_THROW(PresetConfig("needle3"), Error);
}

TEST(ModelConfig, ValidationNamesTheField) {
  auto expect_bad = [](ModelConfig c, const std::string& field) {
    try {
      c.Validate();
      ADD_FAILURE() << "accepted bad " << field;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
    }
  };
  ModelConfig c = PresetConfig("needle2");
  c.num_heads = 7;
  expect_bad(c, "num_heads");
  c = PresetConfig("needle2");
  c.num_kv_heads = 3;
  expect_bad(c, "num_kv_heads");
  c = PresetConfig("needle2");
  c.engram_layers = {2, 30};
  expect_bad(c, "engram_layers");
  c = PresetConfig("needle2");
  c.kv_bits = 4;
  expect_bad(c, "kv_bits");
  c = PresetConfig("needle2");
  c.d_model = 0;
  expect_bad(c, "d_model");
}

TEST(ModelConfig, JsonRoundTripAndUnknownFields) {
  const ModelConfig n2 = PresetConfig("needle2");
  const ModelConfig back = ConfigFromJson(ConfigToJson(n2));
  EXPECT_EQ(ConfigToJson(back), ConfigToJson(n2));
  EXPECT_THROW(ConfigFromJson(nlohmann::json{{"d_modle", 256}}), Error);
  EXPECT_THROW(ConfigFromJson(nlohmann::json{{"d_model", -1}}), Error);
  EXPECT_THROW(ConfigFromJson(nlohmann::json::array()), Error);
  // Numbers the fields cannot hold are named errors, not conversions.
  EXPECT_THROW(ConfigFromJson(nlohmann::json{{"rope_theta", 1e300}}), Error);
  EXPECT_THROW(ConfigFromJson(nlohmann::json{{"engram_layers", {uint64_t(1) << 33}}}), Error);
  const ModelConfig small = ConfigFromJson(nlohmann::json{{"d_model", 256}, {"num_heads", 4}, {"num_kv_heads", 2},
                                                          {"num_layers", 8}, {"engram_layers", {2, 5}}});
  EXPECT_EQ(small.engram_heads_per_order(), 1u);
  EXPECT_EQ(small.engram_sub_dim(), 128u);
}

}  // namespace
}  // namespace needle
