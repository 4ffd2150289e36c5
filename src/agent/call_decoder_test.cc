// The call's values (call_decoder.cc and the rule chain) through whole
// sessions: each rule on makes every call right where a random model, or the
// default model, gets some wrong without it.
#include "agent/session.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include "agent/testing/session_testing.h"
#include "grammar/copy_source.h"  // CopySource::IsWordByte
#include "grammar/validate.h"
#include "io/tokenizer_blob.h"  // kThinkEndId, kToolCallId

namespace needle {
namespace {

using nlohmann::ordered_json;
using testing::DefaultModelSession;
using testing::ExpectWellFormed;
using testing::Small;
using testing::CheckRule;
using testing::ExpectFirstCallArgument;
using testing::Lower;
using testing::RuleCounts;

// With an infinite copy bias every plain string argument is a piece of the
// conversation's text (this random model left alone writes empty strings);
// the grammar still holds. Tool results count as text to copy from.
TEST(Session, InfiniteCopyBiasCopiesFromTheConversation) {
  const char* tools = R"([{"name":"note","parameters":{"type":"object","properties":{
      "text":{"type":"string"},"tag":{"type":"string","enum":["home","work"]}},"required":["text"]}}])";
  const char* queries[] = {"please remind me to water the basil plants", "Call Ana about the Berlin trip",
                           "note: buy 2 oat milks", "the meeting moved to room B-12"};
  auto values = [&](float bias, std::vector<std::pair<std::string, std::string>>* out) {
    for (uint64_t seed : {3, 5, 8}) {
      SessionOptions o = Small();
      o.copy_bias = bias;
      Session s(testing::AgentModel(seed), o);
      s.SetToolsJson(tools);
      for (const char* q : queries) {
        const Envelope e = s.Query(q);
        ASSERT_TRUE(e.success()) << e.Dump();
        for (const auto& c : e.function_calls) out->push_back({c["arguments"]["text"].get<std::string>(), q});
        if (e.type == EnvelopeType::kCall) {
          const Envelope r = s.ToolResult(R"({"saved":"Note N-7731 stored"})");
          ASSERT_TRUE(r.success()) << r.Dump();
          for (const auto& c : r.function_calls)
            out->push_back({c["arguments"]["text"].get<std::string>(), std::string(q) + " {\"saved\":\"Note N-7731 stored\"}"});
        }
        s.Reset();
      }
    }
  };
  std::vector<std::pair<std::string, std::string>> copied, free;
  values(INFINITY, &copied);
  values(0.0f, &free);
  // (An empty value is the grammar's completion when a call runs out of budget.)
  // Copies are whole spans: they start and end where words do in the source.
  auto word = [](char c) { return grammar::CopySource::IsWordByte(uint8_t(c)); };
  auto whole_span = [&](const std::string& text, const std::string& value) {
    const std::string t = Lower(text), v = Lower(value);
    for (size_t at = t.find(v); at != std::string::npos; at = t.find(v, at + 1)) {
      const size_t end = at + v.size();
      if ((at == 0 || !word(t[at - 1]) || !word(v[0])) && (end == t.size() || !word(t[end]))) return true;
    }
    return false;
  };
  size_t nonempty = 0;
  for (const auto& [value, source] : copied) {
    if (value.empty()) continue;
    ++nonempty;
    EXPECT_NE(Lower(source).find(Lower(value)), std::string::npos) << "'" << value << "' is not copied from: " << source;
    EXPECT_TRUE(whole_span(source, value)) << "'" << value << "' is not a whole span of: " << source;
  }
  EXPECT_GE(nonempty, 8u);  // (repeated calls are dropped: fewer values than calls)
  size_t free_nonempty = 0;
  for (const auto& [value, source] : free) free_nonempty += !value.empty();
  EXPECT_LT(free_nonempty, nonempty) << "left alone, this random model closes its strings at once";
  SessionOptions bad;
  bad.copy_bias = -1.0f;
  EXPECT_THROW(Session(testing::AgentModel(3), bad), Error);
}

// Numbers spelled in words are in the copy source as digits: with an infinite
// copy bias an integer argument is the request's number, however it is written.
TEST(Session, SpelledNumbersAreCopiedAsDigits) {
  const char* tools = R"([{"name":"volume","parameters":{"type":"object","properties":{
      "level":{"type":"integer"}},"required":["level"]}}])";
  const size_t calls = ExpectFirstCallArgument<int>(
      tools, [](SessionOptions& o) { o.copy_bias = INFINITY; },
      {{"set the volume to fifty seven", 57}, {"volume twenty-two please", 22}, {"turn it up to one hundred and five", 105},
       {"volume 64 percent", 64}},
      "level");
  EXPECT_GE(calls, 4u);
}

