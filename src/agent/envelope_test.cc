#include "agent/envelope.h"

#include <gtest/gtest.h>

namespace needle {
namespace {

using nlohmann::ordered_json;

TEST(Envelope, DropRepeatedCallsKeepsTheFirstOfEach) {
  Envelope e;
  e.type = EnvelopeType::kCall;
  e.function_calls = ordered_json::parse(R"([
    {"name":"pay","arguments":{"to":"Ana","amount":20}},
    {"name":"pay","arguments":{"amount":20,"to":"Ana"}},
    {"name":"pay","arguments":{"to":"Ana","amount":21}},
    {"name":"note","arguments":{"to":"Ana","amount":20}},
    {"name":"pay","arguments":{"to":"Ana","amount":20}}])");
  DropRepeatedCalls(e);
  ASSERT_EQ(e.function_calls.size(), 3u);
  EXPECT_EQ(e.function_calls[0].dump(), R"({"name":"pay","arguments":{"to":"Ana","amount":20}})");
  EXPECT_EQ(e.function_calls[1]["arguments"]["amount"], 21);
  EXPECT_EQ(e.function_calls[2]["name"], "note");
  ASSERT_EQ(e.warnings.size(), 1u);
  EXPECT_NE(e.warnings[0].find("dropped 2 repeated call(s)"), std::string::npos) << e.warnings[0];

  Envelope distinct;
  distinct.function_calls = ordered_json::parse(R"([{"name":"a","arguments":{}},{"name":"b","arguments":{}}])");
  DropRepeatedCalls(distinct);
  EXPECT_EQ(distinct.function_calls.size(), 2u);
  EXPECT_TRUE(distinct.warnings.empty());
  Envelope none;
  DropRepeatedCalls(none);
  EXPECT_TRUE(none.function_calls.empty());
  EXPECT_TRUE(none.warnings.empty());
}

TEST(Envelope, DropEchoedArgumentsDropsOptionalRepeatsAndEmptyStrings) {
  const ordered_json tools = ordered_json::parse(R"([
    {"name":"ship","parameters":{"type":"object","properties":{"tracking":{"type":"string"},"to":{"type":"string"},
      "note":{"type":"string"},"count":{"type":"integer"},"copies":{"type":"integer"},"gift":{"type":"boolean"},
      "wrap":{"type":"boolean"}},"required":["tracking"]}},
    {"name":"route","parameters":{"type":"object","properties":{"from":{"type":"string"},"to":{"type":"string"}},
      "required":["from","to"]}}])");
  Envelope e;
  e.type = EnvelopeType::kCall;
  e.function_calls = ordered_json::parse(R"([
    {"name":"ship","arguments":{"to":"JD93","tracking":"JD93","note":"","count":2,"copies":2,"gift":true,"wrap":true}},
    {"name":"route","arguments":{"from":"Oslo","to":"Oslo"}},
    {"name":"ship","arguments":{"tracking":"A1","to":"Ana","note":"Ana "}},
    {"name":"unknown","arguments":{"a":"x","b":"x"}}])");
  DropEchoedArguments(e, tools);
  // The optional "to" repeats the required "tracking" (even written first),
  // "note" is empty, "copies" repeats the earlier "count"; booleans stay.
  EXPECT_EQ(e.function_calls[0]["arguments"].dump(), R"({"tracking":"JD93","count":2,"gift":true,"wrap":true})");
  EXPECT_EQ(e.function_calls[1]["arguments"].dump(), R"({"from":"Oslo","to":"Oslo"})");  // both required
  EXPECT_EQ(e.function_calls[2]["arguments"].dump(), R"({"tracking":"A1","to":"Ana","note":"Ana "})");
  EXPECT_EQ(e.function_calls[3]["arguments"].dump(), R"({"a":"x","b":"x"})");  // no schema: left alone
  ASSERT_EQ(e.warnings.size(), 1u);
  EXPECT_NE(e.warnings[0].find("ship.to ship.note ship.copies"), std::string::npos) << e.warnings[0];

  Envelope clean;
  clean.function_calls = ordered_json::parse(R"([{"name":"route","arguments":{"from":"A","to":"B"}}])");
  DropEchoedArguments(clean, tools);
  EXPECT_TRUE(clean.warnings.empty());
}

