#include "model/testing/archives.h"

#include "base/random.h"
#include "io/tokenizer_blob.h"
#include "model/export.h"

namespace needle::testing {

ModelConfig SmallConfig() {
  ModelConfig c;
  c.vocab_size = 300;
  c.d_model = 64;
  c.num_heads = 4;
  c.num_kv_heads = 2;
  c.num_layers = 2;
  c.max_seq_len = 4096;
  c.engram_slots = 32;
  c.engram_layers = {1};
  c.contrastive_dim = 16;
  c.kv_window = 0;
  return c;
}

ModelWeights NonTrivialWeights(const ModelConfig& c, const std::vector<HeadSpec>& heads, uint64_t seed) {
  ModelWeights w = RandomWeights(c, heads, seed);
  SplitMix64 rng(seed * 7919 + 1);
  for (size_t i = 0; i < w.specs.size(); ++i) {
    const TensorSpec& s = w.specs[i];
    if (s.map_key == "heads.manifest") continue;
    for (float& v : w.tensors[i]) {
      if (s.storage == TensorStorage::kQuantized) {
        v = static_cast<float>(rng.Normal() * (s.map_key == "embedding" ? 0.5 : 0.2));
      } else if (s.map_key.rfind("heads.", 0) == 0) {
        v = static_cast<float>(rng.Normal() * 0.1);
      } else if (s.map_key == "mhc.b_res") {
        v += static_cast<float>(rng.Normal() * 0.5);
      } else {
        v = static_cast<float>(v + rng.Normal() * 0.3);
      }
    }
  }
  return w;
}

std::vector<uint8_t> NonTrivialArchive(const ModelConfig& c, const std::string& bits, uint64_t seed) {
  ModelWeights w = NonTrivialWeights(c, {}, seed);
  return ExportArchive(w, ParseBitsMap(bits, w.specs), ByteLevelTokenizer());
}

std::vector<int32_t> RandomTokens(size_t n, uint32_t vocab, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(14 + rng.Next() % (vocab - 14));
  return t;
}

}  // namespace needle::testing
