// The optional payload checksum of a `.cact` archive: a 32-byte trailer after
// the last blob, where the published layout leaves room (readers locate every
// blob by its directory offset and ignore bytes after the last one, so
// published archives, which have no trailer, load as before, and archives
// with one load in readers that know nothing of it).
//
//   u64 magic "NDLCHK01" | u64 covered (= file size - 32) | u64 checksum of
//   bytes [0, covered) | u64 0 (reserved)
//
// The checksum detects bit flips and truncation-with-padding; it is not
// cryptographic and does not resist tampering.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

namespace needle {

inline constexpr size_t kChecksumTrailerBytes = 32;
inline constexpr uint64_t kChecksumMagic = 0x31304B48434C444Eull;  // "NDLCHK01" little-endian

// A 64-bit hash of `bytes`: four lanes of xxHash64's multiply-rotate round
// over 32-byte stripes (several GB/s), then the tail and an avalanche. Every
// single-bit change of the input changes it. Not byte-compatible with XXH64.
uint64_t PayloadChecksum(std::span<const uint8_t> bytes);

struct ChecksumTrailer {
  uint64_t covered = 0;   // bytes [0, covered) are checksummed
  uint64_t checksum = 0;  // as stored
  uint64_t reserved = 0;  // 0
};

// The trailer of `file` when its last 32 bytes begin with the magic (the
// caller checks `covered` and `reserved`: a damaged trailer is an error, not
// an absent one); nullopt when the file has none.
std::optional<ChecksumTrailer> FindChecksumTrailer(std::span<const uint8_t> file);

// `archive` with a trailer over all of it appended (an archive that already
// ends in one is returned unchanged: the trailer is re-derived, not stacked).
std::vector<uint8_t> WithChecksum(std::vector<uint8_t> archive);

}  // namespace needle