// Dates and times said in words are written as the format asks whenever the
// model calls (the default bias is a rule); "tomorrow" counts from the
// system facts' date. Without the rule a random model writes other ones.
TEST(Session, DateAndTimeArgumentsTakeTheOnesTheRequestSays) {
  const char* tools = R"([{"name":"book","parameters":{"type":"object","properties":{
      "day":{"type":"string","format":"date"},"at":{"type":"string","format":"time"},
      "when":{"type":"string","format":"date-time"}},"required":["day","at","when"]}}])";
  const char* want[][2] = {{"2025-09-06", "18:30"}, {"2026-02-13", "19:45"}};
  const RuleCounts n = CheckRule(
      tools, [](SessionOptions& o, bool on) { o.date_time_bias = on ? INFINITY : 0.0f; },
      {"book it for September 6, 2025 at half past 6 pm", "a table tomorrow at 7:45pm"},
      [&](size_t i, const nlohmann::ordered_json& args) {
        return args["day"] == want[i][0] && args["at"] == want[i][1] &&
               args["when"] == std::string(want[i][0]) + "T" + want[i][1];
      },
      nlohmann::ordered_json{{"date", "2026-02-12"}});
  EXPECT_GE(n.calls, 2u);
  EXPECT_GE(n.wrong_without, 1u);
}

// A description that spells the layout ("HH:MM", "YYYY-MM-DD") counts as
// the format the schema does not declare: people write it there.
TEST(Session, ADescriptionSpellingTheLayoutActsAsTheFormat) {
  const char* tools = R"([{"name":"book","parameters":{"type":"object","properties":{
      "day":{"type":"string","description":"Date, YYYY-MM-DD"},"at":{"type":"string","description":"Time in 24h HH:MM format"}},
      "required":["day","at"]}}])";
  const char* want[][2] = {{"2025-09-06", "18:30"}, {"2026-02-13", "19:45"}};
  const RuleCounts n = CheckRule(
      tools, [](SessionOptions& o, bool on) { o.date_time_bias = on ? INFINITY : 0.0f; },
      {"book it for September 6, 2025 at half past 6 pm", "a table tomorrow at 7:45pm"},
      [&](size_t i, const nlohmann::ordered_json& args) { return args["day"] == want[i][0] && args["at"] == want[i][1]; },
      nlohmann::ordered_json{{"date", "2026-02-12"}});
  EXPECT_GE(n.calls, 2u);
  EXPECT_GE(n.wrong_without, 1u);
}

// Arguments asking for a currency or language code take the codes of the
// ones the request names ("euros" -> EUR); a description that allows a name
// leaves the words as said. Without the rule a random model writes others.
TEST(Session, CodeArgumentsTakeTheCodesOfWhatTheRequestNames) {
  const char* tools = R"json([{"name":"convert","parameters":{"type":"object","properties":{
      "amount":{"type":"number"},"from_currency":{"type":"string","description":"ISO 4217 code of the source currency"},
      "to_currency":{"type":"string","description":"ISO 4217 code of the target currency"}},"required":["amount","from_currency","to_currency"]}},
      {"name":"translate","parameters":{"type":"object","properties":{"text":{"type":"string"},
      "target_language":{"type":"string","description":"Target language code (ISO 639-1)"}},"required":["text","target_language"]}}])json";
  // (A request naming no currency leaves the currency arguments free, and so for languages.)
  const std::vector<std::vector<std::string>> currencies = {{"EUR", "JPY"}, {"GBP", "USD"}, {}, {}};
  const std::vector<std::vector<std::string>> languages = {{}, {}, {"es"}, {"de"}};
  const RuleCounts n = CheckRule(
      tools, [](SessionOptions& o, bool on) { o.date_time_bias = on ? INFINITY : 0.0f; },
      {"how much is 250 euros in yen", "40 pounds to dollars", "say good morning in Spanish", "translate thank you into German"},
      [&](size_t i, const nlohmann::ordered_json& args) {
        for (const char* key : {"from_currency", "to_currency", "target_language"}) {
          const auto& a = key[0] == 't' && key[1] == 'a' ? languages[i] : currencies[i];
          if (!args.contains(key) || a.empty()) continue;
          if (std::find(a.begin(), a.end(), args[key].get<std::string>()) == a.end()) return false;
        }
        return true;
      });
  EXPECT_GE(n.calls, 4u);
  EXPECT_GE(n.wrong_without, 1u);
}

