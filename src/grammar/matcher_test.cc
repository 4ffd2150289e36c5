// Byte-level acceptance and rejection for every keyword of SPEC §9 on
// hand-written JSON: each case feeds the bytes and checks the exact byte at
// which the grammar refuses (or that the whole call is accepted).
//
// ValueRejectAt(schema, value): -1 = accepted; otherwise the index of the
// first rejected byte of `value` (value.size() = all bytes accepted but the
// value cannot end there).
#include "grammar/matcher.h"

#include <algorithm>

#include <gtest/gtest.h>

#include "base/error.h"
#include "grammar/grammar_testing.h"
#include "grammar/validate.h"
#include "io/tokenizer_blob.h"
#include "text/tokenizer.h"

namespace needle::grammar {
namespace {

using testing::CallText;
using testing::OnePropTools;
using testing::RejectAt;
using testing::ValueRejectAt;

// ---- the calls array ------------------------------------------------------------

const char* kTwoTools = R"([
  {"name":"set","parameters":{"type":"object","properties":{"on":{"type":"boolean"}},"required":["on"]}},
  {"name":"set_timer","description":"A timer.","parameters":{"type":"object","properties":{"minutes":{"type":"integer"}}}}])";

TEST(Calls, EmptyArrayIsAlwaysAllowed) {
  EXPECT_EQ(RejectAt(kTwoTools, "[]"), -1);
  EXPECT_EQ(RejectAt("[]", "[]"), -1);  // no tools: only []
  EXPECT_EQ(RejectAt("[]", "[{"), 1);
  EXPECT_EQ(RejectAt(kTwoTools, "["), 1);  // incomplete
  EXPECT_EQ(RejectAt(kTwoTools, "]"), 0);
  EXPECT_EQ(RejectAt(kTwoTools, "[]]"), 2);  // nothing after the array
}

TEST(Calls, CompactOnlyNoWhitespace) {
  EXPECT_EQ(RejectAt(kTwoTools, "[ ]"), 1);
  EXPECT_EQ(RejectAt(kTwoTools, R"([{"name": "set")"), 9);
  EXPECT_EQ(RejectAt(kTwoTools, R"([{"name":"set","arguments":{"on":true} }])"), 38);
  EXPECT_EQ(RejectAt(kTwoTools, " []"), 0);
}

TEST(Calls, NameThenArgumentsInThatOrder) {
  EXPECT_EQ(RejectAt(kTwoTools, CallText("set", R"({"on":true})")), -1);
  EXPECT_EQ(RejectAt(kTwoTools, R"([{"arguments":{},"name":"set"}])"), 3);
  EXPECT_EQ(RejectAt(kTwoTools, R"([{"name":"set","argument":{}}])"), 24);
}

TEST(Calls, NamesRestrictedToDeclaredTools) {
  EXPECT_EQ(RejectAt(kTwoTools, CallText("set_timer", R"({"minutes":5})")), -1);
  EXPECT_EQ(RejectAt(kTwoTools, CallText("set_timer", "{}")), -1);
  EXPECT_EQ(RejectAt(kTwoTools, CallText("get", "{}")), 10);    // 'g'
  EXPECT_EQ(RejectAt(kTwoTools, CallText("se", "{}")), 12);     // the quote after "se"
  EXPECT_EQ(RejectAt(kTwoTools, CallText("set_t", "{}")), 15);  // prefix of set_timer only
  EXPECT_EQ(RejectAt(kTwoTools, CallText("setx", "{}")), 13);
}

TEST(Calls, SeveralCallsAndTrailingComma) {
  const std::string two = R"([{"name":"set","arguments":{"on":false}},{"name":"set_timer","arguments":{}}])";
  EXPECT_EQ(RejectAt(kTwoTools, two), -1);
  const std::string trailing = R"([{"name":"set","arguments":{"on":false}},])";
  EXPECT_EQ(RejectAt(kTwoTools, trailing), long(trailing.size() - 1));
}

TEST(Calls, MaxCallsForcesTheClosingBracket) {
  GrammarOptions opt;
  opt.max_calls = 2;
  auto g = ToolGrammar::Compile(std::string_view(kTwoTools), opt);
  const std::string call = R"({"name":"set_timer","arguments":{}})";
  EXPECT_EQ(RejectAt(*g, "[" + call + "," + call + "]"), -1);
  const std::string three = "[" + call + "," + call + "," + call + "]";
  EXPECT_EQ(RejectAt(*g, three), long(2 * call.size() + 2));  // the second ','
}

