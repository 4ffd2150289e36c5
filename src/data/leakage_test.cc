// No leakage (issue J, item 1g): no request of an evaluation set — the
// project's hand-written sets in data/eval/ and the BFCL files it measures on
// — appears in the generated corpus, in any split, first turn or later. The
// generator decontaminates (data/decontaminate.h); these tests check that it
// reads every evaluation file and that what it writes asks none of them.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <vector>

#include <unistd.h>

#include "data/catalogue.h"
#include "data/decontaminate.h"
#include "data/generator.h"

namespace needle::data {
namespace {

namespace fs = std::filesystem;

TEST(Leakage, NormalizedIgnoresCaseAndPunctuation) {
  EXPECT_EQ(NormalizedRequest("Turn ON the lights, please!"), "turn on the lights please");
  EXPECT_EQ(NormalizedRequest("  what's   up?"), "what s up");
  EXPECT_NE(NormalizedRequest("lights on"), NormalizedRequest("lights off"));
}

TEST(Leakage, EveryEvaluationFileIsRead) {
  size_t files = 0;
  const std::set<std::string> eval = EvaluationRequests(std::string(NEEDLE_SOURCE_DIR) + "/data/eval", &files);
  EXPECT_GE(files, 8u) << "the six hand-written sets and the two BFCL files";
  EXPECT_GE(eval.size(), 2300u);
  const Catalogue cat = Catalogue::Load(std::string(NEEDLE_SOURCE_DIR) + "/data");
  EXPECT_EQ(cat.held_out_requests, eval);
  EXPECT_TRUE(EvaluationRequests("/nonexistent/eval").empty());
}

TEST(Leakage, NoEvaluationRequestIsGenerated) {
  const std::set<std::string> eval = EvaluationRequests(std::string(NEEDLE_SOURCE_DIR) + "/data/eval");
  const Catalogue cat = Catalogue::Load(std::string(NEEDLE_SOURCE_DIR) + "/data");
  size_t generated = 0;
  for (const auto& [split, n] : {std::pair{Split::kTrain, 20000}, {Split::kVal, 3000}, {Split::kTest, 3000}}) {
    Generator gen(cat, GeneratorOptions{11, split});
    for (size_t i = 0; i < size_t(n); ++i) {
      const ojson ex = gen.Generate(i).json;
      auto check = [&](const ojson& q) {
        if (!q.is_string()) return;
        ++generated;
        EXPECT_EQ(eval.count(NormalizedRequest(q.get<std::string>())), 0u) << "generated example " << i << " asks an evaluation request: " << q;
      };
      check(ex["query"]);
      if (ex.contains("turns")) {
        for (const ojson& t : ex["turns"])
          if (t.contains("query")) check(t["query"]);
      }
    }
  }
  EXPECT_GE(generated, 26000u);
}

// A request that is generated becomes an evaluation request: the generator
// draws that example again, and leaves the others as they were.
TEST(Leakage, AnExampleThatAsksAnEvaluationRequestIsDrawnAgain) {
  const fs::path dir = fs::temp_directory_path() / ("needle-leakage-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* part : {"capabilities", "pools"}) {
    fs::copy(fs::path(NEEDLE_SOURCE_DIR) / "data" / part, dir / part, fs::copy_options::recursive);
  }
  for (const char* file : {"lexicon.json", "sessions.json"}) fs::copy_file(fs::path(NEEDLE_SOURCE_DIR) / "data" / file, dir / file);
  std::vector<ojson> before;
  {
    const Catalogue cat = Catalogue::Load(dir.string());
    ASSERT_TRUE(cat.held_out_requests.empty());
    Generator gen(cat, GeneratorOptions{3, Split::kTrain});
    for (size_t i = 0; i < 20; ++i) before.push_back(gen.Generate(i).json);
  }
  fs::create_directories(dir / "eval");
  std::ofstream(dir / "eval" / "set.jsonl") << ojson{{"query", before[7]["query"]}, {"tools", ojson::array()}, {"answers", ojson::array()}}.dump()
                                            << "\n";
  const Catalogue cat = Catalogue::Load(dir.string());
  Generator gen(cat, GeneratorOptions{3, Split::kTrain});
  for (size_t i = 0; i < 20; ++i) {
    const ojson ex = gen.Generate(i).json;
    if (NormalizedRequest(before[i]["query"].get<std::string>()) == NormalizedRequest(before[7]["query"].get<std::string>())) {
      EXPECT_NE(ex["query"], before[i]["query"]) << i;
      EXPECT_FALSE(AsksAnyOf(ex, cat.held_out_requests)) << i;
    } else {
      EXPECT_EQ(ex, before[i]) << i;
    }
  }
  fs::remove_all(dir);
}

}  // namespace
}  // namespace needle::data
