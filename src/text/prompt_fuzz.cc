// libFuzzer target for prompt rendering (SPEC §8) with the golden tokenizer.
// The first byte picks the mode:
//   0: the rest is one JSONL training example, rendered by EncodeExample;
//   1: the rest is system facts as a caller writes them (ParseSystemFacts);
//   2: the rest is tools JSON, a NUL, then a query: the sink block and the
//      first query, rendered the way a session renders them.
// Bad input is a needle::Error; any other exception escapes and is a finding.
// Invariants: ids in range, one target flag per id, the sink block inside the
// prompt; canonical tools JSON is valid JSON and rendering it again changes
// nothing; facts render the same twice; segment-by-segment encoding equals
// encoding the whole text at once (what prompt.h promises).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "io/tokenizer_blob.h"
#include "text/prompt.h"
#include "text/tokenizer.h"

namespace {

const needle::Tokenizer& Golden() {
  static const needle::Tokenizer* tok = [] {
    try {
      return new needle::Tokenizer(needle::ReadSentencePieceModelFile(std::string(NEEDLE_GOLDEN_DIR) + "/tokenizer.model"));
    } catch (const needle::Error& e) {
      std::fprintf(stderr, "prompt_fuzz: cannot load the golden tokenizer: %s\n", e.what());
      std::abort();
    }
  }();
  return *tok;
}

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckPrompt(const needle::EncodedPrompt& p, const needle::Tokenizer& tok) {
  Check(!p.ids.empty() && p.ids[0] == tok.bos_id());
  Check(p.target.size() == p.ids.size());
  Check(p.sink_length >= 1 && p.sink_length <= p.ids.size());
  for (const int32_t id : p.ids) Check(id >= 0 && id < tok.vocab_size());
  for (const uint8_t t : p.target) Check(t <= 1);
}

void FuzzExample(std::string_view text, const needle::PromptEncoder& enc, const needle::Tokenizer& tok) {
  const auto ex = nlohmann::ordered_json::parse(text, nullptr, false);
  if (ex.is_discarded()) return;
  try {
    CheckPrompt(needle::EncodeExample(enc, ex), tok);
  } catch (const needle::Error&) {
  }
}

void FuzzFacts(std::string_view text) {
  nlohmann::ordered_json facts;
  try {
    facts = needle::ParseSystemFacts(text);
  } catch (const needle::Error&) {
    return;
  }
  // A fact set the parser accepted renders, and renders the same every time.
  const std::string once = needle::RenderSystemFacts(facts);
  Check(needle::RenderSystemFacts(facts) == once);
  if (facts.is_object()) Check(needle::RenderSystemFacts(needle::ParseSystemFacts(facts.dump())) == once);
}

void FuzzToolsAndQuery(std::string_view input, const needle::PromptEncoder& enc, const needle::Tokenizer& tok) {
  const size_t split = input.find('\0');
  const std::string_view tools_text = input.substr(0, split);
  const std::string_view query = split == std::string_view::npos ? std::string_view() : input.substr(split + 1);
  const auto tools = nlohmann::ordered_json::parse(tools_text, nullptr, false);
  if (tools.is_discarded()) return;
  std::string canonical;
  try {
    canonical = needle::RenderToolsJson(tools);
  } catch (const needle::Error&) {
    return;
  }
  // Canonical form: valid JSON, and a fixed point of rendering.
  const auto again = nlohmann::ordered_json::parse(canonical, nullptr, false);
  Check(!again.is_discarded() && again.is_array() && again.size() == tools.size());
  Check(needle::RenderToolsJson(again) == canonical);

  needle::EncodedPrompt p;
  enc.BeginSession(p, "", canonical);
  enc.AppendContext(p, needle::FirstQueryText(query));
  CheckPrompt(p, tok);
  std::vector<int32_t> whole;
  tok.EncodeContinuation(needle::SinkText("", canonical) + needle::FirstQueryText(query), whole);
  Check(whole.size() + 1 == p.ids.size());
  for (size_t i = 0; i < whole.size(); ++i) Check(whole[i] == p.ids[i + 1]);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const needle::Tokenizer& tok = Golden();
  const needle::PromptEncoder enc(tok);
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: FuzzExample(rest, enc, tok); break;
    case 1: FuzzFacts(rest); break;
    default: FuzzToolsAndQuery(rest, enc, tok); break;
  }
  return 0;
}
