#include "base/model_config.h"

#include <algorithm>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/error.h"

namespace needle {
namespace {

[[noreturn]] void Bad(const std::string& field, const std::string& what) {
  throw Error(ErrorCode::kInvalidArgument, "config: " + field + ": " + what);
}

}  // namespace

uint32_t ModelConfig::hada_n() const {
  uint32_t n = 1;
  while (n < d_model) n <<= 1;
  return n;
}

uint32_t ModelConfig::engram_heads_per_order() const {
  if (engram_heads) return engram_heads;
  const uint32_t orders = std::max<uint32_t>(1, static_cast<uint32_t>(engram_orders.size()));
  return std::max<uint32_t>(1, d_model / (orders * 128));
}

uint32_t ModelConfig::engram_dilation() const {
  uint32_t m = 0;
  for (uint32_t o : engram_orders) m = std::max(m, o);
  return m;
}

uint64_t ModelConfig::ParameterCount() const {
  const uint64_t d = d_model, hd = head_dim(), H = num_heads, G = num_kv_heads, n = mhc_lanes;
  const uint64_t attn = d * H * hd * 3 /*q, gate, out*/ + 2 * d * G * hd + 2 * hd /*q/k norms*/ + 1;
  const uint64_t block = attn + 3 * d /*norms*/ + 3 * uint64_t(hada_n());
  const uint64_t mhc = num_layers * (3 + 2 * n + n * n) + num_layers * n * d * (2 * n + n * n);
  const uint64_t engram = engram_layers.size() *
      (uint64_t(num_engram_tables()) * engram_slots * engram_sub_dim() + 2 * d * d + kEngramTaps * d);
  return uint64_t(vocab_size) * d + num_layers * block + mhc + engram + d;
}

void ModelConfig::Validate() const {
  auto positive = [](const char* f, uint64_t v) {
    if (v == 0) Bad(f, "must be positive");
  };
  positive("vocab_size", vocab_size);
  positive("d_model", d_model);
  positive("num_heads", num_heads);
  positive("num_kv_heads", num_kv_heads);
  positive("num_layers", num_layers);
  positive("max_seq_len", max_seq_len);
  positive("engram_slots", engram_slots);
  positive("mhc_lanes", mhc_lanes);
  positive("contrastive_dim", contrastive_dim);
  if (vocab_size < 14) Bad("vocab_size", "must hold the 14 fixed ids (PAD, EOS, BOS, UNK and 10 chat markers), got " + std::to_string(vocab_size));
  if (d_model % num_heads) Bad("num_heads", std::to_string(num_heads) + " does not divide d_model " + std::to_string(d_model));
  if (num_heads % num_kv_heads) Bad("num_kv_heads", std::to_string(num_kv_heads) + " does not divide num_heads " + std::to_string(num_heads));
  if (head_dim() % 2) Bad("num_heads", "head_dim " + std::to_string(head_dim()) + " must be even for RoPE");
  if (!(rope_theta > 1.0f) || !std::isfinite(rope_theta)) Bad("rope_theta", "must be a finite value > 1");
  if (pad_token_id >= vocab_size) Bad("pad_token_id", "must be < vocab_size");
  if (engram_orders.empty() || engram_orders.size() > 4) Bad("engram_orders", "needs 1 to 4 orders");
  for (uint32_t o : engram_orders) {
    if (o < 1 || o > 8) Bad("engram_orders", "order " + std::to_string(o) + " outside 1..8");
  }
  if (engram_layers.size() > 4) Bad("engram_layers", "at most 4 engram sites");
  for (size_t i = 0; i < engram_layers.size(); ++i) {
    if (engram_layers[i] >= num_layers) Bad("engram_layers", "site " + std::to_string(engram_layers[i]) + " >= num_layers " + std::to_string(num_layers));
    if (i && engram_layers[i] <= engram_layers[i - 1]) Bad("engram_layers", "sites must be strictly increasing");
  }
  if (d_model % num_engram_tables()) Bad("engram_heads", "engram tables (" + std::to_string(num_engram_tables()) + ") must divide d_model");
  if (kv_bits != 8) Bad("kv_bits", "only 8 (int8 K/V) is supported");
  if (act_bits != 8) Bad("act_bits", "only 8 (int8 activations) is supported");
}

ModelConfig PresetConfig(const std::string& name) {
  ModelConfig c;
  if (name == "needle2") {
    c.d_model = 512, c.num_heads = 8, c.num_kv_heads = 4, c.num_layers = 27;
    c.engram_layers = {2, 15};
    c.kv_window = 256;
  } else if (name == "needle-large") {
    c.d_model = 768, c.num_heads = 12, c.num_kv_heads = 6, c.num_layers = 27;
    c.engram_layers = {2, 15};
    c.kv_window = 256;
  } else {
    throw Error(ErrorCode::kInvalidArgument, "unknown preset '" + name + "' (known: needle2, needle-large, or a JSON file)");
  }
  return c;
}

std::vector<std::string> PresetNames() { return {"needle2", "needle-large"}; }

ModelConfig ConfigFromJson(const nlohmann::json& j) {
  if (!j.is_object()) Bad("(root)", "expected a JSON object");
  ModelConfig c;
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const nlohmann::json& v = it.value();
    auto u32 = [&](uint32_t& dst) {
      if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > 0xFFFFFFFFll) Bad(k, "expected a non-negative integer");
      dst = v.get<uint32_t>();
    };
    auto u32list = [&](std::vector<uint32_t>& dst) {
      if (!v.is_array()) Bad(k, "expected an array of integers");
      dst.clear();
      for (const auto& e : v) {
        if (!e.is_number_integer() || e.get<int64_t>() < 0 || e.get<int64_t>() > 0xFFFFFFFFll) Bad(k, "expected non-negative integers");
        dst.push_back(e.get<uint32_t>());
      }
    };
    if (k == "vocab_size") u32(c.vocab_size);
    else if (k == "d_model") u32(c.d_model);
    else if (k == "num_heads") u32(c.num_heads);
    else if (k == "num_kv_heads") u32(c.num_kv_heads);
    else if (k == "num_layers") u32(c.num_layers);
    else if (k == "max_seq_len") u32(c.max_seq_len);
    else if (k == "pad_token_id") u32(c.pad_token_id);
    else if (k == "contrastive_dim") u32(c.contrastive_dim);
    else if (k == "engram_heads") u32(c.engram_heads);
    else if (k == "engram_slots") u32(c.engram_slots);
    else if (k == "mhc_lanes") u32(c.mhc_lanes);
    else if (k == "kv_window") u32(c.kv_window);
    else if (k == "kv_bits") u32(c.kv_bits);
    else if (k == "act_bits") u32(c.act_bits);
    else if (k == "engram_orders") u32list(c.engram_orders);
    else if (k == "engram_layers") u32list(c.engram_layers);
    else if (k == "rope_theta") {
      // (A double beyond float range converted to float is undefined behaviour.)
      if (!v.is_number() || !(std::fabs(v.get<double>()) <= std::numeric_limits<float>::max())) Bad(k, "expected a number within float range");
      c.rope_theta = static_cast<float>(v.get<double>());
    } else {
      Bad(k, "unknown config field");
    }
  }
  c.Validate();
  return c;
}

