#include "io/cact_checksum.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <vector>


namespace needle {
namespace {

std::vector<uint8_t> RandomBytes(size_t n, uint64_t seed) {
  std::vector<uint8_t> b(n);
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (auto& v : b) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    v = static_cast<uint8_t>(x);
  }
  return b;
}

// Every single-bit flip changes the checksum, in the stripes and in the tail
// (1,003 bytes: 31 stripes of 32, then 11 bytes).
TEST(PayloadChecksum, EveryBitFlipChangesIt) {
  std::vector<uint8_t> b = RandomBytes(1003, 1);
  const uint64_t base = PayloadChecksum(b);
  EXPECT_EQ(PayloadChecksum(b), base);
  std::set<uint64_t> seen = {base};
  for (size_t i = 0; i < b.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      b[i] ^= uint8_t(1u << bit);
      seen.insert(PayloadChecksum(b));
      b[i] ^= uint8_t(1u << bit);
    }
  }
  EXPECT_EQ(seen.size(), 1 + 8 * b.size());  // all distinct, none equal to the original
}

TEST(PayloadChecksum, LengthAndZerosCount) {
  std::set<uint64_t> seen;
  for (size_t n = 0; n <= 100; ++n) seen.insert(PayloadChecksum(std::vector<uint8_t>(n, 0)));
  EXPECT_EQ(seen.size(), 101u);  // zero runs of different lengths differ
}

TEST(ChecksumTrailer, AppendedOnceAndFound) {
  const std::vector<uint8_t> payload = RandomBytes(500, 2);
  const std::vector<uint8_t> sealed = WithChecksum(payload);
  ASSERT_EQ(sealed.size(), payload.size() + kChecksumTrailerBytes);
  EXPECT_TRUE(std::equal(payload.begin(), payload.end(), sealed.begin()));
  const auto t = FindChecksumTrailer(sealed);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->covered, payload.size());
  EXPECT_EQ(t->checksum, PayloadChecksum(payload));
  EXPECT_EQ(t->reserved, 0u);
  EXPECT_EQ(WithChecksum(sealed), sealed);  // re-sealing replaces, never stacks
  EXPECT_FALSE(FindChecksumTrailer(payload).has_value());
  EXPECT_FALSE(FindChecksumTrailer(std::vector<uint8_t>(10, 0)).has_value());
}

}  // namespace
}  // namespace needle
