// The stages of a turn around the reasoning and the call (Session::TurnOrThrow):
// the turn's context, the naming preference, the plan read from the
// reasoning, and the envelope.
#include <algorithm>
#include <cmath>

#include "agent/call_guarantees.h"
#include "agent/session.h"
#include "base/error.h"
#include "grammar/validate.h"
#include "io/tokenizer_blob.h"  // fixed marker ids
#include "text/prompt.h"

namespace needle {

void Session::PrefillTurn(TurnKind kind, std::string_view text, uint32_t call_budget, TurnStats& stats) {
  const Tokenizer& tok = model_->tokenizer();
  std::string turn_text, rendered;
  if (kind == TurnKind::kQuery) {
    PrepareSinks(text, &stats.prefill_s, &stats.prefill_n);
    request_.assign(text);
    request_terms_ = LexicalTerms(text);
    evidence_.SetRecordIds({});
    call_rules_.BeginRequest(*grammar_, request_terms_);
    // A request the window shows alone (window_requests 1) is rendered as a
    // session's first: behind the floor it follows the sinks exactly as the
    // first request did, so turn 1,000 reads what turn 1 read.
    turn_text = turns_ == 0 || opt_.window_requests == 1 ? FirstQueryText(text) : UserTurnText(text);
  } else {
    if (!state_ || sinks_dirty_ || turns_ == 0) {
      throw Error(ErrorCode::kInvalidState, "a tool result needs a previous call in this session (send a query first)");
    }
    // Results are rendered compactly as in training; text that is not JSON becomes a JSON string.
    nlohmann::ordered_json result = nlohmann::ordered_json::parse(text, nullptr, false);
    if (result.is_discarded()) result = std::string(text);
    rendered = result.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    turn_text = ToolResultTurnText(rendered);
    std::vector<std::string> ids;
    if (std::string id = RecordNamedBy(result, request_terms_); !id.empty()) ids.push_back(std::move(id));
    evidence_.SetRecordIds(std::move(ids));
    text = rendered;  // (for the copy source: what the model sees)
  }
  std::vector<int32_t> ids;
  tok.EncodeContinuation(turn_text, ids);
  if (ids.size() > opt_.max_input_tokens) {
    throw Error(ErrorCode::kBudget, "the input has " + std::to_string(ids.size()) + " tokens, more than max_input_tokens (" +
                                        std::to_string(opt_.max_input_tokens) + ")");
  }
  ids.push_back(int32_t(kThinkId));
  // With the window held to the last window_requests requests, so is the copy
  // source: a value copied from a request the model no longer sees ("Tokyo"
  // from 900 turns back) is not one the conversation gives it.
  if (kind == TurnKind::kQuery && opt_.window_requests > 0) evidence_.KeepTextsOfLastRequests(opt_.window_requests - 1);
  evidence_.Remember(text, kind == TurnKind::kQuery, facts_.is_null() ? std::string() : RenderSystemFacts(facts_), pins_);
  if (kind == TurnKind::kQuery && opt_.window_requests > 0) {
    // The window starts at the window_requests-th most recent request (a
    // reset or rebuilt sink block leaves only the sinks: no earlier request).
    WindowSinkCache& cache = state_->cache();
    if (cache.tokens() <= int64_t(state_->sink_length())) request_starts_.clear();
    request_starts_.push_back(cache.tokens());
    if (request_starts_.size() > opt_.window_requests) request_starts_.erase(request_starts_.begin());
    cache.SetWindowFloor(request_starts_.front());
  }
  if (model_->confidence()) {
    confidence_pool_ = confidence_at_sinks_;  // the head scores the sink block plus this turn
    state_->AttachPools(confidence_pools_, 1);
  }
  turn_ids_.clear();
  turn_ids_.reserve(ids.size() + opt_.max_think_tokens + call_budget + 64);  // no growth while decoding
  turn_ids_.insert(turn_ids_.end(), ids.begin(), ids.end());
  const auto t = Clock::now();
  Feed(ids, true);
  stats.prefill_s += Since(t);
  stats.prefill_n += ids.size();
}

bool Session::PrepareNaming(TurnKind kind) {
  const bool name_bias = opt_.tool_score_bias > 0.0f && tool_scores_.size() == tools_.size();
  // A tool the ranking rates highly makes refusing less likely (query turns,
  // until a call is named): the tokens that close the calls array lose
  // refusal_score_penalty x (best active score - refusal_score_threshold).
  refusal_bias_ = 0.0f;
  if (name_bias && kind == TurnKind::kQuery && opt_.refusal_score_penalty > 0.0f) {
    float best = -INFINITY;
    for (uint32_t i : active_) best = std::max(best, tool_scores_[i]);
    if (best > opt_.refusal_score_threshold) refusal_bias_ = -opt_.refusal_score_penalty * (best - opt_.refusal_score_threshold);
  }
  if (name_bias && kind == TurnKind::kQuery && opt_.no_tool_bias > 0.0f && tool_cosines_.size() == tools_.size() && !active_.empty()) {
    // No tool is similar: the head's best cosine is low and no tool shares a
    // word with the request (the lexical part of the score; nothing with
    // lexical_weight 0). The words keep misspelt or oddly phrased requests
    // for a tool that names their subject from being refused.
    float best = -INFINITY, words = 0.0f;
    for (uint32_t i : active_) best = std::max(best, tool_cosines_[i]), words = std::max(words, tool_scores_[i] - tool_cosines_[i]);
    if (best < opt_.no_tool_cosine && words <= 0.0f) refusal_bias_ += opt_.no_tool_bias * (opt_.no_tool_cosine - best);
  }
  if (kind == TurnKind::kQuery) chain_called_.clear();
  if (name_bias) ResetNameScores();
  return name_bias;
}

void Session::BridgeToCall(TurnStats& stats) {
  const std::vector<int32_t>& think = reasoning_.think;
  turn_ids_.insert(turn_ids_.end(), think.begin(), think.end());
  stats.decode_n += think.size();
  // </think>, the newline and <tool_call> exactly as the training target spells them.
  // (EncodeContinuation clears its output: the newline is encoded on its own.)
  std::vector<int32_t> bridge;
  model_->tokenizer().EncodeContinuation("\n", bridge);
  bridge.insert(bridge.begin(), int32_t(kThinkEndId));
  bridge.push_back(int32_t(kToolCallId));
  turn_ids_.insert(turn_ids_.end(), bridge.begin(), bridge.end());
  Feed(bridge, true);
}

Session::CallPlan Session::ReadPlan(TurnKind kind) {
  CallPlan plan;
  for (int32_t id : reasoning_.think) plan.reasoning.append(model_->tokenizer().TokenBytes(id));
  const bool closed = reasoning_.last == int32_t(kThinkEndId);
  // The calls follow the reasoning's plan: once the model writes a call, it
  // writes as many as the reasoning planned (it often plans two and closes
  // after one); a refusal stays possible. A reasoning cut short (budget,
  // loop) may not have planned them all, so it sets no maximum; one without
  // a plan (another model's free-form reasoning) sets nothing.
  plan.calls = PlannedCalls(plan.reasoning);
  plan.max_calls = closed ? plan.calls : 0;
  // A finished reasoning that says why no tool can be called is the answer.
  const bool planned_query = opt_.reasoning_names && kind == TurnKind::kQuery && closed;
  if (planned_query && opt_.refuse_unlisted_enum_values) plan.refusal_reason = UnlistedEnumValue(plan.reasoning, tools_);
  if (planned_query && plan.refusal_reason.empty() && opt_.refuse_unplanned_required_values) {
    plan.refusal_reason = UnplannedRequiredValue(plan.reasoning, tools_, !facts_.is_null() && !facts_.empty());
  }
  plan.refuses = planned_query && !plan.refusal_reason.empty();
  return plan;
}

Envelope Session::FinishEnvelope(TurnKind kind, const CallPlan& plan, const DecodedCall& call, const TurnStats& stats) {
  const Tokenizer& tok = model_->tokenizer();
  std::string call_text;
  for (int32_t id : call.tokens) call_text.append(tok.TokenBytes(id));
  ++turns_;
  Envelope env;
  env.reasoning = plan.reasoning;
  env.warnings = warnings_;
  if (!plan.refusal_reason.empty()) {
    env.warnings.push_back((opt_.require_call ? "the plan refused (" : "refused: ") + plan.refusal_reason +
                           (opt_.require_call ? "), but the caller requires a call" : ""));
  }
  if (call.looped) {
    env.warnings.push_back("the call fell into a repeating loop and was completed by the grammar");
  } else if (call.truncated) {
    env.warnings.push_back("the call reached max_new_tokens (" + std::to_string(call.budget) + ") and was completed by the grammar");
  }
  env.prefill_tps = stats.prefill_s > 0 ? double(stats.prefill_n) / stats.prefill_s : 0.0;
  env.decode_tps = stats.decode_s > 0 ? double(stats.decode_n) / stats.decode_s : 0.0;
  env.peak_ram_mb = PeakRssMb();
  env.prefill_tokens = stats.prefill_n, env.decode_tokens = stats.decode_n;
  if (state_) {
    const WindowSinkCache& cache = state_->cache();
    env.sink_tokens = cache.sinks_stored();
    env.window_capacity = cache.geometry().window;
    env.window_tokens = std::min<uint64_t>(uint64_t(cache.tokens()) - env.sink_tokens, env.window_capacity);
  }
  auto error = [&](ErrorCode code, const std::string& message) {
    last_type_ = EnvelopeType::kError;
    Envelope err = ErrorEnvelope(code, message);
    err.reasoning = env.reasoning;
    err.function_calls = nlohmann::ordered_json::parse(call_text, nullptr, false);
    if (err.function_calls.is_discarded()) err.function_calls = nlohmann::ordered_json::array();
    err.prefill_tps = env.prefill_tps, err.decode_tps = env.decode_tps;
    err.prefill_tokens = env.prefill_tokens, err.decode_tokens = env.decode_tokens;
    err.sink_tokens = env.sink_tokens, err.window_tokens = env.window_tokens, err.window_capacity = env.window_capacity;
    return err;
  };
  if (const auto bad = grammar::ValidateCall(call_text, *grammar_)) {
    return error(ErrorCode::kInvalidCall, "the generated call fails its schema: " + bad->message);
  }
  env.function_calls = nlohmann::ordered_json::parse(call_text);
  // Format guarantees (agent/call_guarantees.h), then the envelope rules.
  TrimStringValues(env);
  if (const std::string bad = NonFiniteNumber(env); !bad.empty()) return error(ErrorCode::kInvalidCall, bad);
  KeepWrittenSigns(env, *grammar_, evidence_.said_numbers());
  std::string clamped = ClampedStatedNumber(env, *grammar_, evidence_.said_numbers());
  if (clamped.empty()) clamped = PlannedNumberOutOfBounds(plan.reasoning, env, *grammar_, evidence_.said_numbers());
  if (!clamped.empty()) {
    // A value the request states outside a declared bound is not clamped into
    // range: the turn refuses, and says why; where the caller requires a
    // call, it is an error naming the value instead.
    if (opt_.require_call) return error(ErrorCode::kInvalidCall, "no valid call: " + clamped);
    env.function_calls = nlohmann::ordered_json::array();
    env.warnings.push_back("refused: " + clamped);
  }
  DropRepeatedCalls(env);
  DropRepeatedArrayItems(env, request_);
  if (opt_.drop_echoed_arguments) DropEchoedArguments(env, tools_);
  if (opt_.drop_unsaid_numbers) DropUnsaidOptionalNumbers(env, tools_, evidence_.said_numbers());
  if (opt_.order_from_to_pairs && kind == TurnKind::kQuery) OrderFromToPairs(env, tools_, request_);
  if (!env.function_calls.empty()) {
    env.type = EnvelopeType::kCall;
    for (const auto& c : env.function_calls) {
      if (const int t = matcher_->grammar().FindTool(c["name"].get_ref<const std::string&>()); t >= 0) chain_called_.push_back(uint32_t(t));
    }
  } else {
    env.type = kind == TurnKind::kQuery ? EnvelopeType::kRefuse : EnvelopeType::kRespond;
  }
  call_probability_ = std::exp(call.log_p);
  if (model_->confidence()) {
    float logit = 0.0f;
    confidence_pool_.Output(&logit);
    const double head = 1.0 / (1.0 + std::exp(-double(logit)));
    env.confidence = std::min(head, call_probability_);
  }
  last_type_ = env.type;
  return env;
}

}  // namespace needle