nlohmann::json ConfigToJson(const ModelConfig& c) {
  return nlohmann::json{{"vocab_size", c.vocab_size}, {"d_model", c.d_model}, {"num_heads", c.num_heads},
                        {"num_kv_heads", c.num_kv_heads}, {"num_layers", c.num_layers},
                        {"max_seq_len", c.max_seq_len}, {"pad_token_id", c.pad_token_id},
                        {"contrastive_dim", c.contrastive_dim}, {"rope_theta", c.rope_theta},
                        {"engram_orders", c.engram_orders}, {"engram_heads", c.engram_heads},
                        {"engram_slots", c.engram_slots}, {"engram_layers", c.engram_layers},
                        {"mhc_lanes", c.mhc_lanes}, {"kv_window", c.kv_window}, {"kv_bits", c.kv_bits},
                        {"act_bits", c.act_bits}};
}

ModelConfig LoadConfig(const std::string& preset_or_path) {
  for (const auto& n : PresetNames()) {
    if (n == preset_or_path) return PresetConfig(n);
  }
  std::ifstream in(preset_or_path);
  if (!in) throw Error(ErrorCode::kInvalidArgument, "unknown preset or unreadable config file '" + preset_or_path + "' (presets: needle2, needle-large)");
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kInvalidJson, "config " + preset_or_path + ": " + e.what());
  }
  return ConfigFromJson(j);
}

}  // namespace needle
