// Test models for the agent layer: small random-weight archives with both
// heads, on the byte-level tokenizer (every call is many tokens long) or on
// the repository's default tokenizer.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "agent/model.h"

namespace needle::testing {

// d 64, 2 layers, vocab 300, byte-level tokenizer; heads: contrastive and/or confidence.
std::vector<uint8_t> AgentArchive(uint64_t seed, bool contrastive = true, bool confidence = true);
std::shared_ptr<const Model> AgentModel(uint64_t seed = 1, bool contrastive = true, bool confidence = true);

// Five realistic tools (compact JSON array).
extern const char* kFiveTools;

}  // namespace needle::testing
