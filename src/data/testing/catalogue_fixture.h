// The source tree's catalogue, loaded once per test process, and examples
// generated from it: shared by the data layer's tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "data/catalogue.h"
#include "data/generator.h"

namespace needle::data::testing {

inline const Catalogue& SourceCatalogue() {
  static const Catalogue cat = Catalogue::Load(std::string(NEEDLE_SOURCE_DIR) + "/data");
  return cat;
}

// Examples 0..n-1 of (seed, split).
inline std::vector<Example> GenerateExamples(Split split, size_t n, uint64_t seed) {
  Generator gen(SourceCatalogue(), GeneratorOptions{seed, split});
  std::vector<Example> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) out.push_back(gen.Generate(i));
  return out;
}

}  // namespace needle::data::testing