TEST(Calls, RestrictToSubsetForRetrieval) {
  auto g = ToolGrammar::Compile(std::string_view(kTwoTools));
  GrammarMatcher m(g);
  m.RestrictToolNames({"set_timer"});
  EXPECT_FALSE(m.CanAccept(CallText("set", R"({"on":true})")));
  EXPECT_TRUE(m.CanAccept(CallText("set_timer", "{}")));
  // "set" is a prefix of "set_timer": the quote after it is refused, the name can go on.
  EXPECT_TRUE(m.CanAccept(R"([{"name":"set)"));
  EXPECT_FALSE(m.CanAccept(R"([{"name":"set")"));
  m.RestrictTools({});
  EXPECT_TRUE(m.CanAccept("[]"));
  EXPECT_FALSE(m.CanAccept("[{"));
  m.AllowAllTools();
  EXPECT_TRUE(m.CanAccept(CallText("set", R"({"on":true})")));
}
// The session sets the call count from the reasoning's plan: once a call is
// written, the array closes only at `min` calls and takes no more than `max`;
// the empty array (a refusal) stays allowed, and Reset() lifts the limits.
TEST(Calls, SetCallCountBoundsTheArrayOnceItHasACall) {
  const std::string set = R"({"name":"set","arguments":{"on":true}})";
  GrammarMatcher m(ToolGrammar::Compile(std::string_view(kTwoTools)));
  m.SetCallCount(2, 2);
  EXPECT_TRUE(m.CanAccept("[]"));
  EXPECT_FALSE(m.CanAccept("[" + set + "]"));                // closes after one of two
  EXPECT_TRUE(m.CanAccept("[" + set + "," + set + "]"));
  EXPECT_FALSE(m.CanAccept("[" + set + "," + set + ","));    // a third
  std::string rest;  // cut inside the first call: the completion writes the second too
  ASSERT_TRUE(m.AcceptBytes(R"([{"name":"set_timer","arguments":{"minutes":4)"));
  ASSERT_TRUE(m.CompletionBytes(&rest));
  ASSERT_TRUE(m.AcceptBytes(rest));
  EXPECT_TRUE(m.IsComplete());
  EXPECT_EQ(rest.find(R"({"name")"), rest.rfind(R"({"name")")) << rest;  // one more call, exactly
  EXPECT_NE(rest.find(R"({"name")"), std::string::npos) << rest;
  m.Reset();
  EXPECT_TRUE(m.CanAccept("[" + set + "]"));
  EXPECT_TRUE(m.CanAccept("[" + set + "," + set + "," + set + "]"));
  m.SetCallCount(1, 0);  // no maximum (a reasoning cut short)
  EXPECT_TRUE(m.CanAccept("[" + set + "," + set + "," + set + "]"));
  m.SetCallCount(3, 1);  // a minimum above the maximum is the maximum
  EXPECT_TRUE(m.CanAccept("[" + set + "]"));
  EXPECT_FALSE(m.CanAccept("[" + set + ","));
}

// tool_choice "required" or a named function: the array must hold a call,
// its completion from "[" writes one; with no tool admitted "[]" stays the
// only way out (never a dead end); Reset() lifts it.
TEST(Calls, RequireCallForbidsTheEmptyArray) {
  const std::string set = R"({"name":"set","arguments":{"on":true}})";
  GrammarMatcher m(ToolGrammar::Compile(std::string_view(kTwoTools)));
  m.RequireCall(true);
  EXPECT_FALSE(m.CanAccept("[]"));
  EXPECT_TRUE(m.CanAccept("[" + set + "]"));
  std::string rest;
  ASSERT_TRUE(m.AcceptBytes("["));
  ASSERT_TRUE(m.CompletionBytes(&rest));
  EXPECT_NE(rest.find(R"({"name")"), std::string::npos) << rest;
  m.Reset();
  EXPECT_TRUE(m.CanAccept("[]"));
  m.RequireCall(true);
  m.RestrictTools({});
  EXPECT_TRUE(m.CanAccept("[]"));
}

TEST(Calls, OneToolIsExtraction) {
  auto g = ToolGrammar::Compile(std::string_view(
      R"([{"name":"extract","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}])"));
  GrammarMatcher m(g);
  std::string done;
  ASSERT_TRUE(m.AcceptBytes("[{"));
  ASSERT_TRUE(m.CompletionBytes(&done));
  EXPECT_EQ(done, R"("name":"extract","arguments":{"city":""}}])");
}

// A call cut by the token budget inside a multi-byte character (after 0xC3,
// the first byte of "í") is finished through byte pieces: encoded as text, the
// completion's lone continuation byte would become U+FFFD (EF BF BD), which the
// grammar rejects after 0xC3.
TEST(Calls, CompletionFinishesACharacterCutInTwo) {
  const Tokenizer tok(ReadSentencePieceModelFile(NEEDLE_GOLDEN_DIR "/tokenizer.model"));
  auto g = ToolGrammar::Compile(std::string_view(
      R"([{"name":"extract","parameters":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}}])"));
  GrammarMatcher m(g, std::make_shared<const TokenTrie>(tok));
  ASSERT_TRUE(m.AcceptBytes("[{\"name\":\"extract\",\"arguments\":{\"city\":\"Bras\xC3"));
  std::string rest;
  ASSERT_TRUE(m.CompletionBytes(&rest));
  ASSERT_FALSE(rest.empty());
  EXPECT_EQ(uint8_t(rest[0]) & 0xC0, 0x80) << "the completion starts inside the character";
  std::vector<int32_t> as_text;
  tok.EncodeContinuation(rest, as_text);
  EXPECT_EQ(tok.TokenBytes(as_text[0]), "\xEF") << "plain encoding turns the lone byte into U+FFFD";
  std::vector<int32_t> ids;
  EncodeCompletion(tok, rest, ids);
  std::string fed;
  for (int32_t id : ids) {
    ASSERT_TRUE(m.AcceptToken(id)) << "token " << id << " after " << fed;
    fed += tok.TokenBytes(id);
  }
  EXPECT_EQ(fed, rest);
  EXPECT_TRUE(m.IsComplete());
  std::vector<int32_t> ascii;  // nothing special without a cut character
  EncodeCompletion(tok, "\"}}]", ascii);
  std::vector<int32_t> expect;
  tok.EncodeContinuation("\"}}]", expect);
  EXPECT_EQ(ascii, expect);
}

// ---- objects ----------------------------------------------------------------------

const char* kObj = R"({"type":"object","properties":{"a":{"type":"integer"},"ab":{"type":"integer"},"b":{"type":"boolean"}},"required":["b"]})";

