// FNV-1a 64: fingerprints of schemas and models (index files, saved sessions).
// Not cryptographic: it detects change, it does not resist tampering.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace needle {

inline constexpr uint64_t kFnvOffset = 0xcbf29ce484222325ull;

inline uint64_t Fnv1a64(const void* data, size_t n, uint64_t h = kFnvOffset) {
  const auto* p = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ p[i]) * 0x100000001b3ull;
  return h;
}
inline uint64_t Fnv1a64(std::string_view s, uint64_t h = kFnvOffset) { return Fnv1a64(s.data(), s.size(), h); }

}  // namespace needle
