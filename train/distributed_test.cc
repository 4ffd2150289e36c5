// Data-parallel training (issue N): 2 ranks at the same global batch follow
// the loss curve of 1 rank, and a checkpoint of one resumes under the other.
// The ranks here are threads of the test process, each with its own Gloo
// process group over loopback: the same collectives `needle train --nproc`
// runs between processes.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/testing/temp_dir.h"
#include "train/distributed.h"
#include "train/test_fixtures.h"
#include "train/trainer.h"

namespace needle::train {
namespace {

namespace fs = std::filesystem;

const std::string& TempDir() { return testing::ProcessTempDir("needle-ddp"); }

using fixtures::LossByStep;

// Six steps of about six examples (three per rank with two ranks).
TrainOptions SmallRun(const std::string& out) {
  TrainOptions o = fixtures::SmallRun(TempDir(), "ddp", 4, 24);
  o.steps = 6;
  o.batch_tokens = 1200;
  o.checkpoint_every = 3;
  o.out = out;
  return o;
}

// Runs `o` as `world` ranks (threads), rank 0 writing the run directory.
void TrainRanks(TrainOptions o, int world) {
  if (world == 1) {
    Train(o);
    return;
  }
  const int port = FreeLoopbackPort();
  std::vector<std::thread> ranks;
  std::vector<std::string> errors(static_cast<size_t>(world));
  for (int r = 0; r < world; ++r) {
    ranks.emplace_back([&, r] {
      TrainOptions mine = o;
      mine.ranks = {r, world, "127.0.0.1", port};
      try {
        Train(mine);
      } catch (const std::exception& e) {
        errors[size_t(r)] = e.what();
      }
    });
  }
  for (auto& t : ranks) t.join();
  for (int r = 0; r < world; ++r) EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
}

TEST(Distributed, TwoRanksFollowTheCurveOfOne) {
  TrainOptions one = SmallRun(TempDir() + "/one"), two = SmallRun(TempDir() + "/two");
  TrainRanks(one, 1);
  TrainRanks(two, 2);
  const auto a = LossByStep(one.out + "/log.jsonl"), b = LossByStep(two.out + "/log.jsonl");
  ASSERT_EQ(a.size(), 6u);
  ASSERT_EQ(b.size(), 6u);
  for (const auto& [step, loss] : a) {
    std::printf("[ ddp ] step %lld: 1 rank %.5f, 2 ranks %.5f\n", (long long)step, loss, b.at(step));
    EXPECT_NEAR(b.at(step), loss, 2e-3 * loss) << "step " << step;
  }
  EXPECT_LT(a.at(6), a.at(1));  // it trained
  // The ranks shared the batch: together they saw the tokens one rank saw, not twice as many.
  EXPECT_EQ(LossByStep(one.out + "/log.jsonl", "tokens"), LossByStep(two.out + "/log.jsonl", "tokens"));
}

// A checkpoint written by 2 ranks resumes under 1 (the example stream is global).
TEST(Distributed, ACheckpointResumesUnderAnotherNumberOfRanks) {
  TrainOptions full = SmallRun(TempDir() + "/full"), split = SmallRun(TempDir() + "/split");
  TrainRanks(full, 1);
  split.stop_at = 3;
  TrainRanks(split, 2);
  split.stop_at = 0;
  split.resume = true;
  TrainRanks(split, 1);
  const auto a = LossByStep(full.out + "/log.jsonl"), b = LossByStep(split.out + "/log.jsonl");
  ASSERT_EQ(b.size(), 6u);
  for (const auto& [step, loss] : a) EXPECT_NEAR(b.at(step), loss, 2e-3 * loss) << "step " << step;
}

TEST(Distributed, TheShareOfABatchBalancesTokensAndCoversEveryExample) {
  const std::vector<size_t> lengths = {300, 100, 100, 100, 250, 50};
  const auto r0 = ShareOfBatch(lengths, 0, 2), r1 = ShareOfBatch(lengths, 1, 2);
  EXPECT_EQ(r0, (std::vector<size_t>{0, 4}));        // 300 + 250
  EXPECT_EQ(r1, (std::vector<size_t>{1, 2, 3, 5}));  // 100 + 100 + 100 + 50
  EXPECT_EQ(ShareOfBatch(lengths, 0, 1).size(), lengths.size());
}

TEST(Distributed, RanksComeFromTheEnvironmentAndBadValuesAreNamed) {
  ::unsetenv("RANK");
  EXPECT_EQ(Ranks::FromEnvironment().world, 1);
  ::setenv("RANK", "1", 1);
  ::setenv("WORLD_SIZE", "2", 1);
  ::setenv("MASTER_ADDR", "10.0.0.7", 1);
  ::setenv("MASTER_PORT", "29611", 1);
  const Ranks r = Ranks::FromEnvironment();
  EXPECT_EQ(r.rank, 1);
  EXPECT_EQ(r.world, 2);
  EXPECT_EQ(r.master_addr, "10.0.0.7");
  EXPECT_EQ(r.master_port, 29611);
  ::setenv("RANK", "2", 1);
  try {
    Ranks::FromEnvironment();
    ADD_FAILURE() << "RANK 2 of 2 accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("RANK"), std::string::npos) << e.what();
  }
  for (const char* v : {"RANK", "WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"}) ::unsetenv(v);
}

}  // namespace
}  // namespace needle::train
