// libFuzzer target: a session's setup from arbitrary text, without a turn.
// The first byte picks the mode:
//   0: the rest is tools JSON given to Session::SetToolsJson;
//   1: the rest is a JSON Schema for extract(), declared through
//      ExtractTool like Extract() and the server do;
//   2: the rest is system facts text (ParseSystemFacts, then SetSystem).
// The session starts with one small tool and a date (five tools would triple
// the time per input) and is kept from input to input. Invariants: bad input is a
// needle::Error that leaves the previous setup exactly as it was (what
// session.h promises); accepted tools are an array whose names are unique,
// and declaring them again gives the same tools and warnings.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "agent/session.h"
#include "agent/testing/agent_archives.h"
#include "base/error.h"
#include "text/prompt.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckAccepted(needle::Session& s) {
  const nlohmann::ordered_json tools = s.tools();
  Check(tools.is_array());
  std::set<std::string> names;
  for (const auto& t : tools) Check(t.is_object() && t["name"].is_string() && names.insert(t["name"].get<std::string>()).second);
  const auto warnings = s.warnings();
  s.SetTools(tools);  // what was accepted once is accepted again, with the same result
  Check(s.tools() == tools && s.warnings() == warnings);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto model = needle::testing::AgentModel(1);
  static const auto first_tools = nlohmann::ordered_json::parse(
      R"([{"name":"ping","description":"Ping a host","parameters":{"type":"object","properties":{"host":{"type":"string"}},"required":["host"]}}])");
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  // One session for every input (a fresh one per input spent most of the
  // time declaring its first tools again): each input starts from whatever
  // setup the last accepted input left.
  static needle::Session& s = []() -> needle::Session& {
    auto* fresh = new needle::Session(model);
    fresh->SetTools(first_tools);
    fresh->SetSystem({{"date", "2026-12-07"}});
    return *fresh;
  }();
  const nlohmann::ordered_json tools_before = s.tools();
  const auto warnings = s.warnings();
  const int mode = data[0] % 3;
  try {
    if (mode == 0) {
      s.SetToolsJson(rest);
    } else if (mode == 1) {
      const auto schema = nlohmann::ordered_json::parse(rest, nullptr, false);
      if (schema.is_discarded()) return 0;
      s.SetTools(nlohmann::ordered_json::array({needle::ExtractTool(schema)}));
    } else {
      s.SetSystem(needle::ParseSystemFacts(rest));
      return 0;
    }
  } catch (const needle::Error&) {
    Check(s.tools() == tools_before && s.warnings() == warnings);  // nothing half-set
    return 0;
  }
  CheckAccepted(s);
  return 0;
}