TEST(Object, KeysDeclaredEachAtMostOnceAnyOrder) {
  EXPECT_EQ(ValueRejectAt(kObj, R"({"b":true,"a":1,"ab":2})"), -1);
  EXPECT_EQ(ValueRejectAt(kObj, R"({"ab":2,"b":false})"), -1);
  EXPECT_EQ(ValueRejectAt(kObj, R"({"c":1})"), 2);             // undeclared key
  EXPECT_EQ(ValueRejectAt(kObj, R"({"a":1,"a":2,"b":true})"), 9);  // "a" again: only "ab" may go on
  EXPECT_EQ(ValueRejectAt(kObj, R"({"a":1,"ab":2,"b":true,"a":0})"), 22);  // all seen: no ','
}

TEST(Object, RequiredKeysBeforeTheBrace) {
  EXPECT_EQ(ValueRejectAt(kObj, "{}"), 1);
  EXPECT_EQ(ValueRejectAt(kObj, R"({"a":1})"), 6);
  EXPECT_EQ(ValueRejectAt(kObj, R"({"b":true})"), -1);
}

TEST(Object, NestedObjectsAndArrays) {
  const char* schema = R"({"type":"object","properties":{
      "who":{"type":"object","properties":{"name":{"type":"string"},"age":{"type":"integer","minimum":0}},"required":["name"]},
      "tags":{"type":"array","items":{"type":"object","properties":{"k":{"type":"string","enum":["x","y"]}},"required":["k"]}}},
      "required":["who"]})";
  EXPECT_EQ(ValueRejectAt(schema, R"({"who":{"name":"Ada","age":36},"tags":[{"k":"x"},{"k":"y"}]})"), -1);
  EXPECT_EQ(ValueRejectAt(schema, R"({"who":{"age":36}})"), 16);     // '}' without "name"
  EXPECT_EQ(ValueRejectAt(schema, R"({"who":{"name":"A","age":-1}})"), 25);  // minimum 0: no '-'
  EXPECT_EQ(ValueRejectAt(schema, R"({"who":{"name":"A"},"tags":[{}]})"), 29);
  EXPECT_EQ(ValueRejectAt(schema, R"({"who":{"name":"A"},"tags":[{"k":"z"}]})"), 34);
}

TEST(Object, EmptyParametersAdmitOnlyEmptyArguments) {
  const char* tools = R"([{"name":"ping"},{"name":"pong","parameters":{"type":"object"}}])";
  EXPECT_EQ(RejectAt(tools, CallText("ping", "{}")), -1);
  EXPECT_EQ(RejectAt(tools, CallText("pong", "{}")), -1);
  EXPECT_EQ(RejectAt(tools, CallText("ping", R"({"x":1})")), 29);
}

// ---- strings ----------------------------------------------------------------------

TEST(String, PlainStringsUtf8AndEscapes) {
  const char* s = R"({"type":"string"})";
  EXPECT_EQ(ValueRejectAt(s, R"("héllo wörld 東京 🙂")"), -1);
  EXPECT_EQ(ValueRejectAt(s, R"("a\"b\\c\/d\b\f\n\r\t")"), -1);
  EXPECT_EQ(ValueRejectAt(s, R"("\u00e9\ud83d\ude00\u0000")"), -1);
  EXPECT_EQ(ValueRejectAt(s, "\"a\x01\""), 2);         // raw control character
  EXPECT_EQ(ValueRejectAt(s, "\"a\xff\""), 2);         // not UTF-8
  EXPECT_EQ(ValueRejectAt(s, "\"a\x80\""), 2);         // stray continuation byte
  EXPECT_EQ(ValueRejectAt(s, "\"\xc0\xaf\""), 1);      // overlong
  EXPECT_EQ(ValueRejectAt(s, "\"\xed\xa0\x80\""), 2);  // encoded surrogate
  EXPECT_EQ(ValueRejectAt(s, "\"\xe6\x9d\""), 3);      // truncated character
  EXPECT_EQ(ValueRejectAt(s, R"("\x")"), 2);
  EXPECT_EQ(ValueRejectAt(s, R"("\udc00")"), 4);       // lone low surrogate
  EXPECT_EQ(ValueRejectAt(s, R"("\ud83dx")"), 7);      // high surrogate without its pair
  EXPECT_EQ(ValueRejectAt(s, R"("\ud83d\u0041")"), 9);
  EXPECT_EQ(ValueRejectAt(s, R"("\u12g4")"), 5);
  EXPECT_EQ(ValueRejectAt(s, "5"), 0);
}

TEST(String, LengthsCountCodePoints) {
  const char* s = R"({"type":"string","minLength":2,"maxLength":3})";
  EXPECT_EQ(ValueRejectAt(s, R"("ab")"), -1);
  EXPECT_EQ(ValueRejectAt(s, R"("abc")"), -1);
  EXPECT_EQ(ValueRejectAt(s, R"("abcd")"), 4);
  EXPECT_EQ(ValueRejectAt(s, R"("a")"), 2);
  EXPECT_EQ(ValueRejectAt(s, R"("éü東")"), -1);        // 3 code points, 8 bytes
  EXPECT_EQ(ValueRejectAt(s, "\"éü東\xf0"), 8);        // a 4th lead byte
  EXPECT_EQ(ValueRejectAt(s, R"("\n\t🙂")"), -1);
  EXPECT_EQ(ValueRejectAt(s, R"("\n\t\n")"), -1);
  EXPECT_EQ(ValueRejectAt(s, R"("\n\t\n\r")"), 7);    // the backslash: no room for a 4th
  EXPECT_EQ(ValueRejectAt(s, R"("\ud83d\ude00x")"), -1);  // a pair counts once
  EXPECT_EQ(ValueRejectAt(R"({"type":"string","maxLength":0})", R"("")"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"string","maxLength":0})", R"("a")"), 1);
}

TEST(String, PatternSubset) {
  const char* s = R"({"type":"string","pattern":"^[a-z]+-[0-9]{2}$"})";
  EXPECT_EQ(ValueRejectAt(s, R"("ab-12")"), -1);
  EXPECT_EQ(ValueRejectAt(s, R"("ab-1")"), 5);
  EXPECT_EQ(ValueRejectAt(s, R"("ab-123")"), 6);
  EXPECT_EQ(ValueRejectAt(s, R"("Ab-12")"), 1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"string","pattern":"(cat|dog)s?"})", R"("dogs")"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"string","pattern":"(cat|dog)s?"})", R"("cow")"), 2);
  EXPECT_EQ(ValueRejectAt(R"({"type":"string","pattern":"\\d+\\.\\w\\s[^a-c]."})", R"("12.x d!")"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"string","pattern":"\\d+\\.\\w\\s[^a-c]."})", R"("12.x b!")"), 6);
  EXPECT_EQ(ValueRejectAt(R"({"type":"string","pattern":"a{2,3}"})", R"("aaa")"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"string","pattern":"a{2,3}"})", R"("aaaa")"), 4);
  EXPECT_EQ(ValueRejectAt(R"({"type":"string","pattern":"a{2,3}"})", R"("a")"), 2);
  EXPECT_EQ(ValueRejectAt(R"({"type":"string","pattern":"[à-ü]+"})", R"("éü")"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"string","pattern":"[à-ü]+"})", R"("a")"), 1);
  // Implied anchors: the whole string must match.
  EXPECT_EQ(ValueRejectAt(R"({"type":"string","pattern":"abc"})", R"("xabc")"), 1);
}

