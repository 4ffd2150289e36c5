// Parity: what we train is what we run. A model after a few training steps is
// exported to a .cact; the engine's fp32 reference path and libtorch, on the
// same dequantized weights, give the same logits (short sequences, packed rows,
// and sequences longer than S + W where eviction matters).
#include <gtest/gtest.h>

#include "base/error.h"
#include "base/random.h"
#include "io/tokenizer_blob.h"
#include "model/reference_model.h"
#include "model/testing/archives.h"
#include "train/san.h"
#include "train/trainer.h"

namespace needle::train {
namespace {

std::vector<int32_t> RandomIds(size_t n, uint32_t vocab, uint64_t seed) {
  SplitMix64 rng(seed);
  std::vector<int32_t> t(n);
  for (auto& x : t) x = static_cast<int32_t>(14 + rng.Next() % (vocab - 14));
  return t;
}

EncodedPrompt Prompt(std::vector<int32_t> ids, uint32_t sinks) {
  EncodedPrompt p;
  p.target.assign(ids.size(), 1);
  p.ids = std::move(ids);
  p.sink_length = sinks;
  return p;
}

float MaxDiff(const torch::Tensor& torch_logits, const std::vector<float>& ref) {
  const auto t = torch_logits.contiguous();
  const float* a = t.data_ptr<float>();
  float worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) worst = std::max(worst, std::fabs(a[i] - ref[i]));
  return worst;
}

// Lower-case suite name so that `ctest -R parity` selects these tests.
class parity : public ::testing::Test {
 protected:
  void SetUp() override {
    torch::manual_seed(0);
    config_ = testing::SmallConfig();
    // Start from large random weights (every component matters), train a few steps.
    const CactArchive start = CactArchive::FromBytes(testing::NonTrivialArchive(config_, "4", 21));
    San model(config_, std::vector<HeadSpec>{}, 1);
    model->Import(start);
    torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(3e-3));
    for (int step = 0; step < 3; ++step) {
      const PackedRows rows = PackExamples({Prompt(RandomIds(90, config_.vocab_size, 100 + step), 10),
                                            Prompt(RandomIds(60, config_.vocab_size, 200 + step), 8)},
                                           160, config_, 32);
      const TrainBatch b = TrainBatch::From(rows, config_);
      const auto logits = model->forward(b, 32);
      const auto loss = torch::nn::functional::cross_entropy(
          logits.view({-1, logits.size(-1)}), b.targets.view({-1}),
          torch::nn::functional::CrossEntropyFuncOptions().ignore_index(-100));
      opt.zero_grad();
      loss.backward();
      opt.step();
      ASSERT_TRUE(std::isfinite(loss.item<float>()));
    }
    ModelWeights w = model->Export();
    bytes_ = ExportArchive(w, ParseBitsMap("4", w.specs), ByteLevelTokenizer());
  }

  ModelConfig config_;
  std::vector<uint8_t> bytes_;
};

TEST_F(parity, ShortSequencesAndPackedRows) {
  const CactArchive archive = CactArchive::FromBytes(bytes_);
  const ReferenceModel ref(archive);
  San model(config_, std::vector<HeadSpec>{}, 2);
  model->Import(archive);
  torch::NoGradGuard no_grad;
  const auto a = RandomIds(40, config_.vocab_size, 1), b = RandomIds(25, config_.vocab_size, 2);
  // Two examples packed in one row: each must equal its own reference run.
  const PackedRows rows = PackExamples({Prompt(a, 6), Prompt(b, 4)}, 80, config_, 0);
  ASSERT_EQ(rows.rows, 1u);
  const auto logits = model->forward(TrainBatch::From(rows, config_), 0);
  const int64_t V = config_.vocab_size;
  ReferenceState sa = ref.NewState({0, 0}), sb = ref.NewState({0, 0});
  const auto ra = ref.Forward(sa, a), rb = ref.Forward(sb, b);
  const float da = MaxDiff(logits[0].narrow(0, 0, 40).reshape({-1}), ra);
  const float db = MaxDiff(logits[0].narrow(0, 40, 25).reshape({-1}), rb);
  std::printf("[ parity ] short: max |dlogit| %.2e and %.2e (V=%lld)\n", da, db, (long long)V);
  EXPECT_LE(da, 1e-3f);
  EXPECT_LE(db, 1e-3f);
}

