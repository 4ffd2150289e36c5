#include "decoding_flags.h"

namespace needle::cli {

std::vector<FlagSpec> DecodingFlags() {
  return {
      {"max-new-tokens", "N", "call budget per turn (default 256)"},
      {"max-think-tokens", "N", "reasoning budget per turn (default 96)"},
      {"tool-score-bias", "B", "logit bonus per unit of retrieval similarity when naming a call (default 100; 0 off)"},
      {"refusal-score-penalty", "P", "logit penalty per unit of best tool score above the threshold for refusing (default 40; 0 off)"},
      {"refusal-score-threshold", "T", "best tool score above which refusing is penalised (default 0.6)"},
      {"no-tool-bias", "B",
       "logit bonus for refusing per unit of the best tool's head cosine below --no-tool-cosine, when no tool shares a word with the "
       "request (default 60; 0 off)"},
      {"no-tool-cosine", "C", "head cosine below which refusing gains (default 0.3, the default model's head)"},
      {"unsaid-id-penalty", "P",
       "naming penalty (retrieval-score units) on a tool needing an identifier the conversation does not hold (default 0.6; 0 off)"},
      {"record-id-bias", "B",
       "logit bonus for the identifier of the result's record the request names, in identifier arguments (default inf: a rule; 0 off)"},
      {"any-case", "", "let copies change the case the conversation writes them in (by default a copy keeps it when it can)"},
      {"lexical-weight", "W", "weight of request/schema word overlap added to the retrieval similarity (default 1; 0 off)"},
      {"copy-bias", "B", "logit bonus for copying argument text from the conversation (default inf: a copy whenever one fits; 0 off)"},
      {"date-time-bias", "B",
       "logit bonus for the dates and times the conversation says, in date/time format strings, and for the codes of the "
       "currencies and languages it names, in arguments asking for such codes (default inf: a rule; 0 off)"},
      {"quantity-bias", "B",
       "logit bonus for the quantities the conversation says (\"5 minutes\"), converted to a number argument's declared unit (default "
       "inf: a rule; 0 off)"},
      {"enum-word-bias", "B", "logit bonus for the enum values sharing the most words with the request (default 8; 0 off, inf always)"},
      {"keep-echoed-arguments", "", "keep optional arguments that are empty or repeat another argument's value (dropped by default)"},
      {"keep-unsaid-numbers", "", "keep optional number arguments whose value the conversation does not say (dropped by default)"},
      {"keep-pair-order", "", "keep a from/to pair of arguments as decoded (by default swapped when the request's 'from X' / 'to Y' words say the other way)"},
      {"allow-repeated-values", "", "let a string argument repeat another's value in the same call (by default it may not)"},
      {"allow-function-word-values", "", "let a free string argument be a lone function word (\"to\", \"the\"; by default it may not)"},
      {"allow-repeated-spans", "", "let a plan span repeat, hold or lie inside an earlier span of the same call's plan (by default it may not)"},
      {"call-despite-refusal-plan", "",
       "decode the call even when the reasoning says why no tool can be called (by default such a turn refuses)"},
      {"call-unlisted-enum-values", "",
       "decode the call even when the plan gives an enum key a word of the request the key does not list (by default such a turn refuses)"},
      {"call-unplanned-required-values", "",
       "decode the call even when the plan needs no arguments but the tool requires a value the request must say (by default such a "
       "turn refuses)"},
      {"free-reasoning-names", "", "let the reasoning name any tool (by default its head is a declared tool's name or a refusal)"},
      {"reasoning-refusal-penalty", "P", "logit penalty on a reasoning that starts as a refusal (default 2)"},
      {"reasoning-beams", "N",
       "the reasoning is the best of N hypotheses of a beam search (1: greedy; at most 8; default 2)"},
      {"window-requests", "N",
       "the window shows the conversation from the N-th most recent request on (1: the current one; default 0: the whole window)"},
  };
}

void ReadDecodingFlags(const Args& args, SessionOptions& o) {
  auto number = [&](const char* flag, float& value) { value = static_cast<float>(args.GetDouble(flag, value)); };
  o.max_new_tokens = static_cast<uint32_t>(args.GetInt("max-new-tokens", o.max_new_tokens));
  o.max_think_tokens = static_cast<uint32_t>(args.GetInt("max-think-tokens", o.max_think_tokens));
  number("tool-score-bias", o.tool_score_bias);
  number("refusal-score-penalty", o.refusal_score_penalty);
  number("refusal-score-threshold", o.refusal_score_threshold);
  number("no-tool-bias", o.no_tool_bias);
  number("no-tool-cosine", o.no_tool_cosine);
  number("unsaid-id-penalty", o.unsaid_id_penalty);
  number("record-id-bias", o.record_id_bias);
  o.exact_case = !args.Has("any-case");
  number("lexical-weight", o.lexical_weight);
  number("copy-bias", o.copy_bias);
  number("date-time-bias", o.date_time_bias);
  number("quantity-bias", o.quantity_bias);
  number("enum-word-bias", o.enum_word_bias);
  o.drop_echoed_arguments = !args.Has("keep-echoed-arguments");
  o.drop_unsaid_numbers = !args.Has("keep-unsaid-numbers");
  o.order_from_to_pairs = !args.Has("keep-pair-order");
  o.distinct_argument_values = !args.Has("allow-repeated-values");
  o.distinct_plan_spans = !args.Has("allow-repeated-spans");
  o.function_word_values_excluded = !args.Has("allow-function-word-values");
  o.refusal_plan_refuses = !args.Has("call-despite-refusal-plan");
  o.refuse_unlisted_enum_values = !args.Has("call-unlisted-enum-values");
  o.refuse_unplanned_required_values = !args.Has("call-unplanned-required-values");
  o.reasoning_names = !args.Has("free-reasoning-names");
  number("reasoning-refusal-penalty", o.reasoning_refusal_penalty);
  o.window_requests = static_cast<uint32_t>(args.GetInt("window-requests", o.window_requests));
  const int64_t beams = args.GetInt("reasoning-beams", o.reasoning_beams);
  if (beams < 1 || beams > int64_t(SessionOptions::kMaxReasoningBeams)) {
    throw Error(ErrorCode::kInvalidArgument, "--reasoning-beams must be 1 to " + std::to_string(SessionOptions::kMaxReasoningBeams));
  }
  o.reasoning_beams = static_cast<uint32_t>(beams);
}

}  // namespace needle::cli
