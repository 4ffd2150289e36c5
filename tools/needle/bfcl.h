// BFCL (the Berkeley Function-Calling Leaderboard) files as `needle eval`
// examples, scored by BFCL's own AST matching rules, so our figures on its
// live_multiple and live_irrelevance sets read like the leaderboard's.
//
// A BFCL data line is {"id", "question": [[{"role","content"}...]...],
// "function": [...]} with parameter types in BFCL's Python spelling (dict,
// float, tuple, any). Its ground truth, in possible_answer/ beside the data
// file, lists each call as {name: {param: [acceptable values]}}; "" among the
// values marks an argument that may be left out. Irrelevance sets have no
// ground truth: the right answer is no call.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace needle::cli::bfcl {

// Whether a parsed line is a BFCL example ("question" and "function").
bool IsBfclLine(const nlohmann::ordered_json& line);

// A BFCL function as a tool schema the engine reads: dict -> object,
// float -> number, tuple -> array, any -> no type; everything else kept.
nlohmann::ordered_json ToolSchema(const nlohmann::ordered_json& function);

// The ground-truth file for a data file: DIR/possible_answer/NAME.
std::string AnswerPathFor(const std::string& data_path);

// Whether the set expects no call at all (its file name says irrelevance).
bool ExpectsNoCall(const std::string& data_path);

// The example `needle eval` plays: "query" (the turn's user messages, joined
// by newlines; assistant messages between them are dropped and counted in
// bfcl.assistant_messages_dropped, since the prompt has no place for them),
// "system" (its system messages, if any), "tools", "answers" (for display:
// each call with the first acceptable value of each argument that may not be
// left out) and "bfcl" {"functions", "truth"} for scoring. truth is the
// line's ground_truth, or an empty array for a set that expects no call.
// Throws Error (kInvalidArgument) naming the line's problem: several turns,
// a role other than system, user or assistant, a missing field.
nlohmann::ordered_json ToExample(const nlohmann::ordered_json& line, const nlohmann::ordered_json& truth);

// BFCL's AST check: calls [{"name","arguments"}] against truth
// [{name: {param: [acceptable values]}}] over the BFCL functions. The counts
// must agree and each truth call must match a distinct call (any order).
// A call matches when it names the function, has every required argument,
// no argument the function or the truth lacks, each argument of the declared
// type (an integer is taken for a float) and among the acceptable values
// (strings compared lower-cased without spaces or ,./-_*^), and leaves out
// only arguments whose values include "". Empty truth: right iff no call.
// why (optional) gets the first mismatch.
bool Matches(const nlohmann::json& functions, const nlohmann::json& calls, const nlohmann::json& truth, std::string* why = nullptr);

}  // namespace needle::cli::bfcl
