// The numbers a text says: in digits as written (sign and decimals kept) and
// spelled in English words. The session adds the spelled ones to the copy
// source (grammar/copy_source.h) and reads the written ones to keep a call's
// numbers as the conversation writes them; the data generator's evidence
// gate reads both.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace needle::said {

// The numbers `text` spells in English words, as digits separated by spaces
// ("fifty seven" -> "57", "one hundred and five" -> "105", "twenty-two" ->
// "22", "a thousand" -> "1000"); "" when it spells none. The session adds
// this to the copy source, so "dim to fifty seven" makes 57 a copy as "dim
// to 57" does. Digits said one by one ("five five one") stay separate
// numbers; ordinals and fractions are not read.
std::string SpelledNumbers(std::string_view text);
// The same numbers with where their words are in `text` ([begin, end) bytes).
struct SpelledNumberSpan {
  size_t begin = 0, end = 0;
  uint64_t value = 0;
};
std::vector<SpelledNumberSpan> FindSpelledNumbers(std::string_view text);

// The numbers `text` writes in digits, in order: "20.9", "-5" (a minus
// after a space or at the start), "27%" -> 27, "3,010,425" -> 3010425 and
// also its groups 3, 10, 425 (a list "1,2,3" reads either way), "P93" -> 93,
// "2025-09-06" -> 2025, 9, 6.
std::vector<double> WrittenNumbers(std::string_view text);

}  // namespace needle::said
