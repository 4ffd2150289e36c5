// The evidence gate (SPEC §10: "arguments contain only values evidenced by
// the input"), checked mechanically and independently of the generator: every
// string in an answer must occur verbatim in what the model has seen at that
// turn (system facts, the requests so far, the tool results so far), be a
// value the schema declares (enum/const), or be a documented normalisation:
//   - a date YYYY-MM-DD (or date-time) written in the text ("March 14, 2026",
//     "14 March", "2026-03-14"), or relative ("tomorrow", "on Friday",
//     "in 3 days") — relative forms and dates without a year only against a
//     `date:` system fact;
//   - a clock time HH:MM from "7pm", "7:30 p.m.", "19:30", "noon",
//     "half past seven in the evening", "7 in the morning", a bare hour;
// and every number must be a number of the text (digits, with thousands
// separators, or words: "twenty-five"), a unit conversion of one (x/÷ 60,
// 3600, 100, 1000; "1 hour 30 minutes" -> 90; "half an hour" -> 30), or the
// schema's minimum/maximum ("all the way up").
#pragma once

#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "data/words.h"  // Date

namespace needle::data {

using ojson = nlohmann::ordered_json;

// What the text licenses, computed once per turn.
struct Evidence {
  std::string text;                // everything seen, concatenated
  std::vector<double> numbers;     // numbers and their conversions
  std::set<std::string> dates;     // YYYY-MM-DD
  std::set<std::string> times;     // HH:MM
  static Evidence From(const std::string& text, std::optional<Date> today);
  bool HasNumber(double x) const;
};

// The `date:` fact of a system string, if any.
std::optional<Date> DateFact(const std::string& system);
// Problems with one example (every turn); empty = every value is evidenced.
std::vector<std::string> CheckEvidence(const ojson& example);

}  // namespace needle::data
