// The call rules one by one, on the byte-level test tokenizer (a token per
// byte, so a test can name the token of any byte) and real grammars.
#include "agent/rules/rules.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "agent/model.h"
#include "agent/testing/agent_archives.h"
#include "agent/turn_evidence.h"
#include "grammar/tool_grammar.h"

namespace needle::rules {
namespace {

// A matcher over `tools` after `written` bytes of the calls array, and one
// step of the rule chain's input (the grammar's mask) there.
struct RuleBench {
  std::shared_ptr<const Model> model = testing::AgentModel();
  std::shared_ptr<const grammar::ToolGrammar> grammar;
  std::unique_ptr<grammar::GrammarMatcher> matcher;
  TurnEvidence evidence;
  std::vector<float> logits;
  CallStep step;
  std::string call;

  RuleBench(const std::string& tools, const std::string& written, const std::string& said = "") {
    const nlohmann::ordered_json t = nlohmann::ordered_json::parse(tools);
    grammar = grammar::ToolGrammar::Compile(nlohmann::json::parse(tools));
    matcher = std::make_unique<grammar::GrammarMatcher>(grammar, model->trie());
    evidence.SetTools(grammar, t);
    if (!said.empty()) evidence.Remember(said, true, "", {});
    for (char c : written) EXPECT_TRUE(matcher->AcceptByte(uint8_t(c))) << written;
    call = written;
    logits.assign(size_t(model->tokenizer().vocab_size()), 0.0f);
    step.Prepare(logits.size(), model->trie()->mask_words());
    step.Begin(logits);
    step.can_close = matcher->ComputeMask(step.allowed());
  }
  void Apply(CallRule& rule) {
    rule.Prepare(model->trie()->mask_words());
    rule.SetTools(*grammar);
    CallView view{model->tokenizer(), *matcher, call, evidence, {}, 0.0f};
    rule.Apply(view, step);
  }
  int32_t Id(std::string_view bytes) const {
    const Tokenizer& tok = model->tokenizer();
    for (int32_t id = 0; id < tok.vocab_size(); ++id)
      if (tok.TokenBytes(id) == bytes) return id;
    return -1;
  }
  bool Allowed(std::string_view bytes) const { return step.IsAllowed(Id(bytes)); }
};

const std::string kStringTool = R"([{"name":"t","parameters":{"type":"object","properties":{"x":{"type":"string"}},"required":["x"]}}])";
const std::string kNumberTool = R"([{"name":"t","parameters":{"type":"object","properties":{"x":{"type":"number"}},"required":["x"]}}])";

TEST(NoPunctuationValue, NoValueStartsWithJsonPunctuation) {
  RuleBench b(kStringTool, R"([{"name":"t","arguments":{"x":")");
  ASSERT_TRUE(b.Allowed(":") && b.Allowed("{") && b.Allowed("]"));  // the grammar alone admits them
  NoPunctuationValue rule;
  b.Apply(rule);
  for (const char* p : {":", "{", "}", "[", "]", ",", "\\"}) EXPECT_FALSE(b.Allowed(p)) << p;
  EXPECT_TRUE(b.Allowed("L"));
  EXPECT_TRUE(b.Allowed("\""));  // an empty value is no punctuation
  EXPECT_TRUE(b.Allowed(" "));
}

TEST(NoPunctuationValue, AValueWithContentGoesOnFreely) {
  RuleBench b(kStringTool, R"([{"name":"t","arguments":{"x":"a)");
  NoPunctuationValue rule;
  b.Apply(rule);
  EXPECT_TRUE(b.Allowed(":"));  // "a:b" is a value
}

TEST(NumberAsWritten, NoExponentTheConversationDoesNotWrite) {
  RuleBench plain(kNumberTool, R"([{"name":"t","arguments":{"x":9)", "set it to 9");
  ASSERT_TRUE(plain.Allowed("e"));  // an unbounded number admits an exponent
  NumberAsWritten rule;
  plain.Apply(rule);
  EXPECT_FALSE(plain.Allowed("e"));
  EXPECT_FALSE(plain.Allowed("E"));
  EXPECT_TRUE(plain.Allowed("0"));
  EXPECT_TRUE(plain.Allowed("}"));

  RuleBench written(kNumberTool, R"([{"name":"t","arguments":{"x":9)", "set it to 9e44");
  written.Apply(rule);
  EXPECT_TRUE(written.Allowed("e"));
}

TEST(SaidValue, KeepsTheDateTheConversationSays) {
  const std::string tools =
      R"([{"name":"t","parameters":{"type":"object","properties":{"d":{"type":"string","format":"date"}},"required":["d"]}}])";
  RuleBench b(tools, R"([{"name":"t","arguments":{"d":"2025-0)", "on September 6, 2025");
  SaidValue rule(INFINITY, INFINITY, INFINITY);
  b.Apply(rule);
  EXPECT_TRUE(b.Allowed("9"));
  EXPECT_FALSE(b.Allowed("1"));
}

TEST(DistinctRequiredValues, ASecondRequiredValueDoesNotRepeatTheFirst) {
  const std::string tools =
      R"([{"name":"t","parameters":{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a","b"]}}])";
  RuleBench b(tools, R"([{"name":"t","arguments":{"a":"USD","b":")", "convert USD to EUR");
  DistinctRequiredValues rule;
  b.Apply(rule);
  EXPECT_FALSE(b.Allowed("U"));
  EXPECT_TRUE(b.Allowed("E"));
}

}  // namespace
}  // namespace needle::rules
