#include "train/lora.h"

#include <cstring>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/random.h"

namespace needle::train {
namespace {

constexpr int64_t kAdapterFormat = 1;

torch::Tensor& Weight(SanImpl::Layer& l, LoraTarget t) {
  switch (t) {
    case LoraTarget::kQ: return l.q_proj;
    case LoraTarget::kK: return l.k_proj;
    case LoraTarget::kV: return l.v_proj;
    case LoraTarget::kGate: return l.gate_proj;
    case LoraTarget::kOut: return l.out_proj;
  }
  throw Error(ErrorCode::kInternal, "lora: bad target");
}

// [out, in] of each adapted projection (SPEC §1: Wq, Wgate d -> H*hd; Wk, Wv d -> G*hd; Wout H*hd -> d).
std::pair<int64_t, int64_t> Shape(const ModelConfig& c, LoraTarget t) {
  const int64_t d = c.d_model, qd = int64_t(c.num_heads) * c.head_dim(), kd = int64_t(c.num_kv_heads) * c.head_dim();
  switch (t) {
    case LoraTarget::kQ: return {qd, d};
    case LoraTarget::kK: return {kd, d};
    case LoraTarget::kV: return {kd, d};
    case LoraTarget::kGate: return {qd, d};
    case LoraTarget::kOut: return {d, qd};
  }
  throw Error(ErrorCode::kInternal, "lora: bad target");
}

// Fields that fix the core weights' shapes and meaning. The window, KV and
// activation widths and max_seq_len are run-time choices an adapter carries
// over; contrastive_dim and pad_token_id are not in a .cact header (the heads
// are not adapted); engram_heads 0 means "auto" and is compared resolved.
std::vector<std::string> GeometryDiffs(const ModelConfig& want, const ModelConfig& have, const char* have_name) {
  auto resolved = [](ModelConfig c) {
    c.engram_heads = c.engram_heads_per_order();
    return ConfigToJson(c);
  };
  const nlohmann::json a = resolved(want), b = resolved(have);
  std::vector<std::string> out;
  for (const auto& [key, value] : a.items()) {
    if (key == "kv_window" || key == "kv_bits" || key == "act_bits" || key == "max_seq_len" || key == "contrastive_dim" ||
        key == "pad_token_id") {
      continue;
    }
    if (!b.contains(key) || b[key] != value) {
      out.push_back(key + " " + value.dump() + " (" + have_name + ": " + (b.contains(key) ? b[key].dump() : "absent") + ")");
    }
  }
  return out;
}

std::string Join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

}  // namespace

const char* LoraTargetName(LoraTarget t) {
  static const char* const kNames[kNumLoraTargets] = {"q_proj", "k_proj", "v_proj", "gate_proj", "out_proj"};
  return kNames[int(t)];
}

LoraImpl::LoraImpl(const ModelConfig& c, int64_t rank, double alpha, uint64_t seed) : c_(c), rank_(rank), alpha_(alpha) {
  if (rank < 1) throw Error(ErrorCode::kInvalidArgument, "lora: rank must be at least 1, got " + std::to_string(rank));
  if (!(alpha > 0)) throw Error(ErrorCode::kInvalidArgument, "lora: alpha must be positive");
  SplitMix64 rng(seed * 0x9E3779B97F4A7C15ull + 0x10a);
  a_.resize(c.num_layers);
  b_.resize(c.num_layers);
  for (uint32_t l = 0; l < c.num_layers; ++l) {
    for (int ti = 0; ti < kNumLoraTargets; ++ti) {
      const auto t = LoraTarget(ti);
      const auto [out, in] = Shape(c, t);
      std::vector<float> a(size_t(rank * in));
      for (float& x : a) x = static_cast<float>(rng.Normal() / double(rank));
      const std::string name = "layer" + std::to_string(l) + "_" + LoraTargetName(t);
      a_[l][ti] = register_parameter(name + "_A", torch::from_blob(a.data(), {rank, in}, torch::kFloat32).clone());
      b_[l][ti] = register_parameter(name + "_B", torch::zeros({out, rank}, torch::kFloat32));
    }
  }
}

torch::Tensor LoraImpl::Delta(size_t layer, LoraTarget t, const torch::Tensor& x) const {
  const auto& a = a_[layer][int(t)];
  const auto& b = b_[layer][int(t)];
  return torch::matmul(torch::matmul(x, a.t()), b.t()) * scale();
}

torch::Tensor LoraImpl::MergedDelta(size_t layer, LoraTarget t) const {
  return torch::matmul(b_[layer][int(t)], a_[layer][int(t)]) * scale();
}

void AttachLora(San& model, const Lora& lora) {
  const auto diffs = GeometryDiffs(lora->config(), model->config(), "the model");
  if (!diffs.empty()) throw Error(ErrorCode::kInvalidArgument, "lora: the adapter's geometry differs from the model's: " + Join(diffs));
  for (auto& p : model->parameters()) p.set_requires_grad(false);
  model->set_lora(lora.ptr());
}

void DetachLora(San& model) {
  model->set_lora(nullptr);
  for (auto& p : model->parameters()) p.set_requires_grad(true);
}

void MergeLora(San& model, const Lora& lora) {
  const auto diffs = GeometryDiffs(lora->config(), model->config(), "the model");
  if (!diffs.empty()) throw Error(ErrorCode::kInvalidArgument, "lora: the adapter's geometry differs from the model's: " + Join(diffs));
  torch::NoGradGuard no_grad;
  for (size_t l = 0; l < model->layers.size(); ++l) {
    for (int ti = 0; ti < kNumLoraTargets; ++ti) Weight(model->layers[l], LoraTarget(ti)).add_(lora->MergedDelta(l, LoraTarget(ti)));
  }
  DetachLora(model);
}

uint64_t WeightsFingerprint(const San& model) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (const auto& item : model->named_parameters()) {
    if (item.key().rfind("heads_", 0) == 0) continue;  // heads are not what an adapter modifies or depends on
    const torch::Tensor t = item.value().detach().to(torch::kCPU, torch::kFloat32).contiguous();
    const float* p = t.data_ptr<float>();
    for (int64_t i = 0; i < t.numel(); ++i) {
      uint32_t bits;
      std::memcpy(&bits, p + i, 4);
      h = (h ^ bits) * 0x100000001b3ull;
    }
    h ^= h >> 29;
  }
  return h;
}