TEST(String, PatternCharactersThatNeedEscapes) {
  const char* s = R"({"type":"string","pattern":"a\"b\\\\c\\n"})";  // a"b\c<newline>
  EXPECT_EQ(ValueRejectAt(s, R"("a\"b\\c\n")"), -1);
  EXPECT_EQ(ValueRejectAt(s, R"("a"b)"), 2);            // a raw quote would end the string
  EXPECT_EQ(ValueRejectAt(s, R"("a\u0022b\\c\n")"), 3);  // no \u escapes in pattern strings
}

TEST(String, PatternWithLengthLimits) {
  EXPECT_EQ(ValueRejectAt(R"({"type":"string","pattern":"[a-z]*","maxLength":2})", R"("abc")"), 3);
  EXPECT_EQ(ValueRejectAt(R"({"type":"string","pattern":"(ab)+","minLength":3})", R"("ab")"), 3);
  EXPECT_EQ(ValueRejectAt(R"({"type":"string","pattern":"(ab)+","minLength":3})", R"("abab")"), -1);
  // "(ab)+" with maxLength 3: "ab" is the only way, "aba" could never close.
  EXPECT_EQ(ValueRejectAt(R"({"type":"string","pattern":"(ab)+","maxLength":3})", R"("aba")"), 3);
}

