#include "model/export.h"

#include <cmath>
#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <sstream>

#include "base/error.h"
#include "base/fp16.h"
#include "base/random.h"
#include "io/cact_archive.h"
#include "kv/budget.h"
#include "quant/codebook.h"
#include "quant/cq.h"

namespace needle {
namespace {

uint32_t ParseWidth(const std::string& v, const std::string& context) {
  if (v == "2") return 2;
  if (v == "3") return 3;
  if (v == "4") return 4;
  if (v == "ternary" || v == "1.58" || v == "5") return kTernaryBits;
  throw Error(ErrorCode::kInvalidArgument,
              "bits map: " + context + " width '" + v + "', expected 2, 3, 4 or ternary (1.58)");
}

std::string Trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// "engram0.tables" -> "engram.tables" (site-independent key).
bool KeyMatches(const std::string& key, const TensorSpec& s) { return key == s.name || key == s.map_key; }

}  // namespace

uint32_t BitsMap::BitsFor(const TensorSpec& spec) const {
  uint32_t bits = default_bits;
  bool exact = false;
  for (const auto& [key, b] : overrides) {
    if (key == spec.name) {
      bits = b, exact = true;
    } else if (!exact && key == spec.map_key) {
      bits = b;
    }
  }
  return bits;
}

std::string BitsMap::ToString() const {
  auto w = [](uint32_t b) { return b == kTernaryBits ? std::string("ternary") : std::to_string(b); };
  std::string s = "default=" + w(default_bits);
  for (const auto& [k, b] : overrides) s += "," + k + "=" + w(b);
  return s;
}

BitsMap ParseBitsMap(const std::string& text, const std::vector<TensorSpec>& specs) {
  BitsMap m;
  if (text.find('=') == std::string::npos) {
    m.default_bits = ParseWidth(Trim(text), "default");
    return m;
  }
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    item = Trim(item);
    if (item.empty()) continue;
    const size_t eq = item.find('=');
    if (eq == std::string::npos) throw Error(ErrorCode::kInvalidArgument, "bits map: entry '" + item + "' is not key=width");
    const std::string key = Trim(item.substr(0, eq)), value = Trim(item.substr(eq + 1));
    const uint32_t bits = ParseWidth(value, "'" + key + "'");
    if (key == "default") {
      m.default_bits = bits;
      continue;
    }
    bool found = false;
    for (const TensorSpec& s : specs) {
      if (KeyMatches(key, s)) {
        if (s.storage != TensorStorage::kQuantized) {
          throw Error(ErrorCode::kInvalidArgument, "bits map: '" + key + "' is stored as fp16, not quantized");
        }
        found = true;
      }
    }
    if (!found) {
      throw Error(ErrorCode::kInvalidArgument, "bits map: '" + key + "' names no quantized tensor (e.g. embedding, attn.q_proj, attn.k_proj, attn.v_proj, attn.gate_proj, attn.out_proj, mhc.phi_pre, mhc.phi_post, mhc.phi_res, engram.tables, engram0.tables, engram.key_proj, engram.value_proj)");
    }
    m.overrides.emplace_back(key, bits);
  }
  return m;
}

BitsMap BitsMapOf(const CactArchive& a) {
  BitsMap m;
  for (size_t i = 0; i < a.num_tensors(); ++i) {
    const TensorView v = a.tensor(i);
    if (v.record->dtype == static_cast<uint8_t>(DType::kCQ)) m.overrides.emplace_back(v.spec->name, v.record->bits);
  }
  return m;
}

ModelWeights ZeroWeights(const ModelConfig& config, const std::vector<HeadSpec>& heads) {
  config.Validate();
  ModelWeights w;
  w.config = config;
  w.heads = heads;
  w.specs = BuildTensorSpecs(config, heads, nullptr);
  w.specs.pop_back();  // the tokenizer is not a weight
  w.tensors.resize(w.specs.size());
  for (size_t i = 0; i < w.specs.size(); ++i) w.tensors[i].assign(w.specs[i].NumElements(), 0.0f);
  return w;
}

ModelWeights RandomWeights(const ModelConfig& config, const std::vector<HeadSpec>& heads, uint64_t seed) {
  ModelWeights w = ZeroWeights(config, heads);
  SplitMix64 rng(seed);
  const float residual_std = 0.02f / std::sqrt(2.0f * config.num_layers);
  const uint32_t n = config.mhc_lanes;
  for (size_t i = 0; i < w.specs.size(); ++i) {
    const TensorSpec& s = w.specs[i];
    std::vector<float>& t = w.tensors[i];
    auto normal = [&](float stddev) {
      for (float& v : t) v = static_cast<float>(rng.Normal() * stddev);
    };
    const std::string& k = s.map_key;
    if (k == "attn.out_proj" || k == "engram.value_proj") {
      normal(residual_std);
    } else if (s.storage == TensorStorage::kQuantized || k == "heads.probes" || k == "heads.proj") {
      normal(0.02f);
    } else if (k == "mlp.d1" || k == "mlp.d2") {
      std::fill(t.begin(), t.end(), 1.0f);
    } else if (k == "mlp.d3") {
      std::fill(t.begin(), t.end(), 0.02f);
    } else if (k == "mhc.a_pre" || k == "mhc.a_post" || k == "mhc.a_res") {
      std::fill(t.begin(), t.end(), 0.01f);
    } else if (k == "mhc.b_res") {
      for (uint32_t l = 0; l < config.num_layers; ++l) {
        for (uint32_t r = 0; r < n; ++r) t[(uint64_t(l) * n + r) * n + r] = 4.0f;
      }
    } else if (k == "engram.taps") {
      std::fill(t.begin(), t.begin() + config.d_model, 1.0f);  // row 0 ones, later taps zero
    } else if (k == "heads.manifest") {
      for (size_t h = 0; h < heads.size(); ++h) t[h] = static_cast<float>(static_cast<uint32_t>(heads[h].kind));
    }
    // Everything else (norm scales, attn_gate, mHC b_pre/b_post, biases) stays 0.
  }
  return w;
}

