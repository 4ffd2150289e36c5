// data/eval/handwritten*.jsonl are read by hand and by `needle eval`: every
// line must be an example the engine accepts, with gold calls its schemas allow.
#include <gtest/gtest.h>

#include <fstream>
#include <set>
#include <string>

#include "data/schema_check.h"
#include "grammar/tool_grammar.h"

namespace needle::data {
namespace {

void ExpectEveryCaseValid(const std::string& name) {
  SCOPED_TRACE(name);
  std::ifstream in(std::string(NEEDLE_SOURCE_DIR) + "/data/eval/" + name);
  ASSERT_TRUE(in) << "data/eval/" << name << " is missing";
  std::string line;
  size_t cases = 0, refusals = 0;
  std::set<std::string> queries;
  while (std::getline(in, line)) {
    ++cases;
    const ojson e = ojson::parse(line, nullptr, false);
    ASSERT_FALSE(e.is_discarded()) << "line " << cases << " is not JSON";
    ASSERT_TRUE(e.contains("query") && e["query"].is_string()) << "line " << cases;
    ASSERT_TRUE(e.contains("tools") && e["tools"].is_array() && !e["tools"].empty()) << "line " << cases;
    ASSERT_TRUE(e.contains("answers") && e["answers"].is_array()) << "line " << cases;
    EXPECT_TRUE(queries.insert(e["query"].get<std::string>()).second) << "line " << cases << " repeats a query";
    EXPECT_NO_THROW(grammar::ToolGrammar::Compile(nlohmann::json::parse(e["tools"].dump()))) << "line " << cases;
    const std::vector<std::string> problems = ValidateCalls(e["answers"], e["tools"]);
    EXPECT_TRUE(problems.empty()) << "line " << cases << ": " << (problems.empty() ? "" : problems[0]);
    refusals += e["answers"].empty();
  }
  EXPECT_GE(cases, 50u);
  EXPECT_GE(refusals, 5u);
}

TEST(Handwritten, EveryCaseIsAValidExample) { ExpectEveryCaseValid("handwritten.jsonl"); }
TEST(Handwritten, EveryBlindCaseIsAValidExample) { ExpectEveryCaseValid("handwritten-blind.jsonl"); }
TEST(Handwritten, EverySecondBlindCaseIsAValidExample) { ExpectEveryCaseValid("handwritten-blind2.jsonl"); }
TEST(Handwritten, EveryThirdBlindCaseIsAValidExample) { ExpectEveryCaseValid("handwritten-blind3.jsonl"); }
TEST(Handwritten, EveryFourthBlindCaseIsAValidExample) { ExpectEveryCaseValid("handwritten-blind4.jsonl"); }
TEST(Handwritten, EveryFifthBlindCaseIsAValidExample) { ExpectEveryCaseValid("handwritten-blind5.jsonl"); }

}  // namespace
}  // namespace needle::data
