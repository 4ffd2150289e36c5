#include "agent/testing/agent_archives.h"

#include "io/tokenizer_blob.h"
#include "model/export.h"
#include "model/testing/archives.h"

namespace needle::testing {

const char* kFiveTools =
    R"([{"name":"send_message","description":"Send a text message","parameters":{"type":"object","properties":{"to":{"type":"string","maxLength":20},"body":{"type":"string","maxLength":40}},"required":["to","body"]}},)"
    R"({"name":"set_alarm","description":"Set an alarm","parameters":{"type":"object","properties":{"time":{"type":"string","pattern":"^[0-2][0-9]:[0-5][0-9]$"},"label":{"type":"string","maxLength":12}},"required":["time"]}},)"
    R"({"name":"set_lights","description":"Lights on/off or dim","parameters":{"type":"object","properties":{"room":{"type":"string","enum":["kitchen","bedroom","hall"]},"brightness":{"type":"integer","minimum":0,"maximum":100}},"required":["room"]}},)"
    R"({"name":"get_weather","description":"Weather for a city","parameters":{"type":"object","properties":{"city":{"type":"string","maxLength":24},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["city"]}},)"
    R"({"name":"play_music","description":"Play music","parameters":{"type":"object","properties":{"query":{"type":"string","maxLength":30},"shuffle":{"type":"boolean"}},"required":["query"]}}])";

std::vector<uint8_t> AgentArchive(uint64_t seed, bool contrastive, bool confidence) {
  ModelConfig c = SmallConfig();
  c.kv_window = 256;  // the sinks need room in the budget beside the window
  std::vector<HeadSpec> heads;
  if (contrastive) heads.push_back(DefaultHeadSpec(HeadKind::kContrastive, c));
  if (confidence) heads.push_back(DefaultHeadSpec(HeadKind::kConfidence, c));
  ModelWeights w = NonTrivialWeights(c, heads, seed);
  return ExportArchive(w, ParseBitsMap("4", w.specs), ByteLevelTokenizer());
}

std::shared_ptr<const Model> AgentModel(uint64_t seed, bool contrastive, bool confidence) {
  return Model::FromBytes(AgentArchive(seed, contrastive, confidence));
}

}  // namespace needle::testing
