#include "said/numbers.h"

#include <cstdlib>

namespace needle::said {
namespace {

uint8_t Fold(uint8_t b) { return (b >= 'A' && b <= 'Z') ? uint8_t(b + ('a' - 'A')) : b; }

}  // namespace

namespace {

struct NumberWord {
  std::string_view word;
  uint64_t value;
  enum Kind : uint8_t { kUnit, kTeen, kTens, kHundred, kScale } kind;
};

constexpr NumberWord kNumberWords[] = {
    {"zero", 0, NumberWord::kUnit},        {"one", 1, NumberWord::kUnit},         {"two", 2, NumberWord::kUnit},
    {"three", 3, NumberWord::kUnit},       {"four", 4, NumberWord::kUnit},        {"five", 5, NumberWord::kUnit},
    {"six", 6, NumberWord::kUnit},         {"seven", 7, NumberWord::kUnit},       {"eight", 8, NumberWord::kUnit},
    {"nine", 9, NumberWord::kUnit},        {"ten", 10, NumberWord::kTeen},        {"eleven", 11, NumberWord::kTeen},
    {"twelve", 12, NumberWord::kTeen},     {"thirteen", 13, NumberWord::kTeen},   {"fourteen", 14, NumberWord::kTeen},
    {"fifteen", 15, NumberWord::kTeen},    {"sixteen", 16, NumberWord::kTeen},    {"seventeen", 17, NumberWord::kTeen},
    {"eighteen", 18, NumberWord::kTeen},   {"nineteen", 19, NumberWord::kTeen},   {"twenty", 20, NumberWord::kTens},
    {"thirty", 30, NumberWord::kTens},     {"forty", 40, NumberWord::kTens},      {"fifty", 50, NumberWord::kTens},
    {"sixty", 60, NumberWord::kTens},      {"seventy", 70, NumberWord::kTens},    {"eighty", 80, NumberWord::kTens},
    {"ninety", 90, NumberWord::kTens},     {"hundred", 100, NumberWord::kHundred}, {"thousand", 1000, NumberWord::kScale},
    {"million", 1000000, NumberWord::kScale},
};

const NumberWord* FindNumberWord(std::string_view w) {
  for (const NumberWord& n : kNumberWords) {
    if (n.word == w) return &n;
  }
  return nullptr;
}

// One spelled number being read: `total` (the thousands and millions) plus
// `group` (below a thousand); `last` is the kind of the previous word.
struct SpelledNumber {
  uint64_t total = 0, group = 0;
  bool open = false, pending_and = false;
  NumberWord::Kind last = NumberWord::kUnit;

  // Whether `n` continues this number ("fifty" then "seven": yes; "five" then "one": no).
  bool Continues(const NumberWord& n) const {
    if (!open) return false;
    switch (n.kind) {
      case NumberWord::kUnit: return last == NumberWord::kTens || last == NumberWord::kHundred || last == NumberWord::kScale;
      case NumberWord::kTeen:
      case NumberWord::kTens: return last == NumberWord::kHundred || last == NumberWord::kScale;
      case NumberWord::kHundred: return last == NumberWord::kUnit || last == NumberWord::kTeen || (last == NumberWord::kTens && group % 100 != 0);
      case NumberWord::kScale: return last != NumberWord::kScale && total % (n.value * 1000) == 0;
    }
    return false;
  }
  void Add(const NumberWord& n) {
    if (n.kind == NumberWord::kHundred) {
      group = (group ? group : 1) * 100;
    } else if (n.kind == NumberWord::kScale) {
      total += (group ? group : 1) * n.value;
      group = 0;
    } else {
      group += n.value;
    }
    open = true, pending_and = false, last = n.kind;
  }
  void Flush(std::vector<SpelledNumberSpan>& out) {
    if (open) out.push_back({begin, end, total + group});
    *this = {};
  }
  size_t begin = 0, end = 0;  // bytes of the words read so far
};

}  // namespace

std::vector<SpelledNumberSpan> FindSpelledNumbers(std::string_view text) {
  std::vector<SpelledNumberSpan> out;
  std::string word;
  SpelledNumber number;
  for (size_t i = 0; i <= text.size(); ++i) {
    const uint8_t c = i < text.size() ? uint8_t(text[i]) : uint8_t('.');
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      word.push_back(char(Fold(c)));
      continue;
    }
    if (!word.empty()) {
      if (const NumberWord* n = FindNumberWord(word)) {
        if (!number.Continues(*n)) number.Flush(out);
        if (!number.open) number.begin = i - word.size();
        number.Add(*n);  // "hundred" / "thousand" alone ("a hundred") count one of them
        number.end = i;
      } else if (word == "and" && number.open && !number.pending_and &&
                 (number.last == NumberWord::kHundred || number.last == NumberWord::kScale)) {
        number.pending_and = true;  // "one hundred and five"
      } else {
        number.Flush(out);
      }
      word.clear();
    }
    // Words join across spaces and hyphens ("twenty-two"); anything else ends a number ("five, six", "5").
    if (c != ' ' && c != '-') number.Flush(out);
  }
  return out;
}

std::vector<double> WrittenNumbers(std::string_view text) {
  std::vector<double> out;
  auto digit = [&](size_t i) { return i < text.size() && text[i] >= '0' && text[i] <= '9'; };
  size_t i = 0;
  while (i < text.size()) {
    if (!digit(i)) {
      ++i;
      continue;
    }
    const bool negative = i > 0 && text[i - 1] == '-' && (i == 1 || text[i - 2] == ' ');
    // Digit groups joined by single commas, then a decimal part.
    std::string joined;
    std::vector<double> groups;
    size_t j = i;
    for (;;) {
      const size_t start = j;
      while (digit(j)) ++j;
      joined.append(text.substr(start, j - start));
      groups.push_back(std::strtod(std::string(text.substr(start, j - start)).c_str(), nullptr));
      if (j + 1 < text.size() && text[j] == ',' && digit(j + 1)) {
        ++j;
        continue;
      }
      break;
    }
    if (j + 1 < text.size() && text[j] == '.' && digit(j + 1)) {
      const size_t start = ++j;
      while (digit(j)) ++j;
      joined.append(".").append(text.substr(start, j - start));
      if (groups.size() == 1) groups.clear();  // "20.9" is one number, not 20 and 9
    }
    const double sign = negative ? -1.0 : 1.0;
    out.push_back(sign * std::strtod(joined.c_str(), nullptr));
    if (groups.size() > 1) {
      for (double g : groups) out.push_back(sign * g);
    }
    i = j;
  }
  return out;
}

std::string SpelledNumbers(std::string_view text) {
  std::string out;
  for (const SpelledNumberSpan& n : FindSpelledNumbers(text)) out += (out.empty() ? "" : " ") + std::to_string(n.value);
  return out;
}

}  // namespace needle::said
