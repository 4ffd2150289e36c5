#include "said/quantities.h"

#include <cmath>
#include <cstdio>

#include "said/numbers.h"  // FindSpelledNumbers

namespace needle::said {
namespace {

struct UnitWord {
  std::string_view word;
  Dimension dimension;
  double base;
  bool after_digits_only;  // "s", "h", "m": a unit only right after a number in digits
};

// A singular time word names a position more often than a unit in a schema
// ("hour" of an alarm, "Day of the month"): declarations take plurals and
// abbreviations only.
bool Declares(const UnitWord& u) {
  static constexpr std::string_view kSingular[] = {"millisecond", "second", "minute", "hour", "day", "week"};
  for (std::string_view w : kSingular) {
    if (u.word == w) return false;
  }
  return true;
}

constexpr UnitWord kUnitWords[] = {
    {"ms", Dimension::kDuration, 0.001, false},          {"msec", Dimension::kDuration, 0.001, false},
    {"millisecond", Dimension::kDuration, 0.001, false}, {"milliseconds", Dimension::kDuration, 0.001, false},
    {"s", Dimension::kDuration, 1, true},                {"sec", Dimension::kDuration, 1, false},
    {"secs", Dimension::kDuration, 1, false},            {"second", Dimension::kDuration, 1, false},
    {"seconds", Dimension::kDuration, 1, false},         {"min", Dimension::kDuration, 60, false},
    {"mins", Dimension::kDuration, 60, false},           {"minute", Dimension::kDuration, 60, false},
    {"minutes", Dimension::kDuration, 60, false},        {"h", Dimension::kDuration, 3600, true},
    {"hr", Dimension::kDuration, 3600, false},           {"hrs", Dimension::kDuration, 3600, false},
    {"hour", Dimension::kDuration, 3600, false},         {"hours", Dimension::kDuration, 3600, false},
    {"day", Dimension::kDuration, 86400, false},         {"days", Dimension::kDuration, 86400, false},
    {"week", Dimension::kDuration, 604800, false},       {"weeks", Dimension::kDuration, 604800, false},
    {"mm", Dimension::kLength, 0.001, false},            {"millimeter", Dimension::kLength, 0.001, false},
    {"millimeters", Dimension::kLength, 0.001, false},   {"millimetre", Dimension::kLength, 0.001, false},
    {"millimetres", Dimension::kLength, 0.001, false},   {"cm", Dimension::kLength, 0.01, false},
    {"centimeter", Dimension::kLength, 0.01, false},     {"centimeters", Dimension::kLength, 0.01, false},
    {"centimetre", Dimension::kLength, 0.01, false},     {"centimetres", Dimension::kLength, 0.01, false},
    {"m", Dimension::kLength, 1, true},                  {"meter", Dimension::kLength, 1, false},
    {"meters", Dimension::kLength, 1, false},            {"metre", Dimension::kLength, 1, false},
    {"metres", Dimension::kLength, 1, false},            {"km", Dimension::kLength, 1000, false},
    {"kilometer", Dimension::kLength, 1000, false},      {"kilometers", Dimension::kLength, 1000, false},
    {"kilometre", Dimension::kLength, 1000, false},      {"kilometres", Dimension::kLength, 1000, false},
};

const UnitWord* FindUnitWord(std::string_view w) {
  for (const UnitWord& u : kUnitWords) {
    if (u.word == w) return &u;
  }
  return nullptr;
}

bool IsLetter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsDigit(char c) { return c >= '0' && c <= '9'; }
char Lower(char c) { return (c >= 'A' && c <= 'Z') ? char(c + ('a' - 'A')) : c; }

// One piece of a request: a number (digits or words), a word, or one other byte.
struct Piece {
  enum Kind : uint8_t { kNumber, kWord, kOther } kind;
  double value = 0;     // kNumber
  bool digits = false;  // kNumber written in digits
  std::string word;     // kWord, lowercase
  char other = 0;       // kOther
  bool space_before = false;
};

std::vector<Piece> Pieces(std::string_view text) {
  const std::vector<SpelledNumberSpan> spelled = FindSpelledNumbers(text);
  std::vector<Piece> out;
  size_t next_spelled = 0;
  bool space = false;
  for (size_t i = 0; i < text.size();) {
    const char c = text[i];
    if (next_spelled < spelled.size() && spelled[next_spelled].begin == i) {
      out.push_back({Piece::kNumber, double(spelled[next_spelled].value), false, {}, 0, space});
      i = spelled[next_spelled++].end, space = false;
      continue;
    }
    if (IsDigit(c)) {
      // Digits, thousands groups ("1,500") and a decimal part ("2.5").
      double v = 0;
      size_t j = i;
      for (;;) {
        while (j < text.size() && IsDigit(text[j])) v = v * 10 + (text[j++] - '0');
        if (j + 3 < text.size() && text[j] == ',' && IsDigit(text[j + 1]) && IsDigit(text[j + 2]) && IsDigit(text[j + 3]) &&
            (j + 4 >= text.size() || !IsDigit(text[j + 4]))) {
          ++j;
          continue;
        }
        break;
      }
      if (j + 1 < text.size() && text[j] == '.' && IsDigit(text[j + 1])) {
        double scale = 0.1;
        for (++j; j < text.size() && IsDigit(text[j]); ++j, scale /= 10) v += (text[j] - '0') * scale;
      }
      out.push_back({Piece::kNumber, v, true, {}, 0, space});
      i = j, space = false;
      continue;
    }
    if (IsLetter(c)) {
      std::string w;
      size_t j = i;
      while (j < text.size() && IsLetter(text[j])) w.push_back(Lower(text[j++]));
      out.push_back({Piece::kWord, 0, false, std::move(w), 0, space});
      i = j, space = false;
      continue;
    }
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      space = true;
    } else {
      out.push_back({Piece::kOther, 0, false, {}, c, space});
      space = false;
    }
    ++i;
  }
  return out;
}

// A quantity read from pieces [begin, end), its unit the last one said.
struct Said {
  Quantity q;
  double unit = 0;
  size_t begin = 0, end = 0;
};

class QuantityReader {
 public:
  explicit QuantityReader(const std::vector<Piece>& p) : p_(p) {}