void SaveAdapter(const std::string& path, const Lora& lora, const ModelConfig& base_config, uint64_t base_fingerprint,
                 const std::string& base_source) {
  torch::serialize::OutputArchive ar;
  lora->save(ar);
  ar.write("needle_lora_format", c10::IValue(kAdapterFormat));
  ar.write("rank", c10::IValue(lora->rank()));
  ar.write("alpha", c10::IValue(lora->alpha()));
  ar.write("base_config", c10::IValue(ConfigToJson(base_config).dump()));
  ar.write("base_fingerprint", c10::IValue(static_cast<int64_t>(base_fingerprint)));
  ar.write("base_source", c10::IValue(base_source));
  try {
    ar.save_to(path + ".tmp");
  } catch (const c10::Error& e) {
    throw Error(ErrorCode::kIo, "cannot write adapter '" + path + "': " + e.what_without_backtrace());
  }
  std::error_code ec;
  std::filesystem::rename(path + ".tmp", path, ec);
  if (ec) throw Error(ErrorCode::kIo, "cannot write adapter '" + path + "': " + ec.message());
}

AdapterFile LoadAdapter(const std::string& path) {
  const std::string what = "'" + path + "' is not a Needle LoRA adapter (from `needle finetune`)";
  if (!std::filesystem::is_regular_file(path)) throw Error(ErrorCode::kIo, "cannot open adapter '" + path + "'");
  torch::serialize::InputArchive ar;
  try {
    ar.load_from(path);
  } catch (const c10::Error& e) {
    throw Error(ErrorCode::kInvalidArgument, what + ": " + e.what_without_backtrace());
  }
  c10::IValue format, rank, alpha, config, fingerprint, source;
  if (!ar.try_read("needle_lora_format", format) || !format.isInt() || !ar.try_read("rank", rank) || !rank.isInt() ||
      !ar.try_read("alpha", alpha) || !alpha.isDouble() || !ar.try_read("base_config", config) || !config.isString() ||
      !ar.try_read("base_fingerprint", fingerprint) || !fingerprint.isInt()) {
    throw Error(ErrorCode::kInvalidArgument, what);
  }
  if (format.toInt() != kAdapterFormat) {
    throw Error(ErrorCode::kUnsupported, "adapter '" + path + "' has format " + std::to_string(format.toInt()) +
                                             ", this build reads format " + std::to_string(kAdapterFormat));
  }
  AdapterFile f;
  try {
    f.base_config = ConfigFromJson(nlohmann::json::parse(config.toStringRef()));
  } catch (const std::exception& e) {
    throw Error(ErrorCode::kInvalidArgument, "adapter '" + path + "': bad base config: " + e.what());
  }
  f.base_fingerprint = static_cast<uint64_t>(fingerprint.toInt());
  if (ar.try_read("base_source", source) && source.isString()) f.base_source = source.toStringRef();
  f.lora = Lora(f.base_config, rank.toInt(), alpha.toDouble(), 0);
  try {
    f.lora->load(ar);
  } catch (const c10::Error& e) {
    throw Error(ErrorCode::kInvalidArgument, what + ": " + e.what_without_backtrace());
  }
  return f;
}

void CheckAdapterMatches(const AdapterFile& adapter, const ModelConfig& base, const std::string& adapter_path) {
  const auto diffs = GeometryDiffs(adapter.base_config, base, "this base");
  if (!diffs.empty()) {
    throw Error(ErrorCode::kInvalidArgument, "adapter '" + adapter_path + "' was trained on a base of another geometry: " + Join(diffs));
  }
}

std::string GeometryMismatch(const ModelConfig& want, const ModelConfig& have, const char* have_name) {
  return Join(GeometryDiffs(want, have, have_name));
}

}  // namespace needle::train
