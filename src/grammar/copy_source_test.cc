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

bool Word(char c) { return CopySource::IsWordByte(uint8_t(c)); }

// A substring of one segment (folded) that starts where a word starts, or
// with a non-word byte.
bool BruteContains(const std::vector<std::string>& segments, const std::string& probe) {
  for (char c : probe)
    if (uint8_t(c) < 0x20) return false;
  const std::string p = Folded(probe);
  for (const std::string& s0 : segments) {
    const std::string s = Folded(s0);
    for (size_t at = s.find(p); at != std::string::npos; at = s.find(p, at + 1))
      if (p.empty() || !Word(p[0]) || at == 0 || !Word(s[at - 1])) return true;
  }
  return false;
}

// 1-3 random segments over a small alphabet (many repeats, so clones).
std::vector<std::string> RandomSegments(SplitMix64& rng, const std::string& alphabet, uint32_t max_len) {
  std::vector<std::string> segments(1 + rng.Next() % 3);
  for (std::string& s : segments) {
    const uint32_t n = uint32_t(rng.Next() % max_len);
    for (uint32_t i = 0; i < n; ++i) s.push_back(alphabet[rng.Next() % alphabet.size()]);
  }
  return segments;
}

TEST(CopySource, AcceptsExactlyTheSubstringsOfItsSegments) {
  SplitMix64 rng(11);
  auto below = [&](uint32_t n) { return uint32_t(rng.Next() % n); };
  const std::string alphabet = "abAB c_-1\xc3\xa9";  // a small alphabet: many repeats, clones
  for (int trial = 0; trial < 60; ++trial) {
    const std::vector<std::string> segments = RandomSegments(rng, alphabet, 40);
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

// Where a copy may end, against brute force over every occurrence that
// starts like a copy.
TEST(CopySource, KnowsWhereWordsAndNumbersEnd) {
  SplitMix64 rng(12);
  auto below = [&](uint32_t n) { return uint32_t(rng.Next() % n); };
  const std::string alphabet = "aB 1.2_-\xc3\xa9";
  auto word = Word;
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  for (int trial = 0; trial < 60; ++trial) {
    const std::vector<std::string> segments = RandomSegments(rng, alphabet, 30);
    std::vector<std::string_view> views(segments.begin(), segments.end());
    CopySource src;
    src.Build(views);
    for (int probe = 0; probe < 200; ++probe) {
      const std::string& seg = segments[below(uint32_t(segments.size()))];
      if (seg.empty()) continue;
      const uint32_t a = below(uint32_t(seg.size()));
      const std::string p = Folded(seg.substr(a, 1 + below(uint32_t(seg.size() - a))));
      bool ends_word = false, ends_number = false, anchored = false;
      for (const std::string& s0 : segments) {
        const std::string s = Folded(s0);
        for (size_t at = s.find(p); at != std::string::npos; at = s.find(p, at + 1)) {
          if (!(at == 0 || !word(s[at - 1]) || !word(p[0]))) continue;  // not a copy's start
          anchored = true;
          const size_t q = at + p.size();
          ends_word |= q == s.size() || !word(s[q]);
          ends_number |= q == s.size() || (!digit(s[q]) && !(s[q] == '.' && q + 1 < s.size() && digit(s[q + 1])));
        }
      }
      uint32_t st = CopySource::kRoot;
      for (char c : p) st = src.Step(st, uint8_t(c));
      ASSERT_EQ(st != CopySource::kDead, anchored) << "'" << p << "' trial " << trial;
      if (!anchored) continue;
      EXPECT_EQ(src.Ends(st, CopySource::End::kWord), ends_word) << "'" << p << "' trial " << trial;
      EXPECT_EQ(src.Ends(st, CopySource::End::kNumber), ends_number) << "'" << p << "' trial " << trial;
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