TEST(String, Formats) {
  const char* date = R"({"type":"string","format":"date"})";
  EXPECT_EQ(ValueRejectAt(date, R"("2024-02-29")"), -1);
  EXPECT_EQ(ValueRejectAt(date, R"("2023-02-29")"), 10);  // no 29 February in 2023
  EXPECT_EQ(ValueRejectAt(R"({"type":"string","format":"date-time"})", R"("2100-02-29T10:00")"), 10);
  EXPECT_EQ(ValueRejectAt(date, R"("2024-13-01")"), 7);
  EXPECT_EQ(ValueRejectAt(date, R"("2024-04-31")"), 10);
  EXPECT_EQ(ValueRejectAt(date, R"("2024-4-1")"), 6);
  const char* time = R"({"type":"string","format":"time"})";
  EXPECT_EQ(ValueRejectAt(time, R"("23:59")"), -1);
  EXPECT_EQ(ValueRejectAt(time, R"("07:05:09")"), -1);
  EXPECT_EQ(ValueRejectAt(time, R"("24:00")"), 2);
  const char* dt = R"({"type":"string","format":"date-time"})";
  EXPECT_EQ(ValueRejectAt(dt, R"("2024-01-02T03:04:05Z")"), -1);
  EXPECT_EQ(ValueRejectAt(dt, R"("2024-01-02 03:04")"), -1);
  EXPECT_EQ(ValueRejectAt(dt, R"("2024-01-02T03:04:05.123+02:00")"), -1);
  EXPECT_EQ(ValueRejectAt(dt, R"("2024-01-02")"), 11);
  const char* email = R"({"type":"string","format":"email"})";
  EXPECT_EQ(ValueRejectAt(email, R"("ada.l+x@math.example.org")"), -1);
  EXPECT_EQ(ValueRejectAt(email, R"("a@b")"), 4);
  EXPECT_EQ(ValueRejectAt(email, R"("a b@c.d")"), 2);
  const char* uri = R"({"type":"string","format":"uri"})";
  EXPECT_EQ(ValueRejectAt(uri, R"("https://example.com/a?b=1#c")"), -1);
  EXPECT_EQ(ValueRejectAt(uri, R"("mailto:x@y.z")"), -1);
  EXPECT_EQ(ValueRejectAt(uri, R"("no-scheme")"), 10);
  EXPECT_EQ(ValueRejectAt(uri, R"("http://a b")"), 9);
}

// ---- enum, const, boolean, null, type arrays --------------------------------------------

TEST(Enum, SharedPrefixes) {
  const char* s = R"({"type":"string","enum":["on","one","o","off"]})";
  for (const char* v : {R"("o")", R"("on")", R"("one")", R"("off")"}) EXPECT_EQ(ValueRejectAt(s, v), -1) << v;
  EXPECT_EQ(ValueRejectAt(s, R"("onex")"), 4);
  EXPECT_EQ(ValueRejectAt(s, R"("oe")"), 2);
  EXPECT_EQ(ValueRejectAt(s, R"("of")"), 3);
  EXPECT_EQ(ValueRejectAt(s, R"("")"), 1);
  EXPECT_EQ(ValueRejectAt(s, "o"), 0);
}

// The enum value being chosen: which values a candidate token's bytes fit,
// as ranks of the sorted serialized values, mapped back by value_of_rank.
TEST(Enum, LiteralCandidatesNameTheValuesATokenFits) {
  const auto g = ToolGrammar::Compile(std::string_view(R"([{"name":"move","parameters":{"type":"object","properties":{
      "way":{"type":"string","enum":["Left","Forward","Fast","Right"]},"cm":{"type":"integer"}}}}])"));
  GrammarMatcher m(g);
  ASSERT_TRUE(m.AcceptBytes(R"([{"name":"move","arguments":{"way")"));
  EXPECT_EQ(m.OpenLiteral(), -1);
  uint32_t lo = 0, hi = 0;
  EXPECT_FALSE(m.LiteralCandidates(R"(":")", &lo, &hi));
  ASSERT_TRUE(m.AcceptBytes(":"));
  ASSERT_GE(m.OpenLiteral(), 0);
  const Node& n = g->nodes[size_t(m.OpenLiteral())];
  auto values = [&](std::string_view bytes) {
    std::vector<std::string> out;
    uint32_t a = 0, b = 0;
    if (!m.LiteralCandidates(bytes, &a, &b)) return out;
    for (uint32_t r = a; r < b; ++r) out.push_back(n.values[n.value_of_rank[r]].get<std::string>());
    std::sort(out.begin(), out.end());
    return out;
  };
  EXPECT_EQ(values("\""), (std::vector<std::string>{"Fast", "Forward", "Left", "Right"}));
  EXPECT_EQ(values("\"F"), (std::vector<std::string>{"Fast", "Forward"}));
  EXPECT_EQ(values("\"Fo"), (std::vector<std::string>{"Forward"}));
  EXPECT_EQ(values("\"Left\","), (std::vector<std::string>{"Left"}));  // the value ends inside the token
  EXPECT_TRUE(values("\"Up").empty());
  ASSERT_TRUE(m.AcceptBytes("\"R"));
  EXPECT_EQ(values("ight\"}"), (std::vector<std::string>{"Right"}));
  ASSERT_TRUE(m.AcceptBytes("ight\""));
  EXPECT_EQ(m.OpenLiteral(), -1);
}

// A number value open: before its first byte and while more digits may follow.
TEST(Numbers, OpenNumberWhileTheValueMayGoOn) {
  const auto g = ToolGrammar::Compile(std::string_view(R"([{"name":"move","parameters":{"type":"object","properties":{
      "cm":{"type":"integer"},"way":{"type":"string"}}}}])"));
  GrammarMatcher m(g);
  ASSERT_TRUE(m.AcceptBytes(R"([{"name":"move","arguments":{"cm")"));
  EXPECT_EQ(m.OpenNumber(), -1);
  ASSERT_TRUE(m.AcceptBytes(":"));
  ASSERT_GE(m.OpenNumber(), 0);
  EXPECT_EQ(g->nodes[size_t(m.OpenNumber())].kind, NodeKind::kNumber);
  ASSERT_TRUE(m.AcceptBytes("15"));
  EXPECT_GE(m.OpenNumber(), 0);  // "150" may follow
  ASSERT_TRUE(m.AcceptBytes(","));
  EXPECT_EQ(m.OpenNumber(), -1);
  ASSERT_TRUE(m.AcceptBytes(R"("way":")"));
  EXPECT_EQ(m.OpenNumber(), -1);
}

