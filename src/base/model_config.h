// Model geometry: a plain struct, its presets and its validation (SPEC §1).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace needle {

struct ModelConfig {
  uint32_t vocab_size = 8192;
  uint32_t d_model = 512;
  uint32_t num_heads = 8;
  uint32_t num_kv_heads = 4;
  uint32_t num_layers = 12;
  uint32_t max_seq_len = 2048;
  uint32_t pad_token_id = 0;
  uint32_t contrastive_dim = 128;
  float rope_theta = 100000.0f;
  std::vector<uint32_t> engram_orders = {2, 3};
  uint32_t engram_heads = 0;  // 0 = auto: max(1, d / (len(orders) * 128))
  uint32_t engram_slots = 8192;
  std::vector<uint32_t> engram_layers = {2, 15};
  uint32_t mhc_lanes = 4;
  uint32_t kv_window = 0;  // 0 = size it from the budget (SPEC §3)
  uint32_t kv_bits = 8;
  uint32_t act_bits = 8;

  // Derived geometry.
  uint32_t head_dim() const { return d_model / num_heads; }
  uint32_t hada_n() const;  // next power of two >= d_model
  uint32_t engram_heads_per_order() const;
  uint32_t num_engram_tables() const { return static_cast<uint32_t>(engram_orders.size()) * engram_heads_per_order(); }
  uint32_t engram_sub_dim() const { return d_model / num_engram_tables(); }
  uint32_t engram_dilation() const;  // max(orders)
  static constexpr uint32_t kEngramTaps = 4;
  uint64_t ParameterCount() const;  // weights only (no tokenizer)

  // Throws Error(kInvalidArgument) naming the first field that is wrong.
  void Validate() const;
};

// "needle2" (the published 45M model) and "needle-large"; throws on an unknown name.
ModelConfig PresetConfig(const std::string& name);
std::vector<std::string> PresetNames();

// JSON with the field names above; absent fields keep the defaults, unknown
// fields are an error (a typo must not silently become a default).
ModelConfig ConfigFromJson(const nlohmann::json& j);
nlohmann::json ConfigToJson(const ModelConfig& c);
// A preset name, or a path to a JSON file.
ModelConfig LoadConfig(const std::string& preset_or_path);

}  // namespace needle
