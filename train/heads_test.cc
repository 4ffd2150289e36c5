// The heads: what the trainer pools is what the engine pools (parity of the
// probe heads), and the two training stages move their metrics.
#include "train/heads.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <cstring>
#include <fstream>
#include <set>
#include <span>

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

// DIR/base.cact: a small agent archive with both heads.
std::string WriteAgentBase(const fs::path& dir, uint64_t seed) {
  fs::create_directories(dir);
  const std::string base = (dir / "base.cact").string();
  const auto bytes = testing::AgentArchive(seed);
  std::ofstream(base, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()), std::streamsize(bytes.size()));
  return base;
}

// Rollouts: "exact" exactly when the sequence contains token 77.
void WriteRollouts(const fs::path& path) {
  std::ofstream roll(path);
  SplitMix64 rng(5);
  for (int i = 0; i < 60; ++i) {
    std::vector<int32_t> ids;
    for (int k = 0; k < 30; ++k) ids.push_back(int32_t(20 + rng.Next() % 40));
    if (i % 2) ids[20] = 77;
    // A third are later turns: an earlier turn as context (positions 8-14, not scored).
    nlohmann::json r = {{"ids", ids}, {"sink", 8}, {"exact", bool(i % 2)}};
    if (i % 3 == 0) r["pool_from"] = 15;
    if (i % 4 == 1) r["call_p"] = 0.9;  // the decoder's cap on the reported confidence (absent: none)
    roll << r.dump() << "\n";
  }
}

bool SameBytes(std::span<const uint8_t> a, std::span<const uint8_t> b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
}

// `needle build` at another width leaves the confidence head out; train-heads
// on that archive gives it a fresh head calibrated on its rollouts, the
// re-quantized body unchanged.
TEST(Heads, ABuildAtAnotherWidthIsRecalibrated) {
  const fs::path dir = fs::path(::testing::TempDir()) / "heads_recalibrate";
  const std::string base = WriteAgentBase(dir, 23);
  BuildOptions b;
  b.base = base;
  b.bits = "3";
  b.out = (dir / "three.cact").string();
  ASSERT_TRUE(Build(b).confidence_dropped);
  WriteRollouts(dir / "rollouts.jsonl");
  HeadsOptions o;
  o.base = b.out;
  o.rollouts = (dir / "rollouts.jsonl").string();
  o.out = (dir / "out").string();
  o.confidence_epochs = 10;
  o.lr = 3e-3;
  o.threads = 1;
  const HeadsResult r = TrainHeads(o);
  EXPECT_LT(r.bce_after, r.bce_before);
  const CactArchive three = CactArchive::Open(b.out), out = CactArchive::Open(o.out + "/model.cact");
  ASSERT_NE(out.layout().FindHead(HeadKind::kConfidence), nullptr);
  ASSERT_NE(out.layout().FindHead(HeadKind::kContrastive), nullptr);
  size_t cq = 0;
  for (size_t i = 0; i < three.num_tensors(); ++i) {
    if (three.tensor(i).record->dtype != static_cast<uint8_t>(DType::kCQ)) continue;
    ++cq;
    EXPECT_TRUE(SameBytes(three.data(i), out.data(i))) << three.tensor(i).spec->name;
  }
  EXPECT_GT(cq, 0u);
  const HeadTensors* was = three.layout().FindHead(HeadKind::kContrastive);
  const HeadTensors* now = out.layout().FindHead(HeadKind::kContrastive);
  EXPECT_TRUE(SameBytes(three.data(was->probes), out.data(now->probes)));
}