// Where a call's arguments start, stand between values, and close: what the
// session needs to write a missing argument's key before the '}'.
TEST(Calls, ArgumentsPendingBetweenAndClosing) {
  const auto g = ToolGrammar::Compile(std::string_view(R"([{"name":"steps","parameters":{"type":"object","properties":{
      "day":{"type":"string","format":"date"},"n":{"type":"integer"}}}}])"));
  GrammarMatcher m(g);
  std::string rest;
  uint64_t written = 1;
  bool opened = true;
  EXPECT_FALSE(m.ArgumentsPending(&rest));
  ASSERT_TRUE(m.AcceptBytes(R"([{"name":"steps")"));
  ASSERT_TRUE(m.ArgumentsPending(&rest));
  EXPECT_EQ(rest, R"(,"arguments":)");
  EXPECT_TRUE(m.ClosesArguments(R"(,"arguments":{}}])"));
  EXPECT_FALSE(m.ClosesArguments(R"(,"arguments":{"n")"));
  ASSERT_TRUE(m.AcceptBytes(R"(,"argu)"));
  ASSERT_TRUE(m.ArgumentsPending(&rest));
  EXPECT_EQ(rest, R"(ments":)");
  EXPECT_LT(m.BetweenArguments(&written, &opened), 0);
  ASSERT_TRUE(m.AcceptBytes(R"(ments":)"));
  EXPECT_FALSE(m.ArgumentsPending(&rest));
  ASSERT_GE(m.BetweenArguments(&written, &opened), 0);
  EXPECT_FALSE(opened);
  EXPECT_EQ(written, 0u);
  ASSERT_TRUE(m.AcceptBytes(R"({"n":3)"));
  const int32_t args = m.BetweenArguments(&written, &opened);
  ASSERT_GE(args, 0);
  EXPECT_TRUE(opened);
  const Node& n = g->nodes[size_t(args)];
  ASSERT_EQ(n.prop_names.size(), 2u);
  EXPECT_EQ(written, uint64_t(1) << (n.prop_names[0] == "n" ? 0 : 1));
  EXPECT_TRUE(m.ClosesArguments("}"));
  EXPECT_TRUE(m.ClosesArguments("}]"));
  EXPECT_FALSE(m.ClosesArguments(","));
  EXPECT_FALSE(m.ClosesArguments("x"));  // rejected bytes close nothing
  EXPECT_EQ(m.ArgumentsCloseAt("}]"), 0u);
  EXPECT_EQ(m.ArgumentsCloseAt(","), std::string_view::npos);
  // A token that ends a string value and the arguments at once.
  GrammarMatcher in_string(g);
  ASSERT_TRUE(in_string.AcceptBytes(R"([{"name":"steps","arguments":{"n":3,"day":"2025-01-0)"));
  EXPECT_EQ(in_string.ArgumentsCloseAt(R"(1"}}])"), 2u);
  EXPECT_EQ(in_string.ArgumentsCloseAt(R"(1")"), std::string_view::npos);
}

TEST(Enum, MixedTypesAndNumbersThatArePrefixes) {
  const char* s = R"({"enum":[1,12,-3,2.5,"a",null,true,[1,2],{"k":1}]})";
  for (const char* v : {"1", "12", "-3", "2.5", R"("a")", "null", "true", "[1,2]", R"({"k":1})"})
    EXPECT_EQ(ValueRejectAt(s, v), -1) << v;
  EXPECT_EQ(ValueRejectAt(s, "13"), 1);
  EXPECT_EQ(ValueRejectAt(s, "2"), 1);
  EXPECT_EQ(ValueRejectAt(s, "false"), 0);
  EXPECT_EQ(ValueRejectAt(s, "[1]"), 2);
  // An integral float is an integer (JSON Schema); it is admitted as written.
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","enum":[2.0,3.5]})", "2.0"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","enum":[2.0,3.5]})", "3.5"), 0);
  // The type filters enum values: only the strings remain.
  EXPECT_EQ(ValueRejectAt(R"({"type":"string","enum":["a",1]})", "1"), 0);
}

TEST(Enum, ConstAndEscapedValues) {
  EXPECT_EQ(ValueRejectAt(R"({"const":"fixed"})", R"("fixed")"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"const":"fixed"})", R"("fix")"), 4);
  EXPECT_EQ(ValueRejectAt(R"({"const":5})", "5"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"const":5})", "50"), 1);
  EXPECT_EQ(ValueRejectAt(R"({"enum":["say \"hi\"","東"]})", R"("say \"hi\"")"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"enum":["say \"hi\"","東"]})", R"("東")"), -1);
}

TEST(Literal, BooleanNullAndTypeArrays) {
  EXPECT_EQ(ValueRejectAt(R"({"type":"boolean"})", "true"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"boolean"})", "false"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"boolean"})", "tru"), 3);
  EXPECT_EQ(ValueRejectAt(R"({"type":"boolean"})", "1"), 0);
  EXPECT_EQ(ValueRejectAt(R"({"type":"null"})", "null"), -1);
  const char* sn = R"({"type":["string","null"],"maxLength":2})";
  EXPECT_EQ(ValueRejectAt(sn, "null"), -1);
  EXPECT_EQ(ValueRejectAt(sn, R"("ab")"), -1);
  EXPECT_EQ(ValueRejectAt(sn, R"("abc")"), 3);
  EXPECT_EQ(ValueRejectAt(sn, "1"), 0);
  const char* in = R"({"type":["integer","number"],"minimum":0})";  // number absorbs integer
  EXPECT_EQ(ValueRejectAt(in, "2.5"), -1);
  EXPECT_EQ(ValueRejectAt(in, "-1"), 1);  // "-0.0" is still possible
}

// ---- numbers ----------------------------------------------------------------------------

TEST(Integer, BoundsAreExactByteByByte) {
  const char* s = R"({"type":"integer","minimum":-5,"maximum":120})";
  for (const char* v : {"-5", "0", "7", "99", "120", "-1"}) EXPECT_EQ(ValueRejectAt(s, v), -1) << v;
  EXPECT_EQ(ValueRejectAt(s, "121"), 2);
  EXPECT_EQ(ValueRejectAt(s, "1000"), 3);
  EXPECT_EQ(ValueRejectAt(s, "-6"), 1);
  EXPECT_EQ(ValueRejectAt(s, "-0"), 1);   // no negative zero
  EXPECT_EQ(ValueRejectAt(s, "01"), 1);   // no leading zeros
  EXPECT_EQ(ValueRejectAt(s, "1.5"), 1);  // integers have no fraction
  EXPECT_EQ(ValueRejectAt(s, "1e3"), 1);
  EXPECT_EQ(ValueRejectAt(s, R"("1")"), 0);
  EXPECT_EQ(ValueRejectAt(s, "-"), 1);
}

TEST(Integer, ExclusiveBoundsAndSign) {
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","exclusiveMinimum":0})", "0"), 0);  // "0" cannot grow
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","exclusiveMinimum":0})", "1"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","exclusiveMinimum":0})", "-1"), 0);
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","exclusiveMaximum":10})", "10"), 1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","exclusiveMaximum":10})", "9"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","maximum":-10})", "-10"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","maximum":-10})", "-9"), 2);
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","maximum":-10})", "5"), 0);
  // Draft-4 boolean exclusiveMinimum.
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","minimum":3,"exclusiveMinimum":true})", "3"), 1);
  // Decimal bounds on integers round inwards.
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","minimum":1.5,"maximum":3.5})", "1"), 0);
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","minimum":1.5,"maximum":3.5})", "3"), -1);
}