// An optional number argument the conversation does not say is left out of
// the envelope (a random model opens such keys and invents values); one it
// says, in digits, in words or as a quantity in the argument's unit, stays.
TEST(Session, OptionalNumbersTheConversationDoesNotSayAreDropped) {
  const char* tools = R"([{"name":"ride","parameters":{"type":"object","properties":{
      "dropoff":{"type":"string"},"seats":{"type":"integer"},"wait_seconds":{"type":"integer"}},"required":["dropoff"]}}])";
  const std::vector<std::vector<double>> said = {{}, {2}, {3, 5, 300}};
  const RuleCounts n = CheckRule(
      tools, [](SessionOptions& o, bool on) { o.drop_unsaid_numbers = on; },
      {"get me a ride to the airport", "a ride home for two", "3 seats to the station, wait 5 minutes"},
      [&](size_t i, const nlohmann::ordered_json& args) {
        for (const char* key : {"seats", "wait_seconds"}) {
          if (args.contains(key) && std::find(said[i].begin(), said[i].end(), args[key].get<double>()) == said[i].end()) return false;
        }
        return true;
      });
  EXPECT_GE(n.calls, 3u);
  EXPECT_GE(n.wrong_without, 1u);
}

// A required string argument does not start with another required one's
// one-word value ("USD" as both currencies); without the rule a random model
// writes such repeats.
TEST(Session, ARequiredArgumentDoesNotRepeatAnotherOnesWord) {
  const char* tools = R"([{"name":"convert","parameters":{"type":"object","properties":{
      "from":{"type":"string"},"to":{"type":"string"}},"required":["from","to"]}}])";
  auto lower = [](std::string t) {
    for (char& c : t) c = char(std::tolower(static_cast<unsigned char>(c)));
    return t;
  };
  const RuleCounts n = CheckRule(
      tools, [](SessionOptions& o, bool on) { o.distinct_argument_values = on; },
      {"USD to GBP", "EUR into JPY", "from CAD to CHF", "yen to euros", "SEK or NOK", "AUD in INR"},
      [&](size_t, const nlohmann::ordered_json& args) {
        if (!args.contains("from") || !args.contains("to")) return true;
        const std::string from = lower(args["from"]), to = lower(args["to"]);
        const bool one_word = !from.empty() && from.find_first_of(" ,.'") == std::string::npos;
        const size_t start = to.find_first_not_of(' ');
        return !one_word || start == std::string::npos || to.compare(start, from.size(), from) != 0 ||
               (to.size() > start + from.size() && std::isalnum(static_cast<unsigned char>(to[start + from.size()])));
      });
  EXPECT_GE(n.calls, 6u);
  EXPECT_GE(n.wrong_without, 1u);
}

// An optional date argument the model would leave out is written when the
// request says a date the call does not hold yet.
TEST(Session, AnOptionalDateArgumentTakesTheDateTheRequestSays) {
  const char* tools = R"([{"name":"steps","parameters":{"type":"object","properties":{
      "day":{"type":"string","format":"date"},"verbose":{"type":"boolean"}}}}])";
  const char* want[] = {"2025-09-06", "2024-03-02"};
  const RuleCounts n = CheckRule(
      tools, [](SessionOptions& o, bool on) { o.date_time_bias = on ? INFINITY : 0.0f; },
      {"my step count for September 6, 2025", "steps on the 2nd of March 2024 please"},
      [&](size_t i, const nlohmann::ordered_json& args) { return args.value("day", "") == want[i]; });
  EXPECT_GE(n.calls, 2u);
  EXPECT_GE(n.wrong_without, 1u);
}

// A number argument that declares a unit takes the quantity the request says
// in that unit.
TEST(Session, UnitArgumentsTakeTheQuantityTheRequestSays) {
  const char* tools = R"([{"name":"timer","parameters":{"type":"object","properties":{
      "duration_seconds":{"type":"integer"},"distance":{"type":"number","description":"How far, in meters"}},
      "required":["duration_seconds","distance"]}}])";
  const int64_t seconds[] = {300, 1800};
  const double metres[] = {0.9, 2.0};
  const RuleCounts n = CheckRule(
      tools, [](SessionOptions& o, bool on) { o.quantity_bias = on ? INFINITY : 0.0f; },
      {"a timer for 5 minutes and drive 90 cm", "half an hour, then 2 metres"},
      [&](size_t i, const nlohmann::ordered_json& args) {
        return args["duration_seconds"] == seconds[i] && args["distance"] == metres[i];
      });
  EXPECT_GE(n.calls, 2u);
  EXPECT_GE(n.wrong_without, 1u);
}

