#include "said/quantities.h"

#include <gtest/gtest.h>

namespace needle::said {
namespace {

// The quantities `text` says, written in `unit` (integers where whole), space-separated.
std::string In(std::string_view text, Unit unit, bool integer = false) {
  std::string out;
  for (const Quantity& q : SpokenQuantities(text)) {
    const std::string v = QuantityIn(q, unit, integer);
    out += (out.empty() ? "" : " ") + (v.empty() ? "-" : v);
  }
  return out;
}

constexpr Unit kSeconds{Dimension::kDuration, 1}, kMinutes{Dimension::kDuration, 60}, kHours{Dimension::kDuration, 3600};
constexpr Unit kMetres{Dimension::kLength, 1}, kCentimetres{Dimension::kLength, 0.01};

TEST(Quantities, DurationsInTheArgumentsUnit) {
  EXPECT_EQ(In("Set a timer for 5 minutes", kSeconds), "300");
  EXPECT_EQ(In("Set a timer for 5 minutes", kMinutes), "5");
  EXPECT_EQ(In("record for forty-five minutes thx", kSeconds), "2700");
  EXPECT_EQ(In("Turn off do not disturb for 10 hours", kMinutes), "600");
  EXPECT_EQ(In("run the sprinklers for half an hour", kSeconds), "1800");
  EXPECT_EQ(In("an hour and a half of yoga", kMinutes), "90");
  EXPECT_EQ(In("one and a half hours", kMinutes), "90");
  EXPECT_EQ(In("2.5 hours", kMinutes), "150");
  EXPECT_EQ(In("a 10-minute break", kSeconds), "600");
  EXPECT_EQ(In("wait 90s", kSeconds), "90");
  EXPECT_EQ(In("snooze 1,500 seconds", kSeconds), "1500");
  EXPECT_EQ(In("give me a minute", kSeconds), "60");
}

TEST(Quantities, ADurationSaidInPartsIsOne) {
  EXPECT_EQ(In("for 1 hour and 5 minutes", kMinutes), "65");
  EXPECT_EQ(In("purify it for 3 hours and 30 minutes", kSeconds), "12600");
  EXPECT_EQ(In("2h 30min", kMinutes), "150");
  // Not from the larger unit down: two quantities (two requests).
  EXPECT_EQ(In("Sprinklers on for 55 mins then sprinklers on for ten minutes", kMinutes), "55 10");
  EXPECT_EQ(In("5 minutes and 2 hours", kMinutes), "5 120");
}

TEST(Quantities, Lengths) {
  EXPECT_EQ(In("Advance 90 cm!", kMetres), "0.9");
  EXPECT_EQ(In("go backward 65 centimeters", kMetres), "0.65");
  EXPECT_EQ(In("roll right twelve meters", kCentimetres, true), "1200");
  EXPECT_EQ(In("drive 5km", kMetres), "5000");
  EXPECT_EQ(In("move 3.5 m", kCentimetres, true), "350");
}

TEST(Quantities, WhatIsNotAQuantity) {
  EXPECT_EQ(In("set the alarm for 7:45 pm", kMinutes), "");
  EXPECT_EQ(In("volume to 27%", kSeconds), "");
  EXPECT_EQ(In("drive at 60 km/h", kMetres), "");
  EXPECT_EQ(In("2 metres per second", kMetres), "");
  EXPECT_EQ(In("a m s h", kMetres), "");  // one-letter units only after digits
  EXPECT_EQ(In("Log 8 cups of water", kSeconds), "");
}

TEST(Quantities, ConversionsThatDoNotFitAreLeftOut) {
  EXPECT_EQ(In("for 90 seconds", kMinutes, true), "-");   // 1.5 is not an integer
  EXPECT_EQ(In("for 90 seconds", kMinutes), "1.5");
  EXPECT_EQ(In("for 5 minutes", kHours), "-");            // 0.08333...
  EXPECT_EQ(In("for 5 minutes", kMetres), "-");           // another dimension
}

TEST(Quantities, DeclaredUnits) {
  auto unit = [](std::string_view name, std::string_view description = "") {
    const Unit u = DeclaredUnit(name, description);
    return u.dimension == Dimension::kNone ? 0.0 : u.base;
  };
  EXPECT_EQ(unit("duration_seconds"), 1);
  EXPECT_EQ(unit("timeGoalSecs"), 1);
  EXPECT_EQ(unit("untilMinutes"), 60);
  EXPECT_EQ(unit("interval_min"), 60);
  EXPECT_EQ(unit("timeoutMs"), 0.001);
  EXPECT_EQ(unit("timeout_s"), 1);
  EXPECT_EQ(unit("distance_m"), 1);
  EXPECT_EQ(unit("hours"), 3600);
  EXPECT_EQ(unit("duration", "Length of the timer in minutes."), 60);
  EXPECT_EQ(unit("goal", "Workout goal (min)"), 60);
  EXPECT_EQ(unit("distance", "How far to drive, in meters"), 1);
  EXPECT_EQ(unit("meters"), 1);
  EXPECT_EQ(unit("minTemp", "Minimum temperature"), 0);
  EXPECT_EQ(unit("limit", "Min value of the range"), 0);
  EXPECT_EQ(unit("speed", "Speed in km/h"), 0);
  EXPECT_EQ(unit("speed", "metres per second"), 0);
  EXPECT_EQ(unit("hour", "Hour of the alarm"), 0);
  EXPECT_EQ(unit("day", "Day of the month"), 0);
  EXPECT_EQ(unit("s"), 0);
  EXPECT_EQ(unit("level", "Brightness in percent"), 0);
}

}  // namespace
}  // namespace needle::said
