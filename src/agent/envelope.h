// The envelope of SPEC §10: one JSON object per turn.
//
//   {"type": "call" | "refuse" | "respond" | "error",
//    "success": bool, "error": null | "message", "error_code": null | "code",
//    "function_calls": [{"name", "arguments"}], "reasoning": "...",
//    "confidence": 0..1 | null, "prefill_tps", "decode_tps", "peak_ram_mb"}
//
// plus, only when present: "results" (run(): every executed call with its
// result) and "warnings" (schema keywords ignored by the grammar, SPEC §9).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/error.h"  // ErrorCode

namespace needle {

enum class EnvelopeType { kCall, kRefuse, kRespond, kError };
const char* EnvelopeTypeName(EnvelopeType t);  // "call", ...

struct Envelope {
  EnvelopeType type = EnvelopeType::kError;
  std::string error;       // empty = null
  std::string error_code;  // empty = null; ErrorCodeName values
  nlohmann::ordered_json function_calls = nlohmann::ordered_json::array();
  std::string reasoning;
  std::optional<double> confidence;
  double prefill_tps = 0, decode_tps = 0, peak_ram_mb = 0;
  // Tokens this turn prefilled and generated (the server's `usage`; not in the JSON).
  uint64_t prefill_tokens = 0, decode_tokens = 0;
  // The cache after the turn: the pinned sink block, and the window's
  // conversation tokens of its capacity (the playground's cache view; not in the JSON).
  uint64_t sink_tokens = 0, window_tokens = 0, window_capacity = 0;
  std::optional<nlohmann::ordered_json> results;
  std::vector<std::string> warnings;

  bool success() const { return type != EnvelopeType::kError; }
  nlohmann::ordered_json ToJson() const;
  // Compact JSON; invalid UTF-8 in generated text is replaced by U+FFFD, never an exception.
  std::string Dump() const;
};

Envelope ErrorEnvelope(ErrorCode code, const std::string& message);

// Drops the calls that repeat an earlier call of the same turn (same name and
// arguments, key order aside), keeping the first, and adds a warning when it
// drops any. A looping model writes a call twice; no request means that, and
// running it twice can do harm (two payments, two messages).
void DropRepeatedCalls(Envelope& env);

// Drops, from each call, the optional arguments (not in its tool's
// `required`) whose value is an empty string or equals the value of another
// argument that is required or comes earlier in the call (booleans and null
// aside), and adds a warning naming them. A small model fills optional slots
// with a value it already used ("tracking_number" and "ship_to" both the
// tracking number); a request rarely gives one value for two slots (2 of
// 32,000 generated gold calls do), and an optional argument left out is
// the tool's default, not an error. `tools` is the declared array; calls of
// undeclared tools are left alone.
void DropEchoedArguments(Envelope& env, const nlohmann::ordered_json& tools);

// Drops, from each call, the optional number arguments whose value the
// conversation does not say — not among `said` (the numbers its texts write
// in digits or spell, and its quantities in each argument's unit) — and adds
// a warning naming them. The grammar makes the model write a number once it
// opened such a key, and with nothing to copy it invents one ("seats": 900
// for "get me a ride to the airport", "cups": 2024 for "six cups"); an
// optional argument left out is the tool's default. Required arguments stay
// (the call needs them), and so do calls of undeclared tools.
void DropUnsaidOptionalNumbers(Envelope& env, const nlohmann::ordered_json& tools, const std::vector<double>& said);

// Swaps the two values of a from/to pair of arguments (keys like `from` /
// `to`, `source_language` / `target_language`, `origin` / `destination`,
// `base` / `quote`, `from_account` / `to_account`) when the request's words
// say the other way round: a value the request writes right after "from" is
// the from side, one right after "to", "into" or "in" the to side
// ("exchange rate from GBP to JPY" with `base` JPY and `quote` GBP; "250
// euros in yen" with `from_currency` JPY — codes are found where the request
// names them, said/codes.h). Only when the words support the swap more
// than the decoded order; values the request does not write are left alone.
// A pair decoded with the same value on both sides, where both keys list
// their values (enum), takes the one listed value the words put on each side
// when they differ and one is the decoded value ("from savings to savings"
// for "move 200 dollars from checking to savings").
// Adds a warning naming each pair swapped or set.
void OrderFromToPairs(Envelope& env, const nlohmann::ordered_json& tools, std::string_view request);

// Reads a plan byte by byte: whether each byte is plan structure, outside
// the quoted spans ("tool: 'span' -> key value; ... | tool: ..."). A span
// opens at a quote after a space and closes at the next quote (both in it).
class PlanSpanReader {
 public:
  bool Outside(char c) {
    bool outside = false;
    if (in_span_) {
      in_span_ = c != '\'';
    } else if (c == '\'' && prev_ == ' ') {
      in_span_ = true;
    } else {
      outside = true;
    }
    prev_ = c;
    return outside;
  }

 private:
  bool in_span_ = false;
  char prev_ = ' ';
};

// The number of calls a reasoning plans: one per segment, segments joined by
// " | " outside the quoted spans ("a: 'x' -> k | b: no arguments needed" plans
// 2; the model sometimes drops the space after the bar, so " |" counts).
// 0 = no plan: the reasoning is empty or a segment has no "name:" (free-form
// reasoning of another model), so nothing limits the calls.
uint32_t PlannedCalls(std::string_view reasoning);

// The reason to refuse a one-call plan "T: no arguments needed" when T
// requires an argument the request must say — a string without an enum, a
// number, an array or an object ("set_reminder needs text; the request does
// not give it", the generator's words); "" otherwise. A required boolean or
// enum the request's verb can set ("louder" -> change INCREASE, "turn off
// the subtitles" -> enabled false) is no reason, nor, when the session has
// system facts (`with_facts`), a required string: a fact may fill it ("show
// the weather" -> where: the location fact). Why: "i need a reminder"
// planned no arguments and the call made up the text ("i").
std::string UnplannedRequiredValue(std::string_view reasoning, const nlohmann::ordered_json& tools, bool with_facts);

// Peak resident memory of the process (VmHWM) in MB, 0 when unknown.
double PeakRssMb();

}  // namespace needle
