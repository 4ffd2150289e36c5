// The heads: what the trainer pools is what the engine pools (parity of the
// probe heads), and the two training stages move their metrics.
#include "train/heads.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include <nlohmann/json.hpp>

#include "agent/testing/agent_archives.h"
#include "base/error.h"
#include "base/random.h"
#include "model/fast_model.h"
#include "model/heads.h"
#include "train/build.h"
#include "train/san.h"

namespace needle::train {
namespace {

namespace fs = std::filesystem;

TEST(Heads, EngineProbePoolingMatchesTheTrainer) {
  const std::vector<uint8_t> bytes = testing::AgentArchive(21);
  const CactArchive archive = CactArchive::FromBytes(bytes);
  const ModelConfig& c = archive.config();
  San model(c, std::vector<HeadSpec>{DefaultHeadSpec(HeadKind::kContrastive, c), DefaultHeadSpec(HeadKind::kConfidence, c)}, 0);
  model->Import(archive);
  torch::NoGradGuard ng;
  SplitMix64 rng(3);
  EncodedPrompt p;
  for (int i = 0; i < 70; ++i) p.ids.push_back(int32_t(14 + rng.Next() % 250));
  p.target.assign(p.ids.size(), 0);
  p.sink_length = 20;
  const int64_t W = 32;  // 70 > S + W: pooling covers evicted positions too
  const PackedRows rows = PackExamples({p}, 70, c, W);
  const TrainBatch b = TrainBatch::From(rows, c);
  const auto cells = model->Cells(b, W);
  const auto visible = b.seg > 0;
  const FastModel fast(archive);
  for (size_t h = 0; h < 2; ++h) {
    const auto want = model->HeadOutput(h, cells, visible).contiguous();
    const HeadWeights w = *LoadHead(archive, h == 0 ? HeadKind::kContrastive : HeadKind::kConfidence);
    ProbePool pool(w);
    ProbePool* pools[1] = {&pool};
    auto st = fast.NewState({20, W, 32, /*fp32=*/true});
    st->AttachPools(pools, 1);
    fast.Forward(*st, p.ids, nullptr);
    std::vector<float> got(w.out);
    pool.Output(got.data());
    float worst = 0;
    for (uint32_t i = 0; i < w.out; ++i) worst = std::max(worst, std::fabs(got[i] - want.data_ptr<float>()[i]));
    std::printf("[ parity ] head %zu: max |d| %.2e over %u outputs\n", h, worst, w.out);
    EXPECT_LE(worst, 1e-3f);
  }
}

TEST(Heads, ExpectedCalibrationError) {
  const float p[4] = {0.95f, 0.95f, 0.05f, 0.05f};
  const float perfect[4] = {1, 1, 0, 0}, wrong[4] = {0, 0, 1, 1};
  EXPECT_NEAR(ExpectedCalibrationError(p, perfect, 4), 0.05, 1e-6);
  EXPECT_NEAR(ExpectedCalibrationError(p, wrong, 4), 0.95, 1e-6);
}

TEST(Heads, StagesTrainAndWriteALoadableBase) {
  const fs::path dir = fs::path(::testing::TempDir()) / "heads_stage";
  fs::create_directories(dir);
  const std::string base = (dir / "base.cact").string();
  {
    const auto bytes = testing::AgentArchive(22);
    std::ofstream(base, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  }
  // Retrieval pairs: the query names the tool's unusual word.
  const char* words[] = {"zorbit", "plinth", "quasar", "marmot", "vortex", "gizmo", "tundra", "sprocket"};
  std::ofstream data(dir / "data.jsonl");
  for (int r = 0; r < 6; ++r) {
    for (int i = 0; i < 8; ++i) {
      nlohmann::ordered_json tools = nlohmann::ordered_json::array();
      for (int j = 0; j < 8; ++j) {
        tools.push_back({{"name", std::string(words[j]) + "_tool"}, {"parameters", {{"type", "object"}, {"properties", nlohmann::json::object()}}}});
      }
      data << nlohmann::ordered_json{{"query", std::string("please ") + words[i] + (r % 2 ? " now" : "")},
                                     {"tools", tools},
                                     {"answers", {{{"name", std::string(words[i]) + "_tool"}, {"arguments", nlohmann::json::object()}}}}}
                  .dump()
           << "\n";
    }
  }
  data.close();
  {  // the first two rounds score retrieval
    std::ifstream in(dir / "data.jsonl");
    std::ofstream val(dir / "val.jsonl");
    std::string line;
    for (int i = 0; i < 16 && std::getline(in, line); ++i) val << line << "\n";
  }
  // Rollouts: "exact" exactly when the sequence contains token 77.
  std::ofstream roll(dir / "rollouts.jsonl");
  SplitMix64 rng(5);
  for (int i = 0; i < 60; ++i) {
    std::vector<int32_t> ids;
    for (int k = 0; k < 30; ++k) ids.push_back(int32_t(20 + rng.Next() % 40));
    if (i % 2) ids[20] = 77;
    // A third are later turns: an earlier turn as context (positions 8-14, not scored).
    nlohmann::json r = {{"ids", ids}, {"sink", 8}, {"exact", bool(i % 2)}};
    if (i % 3 == 0) r["pool_from"] = 15;
    roll << r.dump() << "\n";
  }
  roll.close();
  HeadsOptions o;
  o.base = base;
  o.data = (dir / "data.jsonl").string();
  o.val = (dir / "val.jsonl").string();
  o.rollouts = (dir / "rollouts.jsonl").string();
  o.out = (dir / "out").string();
  o.contrastive_steps = 40;
  o.pairs_per_step = 8;
  o.confidence_epochs = 30;
  o.lr = 3e-3;
  o.threads = 1;
  const HeadsResult r = TrainHeads(o);
  std::printf("[ heads ] top1 %.1f -> %.1f, top5 %.1f -> %.1f, bce %.3f -> %.3f, ece %.3f -> %.3f\n", r.top1_before,
              r.top1_after, r.top5_before, r.top5_after, r.bce_before, r.bce_after, r.ece_before, r.ece_after);
  EXPECT_GT(r.top1_after, r.top1_before);
  EXPECT_LT(r.bce_after, r.bce_before);
  // The head kept is the epoch with the lowest held-out BCE (an epoch, not the untrained head, here).
  EXPECT_GE(r.confidence_epoch, 1);
  EXPECT_LE(r.confidence_epoch, 30);
  EXPECT_EQ(r.rollouts, 60);
  // The output is a base for the next stage and a loadable archive with both heads.
  const BaseModel again = LoadBase(o.out);
  EXPECT_EQ(again.model->heads.size(), 2u);
  const CactArchive a = CactArchive::Open(o.out + "/model.cact");
  EXPECT_NE(a.layout().FindHead(HeadKind::kConfidence), nullptr);

  // A rollout whose scored turn would start past its tokens is refused, naming the file.
  {
    std::ofstream bad(dir / "bad-rollouts.jsonl");
    for (int i = 0; i < 12; ++i) bad << nlohmann::json{{"ids", {20, 21, 22, 23}}, {"sink", 2}, {"pool_from", i == 5 ? 4 : 2}, {"exact", i % 2 == 0}}.dump() << "\n";
  }
  HeadsOptions b;
  b.base = base;
  b.rollouts = (dir / "bad-rollouts.jsonl").string();
  b.out = (dir / "bad-out").string();
  b.threads = 1;
  try {
    TrainHeads(b);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pool_from"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("bad-rollouts.jsonl"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace needle::train
