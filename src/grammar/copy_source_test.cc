// The copy automaton accepts exactly the substrings of its segments (ASCII
// case folded, never across two segments), checked against brute force.
#include "grammar/copy_source.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "base/random.h"

namespace needle::grammar {
namespace {

std::string Folded(std::string s) {
  for (char& c : s) c = char(CopySource::Fold(uint8_t(c)));
  return s;
}

bool BruteContains(const std::vector<std::string>& segments, const std::string& probe) {
  for (char c : probe)
    if (uint8_t(c) < 0x20) return false;
  for (const std::string& s : segments)
    if (Folded(s).find(Folded(probe)) != std::string::npos) return true;
  return false;
}

TEST(CopySource, AcceptsExactlyTheSubstringsOfItsSegments) {
  SplitMix64 rng(11);
  auto below = [&](uint32_t n) { return uint32_t(rng.Next() % n); };
  const std::string alphabet = "abAB c_-1\xc3\xa9";  // a small alphabet: many repeats, clones
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<std::string> segments(1 + below(3));
    for (std::string& s : segments) {
      const uint32_t n = below(40);
      for (uint32_t i = 0; i < n; ++i) s.push_back(alphabet[below(uint32_t(alphabet.size()))]);
    }
    std::vector<std::string_view> views(segments.begin(), segments.end());
    CopySource src;
    src.Build(views);
      for (int probe = 0; probe < 300; ++probe) {
      std::string p;
      if (probe % 3 == 0 && !segments[0].empty()) {
        const uint32_t a = below(uint32_t(segments[0].size()));
        p = segments[0].substr(a, below(uint32_t(segments[0].size() - a) + 1));
        if (below(2)) p = Folded(p);
      } else if (probe % 3 == 1 && segments.size() > 1 && !segments[0].empty() && !segments[1].empty()) {
        p = segments[0].substr(segments[0].size() - 1) + segments[1].substr(0, 1);  // across a separator
      } else {
        const uint32_t n = below(6);
        for (uint32_t i = 0; i < n; ++i) p.push_back(alphabet[below(uint32_t(alphabet.size()))]);
      }
      EXPECT_EQ(src.Contains(p), BruteContains(segments, p)) << "probe '" << p << "' trial " << trial;
    }
  }
}

TEST(CopySource, FoldsCaseAndRejectsControlBytes) {
  CopySource src;
  const std::string_view segs[] = {"Give Cora a call", "line one\nline two"};
  src.Build(segs);
  EXPECT_TRUE(src.Contains("cora"));
  EXPECT_TRUE(src.Contains("GIVE CORA"));
  EXPECT_TRUE(src.Contains(""));
  EXPECT_TRUE(src.Contains("line two"));
  EXPECT_FALSE(src.Contains("one\nline"));  // control bytes never match
  EXPECT_FALSE(src.Contains("callline"));   // not across segments
  EXPECT_FALSE(src.Contains("cora  a"));
  EXPECT_EQ(src.Step(CopySource::kDead, 'a'), CopySource::kDead);
  src.Clear();
  EXPECT_TRUE(src.empty());
  EXPECT_FALSE(src.Contains("a"));
  EXPECT_TRUE(src.Contains(""));
}

}  // namespace
}  // namespace needle::grammar