TEST(Envelope, DropUnsaidOptionalNumbersKeepsWhatTheConversationSays) {
  const ordered_json tools = ordered_json::parse(R"([
    {"name":"ride","parameters":{"type":"object","properties":{"dropoff":{"type":"string"},"seats":{"type":"integer"},
      "tip":{"type":"number"},"stops":{"type":"integer"},"code":{"type":"string"}},"required":["dropoff","stops"]}}])");
  Envelope e;
  e.function_calls = ordered_json::parse(R"([
    {"name":"ride","arguments":{"dropoff":"the airport","seats":900,"tip":2.5,"stops":7,"code":"12"}},
    {"name":"ride","arguments":{"dropoff":"home","seats":2,"stops":0}},
    {"name":"other","arguments":{"n":900}}])");
  DropUnsaidOptionalNumbers(e, tools, {2.5, 2.0});
  // "seats" 900 is said nowhere: dropped; "tip" 2.5 and "seats" 2 are said;
  // "stops" is required and "code" a string: kept; no schema: left alone.
  EXPECT_EQ(e.function_calls[0]["arguments"].dump(), R"({"dropoff":"the airport","tip":2.5,"stops":7,"code":"12"})");
  EXPECT_EQ(e.function_calls[1]["arguments"].dump(), R"({"dropoff":"home","seats":2,"stops":0})");
  EXPECT_EQ(e.function_calls[2]["arguments"].dump(), R"({"n":900})");
  ASSERT_EQ(e.warnings.size(), 1u);
  EXPECT_NE(e.warnings[0].find("ride.seats"), std::string::npos) << e.warnings[0];
  Envelope said;
  said.function_calls = ordered_json::parse(R"([{"name":"ride","arguments":{"dropoff":"x","stops":1,"seats":3}}])");
  DropUnsaidOptionalNumbers(said, tools, {3.0});
  EXPECT_TRUE(said.warnings.empty());
}

TEST(Envelope, OrderFromToPairsFollowsTheRequestsWords) {
  const ordered_json tools = ordered_json::parse(R"([
    {"name":"rate","parameters":{"type":"object","properties":{"base":{"type":"string"},"quote":{"type":"string"}}}},
    {"name":"convert","parameters":{"type":"object","properties":{"amount":{"type":"number"},
      "from_currency":{"type":"string"},"to_currency":{"type":"string"}}}},
    {"name":"units","parameters":{"type":"object","properties":{"value":{"type":"number"},"sourceUnit":{"type":"string"},
      "targetUnit":{"type":"string"},"from_account":{"type":"string"}}}}])");
  auto run = [&](const char* calls, std::string_view request) {
    Envelope e;
    e.function_calls = ordered_json::parse(calls);
    OrderFromToPairs(e, tools, request);
    return e;
  };
  // "from GBP", "to JPY": the decoded pair was the other way round.
  Envelope e = run(R"([{"name":"rate","arguments":{"base":"JPY","quote":"GBP"}}])", "what's the exchange rate from GBP to JPY?");
  EXPECT_EQ(e.function_calls[0]["arguments"].dump(), R"({"base":"GBP","quote":"JPY"})");
  ASSERT_EQ(e.warnings.size(), 1u);
  EXPECT_NE(e.warnings[0].find("rate.base/quote"), std::string::npos) << e.warnings[0];
  // Codes are found where the request names them: "in yen" is the to side.
  e = run(R"([{"name":"convert","arguments":{"amount":250,"from_currency":"JPY","to_currency":"EUR"}}])", "how much is 250 euros in yen");
  EXPECT_EQ(e.function_calls[0]["arguments"].dump(), R"({"amount":250,"from_currency":"EUR","to_currency":"JPY"})");
  // Already in the words' order, or no word to go by ("in 5 miles": a number
  // comes between), or the same value twice: left alone.
  for (const auto& [calls, request] : std::vector<std::pair<const char*, const char*>>{
           {R"([{"name":"rate","arguments":{"base":"GBP","quote":"JPY"}}])", "rate from GBP to JPY"},
           {R"([{"name":"units","arguments":{"value":5,"sourceUnit":"km","targetUnit":"miles"}}])", "how many km in 5 miles"},
           {R"([{"name":"convert","arguments":{"from_currency":"USD","to_currency":"USD"}}])", "from USD to USD"},
           {R"([{"name":"units","arguments":{"from_account":"checking","targetUnit":"savings"}}])", "to checking from savings"}}) {
    e = run(calls, request);
    EXPECT_EQ(e.function_calls.dump(), ordered_json::parse(calls).dump()) << request;
    EXPECT_TRUE(e.warnings.empty()) << request;
  }
}

