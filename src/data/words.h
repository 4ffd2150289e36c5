// Word-level helpers for the data generator and its checks: English number
// words both ways, identifier case styles, calendar arithmetic, typos.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "data/rng.h"  // Rng

namespace needle::data {

// ---- number words ------------------------------------------------------------
// 0 <= n < 10^9: "twenty-five", "one hundred and five" (and = British style).
std::string NumberWords(long long n, bool hyphen = true, bool british_and = false);
// "1st", "2nd", "3rd", "14th".
std::string Ordinal(int n);

// ---- identifiers ---------------------------------------------------------------
enum class CaseStyle { kSnake, kCamel, kPascal, kKebab, kDot, kFlat, kScreaming };
// Words of an identifier: "setAlarmTime" / "set_alarm-time" / "hue.lights" -> set alarm time.
std::vector<std::string> SplitIdentifier(std::string_view id);
std::string JoinIdentifier(const std::vector<std::string>& words, CaseStyle style);

// ---- plain text ----------------------------------------------------------------
std::string Lower(std::string_view s);
std::string Upper(std::string_view s);
std::string CapitalizeFirst(std::string_view s);
bool StartsWith(std::string_view s, std::string_view p);
bool EndsWith(std::string_view s, std::string_view p);
std::string Trim(std::string_view s);
std::vector<std::string> SplitWords(std::string_view s);  // on spaces
// Collapses runs of spaces, removes spaces before , . ? ! and trims.
std::string TidySpaces(std::string_view s);
// One realistic typo in a word of >= 4 letters (swap, drop, double, near key).
std::string Typo(std::string_view word, Rng& rng);

// ---- calendar (proleptic Gregorian) ---------------------------------------------
struct Date {
  int y = 2025, m = 1, d = 1;
  bool operator==(const Date&) const = default;
};
long long DaysFromCivil(Date date);
Date CivilFromDays(long long days);
Date AddDays(Date date, long long n);
int Weekday(Date date);  // 0 = Monday .. 6 = Sunday
int DaysInMonth(int y, int m);
std::string IsoDate(Date date);  // YYYY-MM-DD
std::optional<Date> ParseIsoDate(std::string_view s);
extern const char* const kMonthNames[12];
extern const char* const kMonthAbbrev[12];
extern const char* const kWeekdayNames[7];

}  // namespace needle::data
