// No leakage (issue J, item 1g): no request of an evaluation set — the
// project's hand-written sets in data/eval/ and the BFCL files it measures on
// — appears in the generated corpus, in any split, first turn or later.
// Stock commands of five words or fewer ("pause the music", "tell me a joke")
// are written the same way by anyone; those may be shared, up to 1% of the
// evaluation requests, and the test lists them.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "data/catalogue.h"
#include "data/generator.h"

namespace needle::data {
namespace {

// Lower-cased, runs of anything but letters and digits as one space: a
// request that differs only in case or punctuation is the same request.
std::string Normalized(const std::string& s) {
  std::string out;
  bool gap = false;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c >= 0x80) {
      if (gap && !out.empty()) out += ' ';
      out += static_cast<char>(std::tolower(c));
      gap = false;
    } else {
      gap = true;
    }
  }
  return out;
}

// Every request of the evaluation files: `query` and the turns' queries of
// the JSONL sets, the user messages of BFCL lines.
std::set<std::string> EvalQueries(size_t* files) {
  std::set<std::string> queries;
  const std::filesystem::path root = std::filesystem::path(NEEDLE_SOURCE_DIR) / "data" / "eval";
  for (const auto& entry : std::filesystem::recursive_directory_iterator(root)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".jsonl" && ext != ".json") || entry.path().parent_path().filename() == "possible_answer") continue;
    ++*files;
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      const ojson e = ojson::parse(line, nullptr, false);
      if (e.is_discarded() || !e.is_object()) continue;
      if (e.contains("query") && e["query"].is_string()) queries.insert(Normalized(e["query"].get<std::string>()));
      if (e.contains("turns") && e["turns"].is_array()) {
        for (const ojson& t : e["turns"]) {
          if (t.contains("query") && t["query"].is_string()) queries.insert(Normalized(t["query"].get<std::string>()));
        }
      }
      if (e.contains("question") && e["question"].is_array()) {
        for (const ojson& turn : e["question"]) {
          for (const ojson& m : turn) {
            if (m.value("role", "") == "user" && m.contains("content") && m["content"].is_string()) {
              queries.insert(Normalized(m["content"].get<std::string>()));
            }
          }
        }
      }
    }
  }
  return queries;
}

TEST(Leakage, NormalizedIgnoresCaseAndPunctuation) {
  EXPECT_EQ(Normalized("Turn ON the lights, please!"), "turn on the lights please");
  EXPECT_EQ(Normalized("  what's   up?"), "what s up");
  EXPECT_NE(Normalized("lights on"), Normalized("lights off"));
}

TEST(Leakage, NoEvaluationRequestIsGenerated) {
  size_t files = 0;
  const std::set<std::string> eval = EvalQueries(&files);
  ASSERT_GE(files, 7u) << "the hand-written sets and the BFCL files";
  ASSERT_GE(eval.size(), 2000u);
  const Catalogue cat = Catalogue::Load(std::string(NEEDLE_SOURCE_DIR) + "/data");
  size_t generated = 0;
  std::set<std::string> shared_short;
  for (const auto& [split, n] : {std::pair{Split::kTrain, 20000}, {Split::kVal, 3000}, {Split::kTest, 3000}}) {
    Generator gen(cat, GeneratorOptions{11, split});
    for (size_t i = 0; i < size_t(n); ++i) {
      const ojson ex = gen.Generate(i).json;
      auto check = [&](const ojson& q) {
        if (!q.is_string()) return;
        ++generated;
        const std::string n = Normalized(q.get<std::string>());
        if (!eval.count(n)) return;
        if (std::count(n.begin(), n.end(), ' ') + 1 <= 5) {
          shared_short.insert(n);
        } else {
          ADD_FAILURE() << "generated example " << i << " asks an evaluation request: " << q;
        }
      };
      check(ex["query"]);
      if (ex.contains("turns")) {
        for (const ojson& t : ex["turns"]) {
          if (t.contains("query")) check(t["query"]);
        }
      }
    }
  }
  EXPECT_GE(generated, 26000u);
  std::string listed;
  for (const std::string& q : shared_short) listed += " \"" + q + "\"";
  EXPECT_LE(shared_short.size(), eval.size() / 100) << "stock commands shared with the evaluation sets:" << listed;
  std::printf("%zu stock commands shared with %zu evaluation requests:%s\n", shared_short.size(), eval.size(), listed.c_str());
}

}  // namespace
}  // namespace needle::data
