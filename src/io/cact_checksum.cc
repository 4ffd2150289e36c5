#include "io/cact_checksum.h"

#include <bit>
#include <cstring>

namespace needle {
namespace {

constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full, kP3 = 0x165667B19E3779F9ull,
                   kP4 = 0x85EBCA77C2B2AE63ull, kP5 = 0x27D4EB2F165667C5ull;

inline uint64_t Load64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// Bijective in `acc` for a fixed word and in the word for a fixed `acc`: a
// changed word always changes the lane, and later rounds keep it changed.
inline uint64_t Round(uint64_t acc, uint64_t word) { return std::rotl(acc + word * kP2, 31) * kP1; }

}  // namespace

uint64_t PayloadChecksum(std::span<const uint8_t> bytes) {
  const uint8_t* p = bytes.data();
  const size_t n = bytes.size();
  uint64_t lane[4] = {kP1 + kP2, kP2, 0, 0 - kP1};
  size_t i = 0;
  for (; i + 32 <= n; i += 32) {
    for (int k = 0; k < 4; ++k) lane[k] = Round(lane[k], Load64(p + i + 8 * k));
  }
  uint64_t h = std::rotl(lane[0], 1) + std::rotl(lane[1], 7) + std::rotl(lane[2], 12) + std::rotl(lane[3], 18);
  for (int k = 0; k < 4; ++k) h = (h ^ Round(0, lane[k])) * kP1 + kP4;
  h += n;
  for (; i + 8 <= n; i += 8) h = std::rotl(h ^ Round(0, Load64(p + i)), 27) * kP1 + kP4;
  for (; i < n; ++i) h = std::rotl(h ^ (p[i] * kP5), 11) * kP1;
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  h *= kP3;
  h ^= h >> 32;
  return h;
}

std::optional<ChecksumTrailer> FindChecksumTrailer(std::span<const uint8_t> file) {
  if (file.size() < kChecksumTrailerBytes) return std::nullopt;
  const uint8_t* t = file.data() + file.size() - kChecksumTrailerBytes;
  if (Load64(t) != kChecksumMagic) return std::nullopt;
  return ChecksumTrailer{Load64(t + 8), Load64(t + 16), Load64(t + 24)};
}

std::vector<uint8_t> WithChecksum(std::vector<uint8_t> archive) {
  if (const auto old = FindChecksumTrailer(archive); old && old->covered == archive.size() - kChecksumTrailerBytes) archive.resize(archive.size() - kChecksumTrailerBytes);
  const uint64_t covered = archive.size(), sum = PayloadChecksum(archive), reserved = 0;
  archive.resize(covered + kChecksumTrailerBytes);
  uint8_t* t = archive.data() + covered;
  std::memcpy(t, &kChecksumMagic, 8);
  std::memcpy(t + 8, &covered, 8);
  std::memcpy(t + 16, &sum, 8);
  std::memcpy(t + 24, &reserved, 8);
  return archive;
}

}  // namespace needle
