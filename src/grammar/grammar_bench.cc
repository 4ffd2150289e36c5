// Cost of the allowed-token mask (GrammarMatcher::ComputeMask) for a
// realistic 5-tool schema, at representative states of a call and averaged
// over a whole decoded call, plus the one-off costs (compile, token trie).
// Compare with the forward pass: ~4 ms per token for needle2 on this machine.
//   build/bin/grammar_bench                                    golden 400-piece tokenizer
//   NEEDLE_TOKENIZER_MODEL=x.model build/bin/grammar_bench     any .model or .cact (e.g. 8192 pieces)
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "grammar/grammar_testing.h"  // kFiveTools
#include "grammar/matcher.h"
#include "io/cact_archive.h"
#include "io/tokenizer_blob.h"
#include "text/tokenizer.h"

namespace needle::grammar {
namespace {

std::string RepoRoot() {
  const std::string self = __FILE__;
  const std::string tail = "src/grammar/grammar_bench.cc";
  return self.size() > tail.size() ? self.substr(0, self.size() - tail.size()) : "./";
}

const Tokenizer& Tok() {
  static const Tokenizer tok = [] {
    const char* env = std::getenv("NEEDLE_TOKENIZER_MODEL");
    const std::string path = env ? env : RepoRoot() + "testdata/golden/tokenizer.model";
    if (path.size() > 5 && path.compare(path.size() - 5, 5, ".cact") == 0) return Tokenizer(CactArchive::Open(path).tokenizer());
    return Tokenizer(ReadSentencePieceModelFile(path));
  }();
  return tok;
}

std::shared_ptr<const TokenTrie> Trie() {
  static const auto trie = std::make_shared<const TokenTrie>(Tok());
  return trie;
}

std::shared_ptr<const ToolGrammar> Grammar() {
  static const auto g = ToolGrammar::Compile(std::string_view(testing::kFiveTools));
  return g;
}

// A realistic answer: two calls, free text, an enum, a date, a time and an email.
const char* kCall =
    R"([{"name":"send_message","arguments":{"to":"Mom","body":"I'll be home at 7, don't wait for dinner! Love you","channel":"sms"}},)"
    R"({"name":"create_event","arguments":{"title":"Dinner with Ada","date":"2024-05-17","time":"19:30","attendees":["ada@example.com"]}},)"
    R"({"name":"set_lights","arguments":{"room":"kitchen","state":"on","brightness":40}}])";

// The ids the tokenizer gives the call when it follows <tool_call> in a prompt.
std::vector<int32_t> CallIds() {
  const std::vector<int32_t> all = Tok().Encode(std::string("<tool_call>") + kCall);
  size_t i = 0;
  while (i < all.size() && all[i] != int32_t(kToolCallId)) ++i;
  return {all.begin() + long(i) + 1, all.end()};
}

void Counters(benchmark::State& state) {
  state.counters["vocab"] = Tok().vocab_size();
  state.counters["trie_nodes"] = double(Trie()->all().nodes.size());
}

// Mask cost at the state reached after `prefix`.
void MaskAt(benchmark::State& state, const char* prefix) {
  GrammarMatcher m(Grammar(), Trie());
  if (!m.AcceptBytes(prefix)) {
    state.SkipWithError("prefix rejected");
    return;
  }
  std::vector<uint32_t> bits(Trie()->mask_words());
  size_t allowed = 0;
  for (auto _ : state) {
    m.ComputeMask(bits);
    benchmark::DoNotOptimize(bits.data());
  }
  for (uint32_t w : bits) allowed += size_t(__builtin_popcount(w));
  state.counters["allowed"] = double(allowed);
  Counters(state);
}

void BM_MaskStart(benchmark::State& s) { MaskAt(s, ""); }
void BM_MaskToolName(benchmark::State& s) { MaskAt(s, R"([{"name":")"); }
void BM_MaskKey(benchmark::State& s) { MaskAt(s, R"([{"name":"send_message","arguments":{"to":"Mom",)"); }
void BM_MaskFreeString(benchmark::State& s) { MaskAt(s, R"([{"name":"send_message","arguments":{"body":"I'll be home at)"); }
void BM_MaskEnum(benchmark::State& s) { MaskAt(s, R"([{"name":"get_weather","arguments":{"location":"Oslo","unit":"c)"); }
void BM_MaskInteger(benchmark::State& s) { MaskAt(s, R"([{"name":"set_lights","arguments":{"state":"on","brightness":4)"); }
void BM_MaskNumber(benchmark::State& s) { MaskAt(s, R"([{"name":"set_timer","arguments":{"minutes":12.)"); }
void BM_MaskDate(benchmark::State& s) { MaskAt(s, R"([{"name":"create_event","arguments":{"title":"x","date":"2024-0)"); }
void BM_MaskEmail(benchmark::State& s) {
  MaskAt(s, R"([{"name":"create_event","arguments":{"title":"x","date":"2024-05-17","attendees":["ada@exa)");
}
// The first mask at a pattern-string state: fills the matcher's cache entry (one full walk).
void BM_MaskEmailColdCache(benchmark::State& state) {
  const char* prefix = R"([{"name":"create_event","arguments":{"title":"x","date":"2024-05-17","attendees":["ada@exa)";
  std::vector<uint32_t> bits(Trie()->mask_words());
  for (auto _ : state) {
    state.PauseTiming();
    GrammarMatcher m(Grammar(), Trie());
    m.AcceptBytes(prefix);
    state.ResumeTiming();
    m.ComputeMask(bits);
    benchmark::DoNotOptimize(bits.data());
  }
  Counters(state);
}

// The copy mask in a free-text string, the source a 2 KB conversation.
// The copy mask inside a copied string (state = one automaton state), and at
// the start of a value. Source: 2 KB of conversation.
void CopyMaskBench(benchmark::State& state, const char* prefix) {
  std::string text;
  for (int i = 0; text.size() < 2048; ++i)
    text += "Tell mom I'll be home at " + std::to_string(7 + i % 5) + ", don't wait for dinner! Ref c_" + std::to_string(97000 + i) + ". ";
  CopySource src;
  const std::string_view segments[] = {text};
  src.Build(segments);
  GrammarMatcher m(Grammar(), Trie());
  m.SetCopySource(&src);
  if (!m.AcceptBytes(prefix)) {
    state.SkipWithError("prefix rejected");
    return;
  }
  std::vector<uint32_t> bits(Trie()->mask_words());
  size_t marked = 0;
  for (auto _ : state) {
    m.ComputeCopyMask(bits);
    benchmark::DoNotOptimize(bits.data());
  }
  for (uint32_t w : bits) marked += size_t(__builtin_popcount(w));
  state.counters["marked"] = double(marked);
  state.counters["source_states"] = double(src.states());
  Counters(state);
}
void BM_CopyMaskFreeString(benchmark::State& state) {
  CopyMaskBench(state, R"([{"name":"send_message","arguments":{"body":"I'll be home at)");
}
void BM_CopyMaskValueStart(benchmark::State& state) {
  CopyMaskBench(state, R"([{"name":"send_message","arguments":{"body":")");
}

BENCHMARK(BM_MaskStart);
BENCHMARK(BM_MaskToolName);
BENCHMARK(BM_MaskKey);
BENCHMARK(BM_MaskFreeString);
BENCHMARK(BM_MaskEnum);
BENCHMARK(BM_MaskInteger);
BENCHMARK(BM_MaskNumber);
BENCHMARK(BM_MaskDate);
BENCHMARK(BM_MaskEmail);
BENCHMARK(BM_MaskEmailColdCache);
BENCHMARK(BM_CopyMaskFreeString);
BENCHMARK(BM_CopyMaskValueStart);

// The decode loop over a whole realistic call: mask + accept per token.
void BM_DecodeCallPerToken(benchmark::State& state) {
  const std::vector<int32_t> ids = CallIds();
  GrammarMatcher m(Grammar(), Trie());
  std::vector<uint32_t> bits(Trie()->mask_words());
  for (auto _ : state) {
    m.Reset();
    for (int32_t id : ids) {
      m.ComputeMask(bits);
      if (!((bits[size_t(id) >> 5] >> (id & 31)) & 1) || !m.AcceptToken(id)) {
        state.SkipWithError("the call's token was not allowed");
        return;
      }
    }
    if (!m.ComputeMask(bits)) state.SkipWithError("call not complete");
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(ids.size() + 1));  // items/s = masks/s
  state.counters["tokens"] = double(ids.size());
  Counters(state);
}
BENCHMARK(BM_DecodeCallPerToken);

void BM_AcceptToken(benchmark::State& state) {
  const std::vector<int32_t> ids = CallIds();
  GrammarMatcher m(Grammar(), Trie());
  for (auto _ : state) {
    m.Reset();
    for (int32_t id : ids) benchmark::DoNotOptimize(m.AcceptToken(id));
  }
  state.SetItemsProcessed(int64_t(state.iterations()) * int64_t(ids.size()));
}
BENCHMARK(BM_AcceptToken);

void BM_CompileFiveTools(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(ToolGrammar::Compile(std::string_view(testing::kFiveTools)));
}
BENCHMARK(BM_CompileFiveTools)->Unit(benchmark::kMicrosecond);

void BM_BuildTokenTrie(benchmark::State& state) {
  for (auto _ : state) {
    TokenTrie t(Tok());
    benchmark::DoNotOptimize(t.all().nodes.data());
  }
  Counters(state);
}
BENCHMARK(BM_BuildTokenTrie)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace needle::grammar