// Arguments that split one dimension between them (an alarm's hours and
// minutes) are left to the model: the rule changes nothing there, while it
// does change a lone minutes argument.
TEST(Session, UnitArgumentsThatSplitADimensionAreLeftAlone) {
  const char* split = R"([{"name":"alarm","parameters":{"type":"object","properties":{
      "hours":{"type":"integer"},"minutes":{"type":"integer"}},"required":["hours","minutes"]}}])";
  const char* lone = R"([{"name":"alarm","parameters":{"type":"object","properties":{
      "minutes":{"type":"integer"}},"required":["minutes"]}}])";
  size_t lone_changed = 0;
  for (uint64_t seed : {3, 5, 8}) {
    for (const char* tools : {split, lone}) {
      std::string calls[2];
      for (bool rule : {true, false}) {
        SessionOptions o = Small();
        o.quantity_bias = rule ? INFINITY : 0.0f;
        Session s(testing::AgentModel(seed), o);
        s.SetToolsJson(tools);
        const Envelope e = s.Query("wake me in 2 hours and 5 minutes");
        ASSERT_TRUE(e.success()) << e.Dump();
        calls[rule] = e.function_calls.dump();
      }
      if (tools == split) EXPECT_EQ(calls[0], calls[1]) << "seed " << seed;
      else lone_changed += calls[0] != calls[1];
    }
  }
  EXPECT_GE(lone_changed, 1u);
}

// An optional unit argument the model would leave out is written when the
// request says a quantity the call does not hold yet.
TEST(Session, AnOptionalUnitArgumentTakesTheQuantityTheRequestSays) {
  const char* tools = R"([{"name":"record","parameters":{"type":"object","properties":{
      "timeGoalSecs":{"type":"integer"},"verbose":{"type":"boolean"}}}}])";
  const int64_t want[] = {2700, 4140};
  const RuleCounts n = CheckRule(
      tools, [](SessionOptions& o, bool on) { o.quantity_bias = on ? INFINITY : 0.0f; },
      {"record for forty-five minutes", "a swim of 1 hour and 9 minutes"},
      [&](size_t i, const nlohmann::ordered_json& args) { return args.value("timeGoalSecs", int64_t(-1)) == want[i]; });
  EXPECT_GE(n.calls, 2u);
  EXPECT_GE(n.wrong_without, 1u);
}

// After a lookup, an identifier argument takes the id of the record the
// request names, not another record's (the default model, which tends to
// copy the first record's).
TEST(Session, AnIdentifierAfterALookupIsTheNamedRecords) {
  if (Model::Embedded().empty()) GTEST_SKIP() << "built without the default model";
  const char* tools = R"([{"name":"searchAddressBook","description":"Look up contacts by name.",
      "parameters":{"type":"object","properties":{"query":{"type":"string","description":"Name to search for"}},"required":["query"]}},
      {"name":"message_to_contact","description":"Send a text message to a contact by id.",
      "parameters":{"type":"object","properties":{"recipient_id":{"type":"string","description":"Contact id from the contacts search"},
      "body":{"type":"string","description":"Message text"}},"required":["recipient_id","body"]}}])";
  const char* result = R"({"matches":[{"id":"c_86215","name":"Ava Ricci"},{"id":"c_856","name":"Katerina Kowalski"}]})";
  std::vector<std::string> ids;
  for (float bias : {0.0f, SessionOptions{}.record_id_bias}) {
    SessionOptions o;
    o.record_id_bias = bias;
    const auto s = DefaultModelSession(o, tools);
    const Envelope q = s->Query("send katerina kowalski a message: can you feed the dog");
    ASSERT_EQ(q.type, EnvelopeType::kCall) << q.Dump();
    ASSERT_EQ(q.function_calls[0]["name"], "searchAddressBook") << q.Dump();
    const Envelope r = s->ToolResult(result);
    ASSERT_EQ(r.type, EnvelopeType::kCall) << r.Dump();
    ASSERT_EQ(r.function_calls[0]["name"], "message_to_contact") << r.Dump();
    ids.push_back(r.function_calls[0]["arguments"].value("recipient_id", ""));
  }
  EXPECT_NE(ids[0], "c_856");  // (without the rule: the first record's, or another copy)
  EXPECT_EQ(ids[1], "c_856");
}

