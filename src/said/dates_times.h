// Dates and times said in words, written the way schemas declare them
// (`format: date` YYYY-MM-DD, `format: time` HH:MM). The session adds them to
// the copy source beside the conversation, as it adds SpelledNumbers, so a
// date argument can copy "2025-09-06" for "September 6, 2025" and a time
// argument "18:30" for "half past 6 pm": a small model rewrites dates and
// clock times digit by digit and gets them wrong (37 of 77 such values on
// the generated val and test splits, before this).
//
// Read (English, case-insensitive):
//   dates  "September 6, 2025", "Sep 6 2025", "june 22nd, 2026", "6 September
//          2025", "the 6th of May 2025"; without a year ("Aug 16") the first
//          such day on or after `today`; "today", "tonight", "tomorrow",
//          "yesterday", "the day after tomorrow", a weekday ("Friday", "on
//          Friday", "this Friday": the next one, a week ahead on a Friday;
//          "last Friday": the one before) and "in 3 days" / "in three days" /
//          "in a week" / "in 2 weeks", counted from `today`; ISO dates as
//          written. The data generator means these forms this way, so the
//          model and its evidence gate (data/evidence.h) read them as one.
//   times  "7:45" -> 07:45, "1:15pm" / "1:15 p.m." -> 13:15, "9 pm" -> 21:00,
//          "half past 6 pm" -> 18:30, "quarter to seven in the evening" ->
//          18:45, "noon", "midnight", "8 o'clock"; an hour said without am/pm
//          in words ("half past 9") gives both readings (09:30 and 21:30).
// Not read: numeric dates other than ISO ("03/04/2025" depends on the
// locale), "next week" and other spans, ranges.
#pragma once

#include <string>
#include <string_view>

namespace needle::said {

struct CivilDate {
  int year = 0, month = 0, day = 0;  // 0 = unknown
  bool valid() const;
};

// "2025-06-10" (or "2025-06-10 (Tuesday)", anything after the tenth byte is
// ignored) -> the date; an invalid CivilDate when it does not start with one.
CivilDate ParseIsoDate(std::string_view text);
// The date `days` after `d` (negative: before).
CivilDate AddDays(CivilDate d, int days);

// The dates and times `text` says, written as above and separated by
// spaces, in the order said; "" when it says none. `today` may be invalid:
// then relative days and dates without a year are not read.
// An hour said as a bare number after "at" ("at 8" -> 08:00, "at 14" ->
// 14:00) is read as written; with `bare_hours` any number 0-23 is (the
// evidence gate's reading: whatever clock time a request may mean).
std::string SpokenDatesAndTimes(std::string_view text, CivilDate today, bool bare_hours = false);

// The format a string argument's description asks for when its schema
// declares none: "date" where it spells the layout YYYY-MM-DD, "time" where
// it spells HH:MM (any case; "Time in 24h HH:MM format"), "" otherwise (both
// layouts, a date-time in another spelling, or neither). People often write
// the layout in the description instead of `format`; the session then
// writes the dates and times said as that layout, as for a declared format.
std::string_view FormatNamedBy(std::string_view description);

}  // namespace needle::said
