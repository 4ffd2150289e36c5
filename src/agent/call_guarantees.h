// Format guarantees on a finished, schema-valid call (issue I, item 6): what
// no model output should become, whatever the model. Each function works on
// the envelope's function_calls and says what it changed in a warning.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "agent/envelope.h"
#include "grammar/tool_grammar.h"  // ToolGrammar

namespace needle {

// String values (nested ones too) lose surrounding whitespace: " Lima" is "Lima".
void TrimStringValues(Envelope& env);

// "" when every number is finite; else a message naming the argument.
std::string NonFiniteNumber(const Envelope& env);

// A number argument the conversation does not write, whose negation it does
// ("b = -3" written as 3), takes the written sign when the schema admits it.
void KeepWrittenSigns(Envelope& env, const grammar::ToolGrammar& grammar, const std::vector<double>& said);

// A stated number the grammar had to cut into a declared bound: an argument
// whose value the conversation does not say, while it says a number outside
// that argument's bounds that the value is a prefix of ("50000" -> 5000
// under maximum 10000) or that the value sits on the bound for. Returns why
// ("the request says 50000, above the maximum 10000 of amount"), "" if none.
std::string ClampedStatedNumber(const Envelope& env, const grammar::ToolGrammar& grammar, const std::vector<double>& said);

// A number the plan gives an argument ("'45 degrees' -> temperature 45")
// that the conversation says, outside the argument's declared bounds, while
// no call of that tool carries it: the grammar cut the planned value into
// range (or the call left it out). Returns why ("the request says 45, above
// the maximum 30 of temperature"), "" if none. Catches what
// ClampedStatedNumber cannot: a cut that is neither a prefix nor the bound.
std::string PlannedNumberOutOfBounds(std::string_view reasoning, const Envelope& env, const grammar::ToolGrammar& grammar,
                                     const std::vector<double>& said);

// Arrays are not padded with repeats: a repeated item (the same value as an
// earlier item of the array) is dropped, unless the request writes it as
// often.
void DropRepeatedArrayItems(Envelope& env, std::string_view request);

}  // namespace needle
