// Fixtures of the trainer's tests: a small base archive and small training
// data on disk (tiny models, byte-level tokenizer: each test takes seconds).
#pragma once

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/random.h"
#include "io/cact_archive.h"
#include "model/export.h"
#include "model/testing/archives.h"

namespace needle::train::fixtures {

inline std::vector<HeadSpec> BothHeads(const ModelConfig& c) {
  return {DefaultHeadSpec(HeadKind::kContrastive, c), DefaultHeadSpec(HeadKind::kConfidence, c)};
}

// A base archive with both heads, byte-level tokenizer embedded. `large`:
// weights larger than the SPEC init, so that every component moves the logits.
inline std::string WriteBase(const std::string& path, const ModelConfig& c, uint64_t seed, bool large = true) {
  ModelWeights w = RandomWeights(c, BothHeads(c), seed);
  SplitMix64 rng(seed * 7919 + 1);
  for (size_t i = 0; i < w.specs.size() && large; ++i) {
    if (w.specs[i].storage != TensorStorage::kQuantized) continue;
    for (float& v : w.tensors[i]) v = static_cast<float>(rng.Normal() * (w.specs[i].map_key == "embedding" ? 0.5 : 0.1));
  }
  WriteFileAtomically(path, ExportArchive(w, ParseBitsMap("4", w.specs), ByteLevelTokenizer()));
  return path;
}

// Light-switching examples, short (about 200 byte-level tokens: rows of 256):
// one tool, varied rooms and levels; `long_ones` more with an overlong query.
inline std::string WriteData(const std::string& path, int n, uint64_t seed, int long_ones = 0) {
  static const char* const kRooms[] = {"kitchen", "bedroom", "hall", "office", "garage", "porch", "attic", "study"};
  const nlohmann::ordered_json tools = nlohmann::ordered_json::parse(
      R"([{"name":"light","parameters":{"type":"object","properties":{"room":{"type":"string"},"level":{"type":"integer"}}}}])");
  SplitMix64 rng(seed);
  std::ofstream out(path);
  for (int i = 0; i < n + long_ones; ++i) {
    const std::string room = kRooms[rng.Next() % 8];
    const int level = int(10 + rng.Next() % 80);
    nlohmann::ordered_json ex;
    ex["query"] = "dim " + room + " to " + std::to_string(level) + (i >= n ? std::string(300, '!') : "");
    ex["tools"] = tools;
    ex["answers"] = nlohmann::ordered_json::array({{{"name", "light"}, {"arguments", {{"room", room}, {"level", level}}}}});
    out << ex.dump() << "\n";
  }
  return path;
}

}  // namespace needle::train::fixtures
