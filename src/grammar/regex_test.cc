// The regex subset of `pattern`, compiled to a byte DFA (whole-string match).
#include "grammar/regex.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <regex>

#include "base/error.h"
#include "base/random.h"

namespace needle::grammar {
namespace {

bool Match(std::string_view pattern, std::string_view s) { return CompileRegex(pattern).Matches(s); }

std::string Unsupported(std::string_view pattern) {
  try {
    CompileRegex(pattern);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported) return e.what();
    return std::string("wrong code: ") + e.what();
  }
  return "";
}

TEST(Regex, LiteralsClassesQuantifiers) {
  EXPECT_TRUE(Match("abc", "abc"));
  EXPECT_FALSE(Match("abc", "xabc"));
  EXPECT_FALSE(Match("abc", "ab"));
  EXPECT_TRUE(Match("^abc$", "abc"));
  EXPECT_TRUE(Match("[a-c]+x?", "abca"));
  EXPECT_TRUE(Match("[a-c]+x?", "bx"));
  EXPECT_FALSE(Match("[a-c]+x?", "x"));
  EXPECT_TRUE(Match("[^0-9]*", "ab!é"));
  EXPECT_FALSE(Match("[^0-9]*", "a1"));
  EXPECT_TRUE(Match("a{3}", "aaa"));
  EXPECT_FALSE(Match("a{3}", "aaaa"));
  EXPECT_TRUE(Match("a{2,}", "aaaaa"));
  EXPECT_TRUE(Match("(ab){1,2}c", "ababc"));
  EXPECT_FALSE(Match("(ab){1,2}c", "abababc"));
  EXPECT_TRUE(Match("(?:x|yz)*", "xyzx"));
  EXPECT_TRUE(Match("(?<year>\\d{4})", "2024"));
  EXPECT_TRUE(Match("a*?b", "aab"));  // lazy: same strings
  EXPECT_TRUE(Match("", ""));
  EXPECT_TRUE(Match("a|", ""));
  EXPECT_TRUE(Match("x{", "x{"));  // not a quantifier: literal
  EXPECT_THROW(CompileRegex("[]a]"), Error);  // [] is the empty class (ECMAScript): no string matches
}

TEST(Regex, EscapesAndShorthands) {
  EXPECT_TRUE(Match("\\d\\w\\s\\D\\W\\S", "1_ x-y"));
  EXPECT_TRUE(Match("\\.\\\\\\/\\-\\(\\)\\[\\]\\{\\}\\|\\*\\+\\?\\^\\$", ".\\/-()[]{}|*+?^$"));
  EXPECT_TRUE(Match("\\n\\t\\r\\f\\v\\0", std::string("\n\t\r\f\v\0", 6)));
  EXPECT_TRUE(Match("\\x41\\u00e9\\ud83d\\ude00", "Aé😀"));
  EXPECT_TRUE(Match("[\\d.]+", "3.14"));
  EXPECT_TRUE(Match("[\\b]", "\b"));
  EXPECT_TRUE(Match("[a\\-z]+", "a-z"));
  EXPECT_TRUE(Match("[-a]+", "-a"));
}

TEST(Regex, DotAndUnicode) {
  EXPECT_TRUE(Match(".", "é"));
  EXPECT_TRUE(Match(".", "東"));
  EXPECT_TRUE(Match(".", "🙂"));
  EXPECT_FALSE(Match(".", "\n"));
  EXPECT_FALSE(Match(".", "ab"));
  EXPECT_TRUE(Match("[à-ÿ]", "é"));
  EXPECT_FALSE(Match("[à-ÿ]", "Ā"));
  EXPECT_TRUE(Match("東京", "東京"));
  EXPECT_TRUE(Match("[^a]", "\xF4\x8F\xBF\xBF"));        // U+10FFFF
  EXPECT_FALSE(Match("[^a]", "\xED\xA0\x80"));           // a surrogate is never a character
  EXPECT_FALSE(Match(".*", "\xC0\xAF"));                 // overlong
}

TEST(Regex, UnsupportedConstructsAreReported) {
  EXPECT_NE(Unsupported("(a)\\1").find("backreferences"), std::string::npos);
  EXPECT_NE(Unsupported("(?=a)").find("lookaround"), std::string::npos);
  EXPECT_NE(Unsupported("(?!a)").find("lookaround"), std::string::npos);
  EXPECT_NE(Unsupported("(?<=a)b").find("lookaround"), std::string::npos);
  EXPECT_NE(Unsupported("(?i)a").find("lookaround"), std::string::npos);
  EXPECT_NE(Unsupported("\\bword").find("word boundaries"), std::string::npos);
  EXPECT_NE(Unsupported("\\p{L}").find("Unicode property"), std::string::npos);
  EXPECT_NE(Unsupported("a^b").find("'^'"), std::string::npos);
  EXPECT_NE(Unsupported("a$b").find("'$'"), std::string::npos);
  EXPECT_NE(Unsupported("(a$)").find("'$'"), std::string::npos);
  EXPECT_NE(Unsupported("a{2000}").find("above 1000"), std::string::npos);
  EXPECT_NE(Unsupported("*a").find("nothing to repeat"), std::string::npos);
  EXPECT_NE(Unsupported("a**").find("nested quantifier"), std::string::npos);
  EXPECT_NE(Unsupported("(a").find("missing ')'"), std::string::npos);
  EXPECT_NE(Unsupported("a)").find("unbalanced"), std::string::npos);
  EXPECT_NE(Unsupported("[a").find("unterminated"), std::string::npos);
  EXPECT_NE(Unsupported("[z-a]").find("out of order"), std::string::npos);
  EXPECT_NE(Unsupported("a{3,1}").find("out of order"), std::string::npos);
  EXPECT_NE(Unsupported("\\").find("trailing backslash"), std::string::npos);
  EXPECT_NE(Unsupported("\\q").find("unknown escape"), std::string::npos);
  EXPECT_NE(Unsupported("\\ud800").find("surrogate"), std::string::npos);
  EXPECT_NE(Unsupported("\xff").find("invalid UTF-8"), std::string::npos);
  EXPECT_NE(Unsupported("(((((a{30}){30}){30}){30}){30})").find("too large"), std::string::npos);
  EXPECT_NE(Unsupported("[a-z]{0,20}[0-9]{0,20}x[a-z]{0,20}y[a-z]{0,10}").size(), 1u);  // does not crash either way
}

TEST(Regex, EmptyLanguageIsAnError) {
  try {
    CompileRegex("[]");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
  }
}

TEST(Regex, DistanceToAcceptCountsCodePoints) {
  const ByteDfa d = CompileRegex("ab東c");
  EXPECT_EQ(d.dist_to_accept[0], 4u);
  const ByteDfa& any = AnyStringDfa();
  for (uint32_t s = 0; s < any.num_states; ++s) EXPECT_EQ(any.dist_to_accept[s], 0u);
  EXPECT_TRUE(any.Matches("plain é 🙂"));
  EXPECT_FALSE(any.Matches("\xE6\x9D"));
}

// Against std::regex (ECMAScript, full match) on random ASCII strings.
TEST(Regex, AgreesWithStdRegexOnAscii) {
  const char* patterns[] = {"[a-c]+x?", "(ab|a)*b", "a{2,3}(b|c)*", "[^ab]c?", "\\d{2}-\\w+", "(x|y|)z+", ".a.", "(a|b)*abb"};
  SplitMix64 rng(7);
  for (const char* p : patterns) {
    const ByteDfa d = CompileRegex(p);
    const std::regex re(p, std::regex::ECMAScript);
    for (int i = 0; i < 400; ++i) {
      std::string s;
      const size_t len = rng.Next() % 7;
      for (size_t k = 0; k < len; ++k) s.push_back("abcxyz12-_ "[rng.Next() % 11]);
      EXPECT_EQ(d.Matches(s), std::regex_match(s, re)) << p << " on \"" << s << "\"";
    }
  }
}

TEST(Formats, PatternsAndSemantics) {
  EXPECT_FALSE(FormatPattern("date").empty());
  EXPECT_TRUE(FormatPattern("hostname").empty());
  const ByteDfa date = CompileRegex(FormatPattern("date"));
  EXPECT_TRUE(date.Matches("2023-12-31"));
  EXPECT_FALSE(date.Matches("2023-11-31"));
  // 29 February: the pattern and the post-check agree on every year.
  for (int y = 0; y <= 9999; ++y) {
    char s[24];  // (room for any int: -Wformat-truncation cannot see y <= 9999)
    std::snprintf(s, sizeof s, "%04d-02-29", y);
    ASSERT_EQ(date.Matches(s), FormatSemanticsOk("date", s)) << s;
  }
  EXPECT_FALSE(date.Matches("2023-02-29"));
  EXPECT_TRUE(date.Matches("2024-02-29"));
  EXPECT_TRUE(date.Matches("2000-02-29"));
  EXPECT_FALSE(date.Matches("1900-02-29"));
  EXPECT_TRUE(date.Matches("2023-02-28"));
  EXPECT_FALSE(FormatSemanticsOk("date", "2023-02-29"));
  EXPECT_TRUE(FormatSemanticsOk("date", "2024-02-29"));
  EXPECT_TRUE(FormatSemanticsOk("date", "2000-02-29"));
  EXPECT_FALSE(FormatSemanticsOk("date", "1900-02-29"));
  EXPECT_FALSE(FormatSemanticsOk("date-time", "2023-02-29T10:00"));
  EXPECT_TRUE(FormatSemanticsOk("email", "anything"));
}

}  // namespace
}  // namespace needle::grammar