TEST_F(parity, BeyondSinksPlusWindow) {
  const CactArchive archive = CactArchive::FromBytes(bytes_);
  const ReferenceModel ref(archive);
  San model(config_, std::vector<HeadSpec>{}, 3);
  model->Import(archive);
  torch::NoGradGuard no_grad;
  const uint32_t S = 30, W = 64;
  const auto ids = RandomIds(300, config_.vocab_size, 3);  // 300 > S + W: eviction from token 94 on
  const PackedRows rows = PackExamples({Prompt(ids, S)}, 300, config_, W);
  const auto logits = model->forward(TrainBatch::From(rows, config_), W);
  ReferenceState st = ref.NewState({S, W});
  const auto want = ref.Forward(st, ids);
  const float d = MaxDiff(logits[0].reshape({-1}), want);
  std::printf("[ parity ] 300 tokens, S=%u W=%u: max |dlogit| %.2e\n", S, W, d);
  EXPECT_LE(d, 1e-3f);
}

// Attention runs per example (TrainBatch's groups): packing examples into
// rows must change neither the loss nor any gradient.
TEST_F(parity, PackedRowsGiveTheGradientsOfSeparateOnes) {
  const CactArchive archive = CactArchive::FromBytes(bytes_);
  San model(config_, std::vector<HeadSpec>{}, 4);
  model->Import(archive);
  const std::vector<EncodedPrompt> examples = {Prompt(RandomIds(70, config_.vocab_size, 7), 20), Prompt(RandomIds(130, config_.vocab_size, 8), 30),
                                               Prompt(RandomIds(20, config_.vocab_size, 9), 5)};
  const int64_t W = 32;
  auto grads = [&](const std::vector<EncodedPrompt>& batch, uint32_t length) {
    const TrainBatch b = TrainBatch::From(PackExamples(batch, length, config_, W), config_);
    for (auto& p : model->parameters()) p.mutable_grad() = torch::Tensor();
    const auto loss = TargetLoss(model, b, W, torch::kSum);
    loss.backward();
    std::vector<torch::Tensor> g;
    for (auto& p : model->parameters()) g.push_back(p.grad().defined() ? p.grad().clone() : torch::zeros_like(p));
    return std::pair{loss.item<double>(), g};
  };
  const auto [packed_loss, packed] = grads(examples, 256);
  double separate_loss = 0;
  std::vector<torch::Tensor> separate;
  for (const EncodedPrompt& e : examples) {
    const auto [loss, g] = grads({e}, 256);
    separate_loss += loss;
    if (separate.empty()) separate = g;
    else for (size_t i = 0; i < g.size(); ++i) separate[i] += g[i];
  }
  EXPECT_NEAR(packed_loss, separate_loss, 1e-3 * std::fabs(separate_loss));
  double worst = 0, scale = 0;
  for (size_t i = 0; i < packed.size(); ++i) {
    worst = std::max(worst, (packed[i] - separate[i]).abs().max().item<double>());
    scale = std::max(scale, separate[i].abs().max().item<double>());
  }
  std::printf("[ parity ] packed vs separate: loss %.4f / %.4f, max |dgrad| %.2e of %.2e\n", packed_loss, separate_loss, worst, scale);
  EXPECT_GT(scale, 0.0);
  EXPECT_LE(worst, 1e-4 * scale);
}

}  // namespace
}  // namespace needle::train

namespace needle::train {
namespace {

// bf16 products (--matmul bf16) keep the fp32 model's logits to bf16's
// precision and its gradients' direction; a bad --matmul name is an error.
TEST(MatmulType, Bf16ProductsFollowFp32) {
  const ModelConfig c = testing::SmallConfig();
  San model(c, std::vector<HeadSpec>{}, 7);
  const TrainBatch b = TrainBatch::From(PackExamples({Prompt(RandomIds(70, c.vocab_size, 9), 8)}, 80, c, 32), c);
  auto run = [&](torch::ScalarType type) {
    model->set_matmul_type(type);
    model->zero_grad();
    const auto logits = model->forward(b, 32);
    logits.pow(2).mean().backward();
    std::vector<torch::Tensor> grads;
    for (const auto& p : model->parameters()) grads.push_back(p.grad().defined() ? p.grad().clone().reshape({-1}) : torch::zeros({p.numel()}));
    return std::pair{logits.detach(), torch::cat(grads)};
  };
  const auto [l32, g32] = run(torch::kFloat32);
  const auto [l16, g16] = run(torch::kBFloat16);
  const float scale = l32.abs().max().item<float>();
  const float gap = (l16 - l32).abs().max().item<float>();
  EXPECT_GT(gap, 0.0f);  // the products did run in bf16
  EXPECT_LT(gap, 0.05f * scale);
  EXPECT_GT(torch::cosine_similarity(g16, g32, 0).item<float>(), 0.99f);
  EXPECT_EQ(MatmulType("fp32", torch::kCPU), torch::kFloat32);
  EXPECT_EQ(MatmulType("bf16", torch::kCPU), torch::kBFloat16);
  EXPECT_THROW(MatmulType("fp8", torch::kCPU), needle::Error);
}

}  // namespace
}  // namespace needle::train
