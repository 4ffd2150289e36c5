// Test helpers shared by the model tests: small archives with non-trivial
// random weights (every component moves the logits, as in the golden files).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "base/model_config.h"
#include "io/cact_archive.h"
#include "model/export.h"  // ModelWeights

namespace needle::testing {

// A small geometry: d 64, 4 heads / 2 kv, 2 layers, one engram site, vocab 300.
ModelConfig SmallConfig();
// Archive bytes for `c` with weights drawn larger than the SPEC init (std 0.2 for
// matrices, norm scales and gates ~N(0, 0.3), taps all non-zero), quantized at `bits`.
std::vector<uint8_t> NonTrivialArchive(const ModelConfig& c, const std::string& bits, uint64_t seed);
// The same weights with `heads` (probes/projections ~N(0, 0.1)), before quantization.
ModelWeights NonTrivialWeights(const ModelConfig& c, const std::vector<HeadSpec>& heads, uint64_t seed);
// n token ids drawn from [14, vocab) (past the special ids).
std::vector<int32_t> RandomTokens(size_t n, uint32_t vocab, uint64_t seed);

}  // namespace needle::testing
