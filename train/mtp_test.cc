// The multi-token-prediction block (SPEC §1, a training aid): it learns, it
// does not change the main path, and it never reaches the archive.
#include <gtest/gtest.h>

#include "base/random.h"
#include "model/testing/archives.h"
#include "train/san.h"
#include "train/trainer.h"

namespace needle::train {
namespace {

EncodedPrompt Repeating(uint32_t n, uint64_t seed) {
  // A short pattern repeated: the token after next is predictable.
  SplitMix64 rng(seed);
  std::vector<int32_t> pattern;
  for (int i = 0; i < 5; ++i) pattern.push_back(int32_t(20 + rng.Next() % 200));
  EncodedPrompt p;
  for (uint32_t i = 0; i < n; ++i) p.ids.push_back(pattern[i % pattern.size()]);
  p.target.assign(n, 1);
  p.sink_length = 4;
  return p;
}

TEST(Mtp, LearnsAndLeavesTheMainPathAndTheExportAlone) {
  torch::manual_seed(0);
  const ModelConfig c = testing::SmallConfig();
  San model(c, std::vector<HeadSpec>{}, 1);
  const PackedRows rows = PackExamples({Repeating(60, 1), Repeating(50, 2)}, 128, c, 32);
  const TrainBatch b = TrainBatch::From(rows, c);
  const auto before = model->forward(b, 32).detach().clone();
  const ModelWeights w0 = model->Export();
  model->EnableMtp(7);
  EXPECT_TRUE(model->has_mtp());
  // Enabling adds parameters but changes neither the logits nor the export.
  EXPECT_TRUE(torch::equal(model->forward(b, 32), before));
  const ModelWeights w1 = model->Export();
  ASSERT_EQ(w0.tensors.size(), w1.tensors.size());
  for (size_t i = 0; i < w0.tensors.size(); ++i) EXPECT_EQ(w0.tensors[i], w1.tensors[i]) << w0.specs[i].name;
  torch::optim::AdamW opt(model->parameters(), torch::optim::AdamWOptions(3e-3));
  double first = 0, last = 0;
  for (int step = 0; step < 25; ++step) {
    const auto h = model->Hidden(b, 32);
    const auto mtp = model->MtpLoss(b, 32, h);
    const auto loss = TargetLossFromHidden(model, b, h, torch::kMean) + 0.5 * mtp;
    opt.zero_grad();
    loss.backward();
    opt.step();
    (step == 0 ? first : last) = mtp.item<double>();
  }
  std::printf("[ mtp ] loss %.3f -> %.3f over 25 steps\n", first, last);
  EXPECT_LT(last, 0.7 * first);
  // A model without the block loads the checkpoint (its extra tensors are ignored).
  torch::serialize::OutputArchive ar;
  model->save(ar);
  std::ostringstream buf;
  ar.save_to(buf);
  San plain(c, std::vector<HeadSpec>{}, 2);
  torch::serialize::InputArchive in;
  std::istringstream is(buf.str());
  in.load_from(is);
  plain->load(in);
  torch::NoGradGuard ng;
  EXPECT_TRUE(torch::allclose(plain->forward(b, 32), model->forward(b, 32)));
}

}  // namespace
}  // namespace needle::train
