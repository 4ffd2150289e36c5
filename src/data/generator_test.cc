// Quality gates of the generated data (issue 7, item 4): schema validity,
// evidence of every value, refusal share, split disjointness, determinism and
// the size of the name space — on 10,000 generated examples.
#include "data/generator.h"

#include <map>
#include <set>

#include <gtest/gtest.h>

#include <cctype>

#include "base/error.h"
#include "data/catalogue.h"
#include "data/evidence.h"
#include "data/names.h"
#include "data/schema_check.h"
#include "data/words.h"
#include "data/stats.h"
#include "data/testing/catalogue_fixture.h"

namespace needle::data {
namespace {

const Catalogue& Cat() { return testing::SourceCatalogue(); }

std::vector<Example> Generate(Split split, size_t n, uint64_t seed) { return testing::GenerateExamples(split, n, seed); }

const std::vector<Example>& Train() {
  static const std::vector<Example> v = Generate(Split::kTrain, 10000, 7);
  return v;
}

const std::vector<Example>& TestSet() {
  static const std::vector<Example> v = Generate(Split::kTest, 3000, 7);
  return v;
}

// Every turn's answers with the tools they are checked against.
template <class F>
void ForEachAnswer(const ojson& ex, F f) {
  f(ex["answers"], std::string("turn 0"));
  if (ex.contains("turns"))
    for (size_t i = 0; i < ex["turns"].size(); ++i) f(ex["turns"][i]["answers"], "turn " + std::to_string(i + 1));
}

TEST(Catalogue, CoversTheDomainsWithEnoughSchemas) {
  size_t schemas = 0;
  std::map<std::string, size_t> per_domain;
  for (const Capability& c : Cat().caps) {
    schemas += c.spellings.size();
    per_domain[c.domain] += c.spellings.size();
  }
  EXPECT_GE(schemas, 150u);
  for (const char* d : {"phone", "smart_home", "wearables", "robots", "information", "productivity", "extraction"})
    EXPECT_GE(per_domain[d], 8u) << d;
  // Several spellings per capability (different names, case styles, descriptions).
  size_t multi = 0;
  for (const Capability& c : Cat().caps) multi += c.spellings.size() >= 2;
  EXPECT_GE(multi, Cat().caps.size() * 9 / 10);
}

TEST(GeneratedData, EveryAnswerValidatesAgainstItsSchema) {
  size_t calls = 0, bad = 0;
  for (const Example& e : Train()) {
    ForEachAnswer(e.json, [&](const ojson& answers, const std::string& where) {
      calls += answers.size();
      const auto problems = ValidateCalls(answers, e.json["tools"]);
      if (!problems.empty() && bad++ < 5) ADD_FAILURE() << where << ": " << problems[0] << "\n" << e.json.dump();
    });
  }
  EXPECT_EQ(bad, 0u);
  EXPECT_GT(calls, 9000u);
}

TEST(GeneratedData, EveryValueIsEvidencedByTheInput) {
  size_t bad = 0;
  for (const std::vector<Example>* set : {&Train(), &TestSet()}) {
    for (const Example& e : *set) {
      const auto problems = CheckEvidence(e.json);
      if (!problems.empty() && bad++ < 5) ADD_FAILURE() << problems[0] << "\n" << e.json.dump();
    }
  }
  EXPECT_EQ(bad, 0u);
}

TEST(GeneratedData, RefusalShareIsBetween8And20Percent) {
  for (const std::vector<Example>* set : {&Train(), &TestSet()}) {
    size_t refusals = 0;
    for (const Example& e : *set) refusals += e.json["answers"].empty();
    const double share = static_cast<double>(refusals) / static_cast<double>(set->size());
    EXPECT_GE(share, 0.08);
    EXPECT_LE(share, 0.20);
  }
}

TEST(GeneratedData, ThousandsOfDistinctToolNamesAndSaneToolCounts) {
  std::set<std::string> names;
  for (const Example& e : Train()) {
    const ojson& tools = e.json["tools"];
    ASSERT_GE(tools.size(), 1u);
    ASSERT_LE(tools.size(), 8u);
    std::set<std::string> in_example;
    for (const auto& t : tools) {
      names.insert(t["name"].get<std::string>());
      EXPECT_TRUE(in_example.insert(t["name"].get<std::string>()).second) << "duplicate tool name\n" << e.json.dump();
    }
  }
  EXPECT_GE(names.size(), 2000u);
}

TEST(GeneratedData, MaxToolsCapsEveryKind) {
  Generator gen(Cat(), GeneratorOptions{11, Split::kTrain, 5});
  size_t five = 0;
  for (uint64_t i = 0; i < 1500; ++i) {
    const Example e = gen.Generate(i);
    ASSERT_LE(e.json["tools"].size(), 5u) << e.meta.kind << "\n" << e.json.dump();
    five += e.json["tools"].size() == 5;
    ASSERT_TRUE(ValidateCalls(e.json["answers"], e.json["tools"]).empty());
  }
  EXPECT_GT(five, 100u);
}

TEST(GeneratedData, HasEveryKindOfExample) {
  std::map<std::string, size_t> kinds;
  size_t relative_dates = 0, parallel = 0, multi_turn_followups = 0;
  for (const Example& e : Train()) {
    kinds[e.meta.kind]++;
    parallel += e.json["answers"].size() >= 2;
    if (e.json.contains("turns"))
      for (const auto& t : e.json["turns"]) multi_turn_followups += t.contains("query");
    if (e.json.contains("system") && e.json["system"].get<std::string>().find("date:") != std::string::npos) {
      const std::string q = e.json["query"].get<std::string>();
      for (const char* w : {"today", "tomorrow", " days", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"})
        if (q.find(w) != std::string::npos) {
          ++relative_dates;
          break;
        }
    }
  }
  for (const char* k : {"single", "parallel", "refuse_offtopic", "refuse_offdomain", "refuse_nearmiss", "refuse_enum",
                        "refuse_missing", "extraction", "session", "invented"})
    EXPECT_GE(kinds[k], 50u) << k;
  EXPECT_GE(parallel, 300u);
  EXPECT_GE(multi_turn_followups, 300u);
  EXPECT_GE(relative_dates, 100u);
}

// --long-sessions: every example a session whose later requests (6-14 of
// them) push the first turns out of the window; the answers stay valid and
// evidenced like every other example.
TEST(GeneratedData, LongSessionsHaveManyLaterRequests) {
  GeneratorOptions opt{5, Split::kTrain};
  opt.long_sessions = true;
  Generator gen(Cat(), opt);
  size_t sessions = 0;
  for (uint64_t i = 0; i < 200; ++i) {
    const Example e = gen.Generate(i);
    EXPECT_TRUE(CheckEvidence(e.json).empty()) << e.json.dump();
    ForEachAnswer(e.json, [&](const ojson& answers, const std::string& where) {
      const auto problems = ValidateCalls(answers, e.json["tools"]);
      EXPECT_TRUE(problems.empty()) << where << ": " << (problems.empty() ? "" : problems[0]);
    });
    if (e.meta.kind != "session") continue;  // (a session that cannot be built falls back to a single call)
    ++sessions;
    size_t queries = 0;
    for (const auto& t : e.json["turns"]) queries += t.contains("query");
    EXPECT_GE(queries, 6u) << e.json.dump();
    EXPECT_LE(queries, 16u) << e.json.dump();
  }
  EXPECT_GE(sessions, 190u);
}

TEST(GeneratedData, DeterministicForASeed) {
  const std::vector<Example> a = Generate(Split::kTrain, 500, 42), b = Generate(Split::kTrain, 500, 42),
                             c = Generate(Split::kTrain, 500, 43);
  size_t same_as_c = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].json.dump(), b[i].json.dump()) << i;
    same_as_c += a[i].json.dump() == c[i].json.dump();
  }
  EXPECT_LT(same_as_c, 5u);
  // Generating an example does not depend on the ones before it.
  Generator gen(Cat(), GeneratorOptions{42, Split::kTrain});
  EXPECT_EQ(gen.Generate(321).json.dump(), a[321].json.dump());
}

// --mix: the defaults named explicitly change nothing, byte for byte; a kind
// weighted up is drawn more often, one at 0 never; bad mixes name the problem.
TEST(GeneratedData, KindMixWeighsTheKinds) {
  auto generate = [](const std::map<std::string, double>& mix, size_t n) {
    GeneratorOptions opt{11, Split::kTrain};
    opt.kind_mix = mix;
    Generator gen(Cat(), opt);
    std::vector<Example> v;
    for (size_t i = 0; i < n; ++i) v.push_back(gen.Generate(i));
    return v;
  };
  std::map<std::string, double> defaults;
  for (const KindWeight& k : kKindMix) defaults[k.name] = k.weight;
  const std::vector<Example> plain = generate({}, 300), named = generate(defaults, 300);
  for (size_t i = 0; i < plain.size(); ++i) ASSERT_EQ(plain[i].json.dump(), named[i].json.dump()) << i;
  auto share = [](const std::vector<Example>& v, const std::string& kind) {
    size_t n = 0;
    for (const Example& e : v) n += e.meta.kind == kind;
    return double(n) / double(v.size());
  };
  const std::vector<Example> base = generate({}, 2000), more = generate({{"parallel", 28}, {"invented", 0}}, 2000);
  // parallel 7 of 103.7 by default; 28 of 117.7 here: about 6.8% -> 23.8%
  EXPECT_GT(share(more, "parallel"), 2.5 * share(base, "parallel"));
  EXPECT_GT(share(base, "invented") + share(base, "refuse_invented"), 0.03);
  EXPECT_EQ(share(more, "invented") + share(more, "refuse_invented"), 0.0);

  const std::map<std::string, double> mix = ParseKindMix("parallel=14,extraction=16.5");
  EXPECT_EQ(mix, (std::map<std::string, double>{{"parallel", 14}, {"extraction", 16.5}}));
  auto error_of = [](const std::string& text) {
    try {
      ParseKindMix(text);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error_of("paralel=3").find("unknown kind 'paralel'"), std::string::npos) << error_of("paralel=3");
  EXPECT_NE(error_of("parallel=-1").find("'parallel=-1'"), std::string::npos);
  EXPECT_NE(error_of("parallel=3x").find("'parallel=3x'"), std::string::npos);
  EXPECT_NE(error_of("parallel").find("KIND=WEIGHT"), std::string::npos);
  EXPECT_NE(error_of("parallel=1,parallel=2").find("given twice"), std::string::npos);
  std::map<std::string, double> none;
  for (const KindWeight& k : kKindMix) none[k.name] = 0;
  GeneratorOptions opt{11, Split::kTrain};
  opt.kind_mix = none;
  EXPECT_THROW(Generator(Cat(), opt), Error);
}

TEST(Splits, TestHoldsOutTemplatesSpellingsNamesAndCapabilities) {
  std::set<std::string> train_templates, test_templates, train_tools, train_caps;
  for (const Example& e : Train()) {
    train_templates.insert(e.meta.templates.begin(), e.meta.templates.end());
    for (const auto& t : e.json["tools"]) train_tools.insert(t["name"].get<std::string>());
    for (size_t i = 0; i < e.meta.tools.size(); ++i) {
      // Synthesised names come only from the train part of the name space.
      if (e.meta.origins[i] == "synthetic" || e.meta.origins[i] == "invented") {
        EXPECT_EQ(NameBucket(e.meta.tools[i]), Split::kTrain) << e.meta.tools[i];
      }
    }
    train_caps.insert(e.meta.caps.begin(), e.meta.caps.end());
  }
  for (const Example& e : TestSet()) test_templates.insert(e.meta.templates.begin(), e.meta.templates.end());
  // No template used in test is ever used in train.
  for (const std::string& t : test_templates) EXPECT_FALSE(train_templates.count(t)) << t;
  EXPECT_GE(test_templates.size(), 150u);
  // Held-out catalogue spellings and whole capabilities never reach train.
  size_t held_out = 0;
  for (const Capability& c : Cat().caps) {
    for (size_t i = 0; i < c.spellings.size(); ++i) {
      if (c.spelling_split[i] != Split::kTest && !c.test_only) continue;
      ++held_out;
      EXPECT_FALSE(train_tools.count(c.spellings[i].name())) << c.spellings[i].name();
    }
    if (c.test_only) {
      EXPECT_FALSE(train_caps.count(c.id)) << c.id;
    }
  }
  EXPECT_GE(held_out, 60u);
  // And the test split does use them.
  std::set<std::string> test_tools;
  for (const Example& e : TestSet())
    for (const auto& t : e.json["tools"]) test_tools.insert(t["name"].get<std::string>());
  size_t used = 0;
  for (const Capability& c : Cat().caps)
    for (size_t i = 0; i < c.spellings.size(); ++i) used += c.spelling_split[i] == Split::kTest && test_tools.count(c.spellings[i].name());
  EXPECT_GE(used, 40u);
}

TEST(UserTools, ExamplesForAUsersOwnSchemas) {
  const ojson tools = ojson::parse(R"([
    {"name": "setPorchLight", "description": "Turns the porch light on or off.",
     "parameters": {"type": "object", "properties": {"on": {"type": "boolean"}}, "required": ["on"]}},
    {"name": "order_pizza", "description": "Orders a pizza for delivery.",
     "parameters": {"type": "object", "properties": {
        "size": {"type": "string", "enum": ["small", "medium", "large"]},
        "toppings": {"type": "array", "items": {"type": "string"}},
        "address": {"type": "string", "description": "Delivery address"},
        "count": {"type": "integer", "minimum": 1, "maximum": 5}}, "required": ["size", "address"]}},
    {"name": "feed_cat", "description": "Dispense cat food.", "parameters": {"type": "object", "properties": {
        "grams": {"type": "integer", "minimum": 5, "maximum": 80}, "at": {"type": "string", "format": "time"}}}}
  ])");
  Generator gen(Cat(), GeneratorOptions{3, Split::kTrain});
  gen.SetUserTools(tools);
  std::set<std::string> declared;
  for (const auto& t : tools) declared.insert(t["name"].get<std::string>());
  size_t refusals = 0;
  std::set<std::string> called;
  for (uint64_t i = 0; i < 600; ++i) {
    const Example e = gen.Generate(i);
    for (const auto& t : e.json["tools"]) EXPECT_TRUE(declared.count(t["name"].get<std::string>()));
    const auto problems = ValidateCalls(e.json["answers"], e.json["tools"]);
    ASSERT_TRUE(problems.empty()) << problems[0] << "\n" << e.json.dump();
    const auto evidence = CheckEvidence(e.json);
    ASSERT_TRUE(evidence.empty()) << evidence[0] << "\n" << e.json.dump();
    refusals += e.json["answers"].empty();
    for (const auto& c : e.json["answers"]) called.insert(c["name"].get<std::string>());
  }
  EXPECT_EQ(called, declared);
  EXPECT_GE(refusals, 30u);
  EXPECT_LE(refusals, 120u);
  EXPECT_THROW(gen.SetUserTools(ojson::parse(R"([{"description": "no name"}])")), Error);
}

// Schemas written with $defs/$ref and anyOf (Pydantic, the OpenAI SDK) give
// examples as the engine reads them: the referenced model's fields, typed.
TEST(UserTools, ReferencedModelsAreComposedFirst) {
  const ojson tools = ojson::parse(R"([{"name": "book_table", "description": "Book a restaurant table.",
     "parameters": {"type": "object", "$defs": {"Size": {"type": "integer", "minimum": 1, "maximum": 12}},
      "properties": {"party_size": {"$ref": "#/$defs/Size", "description": "Number of guests"},
                     "restaurant": {"type": "string", "description": "Restaurant name"},
                     "time": {"anyOf": [{"type": "string", "format": "time"}, {"type": "null"}]}},
      "required": ["party_size", "restaurant"]}}])");
  Generator gen(Cat(), GeneratorOptions{5, Split::kTrain});
  gen.SetUserTools(tools);
  size_t calls = 0;
  for (uint64_t i = 0; i < 200; ++i) {
    const Example e = gen.Generate(i);
    EXPECT_EQ(e.json["tools"].dump().find("$ref"), std::string::npos) << e.json["tools"].dump();
    const auto problems = ValidateCalls(e.json["answers"], e.json["tools"]);
    ASSERT_TRUE(problems.empty()) << problems[0] << "\n" << e.json.dump();
    for (const auto& c : e.json["answers"]) {
      ++calls;
      ASSERT_TRUE(c["arguments"]["party_size"].is_number_integer()) << c.dump();
      EXPECT_GE(c["arguments"]["party_size"].get<int>(), 1) << c.dump();
      EXPECT_LE(c["arguments"]["party_size"].get<int>(), 12) << c.dump();
    }
  }
  EXPECT_GE(calls, 100u);
}