namespace {

// The index of `s` in `a` when `a` holds it as CQ at `bits`, with the same
// shape and levels, and its reconstruction equals `values` bit for bit.
std::optional<size_t> UnchangedCqTensor(const CactArchive& a, const std::map<std::string, size_t>& by_name,
                                        const TensorSpec& s, uint32_t bits, const std::vector<float>& values) {
  const auto it = by_name.find(s.name);
  if (it == by_name.end()) return std::nullopt;
  const TensorView v = a.tensor(it->second);
  if (v.record->dtype != static_cast<uint8_t>(DType::kCQ) || v.record->bits != bits || v.record->group_size != kCqGroup)
    return std::nullopt;
  for (int k = 0; k < 4; ++k)
    if (v.record->shape[k] != s.shape[k]) return std::nullopt;
  const std::vector<float> have = a.Dequantized(it->second);
  if (have.size() != values.size() || std::memcmp(have.data(), values.data(), 4 * have.size()) != 0) return std::nullopt;
  return it->second;
}

}  // namespace

std::vector<uint8_t> ExportArchive(const ModelWeights& w, const BitsMap& bits, const TokenizerModel& tokenizer,
                                   const CactArchive* unchanged_from, ExportCounts* counts) {
  ExportCounts local;
  ExportCounts& n = counts ? *counts : local;
  n = {};
  const ModelConfig& c = w.config;
  c.Validate();
  if (tokenizer.pieces.size() > c.vocab_size) {
    throw Error(ErrorCode::kInvalidArgument, "tokenizer has " + std::to_string(tokenizer.pieces.size()) +
                                                 " pieces, more than the model vocab " + std::to_string(c.vocab_size));
  }
  CactHeader header = HeaderFromConfig(c);
  header.kv_window = c.kv_window ? effective_window(c) : 0;
  const std::array<float, kCodebookLen> codebook = ComputeHeaderCodebook(kCqGroup);
  // Copied CQ bytes mean the same values only under the same levels.
  std::map<std::string, size_t> base_index;
  if (unchanged_from && unchanged_from->codebook().size() == codebook.size() &&
      std::equal(codebook.begin(), codebook.end(), unchanged_from->codebook().begin())) {
    for (size_t i = 0; i < unchanged_from->num_tensors(); ++i) base_index[unchanged_from->tensor(i).spec->name] = i;
  }

  std::vector<std::vector<uint8_t>> storage(w.specs.size() + 1);
  std::vector<TensorBlob> blobs;
  for (size_t i = 0; i < w.specs.size(); ++i) {
    const TensorSpec& s = w.specs[i];
    const std::vector<float>& t = w.tensors[i];
    if (t.size() != s.NumElements()) {
      throw Error(ErrorCode::kInvalidArgument, "weights: " + s.name + " has " + std::to_string(t.size()) +
                                                   " values, expected " + std::to_string(s.NumElements()));
    }
    std::vector<uint8_t>& bytes = storage[i];
    TensorBlob b{DType::kFP16, s.ndim, {s.shape[0], s.shape[1], s.shape[2], s.shape[3]}, 0, 0, {}};
    if (s.storage == TensorStorage::kQuantized) {
      b.dtype = DType::kCQ;
      b.group_size = kCqGroup;
      b.bits = bits.BitsFor(s);
      if (const auto same = base_index.empty() ? std::nullopt : UnchangedCqTensor(*unchanged_from, base_index, s, b.bits, t)) {
        b.bytes = unchanged_from->data(*same);
        blobs.push_back(b);
        ++n.copied;
        continue;
      }
      ++n.quantized;
      bytes.resize(CqBlobBytes(s.shape[0], s.shape[1], b.bits));
      CqQuantize(t.data(), s.shape[0], s.shape[1], b.bits, codebook, bytes.data());
    } else {
      bytes.resize(t.size() * 2);
      for (size_t k = 0; k < t.size(); ++k) {
        const uint16_t h = FloatToHalf(t[k]);
        std::memcpy(bytes.data() + 2 * k, &h, 2);
      }
    }
    b.bytes = bytes;
    blobs.push_back(b);
  }
  storage.back() = SerializeTokenizerBlob(tokenizer);
  blobs.push_back({DType::kRaw, 0, {0, 0, 0, 0}, 0, 0, storage.back()});
  return SerializeCact(header, codebook, blobs);
}

}  // namespace needle
