// The token-level mask agrees with the byte-level matcher: a token is
// allowed iff all its bytes are accepted from the current state, and
// </tool_call> iff the calls are complete. Checked exhaustively over the
// vocabulary at every state of random constrained walks, for three
// tokenizers: byte-level, the golden 400-piece BPE, and a synthetic one full
// of JSON-crossing pieces (`":"`, `"}]`, `\u`, partial UTF-8, ...).
#include "grammar/matcher.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "base/random.h"
#include "grammar/grammar_testing.h"
#include "grammar/validate.h"
#include "io/tokenizer_blob.h"
#include "text/tokenizer.h"

namespace needle::grammar {
namespace {

TokenizerModel SyntheticModel() {
  TokenizerModel m = ByteLevelTokenizer();
  const char* extra[] = {"{\"", "\":\"", "\",\"", "\"}", "\"}]", "\"]", "}}]", "}}", "\":", "\",", "[{\"name\":\"",
                         "\",\"arguments\":{\"", "\\\"", "\\\\", "\\u", "\\ud83d", "00", "e9", "ing", "é", "東京", "\"a",
                         "1,", "12", ".5", "-1", "e+", "true", "null}", "on", "one", "off", "\"on", "\"one\"", "2024-",
                         "-01", ":30", "@", ".com", "http", "://", "▁the", "🙂", "a\"", "\\n", "\"\"", ",\"", "0.", "99"};
  float score = -1.0f;
  for (const char* p : extra) m.pieces.push_back({p, score -= 0.01f, PieceType::kNormal});
  return m;
}

std::unique_ptr<Tokenizer> MakeTokenizer(const std::string& which) {
  if (which == "bytes") return std::make_unique<Tokenizer>(ByteLevelTokenizer());
  if (which == "golden") return std::make_unique<Tokenizer>(ReadSentencePieceModelFile(NEEDLE_GOLDEN_DIR "/tokenizer.model"));
  return std::make_unique<Tokenizer>(SyntheticModel());
}

bool Bit(const std::vector<uint32_t>& bits, int32_t id) { return (bits[size_t(id) >> 5] >> (id & 31)) & 1; }

// Compares the mask with the brute-force answer; returns the number of allowed tokens.
size_t CheckMask(GrammarMatcher& m, const TokenTrie& trie, std::vector<uint32_t>& bits, const std::string& where) {
  const bool close = m.ComputeMask(bits);
  EXPECT_EQ(close, m.IsComplete()) << where;
  size_t allowed = 0;
  for (int32_t id = 0; id < trie.vocab_size(); ++id) {
    bool expect;
    if (id == int32_t(kToolCallEndId)) {
      expect = m.IsComplete();
    } else {
      expect = trie.Eligible(id) && m.CanAccept(trie.Bytes(id));
    }
    allowed += expect;
    if (Bit(bits, id) != expect) {
      ADD_FAILURE() << where << ": token " << id << " \"" << trie.Bytes(id) << "\" mask " << Bit(bits, id)
                    << " bytes " << expect;
      return allowed;
    }
  }
  return allowed;
}

class MaskAgreement : public ::testing::TestWithParam<std::string> {};

TEST_P(MaskAgreement, MaskEqualsByteLevelOnRandomWalks) {
  const std::unique_ptr<Tokenizer> tok = MakeTokenizer(GetParam());
  auto trie = std::make_shared<const TokenTrie>(*tok);
  std::vector<uint32_t> bits(trie->mask_words() + 3, 0xFFFFFFFFu);  // larger than needed: overwritten entirely
  SplitMix64 rng(GetParam().size());
  size_t states = 0, completed = 0;
  for (const char* tools : {testing::kKeywordTools, testing::kFiveTools}) {
    auto g = ToolGrammar::Compile(std::string_view(tools));
    for (int walk = 0; walk < 100; ++walk) {
      GrammarMatcher m(g, trie);
      std::string text;
      for (int step = 0; step < 60 && !m.IsComplete(); ++step) {
        const size_t allowed = CheckMask(m, *trie, bits, GetParam() + " after " + text);
        ++states;
        ASSERT_GT(allowed, 0u) << "dead end after " << text;
        // Pick an allowed token; prefer short ones half the time so structure gets explored.
        std::vector<int32_t> ids;
        for (int32_t id = 0; id < trie->vocab_size(); ++id)
          if (Bit(bits, id)) ids.push_back(id);
        int32_t pick = ids[rng.Next() % ids.size()];
        if (rng.Next() % 2) {
          for (int tries = 0; tries < 4; ++tries) {
            const int32_t c = ids[rng.Next() % ids.size()];
            if (trie->Bytes(c).size() < trie->Bytes(pick).size()) pick = c;
          }
        }
        ASSERT_TRUE(m.AcceptToken(pick));
        text += trie->Bytes(pick);
      }
      // Finish byte by byte, checking the mask at every intermediate state.
      std::string tail;
      ASSERT_TRUE(m.CompletionBytes(&tail)) << text;
      for (char c : tail) {
        CheckMask(m, *trie, bits, GetParam() + " finishing " + text);
        ++states;
        ASSERT_TRUE(m.AcceptByte(uint8_t(c)));
        text.push_back(c);
      }
      CheckMask(m, *trie, bits, GetParam() + " complete " + text);
      ASSERT_TRUE(m.IsComplete());
      EXPECT_TRUE(m.AcceptToken(int32_t(kToolCallEndId)));
      ++completed;
      const auto v = ValidateCall(text, *g);
      if (v) {
        EXPECT_TRUE(v->kind == ViolationKind::kUnique || v->kind == ViolationKind::kFormat) << text << " -> " << v->message;
      }
    }
  }
  EXPECT_GT(states, 4000u);
  EXPECT_EQ(completed, 200u);
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, MaskAgreement, ::testing::Values("bytes", "golden", "synthetic"));

TEST(TokenTrie, EveryEligibleTokenOnceAndPlainSplit) {
  const std::unique_ptr<Tokenizer> tok = MakeTokenizer("synthetic");
  const TokenTrie trie(*tok);
  std::vector<int> seen(size_t(trie.vocab_size()), 0), special(size_t(trie.vocab_size()), 0);
  for (int32_t id : trie.all().ids) ++seen[size_t(id)];
  for (int32_t id : trie.special().ids) ++special[size_t(id)];
  for (int32_t id = 0; id < trie.vocab_size(); ++id) {
    EXPECT_EQ(seen[size_t(id)], trie.Eligible(id) ? 1 : 0) << id;
    const bool plain = trie.PlainCodePoints(id) >= 0;
    EXPECT_EQ(special[size_t(id)], trie.Eligible(id) && !plain ? 1 : 0) << id;
  }
  EXPECT_FALSE(trie.Eligible(int32_t(kToolCallId)));
  EXPECT_FALSE(trie.Eligible(int32_t(kBosId)));
  EXPECT_EQ(trie.PlainCodePoints(tok->PieceToId("東京")), 2);
  EXPECT_EQ(trie.PlainCodePoints(tok->PieceToId("▁the")), 4);
  EXPECT_EQ(trie.PlainCodePoints(tok->PieceToId("\":\"")), -1);
  EXPECT_EQ(trie.PlainCodePoints(tok->ByteToId(0xE6)), -1);
  // Preorder: each node's subtree ends after it, children are deeper.
  const auto& nodes = trie.all().nodes;
  for (uint32_t i = 1; i < nodes.size(); ++i) {
    EXPECT_GT(nodes[i].end, i);
    if (i + 1 < nodes[i].end) {
      EXPECT_EQ(nodes[i + 1].depth, nodes[i].depth + 1);
    }
  }
}

TEST(Mask, ControlAndMarkerTokensNeverAllowed) {
  const std::unique_ptr<Tokenizer> tok = MakeTokenizer("golden");
  auto trie = std::make_shared<const TokenTrie>(*tok);
  GrammarMatcher m(ToolGrammar::Compile(std::string_view(testing::kFiveTools)), trie);
  std::vector<uint32_t> bits(trie->mask_words());
  ASSERT_TRUE(m.AcceptBytes(R"([{"name":"send_message","arguments":{"to":"a)"));
  m.ComputeMask(bits);
  for (int32_t id = 0; id < 14; ++id) EXPECT_FALSE(Bit(bits, id)) << id;
  EXPECT_FALSE(m.AcceptToken(int32_t(kThinkId)));
  EXPECT_FALSE(m.AcceptToken(int32_t(kToolCallEndId)));
  EXPECT_FALSE(m.AcceptToken(-1));
  EXPECT_FALSE(m.AcceptToken(1 << 20));
  std::vector<uint32_t> small(1);
  EXPECT_THROW(m.ComputeMask(small), Error);
}

TEST(Mask, CompleteAllowsOnlyTheClosingToken) {
  const std::unique_ptr<Tokenizer> tok = MakeTokenizer("bytes");
  auto trie = std::make_shared<const TokenTrie>(*tok);
  GrammarMatcher m(ToolGrammar::Compile(std::string_view(testing::kFiveTools)), trie);
  std::vector<uint32_t> bits(trie->mask_words());
  EXPECT_FALSE(m.ComputeMask(bits));
  ASSERT_TRUE(m.AcceptBytes("[]"));
  EXPECT_TRUE(m.ComputeMask(bits));
  for (int32_t id = 0; id < trie->vocab_size(); ++id) EXPECT_EQ(Bit(bits, id), id == int32_t(kToolCallEndId)) << id;
}

TEST(Mask, FreeStringRespectsMaxLengthInCodePoints) {
  const std::unique_ptr<Tokenizer> tok = MakeTokenizer("synthetic");
  auto trie = std::make_shared<const TokenTrie>(*tok);
  GrammarMatcher m(ToolGrammar::Compile(std::string_view(testing::OnePropTools(R"({"type":"string","maxLength":3})"))), trie);
  std::vector<uint32_t> bits(trie->mask_words());
  ASSERT_TRUE(m.AcceptBytes(R"([{"name":"t","arguments":{"x":"a)"));
  m.ComputeMask(bits);
  EXPECT_TRUE(Bit(bits, tok->PieceToId("東京")));  // 2 more: 3
  EXPECT_FALSE(Bit(bits, tok->PieceToId("ing")));  // 3 more: 4
  EXPECT_TRUE(Bit(bits, tok->PieceToId("\"}")));
  ASSERT_TRUE(m.AcceptBytes("東京"));
  m.ComputeMask(bits);
  EXPECT_FALSE(Bit(bits, tok->PieceToId("é")));
  EXPECT_TRUE(Bit(bits, tok->PieceToId("\"}")));
}

}  // namespace
}  // namespace needle::grammar

namespace needle::grammar {
namespace {

// The copy mask, against brute force: a token is marked iff its bytes up to
// a closing quote continue the string's content as a substring of the source
// (ASCII case folded; a backslash never does) at an occurrence that starts
// where a word starts, and a quote closes only a
// non-empty copy at an occurrence that ends where a word (a number's digits)
// ends. Checked over the whole vocabulary at every step of feeding a copied
// value, after the copy breaks, and outside strings.
class CopyMaskAgreement : public ::testing::TestWithParam<std::string> {};

TEST_P(CopyMaskAgreement, MarksExactlyTheTokensThatKeepACopy) {
  const std::unique_ptr<Tokenizer> tok = MakeTokenizer(GetParam());
  auto trie = std::make_shared<const TokenTrie>(*tok);
  GrammarMatcher m(ToolGrammar::Compile(std::string_view(testing::kFiveTools)), trie);
  const std::string_view segments[] = {"please send the one file to Ana: \"on the way\"", "{\"id\":\"c_97\"}", "dim to 35 or 3.5",
                                       "at 10pm, thesis 42x"};
  CopySource src;
  src.Build(segments);
  m.SetCopySource(&src);
  std::vector<uint32_t> bits(trie->mask_words());
  std::string close = "\"";
  bool number = false;
  auto word = [](char c) { return CopySource::IsWordByte(uint8_t(c)); };
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  // Some occurrence of `typed` (folded) that starts where a word starts (or
  // with a non-word byte) and ends as the value's kind needs (when `closing`).
  auto occurs = [&](const std::string& typed, bool closing) {
    std::string probe = typed;
    for (char& c : probe) c = char(CopySource::Fold(uint8_t(c)));
    for (std::string_view seg : segments) {
      std::string text(seg);
      for (char& c : text) c = char(CopySource::Fold(uint8_t(c)));
      for (size_t p = text.find(probe); p != std::string::npos; p = text.find(probe, p + 1)) {
        const size_t q = p + probe.size();
        const bool starts = p == 0 || !word(text[p - 1]) || probe.empty() || !word(probe[0]);
        const bool ends = number ? q >= text.size() || (!digit(text[q]) && !(text[q] == '.' && q + 1 < text.size() && digit(text[q + 1])))
                                 : q >= text.size() || !word(text[q]);
        if (starts && (!closing || ends)) return true;
      }
    }
    return false;
  };
  auto expected = [&](const std::string& content, int32_t id) {
    if (!trie->Eligible(id)) return false;
    std::string typed = content;
    for (char c : trie->Bytes(id)) {
      if (close.find(c) != std::string::npos) return !typed.empty() && occurs(typed, true);
      if (c == '\\') return false;
      typed.push_back(c);
      if (!occurs(typed, false)) return false;
    }
    return true;
  };
  auto check = [&](const std::string& content, bool in_copy, const std::string& where) {
    const bool any = m.ComputeCopyMask(bits);
    size_t marked = 0;
    for (int32_t id = 0; id < trie->vocab_size(); ++id) {
      const bool want = in_copy && expected(content, id);
      marked += want;
      if (Bit(bits, id) != want) {
        ADD_FAILURE() << where << ": token " << id << " \"" << trie->Bytes(id) << "\" copy bit " << Bit(bits, id);
        return;
      }
    }
    EXPECT_EQ(any, marked > 0) << where;
  };
  ASSERT_TRUE(m.AcceptBytes(R"([{"name":"send_message","arguments":{"to")"));
  check("", false, "before the value");
  ASSERT_TRUE(m.AcceptBytes(R"(:")"));
  std::string content;
  check(content, true, "empty value");
  for (char c : std::string("THE one")) {
    ASSERT_TRUE(m.AcceptByte(uint8_t(c)));
    content.push_back(c);
    check(content, true, "value '" + content + "'");
  }
  ASSERT_TRUE(m.AcceptBytes("x"));  // "the onex" is not in the source: the copy broke
  check(content, false, "broken copy");
  ASSERT_TRUE(m.AcceptBytes(R"(","body":")"));  // a new string starts a new copy
  content.clear();
  check(content, true, "second value");
  ASSERT_TRUE(m.AcceptBytes(R"(\"on)"));  // an escaped quote is the source's quote
  content = "\"on";
  check(content, true, "after an escape");
  ASSERT_TRUE(m.AcceptBytes(R"( the way\"",)"));
  check("", false, "between properties");
  // Numbers copy digits; they end at the byte after them.
  close = ",}] ";
  number = true;
  m.Reset();
  ASSERT_TRUE(m.AcceptBytes(R"([{"name":"set_lights","arguments":{"state":"on","brightness":)"));
  content.clear();
  check(content, true, "number start");
  for (char c : std::string("35")) {
    ASSERT_TRUE(m.AcceptByte(uint8_t(c)));
    content.push_back(c);
    check(content, true, "number '" + content + "'");
  }
  ASSERT_TRUE(m.AcceptBytes("}"));
  check("", false, "after the number");
  // A number inside a word ("42x") ends there; "3" of "3.5" does not end.
  for (const char* digits : {"4", "42", "3", "10"}) {
    m.Reset();
    ASSERT_TRUE(m.AcceptBytes(R"([{"name":"set_lights","arguments":{"state":"on","brightness":)"));
    ASSERT_TRUE(m.AcceptBytes(digits));
    check(digits, true, std::string("number '") + digits + "'");
  }
  // Strings: "thesis" may not be closed after "the", "one" may.
  number = false;
  close = "\"";
  for (const char* typed : {"the", "thesis", "one", "c_9", "c_97", "pm", "10pm"}) {
    m.Reset();
    ASSERT_TRUE(m.AcceptBytes(R"([{"name":"send_message","arguments":{"to":")"));
    ASSERT_TRUE(m.AcceptBytes(typed));
    check(typed, true, std::string("value '") + typed + "'");
  }
  // Without a source nothing is marked.
  m.SetCopySource(nullptr);
  m.Reset();
  ASSERT_TRUE(m.AcceptBytes(R"([{"name":"send_message","arguments":{"to":"th)"));
  EXPECT_FALSE(m.ComputeCopyMask(bits));
}

INSTANTIATE_TEST_SUITE_P(Tokenizers, CopyMaskAgreement, ::testing::Values("bytes", "golden", "synthetic"));

// A copied number may start with '-' only where a digit follows it in the
// source: the hyphen of "twenty-two" is no number's sign, that of "-5" is.
TEST(CopyMask, MinusStartsACopiedNumberOnlyBeforeADigit) {
  const std::unique_ptr<Tokenizer> tok = MakeTokenizer("bytes");
  auto trie = std::make_shared<const TokenTrie>(*tok);
  GrammarMatcher m(ToolGrammar::Compile(std::string_view(testing::kFiveTools)), trie);
  std::vector<uint32_t> bits(trie->mask_words());
  auto id_of = [&](std::string_view bytes) {
    for (int32_t id = 0; id < trie->vocab_size(); ++id)
      if (trie->Eligible(id) && trie->Bytes(id) == bytes) return id;
    return -1;
  };
  const int32_t seven = id_of("7"), minus_id = id_of("-");
  ASSERT_GE(seven, 0);
  ASSERT_GE(minus_id, 0);
  for (const auto& [text, minus] : {std::pair{"set it to twenty-two 7", false}, std::pair{"cool to -5 or 7", true}}) {
    CopySource src;
    const std::string_view segments[] = {text};
    src.Build(segments);
    m.SetCopySource(&src);
    m.Reset();
    ASSERT_TRUE(m.AcceptBytes(R"([{"name":"set_lights","arguments":{"state":"on","brightness":)"));
    ASSERT_TRUE(m.ComputeCopyMask(bits)) << text;
    EXPECT_TRUE(Bit(bits, seven)) << text;
    EXPECT_EQ(Bit(bits, minus_id), minus) << text;
  }
}

}  // namespace
}  // namespace needle::grammar

namespace needle::grammar {
namespace {

TEST(NameCandidates, TheToolsABytesRunStillFits) {
  GrammarMatcher m(ToolGrammar::Compile(std::string_view(testing::kFiveTools)));
  const ToolGrammar& g = m.grammar();
  auto names = [&](std::string_view bytes) {
    uint32_t lo = 0, hi = 0;
    std::vector<std::string> out;
    if (!m.NameCandidates(bytes, &lo, &hi)) return out;
    for (uint32_t r = lo; r < hi; ++r) out.push_back(g.tools()[g.tool_of_rank[r]].name);
    std::sort(out.begin(), out.end());
    return out;
  };
  using V = std::vector<std::string>;
  EXPECT_EQ(names("["), V{});                        // no name reached yet
  EXPECT_EQ(names(R"([{"name")"), V{});              // still before the name
  EXPECT_EQ(names(R"([{"name":)").size(), 5u);       // at the name: every tool
  EXPECT_EQ(names(R"([{"name":")").size(), 5u);
  EXPECT_EQ(names(R"([{"name":"set_)"), (V{"set_lights", "set_timer"}));
  EXPECT_EQ(names(R"([{"name":"set_t)"), V{"set_timer"});
  EXPECT_EQ(names(R"([{"name":"get_weather","argu)"), V{"get_weather"});  // named within these bytes
  EXPECT_EQ(names(R"([{"name":"nope)"), V{});         // rejected
  auto tool_name = [&]() { return m.NamedTool() < 0 ? std::string("-") : g.tools()[size_t(m.NamedTool())].name; };
  EXPECT_EQ(tool_name(), "-");
  ASSERT_TRUE(m.AcceptBytes(R"([{"name":"se)"));
  EXPECT_TRUE(m.BeforeOrInName());
  EXPECT_EQ(tool_name(), "-");                      // not named yet
  EXPECT_EQ(names("nd_message"), V{"send_message"});
  ASSERT_TRUE(m.AcceptBytes(R"(nd_message")"));
  EXPECT_EQ(tool_name(), "send_message");           // named at its closing quote
  ASSERT_TRUE(m.AcceptBytes(R"(,"arguments":{"to":"a","body":"b")"));
  EXPECT_FALSE(m.BeforeOrInName());
  EXPECT_EQ(tool_name(), "send_message");           // inside its arguments
  EXPECT_EQ(names("}"), V{});                         // the named call's arguments end
  ASSERT_TRUE(m.AcceptBytes("}"));
  EXPECT_FALSE(m.BeforeOrInName());                  // the call's own brace is next
  ASSERT_TRUE(m.AcceptBytes("}"));
  EXPECT_TRUE(m.BeforeOrInName());                   // a second call may follow
  EXPECT_EQ(tool_name(), "-");                       // the call is closed
  EXPECT_EQ(names(R"(,{"name":"create)"), V{"create_event"});
  ASSERT_TRUE(m.AcceptBytes(R"(,{"name":"get_weather")"));
  EXPECT_EQ(tool_name(), "get_weather");
  EXPECT_EQ(names("]"), V{});
}

}  // namespace
}  // namespace needle::grammar

namespace needle::grammar {
namespace {

// Format and pattern strings track copies too: a date copies the ISO date
// the conversation holds (the session adds those it reads from words).
TEST(CopyMask, FormatStringsAreCopiesToo) {
  const std::unique_ptr<Tokenizer> tok = MakeTokenizer("bytes");
  auto trie = std::make_shared<const TokenTrie>(*tok);
  GrammarMatcher m(ToolGrammar::Compile(std::string_view(R"([{"name":"book","parameters":{"type":"object","properties":{
      "day":{"type":"string","format":"date"},"code":{"type":"string","pattern":"^[A-Z]{3}$"}}}}])")),
                   trie);
  std::vector<uint32_t> bits(trie->mask_words());
  auto id_of = [&](std::string_view bytes) {
    for (int32_t id = 0; id < trie->vocab_size(); ++id)
      if (trie->Eligible(id) && trie->Bytes(id) == bytes) return id;
    return -1;
  };
  CopySource src;
  const std::string_view segments[] = {"fly on 2025-09-06 from OSL", "2025-09-06"};
  src.Build(segments);
  m.SetCopySource(&src);
  ASSERT_TRUE(m.AcceptBytes(R"([{"name":"book","arguments":{"day":"2025-0)"));
  ASSERT_TRUE(m.ComputeCopyMask(bits));
  EXPECT_TRUE(Bit(bits, id_of("9")));
  EXPECT_FALSE(Bit(bits, id_of("1")));
  ASSERT_TRUE(m.AcceptBytes(R"(9-06","code":")"));
  ASSERT_TRUE(m.ComputeCopyMask(bits));
  EXPECT_TRUE(Bit(bits, id_of("O")));
  EXPECT_FALSE(Bit(bits, id_of("X")));
}

}  // namespace
}  // namespace needle::grammar
