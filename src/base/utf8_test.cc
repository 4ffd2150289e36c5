#include "base/utf8.h"

#include <gtest/gtest.h>

#include <string>

#include "base/error.h"

namespace needle {
namespace {

using namespace std::string_literals;

TEST(Utf8, AcceptsTextInEveryLength) {
  EXPECT_EQ(FirstInvalidUtf8(""), kValidUtf8);
  EXPECT_EQ(FirstInvalidUtf8("dim the lights"), kValidUtf8);
  EXPECT_EQ(FirstInvalidUtf8("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xF4\x8F\xBF\xBF"), kValidUtf8);  // é € 😀 U+10FFFF
}

TEST(Utf8, FindsTheFirstBadByte) {
  EXPECT_EQ(FirstInvalidUtf8("ab\xFF"), 2u);             // never a lead
  EXPECT_EQ(FirstInvalidUtf8("\x80" "abc"), 0u);         // a lone continuation
  EXPECT_EQ(FirstInvalidUtf8("caf\xC3"), 3u);            // cut short at the end
  EXPECT_EQ(FirstInvalidUtf8("x\xC3 y"), 1u);            // cut short by a space
  EXPECT_EQ(FirstInvalidUtf8("\xC0\xAF"), 0u);           // overlong '/'
  EXPECT_EQ(FirstInvalidUtf8("\xE0\x80\xAF"), 0u);       // overlong, three bytes
  EXPECT_EQ(FirstInvalidUtf8("\xED\xA0\x80"), 0u);       // a surrogate
  EXPECT_EQ(FirstInvalidUtf8("ok \xF4\x90\x80\x80"), 3u);  // above U+10FFFF
  EXPECT_EQ(FirstInvalidUtf8("\xF0\x9F\x98"), 0u);       // four-byte form cut short
}

TEST(Utf8, CheckTextNamesWhatAndWhere) {
  EXPECT_NO_THROW(CheckText("turn on the lights", "the query"));
  try {
    CheckText("lights \xFF", "the query");
    FAIL() << "accepted invalid UTF-8";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_EQ(std::string(e.what()), "the query is not valid UTF-8 (byte 0xFF at offset 7)");
  }
  try {
    CheckText("lights\0off"s, "the tool result");
    FAIL() << "accepted a NUL";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "the tool result holds a NUL byte at offset 6");
  }
}

}  // namespace
}  // namespace needle
