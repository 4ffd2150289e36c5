// libFuzzer target: Session::Restore on a corrupted saved session, without a
// turn (session_fuzz runs a turn after it, at a model turn per input). The
// input is XORed onto a saved session of a small model with one small tool
// (longer inputs append bytes; a bigger tool set makes every input slower). Invariants: a file that cannot be restored is
// a needle::Error and the session keeps its own tools and no conversation;
// a restored session saves again, and that file restores and saves to the
// same bytes (save and restore are inverse on everything Restore accepts).
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

#include "agent/session.h"
#include "agent/testing/agent_archives.h"
#include "base/error.h"

namespace {

void Check(bool ok) {
  if (!ok) std::abort();
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void WriteAll(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

constexpr const char* kTools =
    R"([{"name":"ping","description":"Ping a host","parameters":{"type":"object","properties":{"host":{"type":"string"}},"required":["host"]}}])";

needle::SessionOptions SmallOptions() {
  needle::SessionOptions o;
  o.max_new_tokens = 24;
  o.max_think_tokens = 8;
  o.reasoning_beams = 1;
  return o;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto model = needle::testing::AgentModel(1);
  // tmpfs when there is one: on ext4 each truncating rewrite flushes the file
  // at close, a fifth of the time per input.
  static const std::string dir = std::string(::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp") +
                                 "/needle-restore-fuzz-" + std::to_string(::getpid());
  static const std::string input = dir + "-in.bin", again = dir + "-again.bin", third = dir + "-third.bin";
  static const int cleanup = std::atexit([] {
    for (const std::string* p : {&input, &again, &third}) std::remove(p->c_str());
  });
  (void)cleanup;
  static const std::string saved = [] {
    needle::Session first(model, SmallOptions());
    first.SetToolsJson(kTools);
    first.SetSystem({{"date", "2026-12-07"}});
    first.Query("ping example.org");
    first.Save(input);
    // Without the pending request: restoring one ranks the tools again with
    // the contrastive head, a model pass per input (session_fuzz covers it).
    const std::string file = ReadAll(input);  // magic[8], header length u64, header JSON, cache
    uint64_t old_length = 0;
    std::memcpy(&old_length, file.data() + 8, sizeof old_length);
    nlohmann::ordered_json head = nlohmann::ordered_json::parse(file.substr(16, old_length));
    head.erase("request");
    const std::string h = head.dump();
    const uint64_t length = h.size();
    return file.substr(0, 8) + std::string(reinterpret_cast<const char*>(&length), sizeof length) + h + file.substr(16 + old_length);
  }();
  std::string bytes = saved;
  for (size_t i = 0; i < size; ++i) {
    if (i < bytes.size()) bytes[i] = static_cast<char>(bytes[i] ^ data[i]);
    else bytes.push_back(static_cast<char>(data[i]));
  }
  WriteAll(input, bytes);

  // One session for every input: Restore replaces all of it or rolls back,
  // and a fresh session per input would double the time per input.
  static needle::Session& s = []() -> needle::Session& {
    auto* fresh = new needle::Session(model, SmallOptions());
    fresh->SetToolsJson(kTools);
    return *fresh;
  }();
  const nlohmann::ordered_json tools_before = s.tools();
  try {
    s.Restore(input);
  } catch (const needle::Error&) {
    Check(s.tools() == tools_before && s.window_ids().empty());
    return 0;
  }
  for (const int32_t id : s.window_ids()) Check(id >= 0);
  s.Save(again);
  s.Restore(again);  // a file Save wrote always restores
  s.Save(third);
  Check(ReadAll(again) == ReadAll(third));
  return 0;
}