// Requests for the user's tools are phrased from the descriptions, with the
// values a person would give where a person says them (issue J, item 1e).
TEST(UserTools, RequestsReadLikePeopleAndValuesFollowTheDescriptions) {
  const ojson tools = ojson::parse(R"([
    {"name": "book_table", "description": "Reserve a table at a restaurant.", "parameters": {"type": "object", "properties": {
        "restaurant": {"type": "string"}, "party_size": {"type": "integer", "description": "Number of guests"},
        "time": {"type": "string", "description": "Time in HH:MM"}}, "required": ["restaurant", "party_size", "time"]}},
    {"name": "convert_currency", "description": "Convert an amount from one currency to another.", "parameters": {"type": "object",
        "properties": {"from_currency": {"type": "string", "description": "ISO code of the source currency"},
        "to_currency": {"type": "string", "description": "ISO code of the target currency"}, "amount": {"type": "number"}},
        "required": ["from_currency", "to_currency", "amount"]}}
  ])");
  Generator gen(Cat(), GeneratorOptions{4, Split::kTrain});
  gen.SetUserTools(tools);
  size_t booked = 0, described = 0;
  for (uint64_t i = 0; i < 400; ++i) {
    const ojson e = gen.Generate(i).json;
    ASSERT_TRUE(CheckEvidence(e).empty()) << e.dump();
    for (const auto& c : e["answers"]) {
      const ojson& a = c["arguments"];
      if (c["name"] == "book_table") {
        ++booked;
        const std::string t = a["time"].get<std::string>();
        EXPECT_TRUE(t.size() == 5 && std::isdigit(static_cast<unsigned char>(t[0])) && t[2] == ':') << t;  // "Time in HH:MM"
        EXPECT_GE(a["party_size"].get<int>(), 1);
        EXPECT_LE(a["party_size"].get<int>(), 12) << "a count of guests";
        // The description's words with the restaurant in place of "a restaurant".
        const std::string q = Lower(e["query"].get<std::string>());
        described += q.find("table at " + Lower(a["restaurant"].get<std::string>())) != std::string::npos;
      } else {
        for (const char* k : {"from_currency", "to_currency"}) {
          const std::string code = a[k].get<std::string>();
          EXPECT_EQ(code.size(), 3u) << k << " " << code << ": an ISO code";
        }
      }
    }
  }
  EXPECT_GE(booked, 100u);
  EXPECT_GE(described, booked / 3) << "requests phrased from the description";
}

