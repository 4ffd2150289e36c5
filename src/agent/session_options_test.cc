#include "agent/session_options.h"

#include <cmath>
#include <functional>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "base/error.h"

namespace needle {
namespace {

std::string ErrorOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// The table is the one place: the struct's defaults, the described defaults
// and the JSON object agree, every name once.
TEST(SessionOptions, TheTableDescribesTheStruct) {
  const SessionOptions o;
  const auto table = DescribeOptions();
  const auto json = OptionsToJson(o);
  ASSERT_EQ(table.size(), json.size());
  std::set<std::string> names;
  for (const auto& row : table) {
    const std::string name = row["name"];
    EXPECT_TRUE(names.insert(name).second) << name;
    EXPECT_EQ(row["default"], json[name]) << name;
    EXPECT_FALSE(row["help"].get<std::string>().empty()) << name;
  }
  EXPECT_EQ(json["reasoning_beams"], 2);
  EXPECT_EQ(json["copy_bias"], "inf");
  EXPECT_EQ(json["tool_score_bias"], 100);
  EXPECT_TRUE(json["reasoning_names"].get<bool>());
  EXPECT_NO_THROW(CheckOptions(o));
}

TEST(SessionOptions, JsonRoundTrips) {
  SessionOptions o;
  o.reasoning_beams = 1, o.copy_bias = 4.5f, o.max_new_tokens = 64, o.drop_unsaid_numbers = false, o.tool_index_path = "x.idx";
  SessionOptions back;
  ApplyOptionsJson(nlohmann::json::parse(OptionsToJson(o).dump()), back);
  EXPECT_EQ(OptionsToJson(back), OptionsToJson(o));
  ApplyOptionsJson(nlohmann::json{{"copy_bias", "inf"}}, back);
  EXPECT_TRUE(std::isinf(back.copy_bias));
}

// All or nothing, and the message names the option and the problem.
TEST(SessionOptions, BadValuesAreNamedAndChangeNothing) {
  SessionOptions o;
  const std::string before = OptionsToJson(o).dump();
  auto apply = [&](const char* text) { return ErrorOf([&] { ApplyOptionsJson(nlohmann::json::parse(text), o); }); };
  EXPECT_NE(apply(R"({"reasoning_beams": 1, "reasoning_beems": 2})").find("unknown option 'reasoning_beems'"), std::string::npos);
  EXPECT_NE(apply(R"({"max_new_tokens": 1, "reasoning_beams": 9})").find("reasoning_beams: must be 1 to 8, got 9"), std::string::npos);
  EXPECT_NE(apply(R"({"max_new_tokens": -5})").find("max_new_tokens: must be 1 to"), std::string::npos);
  EXPECT_NE(apply(R"({"max_new_tokens": 2.5})").find("max_new_tokens: expects an integer"), std::string::npos);
  EXPECT_NE(apply(R"({"reasoning_names": "yes"})").find("reasoning_names: expects true or false"), std::string::npos);
  EXPECT_NE(apply(R"({"tool_score_bias": "inf"})").find("tool_score_bias: must be 0 to"), std::string::npos);
  EXPECT_NE(apply(R"({"copy_bias": "lots"})").find("copy_bias: expects a number or \"inf\""), std::string::npos);
  EXPECT_NE(apply(R"([1])").find("expected a JSON object"), std::string::npos);
  EXPECT_EQ(OptionsToJson(o).dump(), before);
}

TEST(SessionOptions, TextValues) {
  SessionOptions o;
  SetOptionFromText(o, "enum_word_bias", "inf");
  EXPECT_TRUE(std::isinf(o.enum_word_bias));
  SetOptionFromText(o, "reasoning_beams", "3");
  EXPECT_EQ(o.reasoning_beams, 3u);
  SetOptionFromText(o, "order_from_to_pairs", "false");
  EXPECT_FALSE(o.order_from_to_pairs);
  EXPECT_NE(ErrorOf([&] { SetOptionFromText(o, "reasoning_beams", "3x"); }).find("expects a number"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { SetOptionFromText(o, "threads", "0"); }).find("threads: must be 1 to"), std::string::npos);
  EXPECT_NE(ErrorOf([&] { SetOptionFromText(o, "nope", "1"); }).find("no such option"), std::string::npos);
}

TEST(SessionOptions, CheckCatchesWhatTheStructLetsThrough) {
  SessionOptions o;
  o.no_tool_cosine = NAN;
  EXPECT_NE(ErrorOf([&] { CheckOptions(o); }).find("no_tool_cosine: is NaN"), std::string::npos);
  o = {};
  o.reasoning_beams = 0;
  EXPECT_NE(ErrorOf([&] { CheckOptions(o); }).find("reasoning_beams"), std::string::npos);
}

}  // namespace
}  // namespace needle
