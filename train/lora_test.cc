// LoRA fine-tuning and `needle build` (SPEC §12), the run directory a base is
// loaded from, resumable training, and the errors on bad input. Tiny models
// (testing::SmallConfig, byte-level tokenizer) keep each test to seconds.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/testing/temp_dir.h"
#include "base/random.h"
#include "io/cact_archive.h"
#include "io/cact_checksum.h"
#include "kv/budget.h"
#include "model/testing/archives.h"
#include "text/tokenizer.h"
#include "train/build.h"
#include "train/finetune.h"
#include "train/lora.h"
#include "train/test_fixtures.h"
#include "train/trainer.h"

namespace needle::train {
namespace {

namespace fs = std::filesystem;

const std::string& TempDir() { return testing::ProcessTempDir("needle-lora"); }

std::string WriteBase(const std::string& name, const ModelConfig& c, uint64_t seed, bool large = true) {
  return fixtures::WriteBase(TempDir() + "/" + name, c, seed, large);
}
std::string WriteData(const std::string& name, int n, uint64_t seed, int long_ones = 0) {
  return fixtures::WriteData(TempDir() + "/" + name, n, seed, long_ones);
}

EncodedPrompt Random(size_t n, uint32_t vocab, uint64_t seed, uint32_t sinks) {
  SplitMix64 rng(seed);
  EncodedPrompt p;
  for (size_t i = 0; i < n; ++i) p.ids.push_back(static_cast<int32_t>(14 + rng.Next() % (vocab - 14)));
  p.target.assign(n, 1);
  p.sink_length = sinks;
  return p;
}

TrainBatch RandomBatch(const ModelConfig& c, uint64_t seed) {
  return TrainBatch::From(PackExamples({Random(70, c.vocab_size, seed, 12), Random(50, c.vocab_size, seed + 1, 8)}, 128, c, 32), c);
}

float MaxAbsDiff(const torch::Tensor& a, const torch::Tensor& b) { return (a - b).abs().max().item<float>(); }

// A few adapter steps on random tokens (lr large enough that B moves visibly).
void TrainAdapter(San& model, Lora& lora, int steps) {
  torch::optim::AdamW opt(lora->parameters(), torch::optim::AdamWOptions(1e-2));
  for (int s = 0; s < steps; ++s) {
    const auto loss = TargetLoss(model, RandomBatch(model->config(), 100 + s), 32, torch::kMean);
    opt.zero_grad();
    loss.backward();
    opt.step();
  }
}

TEST(Lora, ZeroBGivesExactlyTheBaseLogits) {
  BaseModel base = LoadBase(WriteBase("zero.cact", testing::SmallConfig(), 3));
  torch::NoGradGuard no_grad;
  const TrainBatch b = RandomBatch(base.config, 7);
  const auto before = base.model->forward(b, 32);
  Lora lora(base.config, 4, 8, 1);
  AttachLora(base.model, lora);
  const auto after = base.model->forward(b, 32);
  EXPECT_TRUE(torch::equal(before, after));
  for (const auto& p : base.model->parameters()) EXPECT_FALSE(p.requires_grad());
  for (const auto& p : lora->parameters()) EXPECT_TRUE(p.requires_grad());
  EXPECT_EQ(lora->parameters().size(), size_t(2 * kNumLoraTargets * base.config.num_layers));
  // A ~ N(0,1)/rank, B = 0.
  EXPECT_NEAR(lora->A(0, LoraTarget::kQ).std().item<double>(), 1.0 / 4, 0.03);
  EXPECT_EQ(lora->B(1, LoraTarget::kOut).abs().sum().item<float>(), 0.0f);
}

TEST(Lora, MergedEqualsBasePlusAdapterAndTheFileRoundTrips) {
  const std::string base_path = WriteBase("merge.cact", testing::SmallConfig(), 4);
  BaseModel base = LoadBase(base_path);
  Lora lora(base.config, 4, 8, 2);
  AttachLora(base.model, lora);
  TrainAdapter(base.model, lora, 3);
  for (const auto& p : base.model->parameters()) EXPECT_FALSE(p.grad().defined() && p.grad().abs().sum().item<float>() > 0);
  ASSERT_GT(lora->B(0, LoraTarget::kV).abs().max().item<float>(), 0.0f);

  torch::NoGradGuard no_grad;
  const TrainBatch b = RandomBatch(base.config, 9);
  const auto with_adapter = base.model->forward(b, 32);
  const std::string adapter = TempDir() + "/merge.lora";
  SaveAdapter(adapter, lora, base.config, WeightsFingerprint(base.model), base_path);

  MergeLora(base.model, lora);
  EXPECT_FALSE(base.model->lora());
  const auto merged = base.model->forward(b, 32);
  const float d = MaxAbsDiff(merged, with_adapter);
  std::printf("[ lora ] merged vs base+adapter: max |dlogit| %.2e (logits up to %.1f)\n", d, with_adapter.abs().max().item<float>());
  EXPECT_LE(d, 1e-4f);

  // The adapter changed the model; the file gives back the same adapter.
  BaseModel fresh = LoadBase(base_path);
  EXPECT_GT(MaxAbsDiff(fresh.model->forward(b, 32), with_adapter), 1e-3f);
  const AdapterFile f = LoadAdapter(adapter);
  EXPECT_EQ(f.lora->rank(), 4);
  EXPECT_EQ(f.lora->alpha(), 8.0);
  EXPECT_EQ(f.base_fingerprint, WeightsFingerprint(fresh.model));
  EXPECT_EQ(f.base_source, base_path);
  AttachLora(fresh.model, f.lora);
  EXPECT_TRUE(torch::equal(fresh.model->forward(b, 32), with_adapter));
}

TEST(Lora, AdapterOnAnotherGeometryIsAClearError) {
  const ModelConfig small = testing::SmallConfig();
  BaseModel base = LoadBase(WriteBase("geo-a.cact", small, 5));
  Lora lora(small, 4, 8, 1);
  const std::string adapter = TempDir() + "/geo.lora";
  SaveAdapter(adapter, lora, small, WeightsFingerprint(base.model), "geo-a.cact");

  ModelConfig other = small;
  other.d_model = 128;
  other.num_layers = 3;
  const std::string other_base = WriteBase("geo-b.cact", other, 6);
  BuildOptions o;
  o.base = other_base;
  o.lora = adapter;
  o.out = TempDir() + "/geo-out.cact";
  try {
    Build(o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(m.find("geo.lora"), std::string::npos) << m;
    EXPECT_NE(m.find("d_model 64 (this base: 128)"), std::string::npos) << m;
    EXPECT_NE(m.find("num_layers 2 (this base: 3)"), std::string::npos) << m;
  }
  EXPECT_FALSE(fs::exists(o.out));
  BaseModel b = LoadBase(other_base);
  EXPECT_THROW(AttachLora(b.model, lora), Error);
  // Something that is not an adapter.
  try {
    LoadAdapter(other_base);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("is not a Needle LoRA adapter"), std::string::npos) << e.what();
  }
}

TEST(Finetune, FewStepsLowerTheLoss) {
  FinetuneOptions o;
  o.base = WriteBase("ft.cact", testing::SmallConfig(), 8, /*large=*/false);
  o.data = WriteData("ft.jsonl", 12, 1, /*long_ones=*/1);
  o.out = TempDir() + "/ft.lora";
  o.epochs = 2;
  o.rank = 4;
  o.alpha = 8;
  o.lr = 2e-2;
  o.batch_size = 4;
  o.max_len = 256;
  o.threads = 1;  // the tests share the machine: no spinning for a second core
  o.val_split = 0.25;
  o.seed = 3;
  const FinetuneResult r = Finetune(o);
  EXPECT_EQ(r.truncated, 1u);
  EXPECT_EQ(r.val_examples, 3u);
  EXPECT_EQ(r.train_examples, 10u);
  EXPECT_EQ(r.steps, 6);  // 2 epochs x ceil(10 / 4)
  ASSERT_EQ(r.val_loss.size(), 3u);
  ASSERT_FALSE(r.train_loss.empty());
  std::printf("[ finetune ] validation loss %.3f -> %.3f, train loss %.3f -> %.3f\n", r.val_loss.front(), r.val_loss.back(),
              r.train_loss.front(), r.train_loss.back());
  EXPECT_LT(r.val_loss.back(), r.val_loss.front() - 0.2);  // nats per target token
  EXPECT_LT(r.train_loss.back(), r.train_loss.front());
  ASSERT_TRUE(fs::exists(o.out));
  // The log: a line per step that trained (a batch whose targets were all
  // truncated away is skipped), a validation line before training and per epoch.
  std::ifstream log(o.out + ".log.jsonl");
  size_t steps = 0, vals = 0;
  for (std::string line; std::getline(log, line);) {
    const auto j = nlohmann::json::parse(line);
    steps += j.contains("loss");
    vals += j.contains("val_loss");
  }
  EXPECT_EQ(steps, r.train_loss.size());
  EXPECT_EQ(vals, 3u);
}

TEST(Finetune, SameSeedSameAdapter) {
  FinetuneOptions o;
  o.base = WriteBase("det.cact", testing::SmallConfig(), 8, /*large=*/false);
  o.data = WriteData("det.jsonl", 6, 4);
  o.epochs = 1;
  o.rank = 2;
  o.lr = 1e-2;
  o.batch_size = 2;
  o.val_split = 0.34;
  o.seed = 11;
  o.threads = 1;
  FinetuneOptions again = o;
  o.out = TempDir() + "/det-1.lora";
  again.out = TempDir() + "/det-2.lora";
  const FinetuneResult r1 = Finetune(o), r2 = Finetune(again);
  EXPECT_EQ(r1.val_examples, 2u);
  EXPECT_EQ(r1.train_loss, r2.train_loss);
  EXPECT_EQ(r1.val_loss, r2.val_loss);
  const AdapterFile a = LoadAdapter(o.out), b = LoadAdapter(again.out);
  const auto pa = a.lora->parameters(), pb = b.lora->parameters();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i) EXPECT_TRUE(torch::equal(pa[i], pb[i])) << i;
}

TEST(NeedleBuild, WithAnAdapterTheArchiveHasNoConfidenceHead) {
  const std::string base_path = WriteBase("build.cact", testing::SmallConfig(), 9);
  BaseModel base = LoadBase(base_path);
  Lora lora(base.config, 4, 8, 5);
  AttachLora(base.model, lora);
  TrainAdapter(base.model, lora, 2);
  const std::string adapter = TempDir() + "/build.lora";
  SaveAdapter(adapter, lora, base.config, WeightsFingerprint(LoadBase(base_path).model), base_path);

  BuildOptions o;
  o.base = base_path;
  o.out = TempDir() + "/plain.cact";
  o.bits = "4";  // the base's width: every tensor keeps its bytes, the head stays calibrated
  const BuildResult plain = Build(o);
  EXPECT_FALSE(plain.finetuned);
  EXPECT_FALSE(plain.confidence_dropped);
  EXPECT_EQ(CactArchive::Open(o.out).layout().heads.size(), 2u);
  {
    const CactArchive in = CactArchive::Open(base_path), out = CactArchive::Open(o.out);
    const std::vector<uint8_t> sealed = WithChecksum({in.bytes().begin(), in.bytes().end()});  // build adds the checksum
    EXPECT_TRUE(out.checksum().has_value());
    EXPECT_TRUE(std::equal(sealed.begin(), sealed.end(), out.bytes().begin(), out.bytes().end()));
  }
  o.bits = "2";  // other weights than the head was calibrated on: confidence null
  o.out = TempDir() + "/plain2.cact";
  const BuildResult two = Build(o);
  EXPECT_TRUE(two.confidence_dropped);
  EXPECT_EQ(CactArchive::Open(o.out).layout().FindHead(HeadKind::kConfidence), nullptr);
  EXPECT_NE(CactArchive::Open(o.out).layout().FindHead(HeadKind::kContrastive), nullptr);

  o.lora = adapter;
  o.bits = "default=2,attn.v_proj=4";
  o.out = TempDir() + "/tuned.cact";
  const BuildResult tuned = Build(o);
  EXPECT_TRUE(tuned.finetuned);
  const CactArchive a = CactArchive::Open(o.out);
  ASSERT_EQ(a.layout().heads.size(), 1u);
  EXPECT_EQ(a.layout().heads[0].spec.kind, HeadKind::kContrastive);
  EXPECT_EQ(a.layout().FindHead(HeadKind::kConfidence), nullptr);
  EXPECT_EQ(a.tokenizer().pieces.size(), ByteLevelTokenizer().pieces.size());  // the base's embedded tokenizer

  // The archive holds the merged weights: importing it equals the merged
  // model quantized the same way.
  MergeLora(base.model, lora);
  ModelWeights w = KeepHeads(base.model->Export(), {HeadKind::kContrastive});
  const CactArchive want = CactArchive::FromBytes(WithChecksum(ExportArchive(w, ParseBitsMap(o.bits, w.specs), ByteLevelTokenizer())));
  ASSERT_EQ(want.bytes().size(), a.bytes().size());
  EXPECT_TRUE(std::equal(want.bytes().begin(), want.bytes().end(), a.bytes().begin()));
}

using fixtures::LossByStep;

TrainOptions SmallRun(const std::string& name, uint64_t data_seed) { return fixtures::SmallRun(TempDir(), name, data_seed); }

TEST(Trainer, ResumedRunReproducesTheLossCurveAndLoadsFromItsDirectory) {
  const TrainOptions o = SmallRun("resume", 2);
  TrainOptions a = o, b = o;
  a.out = TempDir() + "/run-a";
  b.out = TempDir() + "/run-b";
  Train(a);
  b.stop_at = 3;  // "killed" after step 3, one step past its last checkpoint
  b.checkpoint_at_stop = false;
  Train(b);
  EXPECT_EQ(LossByStep(b.out + "/log.jsonl").size(), 3u);
  b.stop_at = 0;
  b.resume = true;
  Train(b);
  const auto la = LossByStep(a.out + "/log.jsonl"), lb = LossByStep(b.out + "/log.jsonl");
  ASSERT_EQ(la.size(), 4u);
  ASSERT_EQ(lb.size(), 4u);
  for (const auto& [step, loss] : la) EXPECT_EQ(lb.at(step), loss) << "step " << step;

  // --stop-at: a checkpoint at the stop step (an odd one here), then a resume
  // continues the same schedule: the same curve, no step repeated.
  TrainOptions stop = o;
  stop.out = TempDir() + "/run-stop";
  stop.stop_at = 3;
  Train(stop);
  stop.stop_at = 0;
  stop.resume = true;
  Train(stop);
  std::ifstream log_c(stop.out + "/log.jsonl");
  size_t lines = 0;
  for (std::string line; std::getline(log_c, line);) ++lines;
  EXPECT_EQ(lines, 4u);
  const auto lc = LossByStep(stop.out + "/log.jsonl");
  for (const auto& [step, loss] : la) EXPECT_EQ(lc.at(step), loss) << "step " << step;

  // The run carries its geometry: the directory, checkpoint.pt with config.json,
  // and checkpoint.pt with only model.cact beside it all load the same weights.
  const ModelConfig cfg = ConfigFromJson(nlohmann::json::parse(std::ifstream(b.out + "/config.json")));
  EXPECT_EQ(cfg.d_model, o.config.d_model);
  EXPECT_EQ(cfg.kv_window, 64u);
  const BaseModel from_dir = LoadBase(b.out), from_a = LoadBase(a.out + "/checkpoint.pt");
  EXPECT_EQ(from_dir.checkpoint, (fs::path(b.out) / "checkpoint.pt").string());
  EXPECT_EQ(WeightsFingerprint(from_dir.model), WeightsFingerprint(from_a.model));
  ASSERT_TRUE(from_dir.tokenizer.has_value());
  fs::remove(b.out + "/config.json");
  const BaseModel from_cact_header = LoadBase(b.out + "/checkpoint.pt");
  EXPECT_EQ(WeightsFingerprint(from_cact_header.model), WeightsFingerprint(from_a.model));
  EXPECT_EQ(effective_window(from_cact_header.config), 64u);
  // An adapter made on the checkpoint fits the run's model.cact (whose header
  // resolves engram_heads and lacks contrastive_dim).
  AdapterFile on_checkpoint;
  on_checkpoint.base_config = cfg;
  EXPECT_NO_THROW(CheckAdapterMatches(on_checkpoint, LoadBase(b.out + "/model.cact").config, "x.lora"));
  EXPECT_NO_THROW(CheckAdapterMatches(on_checkpoint, from_cact_header.config, "x.lora"));

  // --resume with another geometry than the run's is refused.
  TrainOptions c = a;
  c.resume = true;
  c.config.num_layers = 3;
  c.steps = 6;
  EXPECT_THROW(Train(c), Error);
}

// --device: cpu runs as before; a name that is no device, or CUDA where this
// libtorch has none, is an error naming it before any work.
TEST(Trainer, TheDeviceIsCheckedBeforeTheRun) {
  EXPECT_TRUE(TrainingDevice("cpu").is_cpu());
  for (const char* bad : {"gpu", "", "cuda:x", "mps"}) {
    try {
      TrainingDevice(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument) << bad;
      EXPECT_NE(std::string(e.what()).find("cpu, cuda or cuda:N"), std::string::npos) << e.what();
    }
  }
  if (torch::cuda::is_available()) GTEST_SKIP() << "this libtorch has CUDA";
  TrainOptions o = SmallRun("device", 4);
  o.out = TempDir() + "/device";
  o.device = "cuda";
  try {
    Train(o);
    ADD_FAILURE() << "trained on a CUDA device this libtorch does not have";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kUnsupported);
    EXPECT_NE(std::string(e.what()).find("no CUDA device"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(o.out + "/checkpoint.pt"));
}

TEST(Trainer, InitFromStartsAtTheBasesWeights) {
  TrainOptions o = SmallRun("init", 3);
  o.out = TempDir() + "/init-a";
  Train(o);
  const BaseModel a = LoadBase(o.out);

  // From the run's directory (its checkpoint.pt) and from its 4-bit model.cact,
  // with a learning rate too small to move anything: the weights are the base's.
  for (const std::string& from : {o.out, o.out + "/model.cact"}) {
    TrainOptions b = o;
    b.init_from = from;
    b.lr = 1e-12;
    b.steps = 1;
    b.seed = 9;  // another init: only the copy can make them equal
    b.out = TempDir() + "/init-b" + std::to_string(from.size());
    Train(b);
    const BaseModel got = LoadBase(b.out);
    const BaseModel want = LoadBase(from);
    EXPECT_LT(MaxAbsDiff(got.model->embedding, want.model->embedding), 1e-6f) << from;
    EXPECT_LT(MaxAbsDiff(got.model->layers[1].q_proj, want.model->layers[1].q_proj), 1e-6f) << from;
    // Only the core: the heads keep the run's own init (seed 9, not 5).
    EXPECT_GT(MaxAbsDiff(got.model->heads[0].probes, want.model->heads[0].probes), 1e-3f) << from;
    // The first loss is the trained one, not the random init's.
    EXPECT_LT(LossByStep(b.out + "/log.jsonl").at(1), LossByStep(o.out + "/log.jsonl").at(1)) << from;
  }
  TrainOptions scratch = o;
  scratch.seed = 9;
  scratch.steps = 1;
  scratch.out = TempDir() + "/init-scratch";
  Train(scratch);
  EXPECT_GT(MaxAbsDiff(LoadBase(scratch.out).model->embedding, a.model->embedding), 1e-2f);

  // Another geometry is refused, naming the field.
  TrainOptions c = o;
  c.init_from = o.out;
  c.config.num_layers = 3;
  c.out = TempDir() + "/init-c";
  try {
    Train(c);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("num_layers"), std::string::npos) << e.what();
  }
}

TEST(Trainer, BadInputIsAnErrorNamingTheFileAndLine) {
  const Tokenizer tok(ByteLevelTokenizer());
  const PromptEncoder enc(tok);
  const std::string good = WriteData("good.jsonl", 1, 1);
  std::string first;
  std::getline(std::ifstream(good), first);
  auto expect_error = [&](const std::string& name, const std::string& second, const std::string& want) {
    const std::string path = TempDir() + "/" + name;
    std::ofstream(path) << first << "\n" << second << "\n";
    try {
      LoadExamples(path, enc, 1024, nullptr);
      ADD_FAILURE() << "expected an error for " << name;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(path + ":2: "), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
    }
  };
  expect_error("not-json.jsonl", "{\"query\": ", "parse error");
  expect_error("no-query.jsonl", R"({"tools": [], "answers": []})", "\"query\"");
  expect_error("not-object.jsonl", "[1, 2]", "expected a JSON object");

  TrainOptions o;
  o.data = good;
  o.tokenizer = WriteBase("bad-tok.cact", testing::SmallConfig(), 1);
  o.config = testing::SmallConfig();
  o.config.num_heads = 5;  // 64 % 5 != 0
  o.out = TempDir() + "/bad-config";
  try {
    Train(o);
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidArgument);
    EXPECT_NE(std::string(e.what()).find("num_heads"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("does not divide d_model 64"), std::string::npos) << e.what();
  }

  // A checkpoint with nothing beside it to say its geometry.
  fs::create_directories(TempDir() + "/lonely");
  std::ofstream(TempDir() + "/lonely/checkpoint.pt") << "x";
  try {
    LoadBase(TempDir() + "/lonely/checkpoint.pt");
    ADD_FAILURE() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no config.json or model.cact beside it"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace needle::train