// Moments and ranges a person would give (issue J, item 1e): date-times said
// as "tomorrow at 3pm" and written YYYY-MM-DDTHH:MM:00 (required ones too),
// ISO 8601 "start times" taken as date-times, times by their description,
// a Celsius setting in a room's range, two airports that differ, and "1
// passenger" rather than "1 passengers".
TEST(UserTools, MomentsRangesAndDistinctValuesFollowTheDescriptions) {
  const ojson tools = ojson::parse(R"([
    {"name": "create_event", "description": "Create a calendar event", "parameters": {"type": "object", "properties": {
        "title": {"type": "string"}, "start": {"type": "string", "format": "date-time"},
        "end": {"type": "string", "description": "End time, ISO 8601"}}, "required": ["title", "start"]}},
    {"name": "set_alarm", "description": "Set an alarm", "parameters": {"type": "object", "properties": {
        "wake": {"type": "string", "description": "Wake-up time"}}, "required": ["wake"]}},
    {"name": "set_thermostat", "description": "Set a room's thermostat", "parameters": {"type": "object", "properties": {
        "temperature": {"type": "number", "description": "Target temperature in degrees Celsius"}}, "required": ["temperature"]}},
    {"name": "search_flights", "description": "Search for flights on a date", "parameters": {"type": "object", "properties": {
        "origin": {"type": "string", "description": "IATA airport code"}, "destination": {"type": "string", "description": "IATA airport code"},
        "date": {"type": "string", "description": "YYYY-MM-DD"}, "passengers": {"type": "integer", "description": "Number of passengers"}},
        "required": ["origin", "destination", "date", "passengers"]}}
  ])");
  Generator gen(Cat(), GeneratorOptions{5, Split::kTrain});
  gen.SetUserTools(tools);
  auto instant = [](const std::string& v) {
    static const std::string shape = "dddd-dd-ddTdd:dd:00";
    if (v.size() != shape.size()) return false;
    for (size_t i = 0; i < v.size(); ++i)
      if (shape[i] == 'd' ? !std::isdigit(static_cast<unsigned char>(v[i])) : v[i] != shape[i]) return false;
    return true;
  };
  std::map<std::string, size_t> calls;
  size_t ends = 0;
  for (uint64_t i = 0; i < 1200; ++i) {
    const ojson e = gen.Generate(i).json;
    ASSERT_TRUE(ValidateCalls(e["answers"], e["tools"]).empty()) << e.dump();
    ASSERT_TRUE(CheckEvidence(e).empty()) << CheckEvidence(e)[0] << "\n" << e.dump();
    const std::string q = Lower(e["query"].get<std::string>());
    EXPECT_EQ((" " + q).find(" 1 passengers"), std::string::npos) << q;
    EXPECT_EQ(q.find("one passengers"), std::string::npos) << q;
    EXPECT_EQ(q.find(" on tomorrow"), std::string::npos) << q;
    for (const auto& c : e["answers"]) {
      const ojson& a = c["arguments"];
      const std::string name = c["name"].get<std::string>();
      ++calls[name];
      if (name == "create_event") {
        EXPECT_TRUE(instant(a["start"].get<std::string>())) << a.dump();
        if (a.contains("end")) {
          ++ends;
          EXPECT_TRUE(instant(a["end"].get<std::string>())) << a.dump();
        }
      } else if (name == "set_alarm") {
        const std::string t = a["wake"].get<std::string>();
        EXPECT_TRUE(t.size() == 5 && t[2] == ':') << t;
      } else if (name == "set_thermostat") {
        EXPECT_GE(a["temperature"].get<double>(), 10.0);
        EXPECT_LE(a["temperature"].get<double>(), 30.0);
      } else {
        EXPECT_NE(Lower(a["origin"].get<std::string>()), Lower(a["destination"].get<std::string>())) << q;
      }
    }
  }
  for (const char* t : {"create_event", "set_alarm", "set_thermostat", "search_flights"}) EXPECT_GE(calls[t], 100u) << t;
  EXPECT_GE(ends, 20u) << "optional date-times are filled too";
}

