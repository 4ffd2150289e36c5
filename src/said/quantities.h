// Quantities said with a unit ("5 minutes", "an hour and a half", "90 cm")
// and the unit a number argument is declared in (its name or description:
// "duration_seconds", "timeoutMs", "Distance in meters"), so the session can
// write the quantity a request says in the argument's unit (300 for "5
// minutes" into seconds). A small model copies the 5, or writes a multiple it
// half remembers (1380 for "138 minutes").
//
// Read (English, case-insensitive): a number in digits ("90", "1.5",
// "1,500") or words ("forty-five"; "a" / "an" before a unit word) followed by
// a unit, glued or not ("90cm", "5 min", "10-minute"); "half an hour", "an
// hour and a half", "one and a half hours", "2.5 hours". Units: durations
// ms, seconds, minutes, hours, days, weeks; lengths mm, cm, metres, km
// ("s", "h" and "m" only after digits). A duration said in parts from the
// larger unit down ("1 hour and 5 minutes", "2h 30min") is one quantity.
// Not read: imperial lengths (their rounding is the schema's to say), rates
// ("km/h", "metres per second"), clock times ("7:45").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace needle::said {

enum class Dimension : uint8_t { kNone, kDuration, kLength };

// A unit: how many seconds (durations) or metres (lengths) one of it is.
struct Unit {
  Dimension dimension = Dimension::kNone;
  double base = 0;
};

// An amount in base units (seconds or metres).
struct Quantity {
  Dimension dimension = Dimension::kNone;
  double base = 0;
};

// The unit a number argument is declared in: a unit word of its name
// ("timeGoalSecs", "distance_m"; "min" only as the name's last word, since
// "minTemp" is a minimum) or else of its description ("Length of the timer
// in minutes"); kNone when neither says one, or the unit is part of a rate
// ("Speed in km/h", "metres per second"). Singular time words do not declare
// a unit ("hour" of an alarm, "Day of the month" are positions, not amounts).
Unit DeclaredUnit(std::string_view name, std::string_view description);

// The quantities `text` says, in the order said.
std::vector<Quantity> SpokenQuantities(std::string_view text);

// `q` in `unit` as JSON writes the number ("300", "0.65"); "" when the
// dimensions differ, when `integer` and the amount is not whole, or when it
// needs more than 4 decimals (5 minutes in hours).
std::string QuantityIn(const Quantity& q, const Unit& unit, bool integer);

}  // namespace needle::said