TEST(Integer, MultipleOfIsEnforcedToo) {
  const char* s = R"({"type":"integer","minimum":0,"maximum":100,"multipleOf":5})";
  EXPECT_EQ(ValueRejectAt(s, "15"), -1);
  EXPECT_EQ(ValueRejectAt(s, "100"), -1);
  EXPECT_EQ(ValueRejectAt(s, "13"), 1);  // 13, 130..139: no multiple of 5 in range
  EXPECT_EQ(ValueRejectAt(s, "7"), 1);   // 70, 75 could follow, but 7 cannot end
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","multipleOf":7})", "-14"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","multipleOf":7})", "15"), 2);
  // A fractional multipleOf on integers: multiples of 7.5 are the multiples of 15.
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","multipleOf":7.5})", "45"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","multipleOf":7.5})", "30"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","multipleOf":7.5})", "25"), 2);
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer","multipleOf":0.1})", "7"), -1);
}

TEST(Integer, DigitCapWithoutBounds) {
  const std::string ok(18, '9');
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer"})", ok), -1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"integer"})", ok + "9"), 18);
}

TEST(Number, DecimalBoundsOnTheGrid) {
  const char* s = R"({"type":"number","minimum":0.5,"maximum":2.25})";
  for (const char* v : {"0.5", "2.25", "1", "2", "0.75", "2.2499", "1.000000000000001"}) EXPECT_EQ(ValueRejectAt(s, v), -1) << v;
  EXPECT_EQ(ValueRejectAt(s, "0.4"), 2);
  EXPECT_EQ(ValueRejectAt(s, "2.26"), 3);
  EXPECT_EQ(ValueRejectAt(s, "3"), 0);
  EXPECT_EQ(ValueRejectAt(s, "0"), 1);   // 0.5.. could follow, but 0 cannot end
  EXPECT_EQ(ValueRejectAt(s, "0."), 2);  // a digit must follow the point
  EXPECT_EQ(ValueRejectAt(s, "1e0"), 1);  // exponents only without bounds
  const char* x = R"({"type":"number","exclusiveMinimum":0,"exclusiveMaximum":1})";
  EXPECT_EQ(ValueRejectAt(x, "0.999999"), -1);
  EXPECT_EQ(ValueRejectAt(x, "0.000000000000001"), -1);
  EXPECT_EQ(ValueRejectAt(x, "0"), 1);
  EXPECT_EQ(ValueRejectAt(x, "0.000000000000000"), 16);  // the 15th zero
  EXPECT_EQ(ValueRejectAt(x, "1"), 0);
  EXPECT_EQ(ValueRejectAt(R"({"type":"number","maximum":-0.5})", "-0.5"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"number","maximum":-0.5})", "-0.4"), 3);
}

TEST(Number, MultipleOfDecimal) {
  const char* s = R"({"type":"number","multipleOf":0.25,"minimum":0})";
  EXPECT_EQ(ValueRejectAt(s, "0.75"), -1);
  EXPECT_EQ(ValueRejectAt(s, "3"), -1);
  EXPECT_EQ(ValueRejectAt(s, "0.3"), 2);
  EXPECT_EQ(ValueRejectAt(s, "0.7"), 3);  // 0.75 could follow
}

TEST(Number, UnboundedSyntax) {
  const char* s = R"({"type":"number"})";
  for (const char* v : {"0", "-0.5", "3.14159", "1e-7", "-2.5E+3", "6.02e23", "123456789012345.123456789012345"})
    EXPECT_EQ(ValueRejectAt(s, v), -1) << v;
  EXPECT_EQ(ValueRejectAt(s, "1e123"), 4);  // at most two exponent digits: always a finite double
  EXPECT_EQ(ValueRejectAt(s, ".5"), 0);
  EXPECT_EQ(ValueRejectAt(s, "1."), 2);
  EXPECT_EQ(ValueRejectAt(s, "+1"), 0);
  EXPECT_EQ(ValueRejectAt(s, "00"), 1);
  EXPECT_EQ(ValueRejectAt(s, "1e"), 2);
  EXPECT_EQ(ValueRejectAt(s, "NaN"), 0);
}

// ---- arrays -----------------------------------------------------------------------------

TEST(Array, ItemsAndCounts) {
  const char* s = R"({"type":"array","items":{"type":"integer"},"minItems":1,"maxItems":3})";
  EXPECT_EQ(ValueRejectAt(s, "[1,2,3]"), -1);
  EXPECT_EQ(ValueRejectAt(s, "[7]"), -1);
  EXPECT_EQ(ValueRejectAt(s, "[]"), 1);
  EXPECT_EQ(ValueRejectAt(s, "[1,2,3,4]"), 6);
  EXPECT_EQ(ValueRejectAt(s, R"([1,"a"])"), 3);
  EXPECT_EQ(ValueRejectAt(s, "[1,]"), 3);
  EXPECT_EQ(ValueRejectAt(R"({"type":"array","maxItems":0})", "[]"), -1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"array","maxItems":0})", "[1]"), 1);
  EXPECT_EQ(ValueRejectAt(R"({"type":"array","items":false})", "[1]"), 1);
}

