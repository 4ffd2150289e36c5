#include "text/prompt.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "io/tokenizer_blob.h"

namespace needle {
namespace {

const std::string kGolden = NEEDLE_GOLDEN_DIR;

TEST(Prompt, ToolsAreCanonicalCompactJson) {
  const auto tools = nlohmann::ordered_json::parse(
      R"([{"parameters": {"type": "object", "properties": {"room": {"type": "string"}}}, "name": "set_lights", "description": "Lights"}])");
  EXPECT_EQ(RenderToolsJson(tools),
            R"([{"name":"set_lights","description":"Lights","parameters":{"type":"object","properties":{"room":{"type":"string"}}}}])");
  EXPECT_THROW(RenderToolsJson(nlohmann::ordered_json::parse(R"([{"name":"a"},{"name":"a"}])")), Error);
  EXPECT_THROW(RenderToolsJson(nlohmann::ordered_json::parse(R"([{"description":"x"}])")), Error);
  EXPECT_THROW(RenderToolsJson(nlohmann::ordered_json::parse(R"({"name":"a"})")), Error);
  EXPECT_EQ(RenderToolsJson(nlohmann::ordered_json::parse(R"([{"name":"ping"}])")),
            R"([{"name":"ping","parameters":{"type":"object","properties":{}}}])");
}

TEST(Prompt, FactsInCanonicalOrder) {
  EXPECT_EQ(RenderSystemFacts(nlohmann::ordered_json::parse(R"({"locale":"en-GB","date":"2026-11-30","battery":41})")),
            "date: 2026-11-30\nlocale: en-GB\nbattery: 41");
  EXPECT_THROW(RenderSystemFacts(nlohmann::ordered_json::parse(R"({"mood":"happy"})")), Error);
  EXPECT_EQ(RenderSystemFacts(nlohmann::ordered_json()), "");
}

// Found by prompt_fuzz: a number too large for a double is nlohmann's
// out_of_range, not a parse_error; it escaped as an internal error.
TEST(Prompt, MalformedFactsAreNamedErrors) {
  for (const char* text : {R"({"date":)", R"({"date":1e999})", "[1e999]", R"({"battery":-1e400})"}) {
    try {
      ParseSystemFacts(text);
      ADD_FAILURE() << text;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidJson) << text;
      EXPECT_EQ(std::string(e.what()).find("system facts: malformed JSON ("), 0u) << e.what();
      EXPECT_EQ(std::string(e.what()).find("json.exception"), std::string::npos) << e.what();
    }
  }
}

TEST(Prompt, SegmentsEncodeLikeTheWhole) {
  const Tokenizer tok(ReadSentencePieceModelFile(kGolden + "/tokenizer.model"));
  const PromptEncoder enc(tok);
  const auto ex = nlohmann::ordered_json::parse(
      R"({"query":"dim the kitchen lights to 30 please","tools":[{"name":"set_lights","parameters":{"type":"object"}}],
          "answers":[{"name":"set_lights","arguments":{"room":"kitchen","brightness":30}}],
          "reasoning":"'kitchen' -> room; 'dim to 30' -> brightness 30","system":{"date":"2026-11-30"}})");
  const EncodedPrompt p = EncodeExample(enc, ex);
  // The same text encoded in one go (without the dummy prefix) gives the same ids.
  const std::string whole = SinkText("date: 2026-11-30", RenderToolsJson(ex["tools"])) +
                            FirstQueryText(ex["query"].get<std::string>()) +
                            AssistantTargetText(ex["reasoning"].get<std::string>(), RenderCallsJson(ex["answers"]));
  std::vector<int32_t> ids;
  tok.EncodeContinuation(whole, ids);
  ids.insert(ids.begin(), tok.bos_id());
  ids.push_back(tok.eos_id());
  EXPECT_EQ(p.ids, ids);
  // The sink block ends at </tools>; the targets start at <think> and end with EOS.
  ASSERT_GT(p.sink_length, 2u);
  EXPECT_EQ(p.ids[0], tok.bos_id());
  EXPECT_EQ(p.ids[p.sink_length - 1], int32_t(kToolsEndId));
  const auto first_target = std::find(p.target.begin(), p.target.end(), 1) - p.target.begin();
  EXPECT_EQ(p.ids[first_target], int32_t(kThinkId));
  EXPECT_EQ(p.ids.back(), tok.eos_id());
  EXPECT_EQ(p.target.back(), 1);
  EXPECT_EQ(std::count(p.target.begin(), p.target.end(), 1), static_cast<long>(p.ids.size() - first_target));
  // Decoding the target gives the calls back verbatim.
  const std::string decoded = tok.Decode(std::span(p.ids).subspan(first_target));
  EXPECT_NE(decoded.find(R"(<tool_call>[{"name":"set_lights","arguments":{"room":"kitchen","brightness":30}}]</tool_call>)"), std::string::npos) << decoded;
}

