// The prompt format of SPEC §8, shared by the trainer, the data tools and the
// agent so that what a model is trained on is exactly what it is asked.
//
//   BOS
//   [<|im_start|>system\n{facts}<|im_end|>\n]                   (optional)
//   <|im_start|>user\n<tools>{tools json}</tools>                ── sink block ends here
//   \n{query}<|im_end|>\n<|im_start|>assistant\n
//   <think>{reasoning}</think>\n<tool_call>{calls}</tool_call><|im_end|> EOS   ── target
// Later turns in the same session (tools are not repeated):
//   <|im_start|>tool\n<tool_result>{result}</tool_result><|im_end|>\n<|im_start|>assistant\n
//   <|im_start|>user\n{query}<|im_end|>\n<|im_start|>assistant\n
//
// Text is encoded segment by segment with Tokenizer::EncodeContinuation (no
// dummy prefix anywhere): every segment starts at a chat marker, markers never
// merge, so this equals encoding the whole conversation at once.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "text/tokenizer.h"

namespace needle {

// System fact keys (SPEC §10), in the order they are rendered.
inline constexpr const char* kFactKeys[] = {"date", "locale", "device", "battery", "network", "location", "user", "assistant"};

// Canonical compact JSON of a tools array: every tool as {"name", "description"?,
// "parameters"} in that order, parameter schemas in the caller's key order, no
// whitespace. Throws Error(kInvalidArgument) naming the tool that is malformed
// (not an object, no string name, parameters not an object, a duplicate name).
std::string RenderToolsJson(const nlohmann::ordered_json& tools);
// Facts as "key: value" lines in kFactKeys order (unknown keys are an error, a
// fact is data, never an instruction); a string is taken as already rendered.
std::string RenderSystemFacts(const nlohmann::ordered_json& system);
// System facts as a caller writes them: empty -> null; text that opens with
// '{' must be a JSON object of facts (malformed JSON is an error naming the
// parser's complaint, never taken for "key: value" lines); other text is
// rendered "key: value" lines, kept as a string. Keys are checked by
// RenderSystemFacts.
nlohmann::ordered_json ParseSystemFacts(std::string_view text);
// Compact JSON of a calls array [{"name","arguments"}] ("[]" for a refusal).
std::string RenderCallsJson(const nlohmann::ordered_json& calls);

// The text of each part (markers inline).
std::string SinkText(std::string_view facts, std::string_view tools_json);  // facts may be empty
std::string FirstQueryText(std::string_view query);
std::string UserTurnText(std::string_view query);
std::string ToolResultTurnText(std::string_view result_json);
std::string AssistantTargetText(std::string_view reasoning, std::string_view calls_json);  // EOS is an id, added by the encoder

// A rendered prompt: token ids with the sink block length and a loss mask.
struct EncodedPrompt {
  std::vector<int32_t> ids;
  std::vector<uint8_t> target;  // 1 where the token is a trained target (assistant turn, EOS)
  uint32_t sink_length = 0;     // BOS through </tools>
};

class PromptEncoder {
 public:
  explicit PromptEncoder(const Tokenizer& tok) : tok_(tok) {}
  // Starts a prompt: BOS and the sink block.
  void BeginSession(EncodedPrompt& p, std::string_view facts, std::string_view tools_json) const;
  // Starts plain text: BOS alone, no sink block.
  void BeginText(EncodedPrompt& p) const;
  // Appends text (not a target) or a target (then EOS, also a target).
  void AppendContext(EncodedPrompt& p, std::string_view text) const;
  void AppendTarget(EncodedPrompt& p, std::string_view text) const;

 private:
  const Tokenizer& tok_;
};

// One JSONL training example (SPEC §12: query, tools, answers, reasoning?, system?)
// rendered as the first-turn prompt plus its target, then each of its `turns`
// (docs/data-format.md: a tool result or a new query, then the answer). A
// {"text": ...} line without a query is plain prose (generate-data --prose):
// BOS, the text and EOS, every token after BOS a target.
EncodedPrompt EncodeExample(const PromptEncoder& enc, const nlohmann::ordered_json& example);

}  // namespace needle