TEST(Array, UniqueItemsIsAPostCheck) {
  const char* s = R"({"type":"array","items":{"type":"string","enum":["a","b","c"]},"uniqueItems":true})";
  EXPECT_EQ(ValueRejectAt(s, R"(["a","b"])"), -1);
  EXPECT_EQ(ValueRejectAt(s, R"(["a","a"])"), -1);  // admitted by the grammar...
  auto v = ValidateCall(CallText("t", R"({"x":["a","a"]})"), OnePropTools(s));
  ASSERT_TRUE(v.has_value());  // ...and caught after generation
  EXPECT_EQ(v->kind, ViolationKind::kUnique);
}

TEST(Array, ItemsWithoutSchemaAreAnyJson) {
  const char* s = R"({"type":"array"})";
  EXPECT_EQ(ValueRejectAt(s, R"([1,"a",null,true,[],{},{"k":[{"z":-1.5e3}]}])"), -1);
  EXPECT_EQ(ValueRejectAt(s, "[1 ]"), 2);
}

// ---- any value ---------------------------------------------------------------------------

TEST(Any, NoTypeMeansAnyJsonValue) {
  const char* s = "{}";
  for (const char* v : {"1", "-2.5e-3", R"("s")", "true", "false", "null", "[]", R"({"a":[1,{"b":null}],"c":"d"})"})
    EXPECT_EQ(ValueRejectAt(s, v), -1) << v;
  EXPECT_EQ(ValueRejectAt(s, R"({"a":1,})"), 7);
  EXPECT_EQ(ValueRejectAt(s, "nul"), 3);
  EXPECT_EQ(ValueRejectAt("true", R"({"a":{}})"), -1);  // boolean schema true
}

TEST(Any, DeepNestingIsBoundedNotACrash) {
  std::string deep(100, '[');
  const long r = ValueRejectAt("{}", deep);
  EXPECT_GT(r, 10);  // nesting stops at the frame stack...
  EXPECT_LT(r, 30);
  // ...and what was opened can still be closed.
  auto g = ToolGrammar::Compile(std::string_view(OnePropTools("{}")));
  GrammarMatcher m(g);
  const std::string prefix = R"([{"name":"t","arguments":{"x":)" + deep.substr(0, size_t(r));
  ASSERT_TRUE(m.AcceptBytes(prefix));
  std::string tail;
  ASSERT_TRUE(m.CompletionBytes(&tail));
  EXPECT_TRUE(m.AcceptBytes(tail));
  EXPECT_TRUE(m.IsComplete());
}

// ---- tokens, completion --------------------------------------------------------------------

TEST(Completion, EveryPrefixOfAValidCallCanBeFinished) {
  const char* tools = R"([{"name":"t","parameters":{"type":"object","properties":{
      "s":{"type":"string","minLength":3,"pattern":"[a-z]+[0-9]"},
      "n":{"type":"number","minimum":0.25,"maximum":0.75,"multipleOf":0.25},
      "i":{"type":"integer","minimum":10,"maximum":99},
      "e":{"enum":["on","one"]},
      "a":{"type":"array","items":{"type":"string","format":"date"},"minItems":2},
      "o":{"type":"object","properties":{"k":{"type":"string","maxLength":4}},"required":["k"]},
      "u":{"type":"string"}},
      "required":["s","n","i","e","a","o","u"]}}])";
  auto g = ToolGrammar::Compile(std::string_view(tools));
  const std::string text = CallText(
      "t", R"({"u":"h\u00e9\ud83d\ude00","s":"abc1","n":0.5,"i":42,"e":"one","a":["2024-01-31","2023-12-01"],"o":{"k":"ab"}})");
  ASSERT_EQ(RejectAt(*g, text), -1);
  for (size_t cut = 0; cut <= text.size(); ++cut) {
    GrammarMatcher m(g);
    ASSERT_TRUE(m.AcceptBytes(text.substr(0, cut)));
    std::string tail;
    ASSERT_TRUE(m.CompletionBytes(&tail)) << cut;
    ASSERT_TRUE(m.AcceptBytes(tail)) << cut << ": " << tail;
    ASSERT_TRUE(m.IsComplete()) << cut << ": " << tail;
    const std::string full = text.substr(0, cut) + tail;
    const auto v = ValidateCall(full, *g);
    EXPECT_FALSE(v.has_value()) << full << " -> " << v->message;
  }
}

TEST(Matcher, RejectionLeavesTheStateUnchanged) {
  auto g = ToolGrammar::Compile(std::string_view(kTwoTools));
  GrammarMatcher m(g);
  ASSERT_TRUE(m.AcceptBytes(R"([{"name":"se)"));
  EXPECT_FALSE(m.AcceptBytes("tx"));
  EXPECT_FALSE(m.AcceptByte('x'));
  EXPECT_TRUE(m.AcceptBytes(R"(t","arguments":{"on":true}}])"));
  EXPECT_TRUE(m.IsComplete());
  EXPECT_FALSE(m.AcceptByte(']'));
  m.Reset();
  EXPECT_FALSE(m.IsComplete());
  EXPECT_TRUE(m.AcceptBytes("[]"));
}

TEST(Matcher, SnapshotAndRestore) {
  auto g = ToolGrammar::Compile(std::string_view(kTwoTools));
  GrammarMatcher m(g);
  ASSERT_TRUE(m.AcceptBytes(R"([{"name":"set_timer","arguments":{"minutes":1)"));
  const GrammarState snap = m.state();
  ASSERT_TRUE(m.AcceptBytes("2}}]"));
  EXPECT_TRUE(m.IsComplete());
  m.RestoreState(snap);
  EXPECT_FALSE(m.IsComplete());
  EXPECT_TRUE(m.AcceptBytes("}}]"));
}

}  // namespace
}  // namespace needle::grammar