TEST(Prompt, SessionsRenderEveryTurn) {
  const Tokenizer tok(ReadSentencePieceModelFile(kGolden + "/tokenizer.model"));
  const PromptEncoder enc(tok);
  const auto ex = nlohmann::ordered_json::parse(
      R"({"query":"find Ann","tools":[{"name":"find","parameters":{"type":"object"}}],"answers":[{"name":"find","arguments":{"q":"Ann"}}],
          "turns":[{"tool_result":{"id":7},"answers":[],"reasoning":"done"},{"query":"again","answers":[{"name":"find","arguments":{"q":"Ann"}}]}]})");
  const EncodedPrompt p = EncodeExample(enc, ex);
  const std::string text = tok.Decode(p.ids);
  EXPECT_NE(text.find("<tool_call>[]</tool_call>"), std::string::npos);
  EXPECT_NE(text.find("<tool_result>{\"id\":7}</tool_result>"), std::string::npos) << text;
  EXPECT_NE(text.find("<|im_start|>user\nagain<|im_end|>"), std::string::npos);
  EXPECT_EQ(std::count(p.ids.begin(), p.ids.end(), tok.eos_id()), 3);  // one per assistant turn
  EXPECT_THROW(EncodeExample(enc, nlohmann::ordered_json::parse(R"({"query":"q","tools":[],"turns":[{"answers":[]}]})")), Error);
}

// generate-data --prose lines: BOS, the text, EOS; every token after BOS a
// target, no sink block.
TEST(Prompt, ProseIsPlainTextWithEveryTokenATarget) {
  const Tokenizer tok(ReadSentencePieceModelFile(kGolden + "/tokenizer.model"));
  const PromptEncoder enc(tok);
  const EncodedPrompt p = EncodeExample(enc, nlohmann::ordered_json::parse(R"({"text":"dog, domestic dog: a member of the genus Canis"})"));
  ASSERT_GE(p.ids.size(), 4u);
  EXPECT_EQ(p.ids.front(), tok.bos_id());
  EXPECT_EQ(p.ids.back(), tok.eos_id());
  EXPECT_EQ(p.sink_length, 0u);
  EXPECT_EQ(p.target[0], 0);
  EXPECT_EQ(std::count(p.target.begin(), p.target.end(), 1), long(p.ids.size()) - 1);
  EXPECT_EQ(tok.Decode(std::vector<int32_t>(p.ids.begin() + 1, p.ids.end() - 1)), "dog, domestic dog: a member of the genus Canis");
  EXPECT_THROW(EncodeExample(enc, nlohmann::ordered_json::parse(R"({"text":""})")), Error);
  EXPECT_THROW(EncodeExample(enc, nlohmann::ordered_json::parse(R"({"text":5})")), Error);
}

TEST(Prompt, RefusalRendersEmptyArray) {
  EXPECT_EQ(RenderCallsJson(nlohmann::ordered_json::array()), "[]");
  EXPECT_EQ(AssistantTargetText("", "[]"), "<think></think>\n<tool_call>[]</tool_call><|im_end|>");
  EXPECT_THROW(RenderCallsJson(nlohmann::ordered_json::parse(R"([{"arguments":{}}])")), Error);
}

}  // namespace
}  // namespace needle