  // A quantity starting at piece i, or false.
  bool Read(size_t i, Said* out) const {
    double amount = 0;
    size_t j = i;
    bool digits = false;
    if (IsWord(j, "half") && (IsWord(j + 1, "a") || IsWord(j + 1, "an"))) {
      amount = 0.5, j += 2;  // "half an hour"
    } else if (j < p_.size() && p_[j].kind == Piece::kNumber) {
      amount = p_[j].value, digits = p_[j].digits, ++j;
      if (IsWord(j, "and") && IsWord(j + 1, "a") && IsWord(j + 2, "half")) amount += 0.5, j += 3;  // "one and a half hours"
      if (j < p_.size() && p_[j].kind == Piece::kOther && p_[j].other == '-' && !p_[j].space_before) ++j;  // "10-minute"
    } else if (IsWord(j, "a") || IsWord(j, "an")) {
      amount = 1, ++j;  // "an hour"
    } else {
      return false;
    }
    if (j >= p_.size() || p_[j].kind != Piece::kWord) return false;
    const UnitWord* u = FindUnitWord(p_[j].word);
    if (!u || (u->after_digits_only && !digits)) return false;
    ++j;
    // A rate is not an amount: "60 km/h", "2 metres per second".
    if ((j < p_.size() && p_[j].kind == Piece::kOther && p_[j].other == '/') || IsWord(j, "per")) return false;
    if (IsWord(j, "and") && IsWord(j + 1, "a") && IsWord(j + 2, "half")) amount += 0.5, j += 3;  // "an hour and a half"
    *out = {{u->dimension, amount * u->base}, u->base, i, j};
    return true;
  }

 private:
  bool IsWord(size_t j, std::string_view w) const { return j < p_.size() && p_[j].kind == Piece::kWord && p_[j].word == w; }
  const std::vector<Piece>& p_;
};

// Identifier words: "timeGoalSecs" -> time goal secs, "duration_m" -> duration m.
std::vector<std::string> IdentifierWords(std::string_view name) {
  std::vector<std::string> words;
  std::string cur;
  for (size_t i = 0; i < name.size(); ++i) {
    const char c = name[i];
    if (!IsLetter(c)) {
      if (!cur.empty()) words.push_back(cur), cur.clear();
      continue;
    }
    // A capital starts a word after a lowercase letter, or before one ("URLPath" -> url path).
    const bool upper = c >= 'A' && c <= 'Z';
    if (upper && !cur.empty() &&
        (!(name[i - 1] >= 'A' && name[i - 1] <= 'Z') || (i + 1 < name.size() && name[i + 1] >= 'a' && name[i + 1] <= 'z'))) {
      words.push_back(cur), cur.clear();
    }
    cur.push_back(Lower(c));
  }
  if (!cur.empty()) words.push_back(cur);
  return words;
}

}  // namespace

