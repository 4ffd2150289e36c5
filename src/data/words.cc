#include "data/words.h"

#include <cctype>
#include <cstdio>
#include <cstdlib>

namespace needle::data {

namespace {

const char* const kUnits[20] = {"zero",    "one",     "two",       "three",    "four",     "five",    "six",
                                "seven",   "eight",   "nine",      "ten",      "eleven",   "twelve",  "thirteen",
                                "fourteen", "fifteen", "sixteen",  "seventeen", "eighteen", "nineteen"};
const char* const kTens[10] = {"", "", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"};

std::string Below1000(int n, bool hyphen, bool british_and) {
  std::string out;
  if (n >= 100) {
    out = std::string(kUnits[n / 100]) + " hundred";
    n %= 100;
    if (n == 0) return out;
    out += british_and ? " and " : " ";
  }
  if (n < 20) return out + kUnits[n];
  out += kTens[n / 10];
  if (n % 10) out += std::string(hyphen ? "-" : " ") + kUnits[n % 10];
  return out;
}

bool IsAlpha(char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; }
bool IsDigit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

}  // namespace

std::string NumberWords(long long n, bool hyphen, bool british_and) {
  if (n < 0) return "minus " + NumberWords(-n, hyphen, british_and);
  if (n < 1000) return Below1000(static_cast<int>(n), hyphen, british_and);
  std::string out;
  if (n >= 1000000) {
    out = Below1000(static_cast<int>(n / 1000000), hyphen, british_and) + " million";
    n %= 1000000;
    if (n == 0) return out;
    out += " ";
  }
  if (n >= 1000) {
    out += Below1000(static_cast<int>(n / 1000), hyphen, british_and) + " thousand";
    n %= 1000;
    if (n == 0) return out;
    out += (n < 100 && british_and) ? " and " : " ";
  }
  return out + Below1000(static_cast<int>(n), hyphen, british_and);
}

std::string Ordinal(int n) {
  const int t = n % 100;
  const char* suf = (t >= 11 && t <= 13) ? "th" : n % 10 == 1 ? "st" : n % 10 == 2 ? "nd" : n % 10 == 3 ? "rd" : "th";
  return std::to_string(n) + suf;
}

std::vector<std::string> SplitIdentifier(std::string_view id) {
  std::vector<std::string> words;
  std::string cur;
  for (size_t i = 0; i < id.size(); ++i) {
    const char c = id[i];
    if (c == '_' || c == '-' || c == '.' || c == ' ' || c == '/' || c == ':') {
      if (!cur.empty()) words.push_back(cur), cur.clear();
      continue;
    }
    const bool upper = std::isupper(static_cast<unsigned char>(c)) != 0;
    if (upper && !cur.empty()) {
      const bool prev_lower = std::islower(static_cast<unsigned char>(id[i - 1])) != 0 || IsDigit(id[i - 1]);
      const bool next_lower = i + 1 < id.size() && std::islower(static_cast<unsigned char>(id[i + 1])) != 0;
      if (prev_lower || next_lower) words.push_back(cur), cur.clear();
    }
    cur += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  if (!cur.empty()) words.push_back(cur);
  return words;
}

std::string JoinIdentifier(const std::vector<std::string>& words, CaseStyle style) {
  std::string out;
  for (size_t i = 0; i < words.size(); ++i) {
    const std::string w = Lower(words[i]);
    switch (style) {
      case CaseStyle::kSnake: out += (i ? "_" : "") + w; break;
      case CaseStyle::kKebab: out += (i ? "-" : "") + w; break;
      case CaseStyle::kDot: out += (i ? "." : "") + w; break;
      case CaseStyle::kFlat: out += w; break;
      case CaseStyle::kScreaming: out += (i ? "_" : "") + Upper(w); break;
      case CaseStyle::kCamel: out += i ? CapitalizeFirst(w) : w; break;
      case CaseStyle::kPascal: out += CapitalizeFirst(w); break;
    }
  }
  return out;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string Upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string CapitalizeFirst(std::string_view s) {
  std::string out(s);
  if (!out.empty()) out[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(out[0])));
  return out;
}

bool StartsWith(std::string_view s, std::string_view p) { return s.substr(0, p.size()) == p; }
bool EndsWith(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

std::string Trim(std::string_view s) {
  size_t a = 0, b = s.size();
  while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
  while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
  return std::string(s.substr(a, b - a));
}

std::vector<std::string> SplitWords(std::string_view s) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : s) {
    if (c == ' ') {
      if (!cur.empty()) out.push_back(cur), cur.clear();
    } else {
      cur += c;
    }
  }
  if (!cur.empty()) out.push_back(cur);
  return out;
}

std::string TidySpaces(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == ' ' && (out.empty() || out.back() == ' ' || out.back() == '\n')) continue;
    if ((c == ',' || c == '.' || c == '?' || c == '!') && !out.empty() && out.back() == ' ') out.pop_back();
    out += c;
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string Typo(std::string_view word, Rng& rng) {
  std::string w(word);
  if (w.size() < 4) return w;
  for (char c : w)
    if (!IsAlpha(c)) return w;
  const size_t i = 1 + rng.Below(w.size() - 2);  // keep the first letter
  static const char* const kNear[26] = {"qs", "vn", "xv", "sf", "wr", "dg", "fh", "gj", "uo", "hk", "jl", "k",  "n",
                                        "bm", "ip", "o",  "w",  "et", "ad", "ry", "yi", "cb", "qe", "zc", "tu", "x"};
  switch (rng.Below(4)) {
    case 0: std::swap(w[i], w[i + 1 < w.size() ? i + 1 : i - 1]); break;
    case 1: w.erase(i, 1); break;
    case 2: w.insert(i, 1, w[i]); break;
    default: {
      const char c = static_cast<char>(std::tolower(static_cast<unsigned char>(w[i])));
      if (c >= 'a' && c <= 'z') {
        const char* near = kNear[c - 'a'];
        w[i] = near[rng.Below(std::char_traits<char>::length(near))];
      }
    }
  }
  return w;
}

// ---- calendar -------------------------------------------------------------------

const char* const kMonthNames[12] = {"January", "February", "March",     "April",   "May",      "June",
                                     "July",    "August",   "September", "October", "November", "December"};
const char* const kMonthAbbrev[12] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                      "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
const char* const kWeekdayNames[7] = {"Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"};

long long DaysFromCivil(Date date) {
  // Howard Hinnant's algorithm.
  const long long y = date.y - (date.m <= 2);
  const long long era = (y >= 0 ? y : y - 399) / 400;
  const long long yoe = y - era * 400;
  const long long doy = (153 * (date.m + (date.m > 2 ? -3 : 9)) + 2) / 5 + date.d - 1;
  const long long doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

Date CivilFromDays(long long z) {
  z += 719468;
  const long long era = (z >= 0 ? z : z - 146096) / 146097;
  const long long doe = z - era * 146097;
  const long long yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const long long y = yoe + era * 400;
  const long long doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const long long mp = (5 * doy + 2) / 153;
  const int d = static_cast<int>(doy - (153 * mp + 2) / 5 + 1);
  const int m = static_cast<int>(mp < 10 ? mp + 3 : mp - 9);
  return Date{static_cast<int>(y + (m <= 2)), m, d};
}

Date AddDays(Date date, long long n) { return CivilFromDays(DaysFromCivil(date) + n); }

int Weekday(Date date) {
  const long long z = DaysFromCivil(date);  // 1970-01-01 was a Thursday (3)
  return static_cast<int>(((z % 7) + 7 + 3) % 7);
}

int DaysInMonth(int y, int m) {
  static const int kDays[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m == 2 && leap ? 29 : kDays[m - 1];
}

std::string IsoDate(Date date) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "%04d-%02d-%02d", date.y, date.m, date.d);
  return buf;
}

std::optional<Date> ParseIsoDate(std::string_view s) {
  if (s.size() != 10 || s[4] != '-' || s[7] != '-') return std::nullopt;
  for (size_t i : {0, 1, 2, 3, 5, 6, 8, 9})
    if (!IsDigit(s[i])) return std::nullopt;
  Date d{std::atoi(std::string(s.substr(0, 4)).c_str()), std::atoi(std::string(s.substr(5, 2)).c_str()),
         std::atoi(std::string(s.substr(8, 2)).c_str())};
  if (d.m < 1 || d.m > 12 || d.d < 1 || d.d > DaysInMonth(d.y, d.m)) return std::nullopt;
  return d;
}

}  // namespace needle::data
