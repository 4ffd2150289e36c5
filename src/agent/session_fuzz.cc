// libFuzzer target: a session on a small random-weights model, driven by
// arbitrary text. The first byte picks the mode:
//   0: tools JSON, system facts, a query and a tool result (NUL-separated):
//      every envelope is valid JSON whatever the input, and bad input is an
//      error envelope or a needle::Error, never a crash;
//   1: a saved session of this model and tools (written once), XORed with the
//      rest of the input from offset 0, given to Session::Restore; a restored
//      session then answers a query with a JSON envelope.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/session.h"
#include "agent/testing/agent_archives.h"
#include "base/error.h"
#include "text/prompt.h"

namespace {

std::vector<std::string_view> Fields(std::string_view s, size_t n) {
  std::vector<std::string_view> out;
  while (out.size() + 1 < n) {
    const size_t at = s.find('\0');
    if (at == std::string_view::npos) break;
    out.push_back(s.substr(0, at));
    s.remove_prefix(at + 1);
  }
  out.push_back(s);
  while (out.size() < n) out.emplace_back();
  return out;
}

needle::SessionOptions SmallOptions() {
  needle::SessionOptions o;
  o.max_new_tokens = 24;
  o.max_think_tokens = 8;
  o.reasoning_beams = 1;
  return o;
}

void CheckEnvelope(const needle::Envelope& e) {
  if (!nlohmann::json::accept(e.Dump())) std::abort();  // an envelope must always be JSON
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto model = needle::testing::AgentModel(1);
  if (size == 0) return 0;
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  needle::Session s(model, SmallOptions());
  try {
    if (data[0] % 2 == 1) {
      static const std::string path = "/tmp/needle-session-fuzz-" + std::to_string(::getpid()) + ".bin";
      static const std::string saved = [] {
        needle::Session first(model, SmallOptions());
        first.SetToolsJson(needle::testing::kFiveTools);
        first.Query("turn on the kitchen lights");
        first.Save(path);
        std::ifstream in(path, std::ios::binary);
        return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
      }();
      std::string bytes = saved;
      for (size_t i = 0; i < rest.size(); ++i) {
        if (i < bytes.size()) bytes[i] = static_cast<char>(bytes[i] ^ rest[i]);
        else bytes.push_back(rest[i]);  // longer inputs append
      }
      std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
      s.SetToolsJson(needle::testing::kFiveTools);
      s.Restore(path);
      CheckEnvelope(s.Query("turn on the kitchen lights"));
      return 0;
    }
    const auto f = Fields(rest, 4);
    s.SetToolsJson(f[0]);
    s.SetSystem(needle::ParseSystemFacts(f[1]));
  } catch (const needle::Error&) {
    return 0;
  }
  const needle::Envelope e = s.Query(Fields(rest, 4)[2]);
  CheckEnvelope(e);
  if (e.type == needle::EnvelopeType::kCall) CheckEnvelope(s.ToolResult(Fields(rest, 4)[3]));
  return 0;
}