Unit DeclaredUnit(std::string_view name, std::string_view description) {
  const std::vector<std::string> name_words = IdentifierWords(name);
  for (size_t k = name_words.size(); k-- > 0;) {
    const UnitWord* u = FindUnitWord(name_words[k]);
    if (!u || !Declares(*u)) continue;
    const bool last = k + 1 == name_words.size();
    // One-letter units and "min" only end a name of several words ("timeout_s"; "minTemp" is a minimum).
    if ((u->after_digits_only || u->word == "min") && !(last && (name_words.size() > 1 || u->word == "min"))) continue;
    return {u->dimension, u->base};
  }
  const std::vector<Piece> p = Pieces(description);
  for (size_t k = 0; k < p.size(); ++k) {
    if (p[k].kind != Piece::kWord) continue;
    const UnitWord* u = FindUnitWord(p[k].word);
    if (!u || u->after_digits_only || !Declares(*u)) continue;
    if (u->word == "min" && !(k > 0 && ((p[k - 1].kind == Piece::kWord && p[k - 1].word == "in") ||
                                        (p[k - 1].kind == Piece::kOther && p[k - 1].other == '(')))) {
      continue;  // "Min value": a minimum; "in min" / "(min)": minutes
    }
    const bool rate = k + 1 < p.size() && ((p[k + 1].kind == Piece::kOther && p[k + 1].other == '/') ||
                                           (p[k + 1].kind == Piece::kWord && p[k + 1].word == "per"));
    if (rate) return {};
    return {u->dimension, u->base};
  }
  return {};
}

std::vector<Quantity> SpokenQuantities(std::string_view text) {
  const std::vector<Piece> p = Pieces(text);
  const QuantityReader reader(p);
  std::vector<Said> said;
  for (size_t i = 0; i < p.size();) {
    Said s;
    if (!reader.Read(i, &s)) {
      ++i;
      continue;
    }
    // A duration said in parts, larger unit first ("1 hour and 5 minutes", "2h 30min"): one quantity.
    if (!said.empty()) {
      Said& prev = said.back();
      size_t gap = prev.end;
      while (gap < s.begin && ((p[gap].kind == Piece::kWord && p[gap].word == "and") ||
                               (p[gap].kind == Piece::kOther && p[gap].other == ','))) {
        ++gap;
      }
      if (gap == s.begin && prev.q.dimension == Dimension::kDuration && s.q.dimension == Dimension::kDuration &&
          s.unit < prev.unit) {
        prev.q.base += s.q.base, prev.unit = s.unit, prev.end = s.end;
        i = s.end;
        continue;
      }
    }
    said.push_back(s);
    i = s.end;
  }
  std::vector<Quantity> out;
  out.reserve(said.size());
  for (const Said& s : said) out.push_back(s.q);
  return out;
}

std::string QuantityIn(const Quantity& q, const Unit& unit, bool integer) {
  if (q.dimension == Dimension::kNone || q.dimension != unit.dimension || !(unit.base > 0)) return "";
  const double v = q.base / unit.base;
  const double whole = std::round(v);
  if (std::fabs(v - whole) <= 1e-9 * std::max(1.0, std::fabs(v))) {
    if (std::fabs(whole) >= 1e15) return "";
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.0f", whole);
    return buf;
  }
  if (integer) return "";
  const double fixed = std::round(v * 1e4) / 1e4;
  if (std::fabs(v - fixed) > 1e-9 * std::max(1.0, std::fabs(v))) return "";
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.4f", fixed);
  std::string s = buf;
  while (s.back() == '0') s.pop_back();
  if (s.back() == '.') s.pop_back();
  return s;
}

}  // namespace needle::said
