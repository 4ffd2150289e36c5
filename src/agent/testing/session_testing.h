// Helpers of the session tests (session_test.cc, call_decoder_test.cc,
// reasoning_test.cc, turn_stages_test.cc): small random-weight sessions, the
// embedded default model, and checks of a rule on and off.
#pragma once

#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "agent/session.h"
#include "agent/testing/agent_archives.h"

namespace needle::testing {

using nlohmann::ordered_json;

inline void ExpectWellFormed(const Envelope& e) {
  const ordered_json j = ordered_json::parse(e.Dump());
  for (const char* k : {"type", "success", "error", "error_code", "function_calls", "reasoning", "confidence", "prefill_tps",
                        "decode_tps", "peak_ram_mb"}) {
    EXPECT_TRUE(j.contains(k)) << k << " missing in " << e.Dump();
  }
  EXPECT_TRUE(j["function_calls"].is_array());
  EXPECT_EQ(j["success"].get<bool>(), j["type"] != "error");
  // No call twice in one turn (DropRepeatedCalls).
  std::vector<nlohmann::json> calls;
  for (const auto& c : j["function_calls"]) calls.push_back(nlohmann::json::parse(c.dump()));
  for (size_t a = 0; a < calls.size(); ++a)
    for (size_t b = a + 1; b < calls.size(); ++b) EXPECT_NE(calls[a], calls[b]) << e.Dump();
}

inline SessionOptions Small() {
  SessionOptions o;
  o.max_think_tokens = 8;
  o.max_new_tokens = 120;
  o.no_tool_bias = 0.0f;  // random heads have no cosine scale (NoToolBiasRefusesWhereNoToolIsSimilar tests it)
  return o;
}

inline std::string Lower(std::string s) {
  for (char& c : s) c = (c >= 'A' && c <= 'Z') ? char(c - 'A' + 'a') : c;
  return s;
}

// Each (query, want) on sessions of three random models set up by `set`: the
// first call's `key` argument must be `want` whenever the model calls.
// Returns how many calls there were.
template <typename T>
size_t ExpectFirstCallArgument(const char* tools, const std::function<void(SessionOptions&)>& set,
                               std::initializer_list<std::pair<const char*, T>> cases, const char* key) {
  size_t calls = 0;
  for (uint64_t seed : {3, 5, 8}) {
    SessionOptions o = Small();
    set(o);
    Session s(AgentModel(seed), o);
    s.SetToolsJson(tools);
    for (const auto& [q, want] : cases) {
      const Envelope e = s.Query(q);
      EXPECT_TRUE(e.success()) << e.Dump();
      s.Reset();
      // (The first call: a random model may ramble on into a second one that
      // the call budget cuts and the grammar completes.)
      if (e.function_calls.empty()) continue;
      ++calls;
      EXPECT_EQ(e.function_calls[0]["arguments"][key], want) << q << " -> " << e.Dump();
    }
  }
  return calls;
}

// A decoding rule checked on random models (seeds 3, 5, 8, 13): every query
// with the rule on and off (`set(options, on)`); `right(i, args)` says
// whether the first call's arguments are what query i wants. With the rule
// on every call must be right; off, the wrong ones are counted (a random
// model should get some wrong, or the test shows nothing).
struct RuleCounts {
  size_t calls = 0, wrong_without = 0;
};

inline RuleCounts CheckRule(const char* tools, const std::function<void(SessionOptions&, bool)>& set,
                     const std::vector<const char*>& queries,
                     const std::function<bool(size_t, const nlohmann::ordered_json&)>& right,
                     const nlohmann::ordered_json& facts = nullptr) {
  RuleCounts n;
  for (uint64_t seed : {3, 5, 8, 13}) {
    for (bool on : {true, false}) {
      SessionOptions o = Small();
      set(o, on);
      Session s(AgentModel(seed), o);
      s.SetToolsJson(tools);
      if (!facts.is_null()) s.SetSystem(facts);
      for (size_t i = 0; i < queries.size(); ++i) {
        const Envelope e = s.Query(queries[i]);
        EXPECT_TRUE(e.success()) << e.Dump();
        s.Reset();
        if (e.function_calls.empty()) continue;
        const bool ok = right(i, e.function_calls[0]["arguments"]);
        if (!on) {
          n.wrong_without += !ok;
          continue;
        }
        ++n.calls;
        EXPECT_TRUE(ok) << "seed " << seed << ": " << queries[i] << " -> " << e.Dump();
      }
    }
  }
  return n;
}

// A session on the embedded default model, with these options and tools.
inline std::unique_ptr<Session> DefaultModelSession(const SessionOptions& options, const char* tools) {
  auto s = std::make_unique<Session>(Model::FromStatic(Model::Embedded()), options);
  s->SetToolsJson(tools);
  return s;
}

}  // namespace needle::testing
