// The session's options, each declared once, in one table: name, type,
// default, range, when a change may happen, and help. From the table come
// SessionOptions (the C++ struct), the flags of `needle run`, `chat` and
// `eval` with their help, and the JSON options object of the C ABI
// (needle_session_set_options) that the server and the Python package use.
// docs/agent.md tells why each rule exists and what it does to each set.
#pragma once

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace needle {

inline constexpr float kInf = std::numeric_limits<float>::infinity();
inline constexpr uint32_t kMaxReasoningBeams = 8;  // beam slots are fixed arrays of this size

// kCreation: fixed once the session exists (it sizes buffers or loads files);
// kTurn: may change between turns.
enum class OptionScope : uint8_t { kCreation, kTurn };

// X(type, name, default, min, max, scope, help). A float option whose max is
// kInf takes inf ("inf" in text and JSON): a bonus that always wins where it
// fits, a rule. A bonus of 0 turns its rule off.
// clang-format off
#define NEEDLE_SESSION_OPTIONS(X)                                                                                        \
  /* ---- resources */                                                                                                  \
  X(uint32_t, threads, 1, 1, 256, kCreation, "compute threads of this session")                                          \
  X(uint32_t, window, 0, 0, 1u << 16, kCreation, "attention window in positions (0: the archive's)")                     \
  X(std::string, tool_index_path, "", 0, 0, kCreation,                                                                  \
    "file of persistent tool embeddings for retrieval (empty: none)")                                                    \
  X(uint32_t, max_new_tokens, 256, 1, 1u << 16, kTurn, "call budget per turn, in tokens")                               \
  X(uint32_t, max_think_tokens, 96, 0, 4096, kTurn,                                                                     \
    "reasoning budget per turn, in tokens (the trained reasoning lines are 20-60)")                                     \
  X(uint32_t, max_input_tokens, 4096, 1, 1u << 20, kTurn, "longest turn text (a query or a tool result), in tokens")     \
  X(uint32_t, window_requests, 0, 0, 1u << 20, kTurn,                                                                   \
    "the window shows the conversation from the N-th most recent request on (1: the current one, read as a "           \
    "session's first; 0: the whole window); applies from the next request")                                            \
  /* ---- what the caller asks of the call (OpenAI's tool_choice and parallel_tool_calls) */                             \
  X(bool, require_call, false, 0, 1, kTurn,                                                                             \
    "the turn's answer holds a call: the grammar admits no refusal while a tool is declared")                          \
  X(uint32_t, max_calls, 0, 0, 1u << 10, kTurn, "at most this many calls in one turn (0: as many as the plan asks)")    \
  /* ---- naming the tool */                                                                                            \
  X(uint32_t, retrieval_top_k, 5, 1, 1u << 16, kTurn, "more declared tools than this: retrieval picks this many")       \
  X(float, tool_score_bias, 100.0f, 0.0f, 1e6f, kTurn,                                                                  \
    "logit bonus per unit of retrieval similarity for the tokens that name a call (0 off)")                             \
  X(float, lexical_weight, 1.0f, 0.0f, 1e6f, kTurn,                                                                     \
    "weight of the request's word overlap with a tool's schema, added to the head's similarity (0 off)")                \
  X(float, refusal_score_penalty, 40.0f, 0.0f, 1e6f, kTurn,                                                             \
    "logit penalty on refusing per unit of the best tool's score above refusal_score_threshold (0 off)")                \
  X(float, refusal_score_threshold, 0.6f, -1e6f, 1e6f, kTurn, "best tool score above which refusing is penalised")      \
  X(float, no_tool_bias, 60.0f, 0.0f, 1e6f, kTurn,                                                                      \
    "logit bonus on refusing per unit of the best tool's head cosine below no_tool_cosine, when no tool shares a "      \
    "word with the request (0 off; the defaults fit the default model's head)")                                         \
  X(float, no_tool_cosine, 0.3f, -1e6f, 1e6f, kTurn, "head cosine below which refusing gains no_tool_bias")             \
  X(float, unsaid_id_penalty, 0.6f, 0.0f, 1e6f, kTurn,                                                                  \
    "naming penalty (retrieval-score units) on a tool that requires an identifier the conversation does not say "      \
    "(0 off)")                                                                                                          \
  /* ---- the reasoning */                                                                                              \
  X(bool, reasoning_names, true, 0, 1, kTurn,                                                                           \
    "the reasoning's head is a declared tool's name or a refusal, and its keys the planned tool's keys")                \
  X(float, reasoning_refusal_penalty, 2.0f, 0.0f, 1e6f, kTurn, "logit penalty on a reasoning that starts as a refusal")  \
  X(bool, distinct_plan_spans, true, 0, 1, kTurn,                                                                       \
    "a quoted span of the plan does not repeat, hold or lie inside an earlier span of the same call's plan")            \
  X(uint32_t, reasoning_beams, 2, 1, kMaxReasoningBeams, kTurn,                                                                          \
    "the reasoning is the best of N hypotheses of a beam search (1: greedy, the fastest)")                              \
  X(bool, refuse_unlisted_enum_values, true, 0, 1, kTurn,                                                               \
    "refuse when the plan gives an enum key a word of the request that the key does not list")                          \
  X(bool, refuse_unplanned_required_values, true, 0, 1, kTurn,                                                          \
    "refuse when the plan needs no arguments but the tool requires a value the request must say")                       \
  /* ---- the call's values */                                                                                          \
  X(float, copy_bias, kInf, 0.0f, kInf, kTurn,                                                                          \
    "logit bonus for tokens that keep a string value a copy of the conversation's text (inf: a copy whenever one "      \
    "fits)")                                                                                                            \
  X(float, date_time_bias, kInf, 0.0f, kInf, kTurn,                                                                     \
    "logit bonus for the dates and times the conversation says, in date/time strings, and the codes of the "           \
    "currencies and languages it names, in arguments asking for such codes")                                           \
  X(float, quantity_bias, kInf, 0.0f, kInf, kTurn,                                                                      \
    "logit bonus for the quantities the conversation says (\"5 minutes\"), converted to a number argument's "          \
    "declared unit")                                                                                                    \
  X(float, enum_word_bias, 8.0f, 0.0f, kInf, kTurn, "logit bonus for the enum values sharing the most words with the request") \
  X(float, record_id_bias, kInf, 0.0f, kInf, kTurn,                                                                     \
    "logit bonus, in identifier arguments, for the id of the tool result's record the request names")                  \
  X(bool, distinct_argument_values, true, 0, 1, kTurn, "a string argument does not repeat another's value in one call") \
  /* ---- after the call */                                                                                             \
  X(bool, drop_echoed_arguments, true, 0, 1, kTurn,                                                                     \
    "drop an optional argument that is empty or repeats another argument's value")                                      \
  X(bool, drop_unsaid_numbers, true, 0, 1, kTurn,                                                                       \
    "drop an optional number argument whose value the conversation does not say")                                      \
  X(bool, order_from_to_pairs, true, 0, 1, kTurn,                                                                       \
    "swap a from/to pair of arguments that the request's 'from X' / 'to Y' words put the other way round")
// clang-format on

struct SessionOptions {
#define NEEDLE_OPTION_FIELD(type, name, def, lo, hi, scope, help) type name = def;
  NEEDLE_SESSION_OPTIONS(NEEDLE_OPTION_FIELD)
#undef NEEDLE_OPTION_FIELD
  static constexpr uint32_t kMaxReasoningBeams = needle::kMaxReasoningBeams;
};

// One row of the table.
struct OptionInfo {
  std::string_view name, type, help;
  double min, max;
  OptionScope scope;
};

// Calls f(info, field) for each option in table order (field: a reference
// into `o`, const when `o` is).
template <class Options, class F>
void ForEachOption(Options& o, F&& f) {
#define NEEDLE_OPTION_VISIT(type, name, def, lo, hi, scope, help) \
  f(OptionInfo{#name, #type, help, double(lo), double(hi), OptionScope::scope}, o.name);
  NEEDLE_SESSION_OPTIONS(NEEDLE_OPTION_VISIT)
#undef NEEDLE_OPTION_VISIT
}

// Throws Error(kInvalidArgument) naming the first option outside its range
// (or a NaN).
void CheckOptions(const SessionOptions& o);
// The options as a JSON object, every key in table order; inf as "inf".
nlohmann::ordered_json OptionsToJson(const SessionOptions& o);
// Sets the options `j` (an object) names, all or nothing: an unknown key, a
// value of the wrong type or out of range throws Error(kInvalidArgument)
// naming the key, and `o` is unchanged.
void ApplyOptionsJson(const nlohmann::json& j, SessionOptions& o);
// Sets one option from text ("12", "0.5", "inf", "true"/"false"); throws
// naming it.
void SetOptionFromText(SessionOptions& o, std::string_view name, std::string_view text);
// The table as JSON: [{"name", "type", "default", "min", "max", "scope", "help"}].
nlohmann::ordered_json DescribeOptions();

}  // namespace needle
