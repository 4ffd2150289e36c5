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

TEST(CallGuarantees, APlannedNumberCutIntoItsBoundIsReported) {
  const auto g = Tools(R"({"temperature":{"type":"number","minimum":10,"maximum":30},"minutes":{"type":"integer"}})");
  // The plan says 45, the request says 45, the grammar made it 15: neither a prefix nor the bound.
  const std::string why = PlannedNumberOutOfBounds("t: '45 degrees' -> temperature 45", Calls(R"({"temperature":15})"), *g, {45.0});
  EXPECT_EQ(why, "the request says 45, above the maximum 30 of temperature");
  EXPECT_NE(PlannedNumberOutOfBounds("t: '5 degrees' -> temperature 5", Calls(R"({})"), *g, {5.0}).find("below the minimum 10"),
            std::string::npos);  // left out of the call
  // Not reported: a planned value in bounds, one the request does not say,
  // one the call carries, a key that is not a number, another tool's plan.
  EXPECT_EQ(PlannedNumberOutOfBounds("t: '22' -> temperature 22", Calls(R"({"temperature":24})"), *g, {22.0}), "");
  EXPECT_EQ(PlannedNumberOutOfBounds("t: '22 in 45' -> temperature 225", Calls(R"({"temperature":22})"), *g, {22.0, 45.0}), "");
  EXPECT_EQ(PlannedNumberOutOfBounds("t: 'x' -> minutes 45", Calls(R"({"minutes":45})"), *g, {45.0}), "");
  EXPECT_EQ(PlannedNumberOutOfBounds("g: '45' -> temperature 45", Calls(R"({"temperature":15})"), *g, {45.0}), "");
  // Spans may hold the separators; the second segment's item is read.
  EXPECT_NE(PlannedNumberOutOfBounds("g: 'a; b | c' -> x | t: '99 -> 1' -> temperature 99", Calls(R"({"temperature":30})"), *g, {99.0}),
            "");
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
