#include "agent/call_guarantees.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace needle {
namespace {

std::shared_ptr<const grammar::ToolGrammar> Tools(const std::string& properties) {
  return grammar::ToolGrammar::Compile(nlohmann::json::parse(R"([{"name":"t","parameters":{"type":"object","properties":)" +
                                                             properties + "}}]"));
}

Envelope Calls(const std::string& arguments) {
  Envelope env;
  env.function_calls = nlohmann::ordered_json::parse(R"([{"name":"t","arguments":)" + arguments + "}]");
  return env;
}

TEST(CallGuarantees, StringsAreTrimmed) {
  Envelope env = Calls(R"({"city":" Lima","tags":[" oat milk ","x"],"o":{"k":"\tv\n"}})");
  TrimStringValues(env);
  EXPECT_EQ(env.function_calls[0]["arguments"].dump(), R"({"city":"Lima","tags":["oat milk","x"],"o":{"k":"v"}})");
}

TEST(CallGuarantees, NumbersAreFinite) {
  Envelope env = Calls(R"({"x":1.5})");
  EXPECT_EQ(NonFiniteNumber(env), "");
  env.function_calls[0]["arguments"]["x"] = std::numeric_limits<double>::infinity();
  EXPECT_NE(NonFiniteNumber(env).find("t.x"), std::string::npos);
}

TEST(CallGuarantees, TheWrittenSignIsKept) {
  const auto g = Tools(R"({"b":{"type":"integer"},"c":{"type":"number","minimum":0}})");
  Envelope env = Calls(R"({"b":3,"c":2.5})");
  KeepWrittenSigns(env, *g, {-3.0, -2.5, 7.0});
  EXPECT_EQ(env.function_calls[0]["arguments"]["b"], -3);
  EXPECT_EQ(env.function_calls[0]["arguments"]["c"], 2.5);  // -2.5 is below its minimum
  Envelope said = Calls(R"({"b":3})");
  KeepWrittenSigns(said, *g, {3.0, -3.0});  // 3 is written too: left alone
  EXPECT_EQ(said.function_calls[0]["arguments"]["b"], 3);
}

TEST(CallGuarantees, AStatedNumberOutsideItsBoundIsNotClamped) {
  const auto g = Tools(R"({"amount":{"type":"integer","maximum":10000},"volume":{"type":"integer","minimum":0,"maximum":100}})");
  EXPECT_NE(ClampedStatedNumber(Calls(R"({"amount":5000})"), *g, {50000.0}).find("50000"), std::string::npos);
  EXPECT_NE(ClampedStatedNumber(Calls(R"({"volume":100})"), *g, {150.0}).find("above the maximum 100"), std::string::npos);
  EXPECT_EQ(ClampedStatedNumber(Calls(R"({"amount":5000})"), *g, {5000.0, 50000.0}), "");  // 5000 is said
  EXPECT_EQ(ClampedStatedNumber(Calls(R"({"volume":40})"), *g, {150.0}), "");  // not a cut of 150, not the bound
  // A stated number another argument holds is not the one cut.
  EXPECT_EQ(ClampedStatedNumber(Calls(R"({"volume":100,"amount":1000})"), *g, {80.0, 1000.0}), "");
}

TEST(CallGuarantees, ArraysAreNotPaddedWithRepeats) {
  Envelope env = Calls(R"({"items":["milk","milk","eggs"],"n":[5,5]})");
  DropRepeatedArrayItems(env, "add milk and eggs, and 5");
  EXPECT_EQ(env.function_calls[0]["arguments"].dump(), R"({"items":["milk","eggs"],"n":[5]})");
  Envelope twice = Calls(R"({"n":[5,5,3]})");
  DropRepeatedArrayItems(twice, "roll 5, 5 and 3");
  EXPECT_EQ(twice.function_calls[0]["arguments"]["n"].size(), 3u);
}

}  // namespace
}  // namespace needle
