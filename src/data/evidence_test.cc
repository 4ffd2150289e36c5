#include "data/evidence.h"

#include <gtest/gtest.h>

namespace needle::data {
namespace {

ojson Example(const std::string& system, const std::string& query, const ojson& args, const ojson& props) {
  ojson ex = ojson::object();
  if (!system.empty()) ex["system"] = system;
  ex["query"] = query;
  ex["tools"] = ojson::array({ojson{{"name", "t"}, {"parameters", {{"type", "object"}, {"properties", props}}}}});
  ex["answers"] = ojson::array({ojson{{"name", "t"}, {"arguments", args}}});
  return ex;
}

const ojson kProps = ojson::parse(R"({"s": {"type": "string"}, "n": {"type": "number", "maximum": 100},
  "d": {"type": "string", "format": "date"}, "t": {"type": "string", "format": "time"},
  "e": {"type": "string", "enum": ["ON", "OFF"]}, "dt": {"type": "string", "format": "date-time"}})");

bool Ok(const std::string& system, const std::string& query, const std::string& args) {
  return CheckEvidence(Example(system, query, ojson::parse(args), kProps)).empty();
}

TEST(Evidence, StringsMustBeCopied) {
  EXPECT_TRUE(Ok("", "hoover the attic", R"({"s": "attic"})"));
  EXPECT_FALSE(Ok("", "hoover the attic", R"({"s": "hallway"})"));
  EXPECT_FALSE(Ok("", "hoover the attic", R"({"s": "Attic"})"));  // exact copy, case included
  EXPECT_TRUE(Ok("", "turn it on", R"({"e": "ON"})"));           // declared enum spelling
  EXPECT_TRUE(Ok("location: Lisbon", "weather?", R"({"s": "Lisbon"})"));
}

TEST(Evidence, Numbers) {
  EXPECT_TRUE(Ok("", "set it to twenty-five", R"({"n": 25})"));
  EXPECT_TRUE(Ok("", "pay $1,284.50", R"({"n": 1284.5})"));
  EXPECT_TRUE(Ok("", "a timer for 20 minutes", R"({"n": 1200})"));
  EXPECT_TRUE(Ok("", "for 1 hour and 30 minutes", R"({"n": 90})"));
  EXPECT_TRUE(Ok("", "for half an hour", R"({"n": 30})"));
  EXPECT_TRUE(Ok("", "volume all the way up", R"({"n": 100})"));  // the schema's maximum
  EXPECT_FALSE(Ok("", "volume to 40", R"({"n": 41})"));
}

TEST(Evidence, TimesAndDates) {
  EXPECT_TRUE(Ok("", "wake me at 7:30 pm", R"({"t": "19:30"})"));
  EXPECT_TRUE(Ok("", "wake me at 7 in the morning", R"({"t": "07:00"})"));
  EXPECT_TRUE(Ok("", "at half past seven in the evening", R"({"t": "19:30"})"));
  EXPECT_TRUE(Ok("", "lunch at noon", R"({"t": "12:00"})"));
  EXPECT_FALSE(Ok("", "at 7:30 pm", R"({"t": "07:30"})"));
  EXPECT_TRUE(Ok("", "on March 14, 2026", R"({"d": "2026-03-14"})"));
  EXPECT_TRUE(Ok("", "on 2026-03-14", R"({"d": "2026-03-14"})"));
  EXPECT_TRUE(Ok("", "the 14th of March 2026", R"({"d": "2026-03-14"})"));
  // Relative dates and dates without a year only with a date fact.
  EXPECT_FALSE(Ok("", "remind me tomorrow", R"({"d": "2025-03-15"})"));
  EXPECT_TRUE(Ok("date: 2025-03-14 (Friday)", "remind me tomorrow", R"({"d": "2025-03-15"})"));
  EXPECT_TRUE(Ok("date: 2025-03-14", "on Monday", R"({"d": "2025-03-17"})"));
  EXPECT_TRUE(Ok("date: 2025-03-14", "in three days", R"({"d": "2025-03-17"})"));
  EXPECT_TRUE(Ok("date: 2025-03-14", "on March 2", R"({"d": "2026-03-02"})"));
  EXPECT_FALSE(Ok("", "on March 2", R"({"d": "2026-03-02"})"));
  EXPECT_TRUE(Ok("date: 2025-03-14", "tomorrow at 6pm", R"({"dt": "2025-03-15T18:00:00"})"));
}

TEST(Evidence, SessionsSeeEarlierTurnsAndResults) {
  ojson ex = Example("", "text Priya I'm late", ojson{{"s", "Priya"}}, kProps);
  ex["turns"] = ojson::parse(R"([{"tool_result": {"results": [{"id": "c_81"}]},
      "answers": [{"name": "t", "arguments": {"s": "c_81"}}]},
      {"query": "thanks", "answers": [{"name": "t", "arguments": {"s": "c_99"}}]}])");
  const auto problems = CheckEvidence(ex);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("c_99"), std::string::npos);
}

}  // namespace
}  // namespace needle::data