TEST(Heads, StagesTrainAndWriteALoadableBase) {
  const fs::path dir = fs::path(::testing::TempDir()) / "heads_stage";
  const std::string base = WriteAgentBase(dir, 22);
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
  WriteRollouts(dir / "rollouts.jsonl");
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
  // The frozen body keeps the base's bytes (re-quantizing would move it); the trained heads do not.
  {
    const CactArchive in = CactArchive::Open(base);
    ASSERT_EQ(a.num_tensors(), in.num_tensors());
    std::set<size_t> head_tensors;
    for (const HeadTensors& h : a.layout().heads) head_tensors.insert({h.probes, h.proj, h.bias});
    size_t same_body = 0, cq_body = 0, same_head = 0;
    for (size_t i = 0; i < a.num_tensors(); ++i) {
      const auto x = a.data(i), y = in.data(i);
      const bool same = x.size() == y.size() && std::memcmp(x.data(), y.data(), x.size()) == 0;
      if (head_tensors.count(i)) {
        same_head += same;
      } else if (a.tensor(i).record->dtype == static_cast<uint8_t>(DType::kCQ)) {
        ++cq_body, same_body += same;
      }
    }
    EXPECT_GT(cq_body, 0u);
    EXPECT_EQ(same_body, cq_body);
    EXPECT_LT(same_head, head_tensors.size());
  }

  // Bad rollouts are refused, naming the field and the file: a call_p that is
  // not a probability, a scored turn that would start past its tokens.
  const auto refused = [&](const std::string& name, const std::string& field, auto line) {
    {
      std::ofstream bad(dir / name);
      for (int i = 0; i < 12; ++i) bad << line(i).dump() << "\n";
    }
    HeadsOptions b;
    b.base = base;
    b.rollouts = (dir / name).string();
    b.out = (dir / (name + "-out")).string();
    b.threads = 1;
    try {
      TrainHeads(b);
      ADD_FAILURE() << "expected an error for " << name;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(field), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
  };
  refused("bad-cap.jsonl", "call_p", [](int i) {
    return nlohmann::json{{"ids", {20, 21, 22, 23}}, {"sink", 2}, {"exact", i % 2 == 0}, {"call_p", i == 3 ? 1.5 : 0.5}};
  });
  refused("bad-rollouts.jsonl", "pool_from", [](int i) {
    return nlohmann::json{{"ids", {20, 21, 22, 23}}, {"sink", 2}, {"pool_from", i == 5 ? 4 : 2}, {"exact", i % 2 == 0}};
  });
}

// --refusals: requests none of the tools serves (other words than the tools')
// end up below the no-tool cosine and the called tools above it; without
// them the head has no such scale. An option with no refusal in the data is
// an error naming it.
TEST(Heads, RefusalsTeachTheHeadWhereNoToolServes) {
  const fs::path dir = fs::path(::testing::TempDir()) / "heads_refusals";
  const std::string base = WriteAgentBase(dir, 24);
  const char* tool_words[] = {"zorbit", "plinth", "quasar", "marmot"};
  const char* other_words[] = {"banana", "cobalt", "velvet", "harbor"};
  nlohmann::ordered_json tools = nlohmann::ordered_json::array();
  for (const char* w : tool_words) {
    tools.push_back({{"name", std::string(w) + "_tool"}, {"parameters", {{"type", "object"}, {"properties", nlohmann::json::object()}}}});
  }
  auto write = [&](const fs::path& path, int rounds) {
    std::ofstream out(path);
    for (int r = 0; r < rounds; ++r) {
      for (int i = 0; i < 4; ++i) {
        const std::string tail = r % 2 ? " now" : "";
        out << nlohmann::ordered_json{{"query", std::string("please ") + tool_words[i] + tail},
                                      {"tools", tools},
                                      {"answers", {{{"name", std::string(tool_words[i]) + "_tool"}, {"arguments", nlohmann::json::object()}}}}}
                   .dump()
            << "\n";
        out << nlohmann::ordered_json{{"query", std::string("please ") + other_words[i] + tail}, {"tools", tools}, {"answers", nlohmann::json::array()}}
                   .dump()
            << "\n";
      }
    }
  };
  write(dir / "data.jsonl", 6);
  write(dir / "val.jsonl", 2);
  HeadsOptions o;
  o.base = base;
  o.data = (dir / "data.jsonl").string();
  o.val = (dir / "val.jsonl").string();
  o.out = (dir / "out").string();
  o.contrastive_steps = 40;
  o.pairs_per_step = 4;
  o.refusals_per_step = 4;
  o.no_tool_cosine = 0.3;
  o.lr = 3e-3;
  o.threads = 1;
  const HeadsResult r = TrainHeads(o);
  std::printf("[ refusals ] auroc %.3f -> %.3f, refusals below %.1f -> %.1f, calls above %.1f -> %.1f\n", r.no_tool_auroc_before,
              r.no_tool_auroc_after, r.refusals_below_before, r.refusals_below_after, r.calls_above_before, r.calls_above_after);
  EXPECT_GT(r.no_tool_auroc_after, r.no_tool_auroc_before);
  EXPECT_GE(r.no_tool_auroc_after, 0.9);
  EXPECT_GE(r.refusals_below_after, 75.0);
  EXPECT_GE(r.calls_above_after, 75.0);

  // Refusals asked for, none in the data: an error naming the option and the file.
  std::ofstream(dir / "calls.jsonl") << nlohmann::ordered_json{{"query", "please zorbit"}, {"tools", tools},
                                                              {"answers", {{{"name", "zorbit_tool"}, {"arguments", nlohmann::json::object()}}}}}
                                                .dump()
                                         << "\n"
                                         << nlohmann::ordered_json{{"query", "please plinth"}, {"tools", tools},
                                                                   {"answers", {{{"name", "plinth_tool"}, {"arguments", nlohmann::json::object()}}}}}
                                                .dump()
                                         << "\n";
  o.data = (dir / "calls.jsonl").string();
  o.out = (dir / "out2").string();
  try {
    TrainHeads(o);
    ADD_FAILURE() << "expected an error: --refusals without refusals";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("--refusals"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("calls.jsonl"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace needle::train
