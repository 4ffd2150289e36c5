#include "said/dates_times.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <vector>

namespace needle::said {

namespace {

bool Leap(int y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

int DaysInMonth(int y, int m) {
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && Leap(y) ? 29 : kDays[m - 1];
}

// Days since 1970-01-01 and back (the proleptic Gregorian calendar).
long DaysFromCivil(int y, int m, int d) {
  y -= m <= 2;
  const long era = (y >= 0 ? y : y - 399) / 400;
  const long yoe = y - era * 400;
  const long doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

CivilDate CivilFromDays(long z) {
  z += 719468;
  const long era = (z >= 0 ? z : z - 146096) / 146097;
  const long doe = z - era * 146097;
  const long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const long mp = (5 * doy + 2) / 153;
  const int d = int(doy - (153 * mp + 2) / 5 + 1);
  const int m = int(mp < 10 ? mp + 3 : mp - 9);
  return {int(yoe + era * 400 + (m <= 2)), m, d};
}

struct Token {
  enum Kind { kWord, kNumber, kClock, kIsoDate } kind;
  std::string word;  // kWord: lower case; kIsoDate: the date as written
  int value = 0;     // kNumber
  int hour = 0, minute = 0;  // kClock ("7:45")
};

bool Letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool Digit(char c) { return c >= '0' && c <= '9'; }

std::vector<Token> Tokens(std::string_view s) {
  std::vector<Token> out;
  size_t i = 0;
  while (i < s.size()) {
    if (Digit(s[i])) {
      size_t j = i;
      int v = 0;
      while (j < s.size() && Digit(s[j])) {
        if (v < 100000) v = v * 10 + (s[j] - '0');
        ++j;
      }
      // "2025-11-12": an ISO date, as written.
      if (j - i == 4 && j + 5 < s.size() && s[j] == '-' && Digit(s[j + 1]) && Digit(s[j + 2]) && s[j + 3] == '-' &&
          Digit(s[j + 4]) && Digit(s[j + 5]) && (j + 6 >= s.size() || !Digit(s[j + 6]))) {
        Token t{Token::kIsoDate, std::string(s.substr(i, 10))};
        out.push_back(t);
        i = j + 6;
        continue;
      }
      // "7:45": one or two digits, a colon, exactly two digits.
      if (j - i <= 2 && j + 2 < s.size() && s[j] == ':' && Digit(s[j + 1]) && Digit(s[j + 2]) &&
          (j + 3 >= s.size() || !Digit(s[j + 3]))) {
        Token t{Token::kClock, {}, 0, v, (s[j + 1] - '0') * 10 + (s[j + 2] - '0')};
        out.push_back(t);
        i = j + 3;
        continue;
      }
      out.push_back({Token::kNumber, {}, j - i <= 5 ? v : -1});
      i = j;
      continue;
    }
    if (Letter(s[i])) {
      size_t j = i;
      std::string w;
      // An apostrophe inside a word stays in it ("o'clock").
      while (j < s.size() && (Letter(s[j]) || (s[j] == '\'' && j + 1 < s.size() && Letter(s[j + 1]) && j > i))) {
        const char c = s[j];
        w.push_back(c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c);
        ++j;
      }
      out.push_back({Token::kWord, std::move(w)});
      i = j;
      continue;
    }
    ++i;  // punctuation and spaces separate tokens
  }
  return out;
}

int MonthOf(const std::string& w) {
  static constexpr const char* kMonths[] = {"january", "february", "march",     "april",   "may",      "june",
                                            "july",    "august",   "september", "october", "november", "december"};
  for (int m = 0; m < 12; ++m) {
    const std::string full = kMonths[m];
    if (w == full) return m + 1;
    if (w.size() == 3 && full.compare(0, 3, w) == 0) return m + 1;  // "sep", "jun"
  }
  return w == "sept" ? 9 : 0;
}

int HourWord(const std::string& w) {
  static constexpr const char* kHours[] = {"one", "two", "three", "four", "five", "six",
                                           "seven", "eight", "nine", "ten", "eleven", "twelve"};
  for (int h = 0; h < 12; ++h)
    if (w == kHours[h]) return h + 1;
  return 0;
}

bool IsOrdinalSuffix(const std::string& w) { return w == "st" || w == "nd" || w == "rd" || w == "th"; }

// Monday 0 ... Sunday 6; -1 for another word. Full names only ("sat", "sun"
// and "wed" are words of their own).
int WeekdayOf(const std::string& w) {
  static constexpr const char* kDays[] = {"monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"};
  for (int d = 0; d < 7; ++d)
    if (w == kDays[d]) return d;
  return -1;
}

int WeekdayOf(CivilDate d) { return int(((DaysFromCivil(d.year, d.month, d.day) % 7) + 10) % 7); }  // 1970-01-01 was a Thursday

class Reader {
 public:
  Reader(std::vector<Token> t, CivilDate today, bool bare_hours) : t_(std::move(t)), today_(today), bare_hours_(bare_hours) {}

  std::string Read() {
    for (size_t i = 0; i < t_.size(); ++i) {
      if (i < consumed_ || TryDate(i) || TryRelativeDay(i)) continue;
      if (t_[i].kind == Token::kIsoDate) {
        if (const CivilDate d = ParseIsoDate(t_[i].word); d.valid()) AddDate(d.year, d.month, d.day);
        continue;
      }
      TryTime(i);
    }
    std::string out;
    for (const std::string& v : values_) out.append(out.empty() ? "" : " ").append(v);
    return out;
  }

 private:
  bool Word(size_t i, std::string_view w) const { return i < t_.size() && t_[i].kind == Token::kWord && t_[i].word == w; }
  int Number(size_t i) const { return i < t_.size() && t_[i].kind == Token::kNumber ? t_[i].value : -1; }

  void Add(std::string v) {
    if (std::find(values_.begin(), values_.end(), v) == values_.end()) values_.push_back(std::move(v));
  }
  void AddDate(int y, int m, int d) {
    if (y < 1900 || y > 2199 || m < 1 || m > 12 || d < 1 || d > DaysInMonth(y, m)) return;
    char buf[40];  // (the ranges are checked above; the size is what the compiler can prove)
    std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", y, m, d);
    Add(buf);
  }
  void AddTime(int h, int m) {
    if (h < 0 || h > 23 || m < 0 || m > 59) return;
    char buf[32];
    std::snprintf(buf, sizeof buf, "%02d:%02d", h, m);
    Add(buf);
  }

  // A day number at i (1-31), its ordinal suffix skipped; returns the next index or 0.
  size_t Day(size_t i, int* day) const {
    const int d = Number(i);
    if (d < 1 || d > 31) return 0;
    *day = d;
    return i + 1 + (i + 1 < t_.size() && t_[i + 1].kind == Token::kWord && IsOrdinalSuffix(t_[i + 1].word));
  }
  int Year(size_t i) const {
    const int y = Number(i);
    return y >= 1900 && y <= 2199 ? y : 0;
  }
  // A date with the year at i, or said without one: the first such day on
  // or after today ("March 14" in December is next March), as the generator
  // means it; nothing without today.
  void AddDateYearAt(size_t i, int m, int d) {
    if (const int y = Year(i)) return AddDate(y, m, d);
    if (!today_.valid()) return;
    for (int y : {today_.year, today_.year + 1}) {
      if (m < 1 || m > 12 || d < 1 || d > DaysInMonth(y, m)) continue;
      if (DaysFromCivil(y, m, d) >= DaysFromCivil(today_.year, today_.month, today_.day)) return AddDate(y, m, d);
    }
  }

  bool TryDate(size_t i) {
    if (t_[i].kind == Token::kWord && MonthOf(t_[i].word)) {
      // "September 6, 2025", "june 22nd", "May the 6th"
      const int m = MonthOf(t_[i].word);
      size_t j = i + 1 + Word(i + 1, "the");
      int d = 0;
      if (const size_t k = Day(j, &d)) {
        AddDateYearAt(k, m, d);
        return true;
      }
      return false;
    }
    // "6 September 2025", "the 6th of May"
    int d = 0;
    if (const size_t k = Day(i, &d)) {
      const size_t j = k + Word(k, "of");
      if (j < t_.size() && t_[j].kind == Token::kWord && MonthOf(t_[j].word)) {
        AddDateYearAt(j + 1, MonthOf(t_[j].word), d);
        return true;
      }
    }
    return false;
  }

  bool TryRelativeDay(size_t i) {
    if (t_[i].kind != Token::kWord || !today_.valid()) return false;
    const std::string& w = t_[i].word;
    int offset;
    if (w == "today" || w == "tonight") {
      offset = 0;
    } else if (w == "tomorrow") {
      offset = (i >= 2 && Word(i - 1, "after") && Word(i - 2, "day")) ? 2 : 1;
    } else if (w == "yesterday") {
      offset = (i >= 2 && Word(i - 1, "before") && Word(i - 2, "day")) ? -2 : -1;
    } else if (const int wd = WeekdayOf(w); wd >= 0) {
      // "Friday", "on Friday", "this Friday", "next Friday": the next one (a
      // week ahead on a Friday); "last Friday": the one before.
      const int ahead = (wd - WeekdayOf(today_) + 7) % 7;
      offset = i >= 1 && Word(i - 1, "last") ? ahead - 7 : ahead == 0 ? 7 : ahead;
    } else if (w == "in" && i + 2 < t_.size()) {
      // "in 3 days", "in three days", "in a week", "in 2 weeks"
      int n = Number(i + 1);
      if (n < 0 && t_[i + 1].kind == Token::kWord) n = Word(i + 1, "a") || Word(i + 1, "an") ? 1 : HourWord(t_[i + 1].word);
      const bool days = Word(i + 2, "day") || Word(i + 2, "days"), weeks = Word(i + 2, "week") || Word(i + 2, "weeks");
      if (n <= 0 || n > 366 || !(days || weeks)) return false;
      offset = weeks ? 7 * n : n;
      consumed_ = i + 3;  // the number is the phrase's, not an hour
    } else {
      return false;
    }
    const CivilDate d = AddDays(today_, offset);
    AddDate(d.year, d.month, d.day);
    return true;
  }

  // am / pm after index i: 1 am, 2 pm, 0 none.
  int Meridiem(size_t i) const {
    if (Word(i, "am") || (Word(i, "a") && Word(i + 1, "m"))) return 1;
    if (Word(i, "pm") || (Word(i, "p") && Word(i + 1, "m"))) return 2;
    if (Word(i, "in") && Word(i + 1, "the")) {
      if (Word(i + 2, "morning")) return 1;
      if (Word(i + 2, "afternoon") || Word(i + 2, "evening")) return 2;
    }
    if (Word(i, "at") && Word(i + 1, "night")) return 2;
    if (Word(i, "tonight")) return 2;
    return 0;
  }
  // A clock hour said as 1-12 with am/pm, or without (both readings when `both`).
  void AddHour(int h, int minute, int meridiem, bool both) {
    if (meridiem == 1) return AddTime(h == 12 ? 0 : h, minute);
    if (meridiem == 2) return AddTime(h == 12 ? 12 : h + 12, minute);
    AddTime(h, minute);
    if (both && h >= 1 && h < 12) AddTime(h + 12, minute);
  }
  // An hour at i: a number 1-12 or a word; 0 when none.
  int HourAt(size_t i) const {
    const int n = Number(i);
    if (n >= 1 && n <= 12) return n;
    return i < t_.size() && t_[i].kind == Token::kWord ? HourWord(t_[i].word) : 0;
  }

  void TryTime(size_t i) {
    const Token& t = t_[i];
    if (t.kind == Token::kClock) {
      const int mer = t.hour >= 1 && t.hour <= 12 ? Meridiem(i + 1) : 0;
      if (mer) {
        AddHour(t.hour, t.minute, mer, false);
      } else {
        AddTime(t.hour, t.minute);
      }
      return;
    }
    if (t.kind != Token::kWord) {
      // "9 pm", "8 o'clock"
      const int h = HourAt(i);
      if (h && Meridiem(i + 1)) {
        AddHour(h, 0, Meridiem(i + 1), false);
      } else if (h && (Word(i + 1, "o'clock") || Word(i + 1, "oclock"))) {
        AddHour(h, 0, Meridiem(i + 2), true);
      } else if (t.kind == Token::kNumber && t.value >= 0 && t.value <= 23 && (bare_hours_ || (i >= 1 && Word(i - 1, "at")))) {
        AddTime(t.value, 0);  // "at 8" -> 08:00, "at 14" -> 14:00: an hour as written
      }
      return;
    }
    if (t.word == "noon" || t.word == "midday") return AddTime(12, 0);
    if (t.word == "midnight") return AddTime(0, 0);
    if (const int h = HourWord(t.word)) {
      // "six pm", "seven o'clock"
      if (const int mer = Meridiem(i + 1)) {
        AddHour(h, 0, mer, false);
      } else if (Word(i + 1, "o'clock") || Word(i + 1, "oclock")) {
        AddHour(h, 0, Meridiem(i + 2), true);
      }
      return;
    }
    // "half past 6 pm", "quarter past nine", "a quarter to 7"
    if (t.word != "half" && t.word != "quarter") return;
    const bool past = Word(i + 1, "past") || Word(i + 1, "after");
    const bool to = Word(i + 1, "to") || Word(i + 1, "before");
    if (!past && !(to && t.word == "quarter")) return;
    const int h = HourAt(i + 2);
    if (!h) return;
    consumed_ = i + 3;  // the hour is part of this phrase, not "6 pm" on its own
    const int mer = Meridiem(i + 3);
    if (past) return AddHour(h, t.word == "half" ? 30 : 15, mer, mer == 0);
    // A quarter to h is h-1:45 (a quarter to 1 pm is 12:45).
    const int before = h == 1 ? 12 : h - 1;
    if (mer == 2 && h == 12) return AddTime(11, 45);  // a quarter to 12 pm (noon)
    if (mer == 1 && h == 12) return AddTime(23, 45);  // a quarter to 12 am (midnight)
    AddHour(before, 45, mer, mer == 0);
  }

  std::vector<Token> t_;
  CivilDate today_;
  bool bare_hours_;
  std::vector<std::string> values_;
  size_t consumed_ = 0;  // tokens before this belong to a phrase already read
};

}  // namespace

bool CivilDate::valid() const { return year >= 1 && month >= 1 && month <= 12 && day >= 1 && day <= DaysInMonth(year, month); }

CivilDate ParseIsoDate(std::string_view text) {
  if (text.size() < 10 || text[4] != '-' || text[7] != '-') return {};
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (!Digit(text[i])) return {};
  auto num = [&](size_t at, size_t n) {
    int v = 0;
    for (size_t i = at; i < at + n; ++i) v = v * 10 + (text[i] - '0');
    return v;
  };
  if (text.size() > 10 && Digit(text[10])) return {};
  const CivilDate d{num(0, 4), num(5, 2), num(8, 2)};
  return d.valid() ? d : CivilDate{};
}

CivilDate AddDays(CivilDate d, int days) { return CivilFromDays(DaysFromCivil(d.year, d.month, d.day) + days); }

std::string SpokenDatesAndTimes(std::string_view text, CivilDate today, bool bare_hours) {
  return Reader(Tokens(text), today.valid() ? today : CivilDate{}, bare_hours).Read();
}

std::string_view FormatNamedBy(std::string_view description) {
  auto spells = [&](std::string_view layout) {
    for (size_t at = 0; at + layout.size() <= description.size(); ++at) {
      size_t k = 0;
      while (k < layout.size() && std::tolower(static_cast<unsigned char>(description[at + k])) == layout[k]) ++k;
      if (k == layout.size()) return true;
    }
    return false;
  };
  const bool date = spells("yyyy-mm-dd"), time = spells("hh:mm");
  return date == time ? std::string_view() : date ? "date" : "time";
}

}  // namespace needle::said
