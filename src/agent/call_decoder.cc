// The turn's constrained call (Session::DecodeCall): greedy under the
// grammar and the chain of call rules (agent/call_rules.h), as many calls as
// the plan asks, at most the call budget, completed by the grammar when the
// budget runs out or the call falls into a loop; then </tool_call><|im_end|>
// EOS fed exactly as in training.
#include <algorithm>
#include <cmath>

#include "agent/session.h"
#include "base/error.h"
#include "io/tokenizer_blob.h"  // fixed marker ids

namespace needle {
namespace {

bool IsNumberByte(char c) { return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'; }

}  // namespace

bool EndsInLoop(std::span<const int32_t> ids) {
  if (ids.size() < kLoopTokens) return false;
  const std::span<const int32_t> tail = ids.last(kLoopTokens);
  for (uint32_t p = 1; p <= kLoopMaxPeriod; ++p) {
    bool cycle = true;
    for (uint32_t i = p; i < kLoopTokens && cycle; ++i) cycle = tail[i] == tail[i - p];
    if (cycle) return true;
  }
  return false;
}

Session::DecodedCall Session::DecodeCall(const CallPlan& plan, uint32_t call_budget, bool name_bias, TurnStats& stats) {
  const Tokenizer& tok = model_->tokenizer();
  if (name_bias) ResetNameScores();  // (the reasoning's plans spent scores of their own)
  matcher_->Reset();
  matcher_->SetCopySource(opt_.copy_bias > 0.0f ? &evidence_.copy_source() : nullptr);
  planned_calls_ = plan.calls;
  // (A plan of no calls sets no count: as before the caller's limit existed.)
  uint32_t min_calls = plan.calls, max_calls = plan.calls > 0 ? plan.max_calls : 0;
  if (opt_.max_calls > 0) {  // the caller's limit (parallel_tool_calls: false is 1)
    max_calls = max_calls == 0 ? opt_.max_calls : std::min(max_calls, opt_.max_calls);
    min_calls = std::min(min_calls, max_calls);
  }
  if (min_calls > 0 || max_calls > 0) matcher_->SetCallCount(min_calls, max_calls);
  // The caller requires a call (tool_choice "required" or a named tool): no
  // refusal is admitted, whatever the plan says.
  matcher_->RequireCall(opt_.require_call);
  // A plan that says why no tool can be called is the answer: the grammar
  // admits no tool name this turn (restored below).
  const bool refuses = plan.refuses && !opt_.require_call;
  if (refuses) matcher_->RestrictTools({});
  struct ActiveToolsBack {
    Session* s;
    bool on;
    ~ActiveToolsBack() {
      if (on) s->RestrictToActiveTools();
    }
  } active_tools_back{this, refuses};
  DecodedCall out;
  out.budget = call_budget;
  std::vector<int32_t>& call = out.tokens;
  call_bytes_.clear();
  for (;;) {
    call_step_.Begin(logits_);
    CallView view{tok, *matcher_, call_bytes_, evidence_, name_bias ? std::span<const float>(name_scores_) : std::span<const float>(),
                  refusal_bias_};
    call_rules_.Apply(view, call_step_);
    // A call that fell into a loop ("p. p. p. ...", a string no copy rule
    // holds) never leaves it: it ends here, completed as at the budget.
    out.looped = EndsInLoop(call);
    if (call.size() >= call_budget || out.looped) {
      out.truncated = !call_step_.can_close;
      break;
    }
    const int32_t id = call_step_.Argmax();
    if (id < 0) throw Error(ErrorCode::kInternal, "grammar: no allowed token");
    // The confidence's call probability is the decoder's (SPEC §10): what the
    // model assigned, moved by the same bonuses and rules that picked the
    // token (the model's own masked probability was near 0 on a third of the
    // exact calls, whose values the copy / date / naming rules had chosen).
    out.log_p += call_step_.LogProb(id);
    if (id == int32_t(kToolCallEndId)) break;
    if (call.size() + 8 < call_budget && ForceSaidArgumentKey(id, call, stats)) continue;
    const bool naming = name_bias && matcher_->BeforeOrInName();
    if (!matcher_->AcceptToken(id)) throw Error(ErrorCode::kInternal, "grammar: an allowed token was rejected");
    call_bytes_.append(tok.TokenBytes(id));
    if (naming) SpendNameScore(matcher_->NamedTool());
    if (refusal_bias_ != 0.0f && matcher_->NamedTool() >= 0) refusal_bias_ = 0.0f;  // a call is named: no refusal left
    call.push_back(id);
    turn_ids_.push_back(id);
    Feed(std::span<const int32_t>(&id, 1), true);
    ++stats.decode_n;
  }
  if (out.truncated) {
    // Out of budget mid-call: the grammar's shortest valid ending, byte-exact.
    std::string rest;
    if (!matcher_->CompletionBytes(&rest)) throw Error(ErrorCode::kInternal, "grammar: no completion");
    std::vector<int32_t> tail;
    grammar::EncodeCompletion(tok, rest, tail);
    for (int32_t id : tail) {
      if (!matcher_->AcceptToken(id)) throw Error(ErrorCode::kInternal, "grammar: completion token rejected");
      call.push_back(id);
    }
    turn_ids_.insert(turn_ids_.end(), tail.begin(), tail.end());
    Feed(tail, false);
  }
  std::vector<int32_t> closing{int32_t(kToolCallEndId), int32_t(kImEndId), tok.eos_id()};
  turn_ids_.insert(turn_ids_.end(), closing.begin(), closing.end());
  Feed(closing, false);
  return out;
}

bool Session::ForceSaidArgumentKey(int32_t id, std::vector<int32_t>& call, TurnStats& stats) {
  // A date, time or quantity the request says goes into the call's unwritten
  // date / time / unit argument when the model would close the arguments
  // without it (it leaves optional ones out): the key is written instead, and
  // the value rule picks the value. Only as the arguments close, so the
  // model's own order of keys stays (forcing the key first disturbed the others).
  if (!(std::isinf(opt_.date_time_bias) || std::isinf(opt_.quantity_bias) || (opt_.enum_word_bias > 0.0f && planned_calls_ == 1))) return false;
  const Tokenizer& tok = model_->tokenizer();
  if (!matcher_->ClosesArguments(tok.TokenBytes(id))) return false;
  uint64_t written = 0;
  bool opened = false;
  std::string bytes;  // what must come before the key
  int32_t args = matcher_->BetweenArguments(&written, &opened);
  if (args < 0 && matcher_->ArgumentsPending(&bytes)) args = int32_t(matcher_->grammar().tools()[size_t(matcher_->NamedTool())].args);
  if (args < 0) {
    // The token ends a value and the arguments at once (`"}}]`): its
    // bytes before the closing brace come first.
    const std::string_view token = tok.TokenBytes(id);
    if (const size_t close = matcher_->ArgumentsCloseAt(token); close != std::string_view::npos && close > 0) {
      grammar::GrammarState at;
      at.CopyFrom(matcher_->state());
      if (matcher_->AcceptBytes(token.substr(0, close))) {
        args = matcher_->BetweenArguments(&written, &opened);
        if (args >= 0) bytes.assign(token.substr(0, close));
      }
      matcher_->RestoreState(at);
    }
  }
  const std::string key = args >= 0 ? UnwrittenSaidValueKey(uint32_t(args), written) : "";
  if (key.empty()) return false;
  bytes += std::string(!opened ? "{" : written ? "," : "") + nlohmann::json(key).dump() + ":";
  std::vector<int32_t> forced;
  tok.EncodeContinuation(bytes, forced);
  grammar::GrammarState before;
  before.CopyFrom(matcher_->state());
  bool ok = true;
  for (int32_t f : forced) ok = ok && matcher_->AcceptToken(f);
  if (!ok) {
    matcher_->RestoreState(before);  // (not expected: the key is declared and unwritten)
    return false;
  }
  for (int32_t f : forced) call_bytes_.append(tok.TokenBytes(f));
  call.insert(call.end(), forced.begin(), forced.end());
  turn_ids_.insert(turn_ids_.end(), forced.begin(), forced.end());
  Feed(forced, true);
  stats.decode_n += forced.size();
  return true;
}

bool Session::SaysOneEnumValue(uint32_t node) const {
  if (!(opt_.enum_word_bias > 0.0f) || planned_calls_ != 1) return false;
  return SaidEnumValue(request_, matcher_->grammar().nodes[node].values) >= 0;
}

std::string Session::UnwrittenSaidValueKey(uint32_t args_node, uint64_t written) const {
  const grammar::ToolGrammar& g = matcher_->grammar();
  const grammar::Node& n = g.nodes[args_node];
  if (n.kind != grammar::NodeKind::kObject) return "";
  for (size_t i = 0; i < n.prop_names.size() && i < 64; ++i) {
    if ((written >> i) & 1) continue;
    if (g.nodes[n.prop_nodes[i]].kind == grammar::NodeKind::kLiteral) {
      if (SaysOneEnumValue(n.prop_nodes[i])) return n.prop_names[i];
      continue;
    }
    const bool number = g.nodes[n.prop_nodes[i]].kind == grammar::NodeKind::kNumber;
    if (!std::isinf(number ? opt_.quantity_bias : opt_.date_time_bias)) continue;
    const std::vector<std::string>* values = evidence_.SaidValues(n.prop_nodes[i]);
    if (!values || evidence_.IsRecordId(values)) continue;  // (identifiers: only where the model writes one)
    for (const std::string& v : *values) {
      if (number) {
        // Not yet written as a number of any call (":300," but not ":1300" or ":3000").
        bool held = false;
        for (size_t at = call_bytes_.find(v); at != std::string::npos && !held; at = call_bytes_.find(v, at + 1)) {
          const size_t after = at + v.size();
          held = at > 0 && !IsNumberByte(call_bytes_[at - 1]) && (after == call_bytes_.size() || !IsNumberByte(call_bytes_[after]));
        }
        if (!held) return n.prop_names[i];
        continue;
      }
      // A value said but not yet written: for a date-time, neither its date nor its time.
      const size_t t = v.find('T');
      const std::string_view date = std::string_view(v).substr(0, t);
      if (call_bytes_.find(date) == std::string::npos &&
          (t == std::string::npos || call_bytes_.find(std::string_view(v).substr(t + 1)) == std::string::npos)) {
        return n.prop_names[i];
      }
    }
  }
  return "";
}

}  // namespace needle