// A copied value keeps the case the request writes it in (the copy source
// folds case; the default model wrote "GoOGL" for "GOOGL").
// A call that falls into a loop ends there, completed by the grammar, with a
// warning; it does not run on to max_new_tokens. (The default model loops in
// free strings on these citations when copying is only a preference:
// "Theory of p. p. p. ...", "2017. p. 7. 7. 7. ...")
TEST(Session, ACallThatLoopsEndsAtTheLoop) {
  if (Model::Embedded().empty()) GTEST_SKIP() << "built without the default model";
  const char* tools = R"([{"name":"reference_cite","description":"Record a citation.","parameters":{"type":"object",
      "properties":{"author_list":{"type":"string"},"title":{"type":"string"},"container":{"type":"string"},
      "year":{"type":"integer","description":"Year","minimum":1965,"maximum":2026},"pages":{"type":"string"},
      "doi":{"type":"string"}},"required":["author_list","title","year"]}}])";
  SessionOptions o;
  o.copy_bias = 8.0f;
  o.reasoning_beams = 1;  // (greedy: the beam search's plans lead to calls that loop less)
  size_t looped_calls = 0;
  for (const char* citation : {"Beatrice Nelson. \"A Theory of p-adic Forms.\" 1973. pp. e4579.",
                               "Omar Haddad, Beatrice Nelson. \"A Theory of p-adic Forms.\" 2017. p. p. 7.",
                               "Beatrice Nelson, I. W. Sharma and Zoey Lefebvre. \"Deep Residual Learning for Image Recognition.\" 1974. pp. e4579."}) {
    const Envelope e = DefaultModelSession(o, tools)->Query(citation);
    ExpectWellFormed(e);
    ASSERT_TRUE(e.success()) << e.Dump();
    ASSERT_FALSE(grammar::ValidateCall(e.function_calls.dump(), tools)) << e.Dump();
    EXPECT_EQ(e.Dump().find("max_new_tokens"), std::string::npos) << e.Dump();
    bool looped = false;
    for (const std::string& w : e.warnings) looped |= w.find("repeating loop") != std::string::npos;
    looped_calls += looped && e.type == EnvelopeType::kCall;
  }
  EXPECT_GE(looped_calls, 1u) << "the default model loops on none of these citations any more: find one it loops on";
}

// Two requests in one: the plan's second call is not the first planned again
// (same tool, same spans; or a tool without arguments twice). Without the
// rule the default model plans "get_steps: no arguments needed | get_steps:
// no arguments needed" here, and the repeat is dropped: one call for two.
TEST(Session, ASecondPlannedCallIsNotTheFirstAgain) {
  if (Model::Embedded().empty()) GTEST_SKIP() << "built without the default model";
  const char* tools = R"json([{"name":"get_heart_rate","parameters":{"type":"object","properties":{"period":{"type":"string",
      "enum":["now","today","week"]}}}},{"name":"changeDial","parameters":{"type":"object","properties":{"dialName":{"type":"string"}},
      "required":["dialName"]}},{"name":"show_sleep_report","description":"Can show sleep data.","parameters":{"type":"object",
      "properties":{"night":{"type":"string","description":"Which night (default last night)"}}}},
      {"name":"get_steps","parameters":{"type":"object","properties":{"date":{"type":"string","format":"date"}}}}])json";
  std::vector<std::string> plans;
  for (bool distinct : {false, true}) {
    SessionOptions o;
    o.distinct_plan_spans = distinct;
    const Envelope e = DefaultModelSession(o, tools)->Query("Ok read my pulse and then show my steps asap");
    ExpectWellFormed(e);
    plans.push_back(e.reasoning);
  }
  const std::string twice = "get_steps: no arguments needed | get_steps: no arguments needed";
  EXPECT_NE(plans[0].find(twice), std::string::npos) << plans[0];  // (without the rule)
  EXPECT_EQ(plans[1].find(twice), std::string::npos) << plans[1];
}

// With an infinite enum_word_bias the enum value sharing the request's words
// is a rule: a random model names it whenever it calls; without such a word
// nothing is forced.
TEST(Session, EnumWordBiasPicksTheValueTheRequestNames) {
  const char* tools = R"([{"name":"dishwasher","parameters":{"type":"object","properties":{
      "program":{"type":"string","enum":["eco","quick","heavy","delicates"]}},"required":["program"]}}])";
  const size_t calls = ExpectFirstCallArgument<const char*>(
      tools, [](SessionOptions& o) { o.enum_word_bias = INFINITY; },
      {{"run a delicates cycle", "delicates"}, {"do a heavy duty wash", "heavy"}, {"quick wash please", "quick"}}, "program");
  EXPECT_GE(calls, 3u);
  Session plain(testing::AgentModel(3), Small());
  plain.SetToolsJson(tools);
  EXPECT_TRUE(plain.Query("start the dishwasher").success());  // no value named: nothing forced
  SessionOptions bad = Small();
  bad.enum_word_bias = -1.0f;
  EXPECT_THROW(Session(testing::AgentModel(3), bad), Error);
}

}  // namespace
}  // namespace needle
