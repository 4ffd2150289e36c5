#include "model/fast_model.h"

#include <cmath>
#include <fstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "model/reference_model.h"

namespace needle {
namespace {

const std::string kGolden = NEEDLE_GOLDEN_DIR;

std::vector<int32_t> GoldenIds() {
  const auto j = nlohmann::json::parse(std::ifstream(kGolden + "/golden-b4.logits.json"));
  return j["token_ids"].get<std::vector<int32_t>>();
}

size_t ArgMax(const float* x, size_t n) { return static_cast<size_t>(std::max_element(x, x + n) - x); }

class FastGolden : public ::testing::TestWithParam<std::string> {};

// The int8 fast path against the published reference logits: approximate by
// design (int8 activations and K/V); report the argmax agreement.
TEST_P(FastGolden, ArgmaxAgreesWithReference) {
  const CactArchive archive = CactArchive::Open(kGolden + "/golden-" + GetParam() + ".cact");
  const auto j = nlohmann::json::parse(std::ifstream(kGolden + "/golden-" + GetParam() + ".logits.json"));
  const auto ids = j["token_ids"].get<std::vector<int32_t>>();
  const auto argmax = j["argmax_full"].get<std::vector<size_t>>();
  const auto full = j["logits_full_causal"].get<std::vector<std::vector<float>>>();
  const FastModel model(archive);
  auto st = model.NewState({.sink_length = 0, .window = 64});
  const uint32_t V = model.config().vocab_size;
  std::vector<float> logits(ids.size() * V);
  model.Forward(*st, ids, logits.data(), /*all_logits=*/true);
  size_t agree = 0;
  float worst = 0;
  for (size_t p = 0; p < ids.size(); ++p) {
    agree += ArgMax(&logits[p * V], V) == argmax[p];
    for (size_t v = 0; v < V; ++v) worst = std::max(worst, std::fabs(logits[p * V + v] - full[p][v]));
  }
  const double share = double(agree) / ids.size();
  RecordProperty("argmax_agreement", std::to_string(share));
  RecordProperty("max_abs_diff", std::to_string(worst));
  std::printf("[ fast path ] golden-%s: argmax agreement %.1f%% (%zu/%zu), max |dlogit| %.3f\n", GetParam().c_str(),
              100 * share, agree, ids.size(), worst);
  EXPECT_GE(share, 0.8) << GetParam();
}

INSTANTIATE_TEST_SUITE_P(All, FastGolden, ::testing::Values("b4", "b3", "b2", "mixed", "ternary"));

// Chunked prefill equals token-by-token decoding (same kernels, same cache contents).
TEST(FastModel, ChunkedPrefillEqualsTokenByToken) {
  const CactArchive archive = CactArchive::Open(kGolden + "/golden-b4.cact");
  const FastModel model(archive);
  const auto ids = GoldenIds();
  const uint32_t V = model.config().vocab_size;
  auto one = model.NewState({.sink_length = 5, .window = 16});
  std::vector<float> seq(ids.size() * V);
  for (size_t p = 0; p < ids.size(); ++p) model.Forward(*one, std::span(&ids[p], 1), &seq[p * V]);
  for (uint32_t chunk : {1u, 7u, 20u, 48u}) {
    auto st = model.NewState({.sink_length = 5, .window = 16, .max_chunk = chunk});
    std::vector<float> all(ids.size() * V);
    model.Forward(*st, ids, all.data(), true);
    float worst = 0;
    for (size_t i = 0; i < all.size(); ++i) worst = std::max(worst, std::fabs(all[i] - seq[i]));
    EXPECT_LE(worst, 1e-4f) << "chunk " << chunk;
  }
}

}  // namespace
}  // namespace needle

namespace needle {
namespace {

// A profile times the stages that ran, and only those, without changing a
// logit; detached, it receives nothing more.
TEST(FastModel, ProfileTimesTheStagesThatRanAndChangesNothing) {
  const CactArchive archive = CactArchive::Open(kGolden + "/golden-b4.cact");
  const FastModel model(archive);
  const auto ids = GoldenIds();
  const uint32_t V = model.config().vocab_size;
  auto plain = model.NewState({.sink_length = 5, .window = 16});
  auto timed = model.NewState({.sink_length = 5, .window = 16});
  ForwardProfile profile;
  timed->AttachProfile(&profile);
  std::vector<float> a(V), b(V);
  model.Forward(*plain, ids, a.data());
  model.Forward(*timed, ids, b.data());
  EXPECT_EQ(a, b);
  for (ForwardStage stage : {ForwardStage::kMhcMatmul, ForwardStage::kQkvgMatmul, ForwardStage::kAttention,
                             ForwardStage::kOutMatmul, ForwardStage::kMlp, ForwardStage::kLogitsMatmul}) {
    EXPECT_GT(profile.seconds[size_t(stage)], 0.0) << kForwardStageNames[size_t(stage)];
  }
  bool engram = false;
  for (uint32_t l : model.config().engram_layers) engram = engram || l < model.config().num_layers;
  EXPECT_EQ(profile.seconds[size_t(ForwardStage::kEngramMatmul)] > 0.0, engram);
  const ForwardProfile before = profile;
  timed->AttachProfile(nullptr);
  model.Forward(*timed, std::span(&ids[0], 1), b.data());
  EXPECT_EQ(profile.seconds, before.seconds);
}

}  // namespace
}  // namespace needle
