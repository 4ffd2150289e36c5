// The property test of issue F: decode 10,000 calls from a random-weights
// model under the grammar mask and check that every output parses and
// validates against the declared schemas.
//
// Model: FastModel on testing::NonTrivialArchive (SmallConfig: d 64, 2
// layers) with a 400-id vocabulary whose ids are read with the golden
// 400-piece BPE tokenizer, so tokens such as `":"` and `"}` cross JSON
// structure and the mask must cut inside them. Decoding is one endless stream
// through the sliding window: <tool_call> call </tool_call> <tool_call> ...
// Sampling: temperature from the masked logits; </tool_call> can only be
// drawn when the mask allows it, i.e. when the array is complete. A call that
// reaches the token cap is finished with CompletionBytes(), as the agent does.
//
// Every output must parse and pass ValidateCall, except for what the grammar
// only checks after generation (uniqueItems); those are counted
// and printed, never silent. NEEDLE_GRAMMAR_PROPERTY_CALLS overrides 10,000.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <map>

#include "base/random.h"
#include "grammar/grammar_testing.h"
#include "grammar/matcher.h"
#include "grammar/validate.h"
#include "io/cact_archive.h"
#include "io/tokenizer_blob.h"
#include "model/fast_model.h"
#include "model/testing/archives.h"
#include "text/tokenizer.h"

namespace needle::grammar {
namespace {

TEST(Property, TenThousandRandomModelCallsParseAndValidate) {
  const char* env = std::getenv("NEEDLE_GRAMMAR_PROPERTY_CALLS");
  const int num_calls = env ? std::atoi(env) : 10000;
  constexpr int kMaxTokensPerCall = 64;

  const Tokenizer tok(ReadSentencePieceModelFile(NEEDLE_GOLDEN_DIR "/tokenizer.model"));
  ModelConfig config = needle::testing::SmallConfig();
  config.vocab_size = uint32_t(tok.vocab_size());
  config.num_layers = 1;  // the grammar is under test, not the model: keep the forward pass cheap
  config.engram_layers = {0};
  const CactArchive archive = CactArchive::FromBytes(needle::testing::NonTrivialArchive(config, "4", 2024));
  const FastModel model(archive);
  const uint32_t vocab = model.config().vocab_size;
  ASSERT_EQ(int32_t(vocab), tok.vocab_size());

  GrammarOptions options;
  options.max_calls = 3;
  auto grammar = ToolGrammar::Compile(std::string_view(testing::kKeywordTools), options);
  auto trie = std::make_shared<const TokenTrie>(tok);
  GrammarMatcher matcher(grammar, trie);

  const std::vector<int32_t> sinks = {int32_t(kBosId), int32_t(kImStartId), int32_t(kToolCallId)};
  auto state = model.NewState({.sink_length = uint32_t(sinks.size()), .window = 64});
  std::vector<float> logits(vocab);
  std::vector<uint32_t> bits(trie->mask_words());
  std::vector<double> probs(vocab);
  model.Forward(*state, sinks, logits.data());

  SplitMix64 rng(99);
  std::map<std::string, int> post_check;  // violation kind -> count
  int forced = 0, empty_arrays = 0, total_tokens = 0, max_calls_in_array = 0;
  std::map<std::string, int> tools_called;
  double mask_seconds = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (int call = 0; call < num_calls; ++call) {
    matcher.Reset();
    std::string text;
    const double temperature = 1.0 + 2.0 * rng.Uniform();  // flat enough to visit every tool and keyword
    bool closed = false;
    for (int step = 0; step < kMaxTokensPerCall; ++step) {
      const auto m0 = std::chrono::steady_clock::now();
      const bool close = matcher.ComputeMask(bits);
      mask_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - m0).count();
      // Sample from the masked logits.
      double max_logit = -1e300;
      for (uint32_t id = 0; id < vocab; ++id)
        if ((bits[id >> 5] >> (id & 31)) & 1) max_logit = std::max(max_logit, double(logits[id]));
      ASSERT_GT(max_logit, -1e300) << "empty mask after " << text;
      double sum = 0;
      for (uint32_t id = 0; id < vocab; ++id) {
        probs[id] = ((bits[id >> 5] >> (id & 31)) & 1) ? std::exp((logits[id] - max_logit) / temperature) : 0.0;
        sum += probs[id];
      }
      double r = rng.Uniform() * sum;
      int32_t pick = -1;
      for (uint32_t id = 0; id < vocab && pick < 0; ++id) {
        if (probs[id] == 0) continue;
        r -= probs[id];
        if (r <= 0) pick = int32_t(id);
      }
      if (pick < 0)
        for (int32_t id = int32_t(vocab) - 1; id >= 0 && pick < 0; --id)
          if (probs[size_t(id)] > 0) pick = id;
      if (pick == int32_t(kToolCallEndId)) {
        ASSERT_TRUE(close && matcher.IsComplete());
        closed = true;
        break;
      }
      ASSERT_TRUE(matcher.AcceptToken(pick)) << text << " + " << tok.TokenBytes(pick);
      text += tok.TokenBytes(pick);
      ++total_tokens;
      const int32_t one[1] = {pick};
      model.Forward(*state, one, logits.data());
    }
    if (!closed && !matcher.IsComplete()) {
      // The token budget is spent: finish with the shortest valid ending.
      std::string tail;
      ASSERT_TRUE(matcher.CompletionBytes(&tail)) << text;
      ASSERT_TRUE(matcher.AcceptBytes(tail));
      text += tail;
      ++forced;
    }
    ASSERT_TRUE(matcher.IsComplete()) << text;
    const int32_t next[2] = {int32_t(kToolCallEndId), int32_t(kToolCallId)};
    model.Forward(*state, next, logits.data());

    const auto v = ValidateCall(text, *grammar);
    if (v) {
      // Only what the grammar leaves to the post-check may fail here.
      const bool post_only = v->kind == ViolationKind::kUnique;
      ASSERT_TRUE(post_only) << text << " -> " << v->message;
      ++post_check[ViolationKindName(v->kind)];
    }
    const nlohmann::json parsed = nlohmann::json::parse(text);  // throws if it does not parse
    if (parsed.empty()) ++empty_arrays;
    max_calls_in_array = std::max(max_calls_in_array, int(parsed.size()));
    for (const auto& c : parsed) ++tools_called[c["name"].get<std::string>()];
    if (call < 3 || call % 2500 == 0) std::printf("  call %d: %s\n", call, text.c_str());
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("  %d calls, %d tokens, %.1f s (%.1f us/token, mask %.1f us/token); %d finished at the %d-token cap, %d []\n",
              num_calls, total_tokens, seconds, 1e6 * seconds / std::max(1, total_tokens),
              1e6 * mask_seconds / std::max(1, total_tokens), forced, kMaxTokensPerCall, empty_arrays);
  std::printf("  tools called:");
  for (const auto& [name, n] : tools_called) std::printf(" %s %d", name.c_str(), n);
  std::printf("; most calls in one array: %d\n", max_calls_in_array);
  std::printf("  post-check failures (reported as error envelopes):");
  if (post_check.empty()) std::printf(" none");
  for (const auto& [kind, n] : post_check) std::printf(" %s %d", kind.c_str(), n);
  std::printf("\n");
  RecordProperty("post_check_failures", int(post_check.size()));
  // Every tool is reachable through the grammar.
  EXPECT_EQ(tools_called.size(), grammar->tools().size());
}

}  // namespace
}  // namespace needle::grammar
