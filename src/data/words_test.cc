#include "data/words.h"

#include <gtest/gtest.h>

#include "base/error.h"
#include "data/pattern.h"
#include "said/numbers.h"

namespace needle::data {
namespace {

// The agent's reader of spelled numbers (said/numbers.h) reads every number
// the generator spells.
std::vector<long long> ParseNumberWords(std::string_view text) {
  std::vector<long long> out;
  for (const said::SpelledNumberSpan& n : said::FindSpelledNumbers(text)) out.push_back(static_cast<long long>(n.value));
  return out;
}

TEST(NumberWords, RoundTrip) {
  EXPECT_EQ(NumberWords(0), "zero");
  EXPECT_EQ(NumberWords(25), "twenty-five");
  EXPECT_EQ(NumberWords(25, false), "twenty five");
  EXPECT_EQ(NumberWords(105), "one hundred five");
  EXPECT_EQ(NumberWords(105, true, true), "one hundred and five");
  EXPECT_EQ(NumberWords(12300), "twelve thousand three hundred");
  for (long long n : {0LL, 1LL, 9LL, 13LL, 20LL, 21LL, 99LL, 100LL, 101LL, 999LL, 1000LL, 1001LL, 45678LL, 999999LL, 2000000LL}) {
    for (bool hy : {true, false}) {
      for (bool br : {true, false}) {
        const auto parsed = ParseNumberWords("set it to " + NumberWords(n, hy, br) + " please");
        ASSERT_EQ(parsed.size(), 1u) << NumberWords(n, hy, br);
        EXPECT_EQ(parsed[0], n) << NumberWords(n, hy, br);
      }
    }
  }
  // Separate numbers stay separate; "a" alone is not a number.
  EXPECT_EQ(ParseNumberWords("one two"), (std::vector<long long>{1, 2}));
  EXPECT_EQ(ParseNumberWords("a cup of tea"), std::vector<long long>{});
  EXPECT_EQ(ParseNumberWords("a hundred"), std::vector<long long>{100});
}

TEST(Identifiers, SplitAndJoin) {
  EXPECT_EQ(SplitIdentifier("setAlarmTime"), (std::vector<std::string>{"set", "alarm", "time"}));
  EXPECT_EQ(SplitIdentifier("hue.lights_set-state"), (std::vector<std::string>{"hue", "lights", "set", "state"}));
  EXPECT_EQ(SplitIdentifier("HTTPServer2"), (std::vector<std::string>{"http", "server2"}));
  const std::vector<std::string> w = {"set", "alarm"};
  EXPECT_EQ(JoinIdentifier(w, CaseStyle::kSnake), "set_alarm");
  EXPECT_EQ(JoinIdentifier(w, CaseStyle::kCamel), "setAlarm");
  EXPECT_EQ(JoinIdentifier(w, CaseStyle::kPascal), "SetAlarm");
  EXPECT_EQ(JoinIdentifier(w, CaseStyle::kKebab), "set-alarm");
  EXPECT_EQ(JoinIdentifier(w, CaseStyle::kScreaming), "SET_ALARM");
}

TEST(Calendar, Arithmetic) {
  EXPECT_EQ(Weekday(Date{2025, 3, 14}), 4);  // a Friday
  EXPECT_EQ(IsoDate(AddDays(Date{2024, 2, 28}, 1)), "2024-02-29");
  EXPECT_EQ(IsoDate(AddDays(Date{2025, 12, 31}, 1)), "2026-01-01");
  EXPECT_TRUE(ParseIsoDate("2024-02-29").has_value());
  EXPECT_FALSE(ParseIsoDate("2025-02-29").has_value());
  for (long long z = -1000; z < 100000; z += 37) EXPECT_EQ(DaysFromCivil(CivilFromDays(z)), z);
}

TEST(Pattern, AlternativesOptionalsAssignments) {
  const Pattern p = Pattern::Parse("(turn|switch) on{state=on} the {room} lights[ at {level}]");
  EXPECT_EQ(p.mandatory_slots(), (std::set<std::string>{"room", "state"}));
  EXPECT_EQ(p.all_slots(), (std::set<std::string>{"level", "room", "state"}));
  Rng rng(1);
  for (int i = 0; i < 50; ++i) {
    const Rendered with = p.Render(rng, {"level", "room"});
    EXPECT_TRUE(with.slots.count("level"));
    EXPECT_EQ(with.assigned.at("state").value, "on");
    const std::string cue = with.assigned.at("state").cue;
    EXPECT_TRUE(cue == "turn on" || cue == "switch on") << cue;
    const Rendered without = p.Render(rng, {"room"});
    EXPECT_FALSE(without.slots.count("level"));
  }
  EXPECT_THROW(Pattern::Parse("(a|b"), Error);
  EXPECT_THROW(Pattern::Parse("a]"), Error);
  EXPECT_THROW(Pattern::Parse("{}"), Error);
  EXPECT_EQ(Pattern::Parse("a \\| b").Render(rng, {}).segments[0].text, "a | b");
}

}  // namespace
}  // namespace needle::data