TEST(Envelope, OrderFromToPairsPartsTheSameListedValueOnBothSides) {
  const ordered_json tools = ordered_json::parse(R"([
    {"name":"transfer","parameters":{"type":"object","properties":{"amount":{"type":"number"},
      "from_account":{"type":"string","enum":["checking","savings","credit"]},
      "to_account":{"type":"string","enum":["checking","savings","credit"]}}}},
    {"name":"convert","parameters":{"type":"object","properties":{"from_currency":{"type":"string"},"to_currency":{"type":"string"}}}}])");
  auto run = [&](const char* calls, std::string_view request) {
    Envelope e;
    e.function_calls = ordered_json::parse(calls);
    OrderFromToPairs(e, tools, request);
    return e;
  };
  Envelope e = run(R"([{"name":"transfer","arguments":{"from_account":"savings","amount":200,"to_account":"savings"}}])",
                   "move 200 dollars from checking to savings");
  EXPECT_EQ(e.function_calls[0]["arguments"].dump(), R"({"from_account":"checking","amount":200,"to_account":"savings"})");
  ASSERT_EQ(e.warnings.size(), 1u);
  EXPECT_NE(e.warnings[0].find("transfer.from_account/to_account"), std::string::npos) << e.warnings[0];
  // Left alone: one side not said; two values said on a side; neither said
  // value is the decoded one; keys that list no values.
  for (const auto& [calls, request] : std::vector<std::pair<const char*, const char*>>{
           {R"([{"name":"transfer","arguments":{"from_account":"savings","to_account":"savings"}}])", "move 200 dollars to savings"},
           {R"([{"name":"transfer","arguments":{"from_account":"savings","to_account":"savings"}}])",
            "from checking or from credit to savings"},
           {R"([{"name":"transfer","arguments":{"from_account":"credit","to_account":"credit"}}])", "from checking to savings"},
           {R"([{"name":"convert","arguments":{"from_currency":"USD","to_currency":"USD"}}])", "from EUR to USD"}}) {
    e = run(calls, request);
    EXPECT_EQ(e.function_calls.dump(), ordered_json::parse(calls).dump()) << request;
    EXPECT_TRUE(e.warnings.empty()) << request;
  }
}

TEST(Envelope, PlannedCallsCountsTheReasoningsSegments) {
  EXPECT_EQ(PlannedCalls(""), 0u);                                                    // no plan
  EXPECT_EQ(PlannedCalls("I should call the timer tool"), 0u);                        // free-form reasoning
  EXPECT_EQ(PlannedCalls("set_timer: '12 minutes' -> minutes 12"), 1u);
  EXPECT_EQ(PlannedCalls("get_steps: no arguments needed | get_sleep: '22 May' -> date 2024-05-22"), 2u);
  EXPECT_EQ(PlannedCalls("a: 'x' -> k |b: 'y' -> k | c: no arguments needed"), 3u);  // the model drops the space
  EXPECT_EQ(PlannedCalls("send: 'rock | roll' -> text"), 1u);                       // a bar inside a quoted span
  EXPECT_EQ(PlannedCalls("send: 'it's | ok' -> text | log: 'a' -> b"), 0u);           // an apostrophe ends the span early: " ok' -> text " has no name
  EXPECT_EQ(PlannedCalls("a: x|y"), 1u);                                              // no space before the bar
  EXPECT_EQ(PlannedCalls("a: 'x' -> k | then the other one"), 0u);                    // a segment without a name
}

TEST(Envelope, UnplannedRequiredValueNamesTheValueTheRequestMustSay) {
  const auto tools = ordered_json::parse(R"([
    {"name":"set_reminder","parameters":{"type":"object","properties":{"text":{"type":"string"},"at":{"type":"string"}},"required":["text"]}},
    {"name":"rotate","parameters":{"type":"object","properties":{
      "side":{"type":"string","enum":["left","right"]},"degrees":{"type":"number"}},"required":["side","degrees"]}},
    {"name":"volume_step","parameters":{"type":"object","properties":{"change":{"type":"string","enum":["up","down"]}},"required":["change"]}},
    {"name":"subtitles","parameters":{"type":"object","properties":{"on":{"type":"boolean"}},"required":["on"]}},
    {"name":"screenshot","parameters":{"type":"object","properties":{"title":{"type":"string"}}}}])");
  EXPECT_EQ(UnplannedRequiredValue("set_reminder: no arguments needed", tools, false),
            "set_reminder needs text; the request does not give it");
  EXPECT_EQ(UnplannedRequiredValue("set_reminder: no arguments needed", tools, true), "");  // a fact may fill a string
  EXPECT_EQ(UnplannedRequiredValue(" rotate: no arguments needed ", tools, true),
            "rotate needs degrees; the request does not give it");                         // the enum is no reason, the number is
  EXPECT_EQ(UnplannedRequiredValue("volume_step: no arguments needed", tools, false), "");  // an enum the verb sets
  EXPECT_EQ(UnplannedRequiredValue("subtitles: no arguments needed", tools, false), "");    // a boolean
  EXPECT_EQ(UnplannedRequiredValue("screenshot: no arguments needed", tools, false), "");   // nothing required
  EXPECT_EQ(UnplannedRequiredValue("set_reminder: 'call mum' -> text", tools, false), "");  // a value planned
  EXPECT_EQ(UnplannedRequiredValue("a: 'x' -> k | set_reminder: no arguments needed", tools, false), "");  // two calls
  EXPECT_EQ(UnplannedRequiredValue("unknown_tool: no arguments needed", tools, false), "");
  EXPECT_EQ(UnplannedRequiredValue("", tools, false), "");
}

}  // namespace
}  // namespace needle
