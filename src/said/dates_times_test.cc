#include "said/dates_times.h"

#include <gtest/gtest.h>

namespace needle::said {
namespace {

const CivilDate kToday = ParseIsoDate("2026-02-12 (Thursday)");

TEST(DatesTimes, ParsesIsoDatesAndCountsDays) {
  EXPECT_TRUE(kToday.valid());
  EXPECT_EQ(kToday.year, 2026);
  EXPECT_EQ(kToday.month, 2);
  EXPECT_EQ(kToday.day, 12);
  for (const char* bad : {"", "2026-02-30", "2026-13-01", "26-02-12", "2026-02-123", "2026/02/12", "date: 2026-02-12"})
    EXPECT_FALSE(ParseIsoDate(bad).valid()) << bad;
  const CivilDate leap = AddDays(ParseIsoDate("2024-02-28"), 1);
  EXPECT_EQ(leap.month * 100 + leap.day, 229);
  const CivilDate next_year = AddDays(ParseIsoDate("2025-12-31"), 1);
  EXPECT_EQ(next_year.year * 10000 + next_year.month * 100 + next_year.day, 20260101);
  const CivilDate back = AddDays(ParseIsoDate("2025-03-01"), -1);
  EXPECT_EQ(back.month * 100 + back.day, 228);
}

TEST(DatesTimes, ReadsDatesSaidInWords) {
  const std::pair<const char*, const char*> cases[] = {
      {"quarterly review on September 6, 2025 at 7:45.", "2025-09-06 07:45"},
      {"When: May 24 2024 1:15pm", "2024-05-24 13:15"},
      {"how was my sleep on june 22nd, 2026, then advance 24 cm.", "2026-06-22"},
      {"a meeting for 22 September 2026 at 4:30 pm!", "2026-09-22 16:30"},
      {"set up a call on 21 april 2024 at 05:45!", "2024-04-21 05:45"},
      {"the 6th of May 2027", "2027-05-06"},
      {"How active was I on Aug 16?", "2026-08-16"},  // the next Aug 16
      {"dentist on January 5", "2027-01-05"},           // already past this year: next year's
      {"the 12th of February", "2026-02-12"},           // today itself
      {"sep 11 2027 at 22:00", "2027-09-11 22:00"},
      {"Weather forecast Cologne tomorrow", "2026-02-13"},
      {"the day after tomorrow", "2026-02-14"},
      {"what did I do yesterday", "2026-02-11"},
      {"February 30 2026, 2026-02-31 or 2026-02-12", "2026-02-12"},  // no such days; ISO dates as written
      {"May I have 5 apples", ""},
      {"in March", ""},
  };
  for (const auto& [text, want] : cases) EXPECT_EQ(SpokenDatesAndTimes(text, kToday), want) << text;
  // Weekdays and day counts from today (a Thursday).
  const std::pair<const char*, const char*> relative[] = {
      {"book it for Friday", "2026-02-13"},
      {"on saturday at 9 pm", "2026-02-14 21:00"},
      {"this Monday", "2026-02-16"},
      {"next Thursday", "2026-02-19"},  // today's weekday: a week ahead
      {"last Tuesday", "2026-02-10"},
      {"in 3 days", "2026-02-15"},
      {"in three days at 7 pm", "2026-02-15 19:00"},
      {"in a week", "2026-02-19"},
      {"in 2 weeks", "2026-02-26"},
      {"in 3 hours", ""},
      {"in the days ahead", ""},
  };
  for (const auto& [text, want] : relative) EXPECT_EQ(SpokenDatesAndTimes(text, kToday), want) << text;
  // Without today: no relative days, no dates without a year.
  EXPECT_EQ(SpokenDatesAndTimes("Friday, in 3 days", CivilDate{}), "");
  EXPECT_EQ(SpokenDatesAndTimes("tomorrow, Aug 16 or Aug 17 2025", CivilDate{}), "2025-08-17");
}

TEST(DatesTimes, ReadsClockTimes) {
  const std::pair<const char*, const char*> cases[] = {
      {"Remind me to call Dr. Haddad at half past 6 pm", "18:30"},
      {"start time 2:45 p.m.?", "14:45"},
      {"at 8:35PM", "20:35"},
      {"12:30am and 12:05 pm", "00:30 12:05"},
      {"No alarm at half past 9 pm please!", "21:30"},
      {"prep for the review at half past three in the afternoon", "15:30"},
      {"a quarter to seven in the evening", "18:45"},
      {"quarter past 8", "08:15 20:15"},  // no am/pm: both readings
      {"quarter to 1 pm", "12:45"},
      {"wake me at 7am, lunch at noon, lights off at midnight", "07:00 12:00 00:00"},
      {"meet at six pm", "18:00"},
      {"dinner at 8 o'clock", "08:00 20:00"},
      {"start at 20:45", "20:45"},
      {"set 25:99 and 7 apples and 3 cats", ""},
  };
  for (const auto& [text, want] : cases) EXPECT_EQ(SpokenDatesAndTimes(text, kToday), want) << text;
}

TEST(DatesTimes, ReadsTheFormatADescriptionSpells) {
  EXPECT_EQ(FormatNamedBy("Time in 24h HH:MM format"), "time");
  EXPECT_EQ(FormatNamedBy("alarm time (hh:mm)"), "time");
  EXPECT_EQ(FormatNamedBy("Date, YYYY-MM-DD; today if omitted"), "date");
  EXPECT_EQ(FormatNamedBy("due yyyy-mm-dd"), "date");
  // Both layouts (a date-time spelled with a space), neither, or a near miss: none.
  EXPECT_EQ(FormatNamedBy("Start, YYYY-MM-DD HH:MM"), "");
  EXPECT_EQ(FormatNamedBy("When the alarm rings"), "");
  EXPECT_EQ(FormatNamedBy("HH-MM"), "");
  EXPECT_EQ(FormatNamedBy(""), "");
}

}  // namespace
}  // namespace needle::said
