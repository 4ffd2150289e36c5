// Fixtures of the trainer's tests: a small base archive and small training
// data on disk (tiny models, byte-level tokenizer: each test takes seconds).
#pragma once

#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/random.h"
#include "io/cact_archive.h"
#include "model/export.h"
#include "model/testing/archives.h"
#include "train/trainer.h"

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

// Four steps of `needle train` on `examples` light-switching examples written
// to dir/name.jsonl (tiny model, byte-level tokenizer).
inline TrainOptions SmallRun(const std::string& dir, const std::string& name, uint64_t data_seed, int examples = 12) {
  TrainOptions o;
  o.data = WriteData(dir + "/" + name + ".jsonl", examples, data_seed);
  o.tokenizer = WriteBase(dir + "/" + name + "-tok.cact", testing::SmallConfig(), 1);  // byte-level tokenizer, fits vocab 300
  o.config = testing::SmallConfig();
  o.steps = 4;
  o.batch_tokens = 400;
  o.max_len = 256;
  o.warmup = 2;
  o.window = 64;
  o.eval_every = 100;
  o.checkpoint_every = 2;
  o.lr = 3e-3;
  o.seed = 5;
  o.threads = 1;
  return o;
}

// A field of a run's log.jsonl by step (the last record of a step wins: a
// resumed run repeats the steps after its checkpoint).
inline std::map<int64_t, double> LossByStep(const std::string& log_path, const char* field = "loss") {
  std::map<int64_t, double> out;
  std::ifstream in(log_path);
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    out[j["step"].get<int64_t>()] = j[field].get<double>();
  }
  return out;
}

}  // namespace needle::train::fixtures
