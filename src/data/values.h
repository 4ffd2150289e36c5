// Slot values: drawing a value and its surface form (the words in the
// request), and writing it as an argument in the representation the declared
// schema asks for (copied verbatim, or one of the documented normalisations:
// number words -> numbers, durations and distances into the declared unit,
// clock times to HH:MM, dates to YYYY-MM-DD — relative dates only against a
// `date` system fact — and enum values to the declared spelling).
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "data/catalogue.h"  // Catalogue, SlotDef, ParamBinding
#include "data/rng.h"        // Rng
#include "data/words.h"      // Date

namespace needle::data {

struct ValueContext {
  const Catalogue* cat = nullptr;
  Split split = Split::kTrain;
  std::optional<Date> today;  // the `date` system fact, when the example has one
};

struct SlotValue {
  std::string slot;
  std::string surface;   // the words in the request ("" for an assignment)
  std::string lead;      // words rendered before the surface but not part of the value ("on " for dates)
  std::string raw;       // the surface before an all-lowercase request lowered it
  bool assigned = false; // set by {slot=value} in the template
  std::string cue;       // assigned: the words that imply it
  std::string bound;     // assigned "max" / "min" (a number slot)
  std::string enum_id;   // kEnum
  double number = 0;     // kInt/kNumber value; kDuration seconds; kDistance centimetres
  int hour = 0, minute = 0;  // kTime
  Date date;                 // kDate
  std::string date_how;      // kDate: "relative" | "monthday" | "absolute"
  std::string fact;          // filled from this system fact (e.g. "location"), not from the request
  std::vector<std::string> items;                       // kList
  std::vector<std::map<std::string, SlotValue>> records;  // kItems: field id -> value
};

// Expands a pool reference: an item of pool `name` (allowed in the split),
// with its placeholders ({pool}, {pool|lower}, {word}, {Word}, {code},
// {digits:N}, {int:A:B}, {letter}, {hex:N}) filled recursively.
std::string ExpandPool(const Catalogue& cat, const std::string& name, Split split, Rng& rng);
std::string ShapedLike(const std::string& example, Rng& rng);
// Fills placeholders in one string.
std::string ExpandText(const Catalogue& cat, const std::string& text, Split split, Rng& rng, int depth = 0);
// A pronounceable invented word ("zarvik"), for values nobody can remember.
std::string InventedWord(Rng& rng, int min_syllables = 2, int max_syllables = 3);

// Draws a value for `slot`; `b` is the parameter it goes into (null: mentioned
// in the request but not declared by the tool). Respects the declared range,
// enum subset and unit so that the answer is representable exactly.
SlotValue DrawValue(const SlotDef& slot, const ParamBinding* b, const ValueContext& ctx, Rng& rng);
// Value for an assignment {slot=value}.
SlotValue AssignedValue(const SlotDef& slot, const std::string& value, const std::string& cue);
// An enum value the binding does NOT declare (for "value outside the enum"
// refusals); empty when every value is declared.
std::optional<SlotValue> DrawUndeclaredEnum(const SlotDef& slot, const ParamBinding& b, Rng& rng);

// The argument as the binding declares it. `time` is the time slot's value
// for a date-time parameter.
ojson AnswerValue(const SlotValue& v, const SlotDef& slot, const ParamBinding& b, const SlotValue* time,
                  const ValueContext& ctx);
// One reasoning fragment: "'kitchen' -> room", "'twenty' -> level 20".
std::string ReasonFragment(const SlotValue& v, const ParamBinding& b, const ojson& answer, const SlotValue* time);

// Clock time as HH:MM.
std::string Time24(int hour, int minute);
// Shortens a long span for the reasoning line.
std::string ShortSpan(const std::string& s);

}  // namespace needle::data