// Developer-style schemas: an identifier takes the shape of the description's
// example ("e.g. AAPL" -> four or so capitals), a long description with a
// formula still gives its first clause as the request's words, a year is a
// year but "per year" is a count.
TEST(UserTools, IdentifiersRangesAndWordsFollowDeveloperDescriptions) {
  const ojson tools = ojson::parse(R"([
    {"name": "get_stock_price", "description": "Retrieves the latest closing price of a stock.", "parameters": {"type": "object",
        "properties": {"ticker": {"type": "string", "description": "Ticker symbol, e.g. AAPL"},
        "release_year": {"type": "integer"}, "compounds_per_year": {"type": "integer"}}, "required": ["ticker", "release_year", "compounds_per_year"]}},
    {"name": "math.hypot", "description": "Calculate the Euclidean norm, sqrt(sum(squares)), the length of the vector from the origin.",
        "parameters": {"type": "object", "properties": {"x": {"type": "integer"}, "y": {"type": "integer"}}, "required": ["x", "y"]}}
  ])");
  Generator gen(Cat(), GeneratorOptions{6, Split::kTrain});
  gen.SetUserTools(tools);
  size_t tickers = 0, shaped = 0, hypot = 0, norm = 0;
  for (uint64_t i = 0; i < 600; ++i) {
    const ojson e = gen.Generate(i).json;
    ASSERT_TRUE(CheckEvidence(e).empty()) << e.dump();
    for (const auto& c : e["answers"]) {
      const ojson& a = c["arguments"];
      if (c["name"] == "get_stock_price") {
        ++tickers;
        const std::string t = a["ticker"].get<std::string>();
        bool letters = t.size() >= 3 && t.size() <= 5;
        for (char ch : t) letters = letters && std::isalpha(static_cast<unsigned char>(ch));
        shaped += letters;
        EXPECT_GE(a["release_year"].get<int>(), 1950);
        EXPECT_LE(a["compounds_per_year"].get<int>(), 100) << "a count, not a year";
      } else {
        ++hypot;
        norm += Lower(e["query"].get<std::string>()).find("euclidean norm") != std::string::npos;
      }
    }
  }
  ASSERT_GE(tickers, 100u);
  EXPECT_EQ(shaped, tickers) << "tickers shaped like AAPL";
  ASSERT_GE(hypot, 100u);
  EXPECT_GE(norm, hypot / 3) << "requests in the description's words";
}

TEST(Stats, ReportNamesTheNumbers) {
  DataStats st;
  for (size_t i = 0; i < 200; ++i) st.Add(Train()[i]);
  const std::string r = st.Report();
  for (const char* k : {"refusal share", "tools per example", "calls per example", "approx tokens", "distinct tool names", "per domain"})
    EXPECT_NE(r.find(k), std::string::npos) << k;
}

}  // namespace
}  // namespace needle::data
