// Encode/decode throughput, single-threaded, on prompt-like text (SPEC §8
// turns with tool schemas) and on a stress mix. Target: encode >= 5 MB/s.
//   build/bin/tokenizer_bench                       the golden 400-piece model
//   NEEDLE_TOKENIZER_MODEL=x.model build/bin/tokenizer_bench   any .model or .cact
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "io/cact_archive.h"
#include "io/tokenizer_blob.h"
#include "text/tokenizer.h"
#include "text/tokenizer_testing.h"

namespace needle {
namespace {

// The repository root, from this file's path (CMake compiles it by absolute path).
std::string RepoRoot() {
  const std::string self = __FILE__;
  const std::string tail = "src/text/tokenizer_bench.cc";
  return self.size() > tail.size() ? self.substr(0, self.size() - tail.size()) : "./";
}

const Tokenizer& Model() {
  static const Tokenizer tok = [] {
    const char* env = std::getenv("NEEDLE_TOKENIZER_MODEL");
    const std::string path = env ? env : RepoRoot() + "testdata/golden/tokenizer.model";
    if (path.size() > 5 && path.compare(path.size() - 5, 5, ".cact") == 0) return Tokenizer(CactArchive::Open(path).tokenizer());
    return Tokenizer(ReadSentencePieceModelFile(path));
  }();
  return tok;
}

// About 1 MB of text cut into pieces of typical request size.
std::vector<std::string> Corpus(bool stress) {
  testing::TextRng rng(42);
  std::vector<std::string> v;
  size_t bytes = 0;
  while (bytes < (1u << 20)) {
    v.push_back(stress ? testing::RandomStress(rng) : testing::RandomPrompt(rng));
    bytes += v.back().size();
  }
  return v;
}

void Encode(benchmark::State& state, bool stress) {
  const Tokenizer& tok = Model();
  const std::vector<std::string> corpus = Corpus(stress);
  std::vector<int32_t> ids;
  size_t bytes = 0, tokens = 0;
  for (auto _ : state) {
    for (const std::string& s : corpus) {
      tok.Encode(s, ids);
      bytes += s.size();
      tokens += ids.size();
      benchmark::DoNotOptimize(ids.data());
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
  state.counters["bytes_per_token"] = tokens ? double(bytes) / double(tokens) : 0.0;
  state.counters["vocab"] = tok.vocab_size();
}

void BM_EncodePrompts(benchmark::State& state) { Encode(state, false); }
void BM_EncodeStress(benchmark::State& state) { Encode(state, true); }

void BM_EncodeOneLongText(benchmark::State& state) {
  const Tokenizer& tok = Model();
  std::string text;
  for (const std::string& s : Corpus(false)) text += s;
  std::vector<int32_t> ids;
  for (auto _ : state) {
    tok.Encode(text, ids);
    benchmark::DoNotOptimize(ids.data());
  }
  state.SetBytesProcessed(static_cast<int64_t>(state.iterations() * text.size()));
}

void BM_DecodePrompts(benchmark::State& state) {
  const Tokenizer& tok = Model();
  std::vector<std::vector<int32_t>> encoded;
  size_t bytes = 0;
  for (const std::string& s : Corpus(false)) encoded.push_back(tok.Encode(s));
  for (auto _ : state) {
    for (const auto& ids : encoded) {
      const std::string text = tok.Decode(ids);
      bytes += text.size();
      benchmark::DoNotOptimize(text.data());
    }
  }
  state.SetBytesProcessed(static_cast<int64_t>(bytes));
}

BENCHMARK(BM_EncodePrompts)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeStress)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_EncodeOneLongText)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_DecodePrompts)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace needle
