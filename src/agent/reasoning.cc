// The turn's reasoning (its plan: which tool, which spans of the request go
// to which keys): greedy, or the best of reasoning_beams hypotheses of a beam
// search; with reasoning_names its heads are declared tools' names, the
// planned tool's keys, or a refusal (Session::OpenToolHeads).
#include <algorithm>
#include <cmath>

#include "agent/session.h"
#include "io/tokenizer_blob.h"  // fixed marker ids

namespace needle {

namespace {

// Byte k of a reasoning head written `lead` + `head` + `tail` (tail 0: none).
char HeadByte(std::string_view lead, std::string_view head, char tail, size_t k) {
  return k < lead.size() ? lead[k] : k < lead.size() + head.size() ? head[k - lead.size()] : tail;
}

}  // namespace

void Session::OpenToolHeads(bool name_bias, std::string_view lead, bool after_result, std::string_view plan) {
  static constexpr std::string_view kRefusal = "no declared tool", kQuote = "'";
  static constexpr std::string_view kNoArguments = ": no arguments needed";
  const float best_score = name_bias ? BestNameScore() : 0.0f;
  reason_heads_.clear();
  head_lead_ = lead;
  for (uint32_t t : active_) {
    // A tool the plan has already called without arguments is not planned
    // again: the same call twice ("get_steps: no arguments needed |
    // get_steps: no arguments needed") is one call.
    if (opt_.distinct_plan_spans && !plan.empty()) {
      const std::string& name = tools_[t]["name"].get_ref<const std::string&>();
      bool planned = false;
      for (size_t at = plan.find(kNoArguments); at != std::string_view::npos && !planned; at = plan.find(kNoArguments, at + 1)) {
        const size_t start = at >= name.size() ? at - name.size() : std::string_view::npos;
        planned = start != std::string_view::npos && plan.compare(start, name.size(), name) == 0 &&
                  (start == 0 || plan[start - 1] == ' ');
      }
      if (planned) continue;
    }
    const float bonus = name_bias ? opt_.tool_score_bias * (name_scores_[t] - best_score) : 0.0f;
    reason_heads_.push_back({tools_[t]["name"].get_ref<const std::string&>(), bonus, ReasonHead::kTool, t});
  }
  if (after_result) {
    // After a tool result, the other plan is "nothing more to call" in one of
    // the default model's words; answering is no refusal, so no penalty.
    static constexpr std::string_view kDone[] = {"done", "result received", "request complete", "the tool reported an error"};
    for (std::string_view d : kDone) reason_heads_.push_back({d, 0.0f, ReasonHead::kFixed, 0});
    return;
  }
  // Both fixed heads refuse: "no declared tool ...", "'x' is not an allowed b of T (...)".
  const float refusal = refusal_bias_ - opt_.reasoning_refusal_penalty;
  reason_heads_.push_back({kRefusal, refusal, ReasonHead::kFixed, 0});
  reason_heads_.push_back({kQuote, refusal, ReasonHead::kFixed, 0});
}

bool Session::OpenKeyHeads(uint32_t tool, uint64_t planned) {
  const grammar::ToolGrammar& g = matcher_->grammar();
  reason_heads_.clear();
  head_lead_ = " ";  // "-> key"
  if (tool >= g.tools().size()) return false;
  // A call takes each key once: a second span for a key the segment planned
  // already is a span meant for another key (or none).
  const std::vector<std::string>& keys = g.nodes[g.tools()[tool].args].prop_names;
  for (uint32_t pass = 0; pass < 2 && reason_heads_.empty(); ++pass) {
    for (uint32_t i = 0; i < keys.size(); ++i) {
      if (pass == 0 && i < 64 && ((planned >> i) & 1)) continue;
      reason_heads_.push_back({keys[i], 0.0f, ReasonHead::kKey, tool, i});
    }
  }
  return !reason_heads_.empty();
}

void Session::StepCandidates::Reset(uint32_t capacity, bool with_log_probs) {
  n = 0, cap = std::clamp<uint32_t>(capacity, 1, SessionOptions::kMaxReasoningBeams), log_probs = with_log_probs;
  top = -INFINITY, sum = 0.0;
}

void Session::StepCandidates::Add(int32_t id, float value, bool head_done, int32_t tool, int32_t key) {
  if (log_probs) {
    if (value > top) {
      sum = (top == -INFINITY ? 0.0 : sum * std::exp(top - value)) + 1.0;
      top = value;
    } else {
      sum += std::exp(double(value) - top);
    }
  }
  if (n == cap && !(value > at[n - 1].value)) return;
  // Sorted insert, best first; an equal value goes after (the first one met wins ties, as an argmax).
  uint32_t i = n < cap ? n++ : n - 1;
  for (; i > 0 && at[i - 1].value < value; --i) at[i] = at[i - 1];
  at[i] = {id, value, head_done, tool, key};
}

void Session::ReasoningCursor::Clear() {
  think.clear(), bytes.clear();
  span = {};
  head_start = 0, head_open = false, plan_tool = -1, planned_keys = 0, last = -1, finished = false, score = 0.0;
}

void Session::HeadCandidates(std::string_view written, StepCandidates& out) {
  const Tokenizer& tok = model_->tokenizer();
  // Each head with each of its separators ("name:" / "name ", "key;" / "key ",
  // a fixed phrase alone) that `written` still fits, once per step; a token
  // then only has to continue one of them, and its first byte must be one
  // they expect next (unless one is complete already: then any byte fits it).
  auto tails = [](const ReasonHead& h) {
    return h.kind == ReasonHead::kTool ? std::string_view(": ") : h.kind == ReasonHead::kKey ? std::string_view("; ") : std::string_view();
  };
  head_alive_.assign(reason_heads_.size() * 2, 0);
  uint64_t next_bytes[4] = {};
  bool any_byte = false;
  for (size_t i = 0; i < reason_heads_.size(); ++i) {
    const ReasonHead& h = reason_heads_[i];
    const std::string_view t = tails(h);
    for (size_t v = 0; v < std::max<size_t>(t.size(), 1); ++v) {
      const char tail = t.empty() ? 0 : t[v];
      const size_t m = head_lead_.size() + h.text.size() + (t.empty() ? 0 : 1);
      bool fits = true;
      for (size_t k = 0; k < std::min(written.size(), m) && fits; ++k) fits = written[k] == HeadByte(head_lead_, h.text, tail, k);
      if (!fits) continue;
      head_alive_[2 * i + v] = 1;
      if (written.size() >= m) {
        any_byte = true;
      } else {
        const uint8_t b = uint8_t(HeadByte(head_lead_, h.text, tail, written.size()));
        next_bytes[b >> 6] |= uint64_t(1) << (b & 63);
      }
    }
  }
  for (size_t w = 0; w < text_mask_.size(); ++w) {
    for (uint32_t bits = text_mask_[w]; bits; bits &= bits - 1) {
      const int32_t id = int32_t(w * 32 + __builtin_ctz(bits));
      if (size_t(id) >= logits_.size()) continue;
      const std::string_view bytes = tok.TokenBytes(id);
      const bool end = id == int32_t(kThinkEndId);
      if (bytes.empty() && !end) continue;
      if (!end && !any_byte && !((next_bytes[uint8_t(bytes[0]) >> 6] >> (uint8_t(bytes[0]) & 63)) & 1)) continue;
      // The best bonus among the heads the token fits: a tool's name then ':'
      // or ' '; a key then ';' or ' ', or the reasoning's end after a whole key;
      // a fixed phrase.
      float bonus = -INFINITY;
      bool done = false;
      const ReasonHead* fits = nullptr;
      for (size_t i = 0; i < reason_heads_.size(); ++i) {
        const ReasonHead& h = reason_heads_[i];
        if (!head_alive_[2 * i] && !head_alive_[2 * i + 1]) continue;
        int fit = 0;
        if (end) {
          fit = h.kind == ReasonHead::kKey && written.size() == head_lead_.size() + h.text.size() ? 2 : 0;
        } else {
          const std::string_view t = tails(h);
          for (size_t v = 0; v < std::max<size_t>(t.size(), 1); ++v) {
            if (!head_alive_[2 * i + v]) continue;
            // The token's bytes against the head from where `written` ends.
            const char tail = t.empty() ? 0 : t[v];
            const size_t m = head_lead_.size() + h.text.size() + (t.empty() ? 0 : 1);
            int f = 1;
            for (size_t k = written.size(); k < std::min(written.size() + bytes.size(), m) && f; ++k) {
              f = bytes[k - written.size()] == HeadByte(head_lead_, h.text, tail, k);
            }
            if (f) fit = std::max(fit, written.size() + bytes.size() >= m ? 2 : 1);
          }
        }
        if (fit == 0 || h.bonus < bonus) continue;
        done = (h.bonus == bonus && done) || fit == 2;  // a complete head among the best ones
        if (fit == 2 || !fits || h.bonus > bonus) fits = &h;
        bonus = h.bonus;
      }
      if (!fits) continue;
      out.Add(id, logits_[size_t(id)] + bonus, done, done && fits->kind == ReasonHead::kTool ? int32_t(fits->tool) : -1,
              done && fits->kind == ReasonHead::kKey ? int32_t(fits->key) : -1);
    }
  }
  if (out.n == 0) {  // (no text token starts a head: not expected with a real vocabulary) free text, the head closed
    for (size_t w = 0; w < text_mask_.size(); ++w) {
      for (uint32_t bits = text_mask_[w]; bits; bits &= bits - 1) {
        const int32_t id = int32_t(w * 32 + __builtin_ctz(bits));
        if (size_t(id) < logits_.size()) out.Add(id, logits_[size_t(id)], true, -1);
      }
    }
  }
}

void Session::ReasoningCandidates(const ReasoningCursor& c, StepCandidates& out) {
  // A quoted span of the reasoning ("'span' -> key") is a copy of the
  // conversation whenever one fits (with copy_bias > 0): the plan's values
  // are what the call copies next.
  bool copying = false;
  if (opt_.copy_bias > 0.0f && c.span.open &&
      grammar::MarkCopyTokens(*model_->trie(), evidence_.copy_source(), c.span.state, c.span.nonempty, "'", grammar::CopySource::End::kWord,
                               copy_mask_, copy_walk_)) {
    for (size_t w = 0; w < mask_.size(); ++w) copying |= (copy_mask_[w] &= text_mask_[w]) != 0;
  }
  if (c.head_open) return HeadCandidates(std::string_view(c.bytes).substr(c.head_start), out);
  const uint32_t* allowed = copying ? copy_mask_.data() : text_mask_.data();
  const Tokenizer& tok = model_->tokenizer();
  const bool spans = opt_.distinct_plan_spans && !c.head_open && span_check_.Read(c.bytes);
  // (Unless the rule leaves no token: then any.)
  for (bool distinct = spans;; distinct = false) {
    for (size_t w = 0; w < mask_.size(); ++w) {
      for (uint32_t bits = allowed[w]; bits; bits &= bits - 1) {
        const int32_t id = int32_t(w * 32 + __builtin_ctz(bits));
        if (size_t(id) >= logits_.size()) continue;
        // (Only a token with a quote opens or closes a span; inside one, any
        // token may go on along an earlier span while the span so far does.)
        if (distinct && (span_check_.AnyTokenMay() || ((quote_mask_[w] >> (id & 31)) & 1)) &&
            span_check_.TokenRepeats(tok.TokenBytes(id), c.bytes.empty() ? ' ' : c.bytes.back())) {
          continue;
        }
        out.Add(id, logits_[size_t(id)], false, -1);
      }
    }
    if (out.n > 0 || !distinct) break;
  }
}

void Session::AdvanceReasoning(ReasoningCursor& c, const StepCandidate* k, double lp, const ReasoningRules& rules) {
  c.last = k ? k->id : -1;
  c.score += lp;
  if (!k || k->id == int32_t(kThinkEndId)) {
    c.finished = true;
    return;
  }
  if (c.head_open) {
    c.head_open = !k->head_done;
    if (k->head_done && k->tool >= 0) c.plan_tool = k->tool;
    if (k->head_done && k->key >= 0 && k->key < 64) c.planned_keys |= uint64_t(1) << k->key;
  }
  const std::string_view piece = model_->tokenizer().TokenBytes(k->id);
  c.think.push_back(k->id);
  c.bytes.append(piece);
  c.span.Feed(evidence_.copy_source(), piece);
  auto ends_with = [&](std::string_view tail) {
    return c.bytes.size() >= tail.size() && c.bytes.compare(c.bytes.size() - tail.size(), tail.size(), tail) == 0;
  };
  // The plan's heads ("name: 'span' -> key | name2: ..."). (Tokens carry the
  // space before a word: the heads after " |" and "->" start with it.)
  if (rules.plan_heads && !c.head_open && !c.span.open) {
    if (ends_with(" |")) {
      // The next call's plan: the tool planned already gets no push (as in SpendNameScore).
      if (rules.name_bias && c.plan_tool >= 0) SpendNameScore(c.plan_tool);
      c.head_open = true, c.head_start = c.bytes.size(), c.plan_tool = -1, c.planned_keys = 0;
      OpenToolHeads(rules.name_bias, " ", rules.after_result, c.bytes);
    } else if (c.plan_tool >= 0 && ends_with("->") && OpenKeyHeads(uint32_t(c.plan_tool), c.planned_keys)) {
      c.head_open = true, c.head_start = c.bytes.size();  // "'span' -> key": one of the tool's keys
    }
  }
  Feed(std::span<const int32_t>(&k->id, 1), true);
  c.finished = c.think.size() >= opt_.max_think_tokens || EndsInLoop(c.think);
}

void Session::SwapHypothesis(BeamSlot& slot) {
  decoding_ = decoding_ == slot.state.get() ? state_.get() : slot.state.get();
  logits_.swap(slot.logits);
  std::swap(confidence_pool_, slot.pool);
  reason_heads_.swap(slot.heads);
  std::swap(head_lead_, slot.head_lead);
  name_scores_.swap(slot.name_scores);
  name_spent_.swap(slot.name_spent);
  std::swap(reasoning_, slot.cursor);
}

void Session::CopyHypothesis(const BeamSlot& from, BeamSlot& to) {
  // (Assignments into vectors that have grown once: no allocation.)
  to.state->CopyFrom(*from.state, /*with_sinks=*/false);
  to.logits = from.logits;
  to.pool = from.pool;
  to.heads = from.heads;
  to.head_lead = from.head_lead;
  to.name_scores = from.name_scores;
  to.name_spent = from.name_spent;
  to.cursor = from.cursor;
}

void Session::PrepareBeamSlots() {
  const uint32_t beams = std::min(opt_.reasoning_beams, SessionOptions::kMaxReasoningBeams);
  if (beam_epoch_ == sink_epoch_ && beam_slots_.size() == beams) return;
  beam_slots_.clear();  // (the old states go before the new ones are allocated)
  beam_slots_.resize(beams);
  for (BeamSlot& slot : beam_slots_) {
    // (Chunks of one token: a hypothesis is only ever fed one at a time. The
    // sink rows stay state_'s: a new sink block makes new slots.)
    slot.state = model_->fast().NewState({state_->sink_length(), opt_.window, 1, false, state_.get()});
    slot.logits.assign(logits_.size(), 0.0f);
    slot.pool = confidence_pool_;
    slot.cursor.think.reserve(opt_.max_think_tokens);
    slot.cursor.bytes.reserve(size_t(opt_.max_think_tokens) * 8);
  }
  slot_steps_.resize(beams);
  expansions_.reserve(size_t(beams) * (beams + 1));  // each live hypothesis: `beams` tokens, or itself finished
  beam_epoch_ = sink_epoch_;
}

void Session::Reason(const ReasoningRules& rules) {
  const uint32_t beams = std::min(opt_.reasoning_beams, SessionOptions::kMaxReasoningBeams);
  reasoning_.Clear();
  reasoning_.finished = opt_.max_think_tokens == 0;
  reasoning_.head_open = rules.plan_heads;
  if (rules.plan_heads) OpenToolHeads(rules.name_bias, "", rules.after_result);
  if (beams <= 1) {  // greedy
    while (!reasoning_.finished) {
      step_.Reset(1, false);
      ReasoningCandidates(reasoning_, step_);
      AdvanceReasoning(reasoning_, step_.n ? &step_.at[0] : nullptr, 0.0, rules);
    }
    return;
  }
  // Beam search: `live` slots hold the hypotheses (finished ones included);
  // each step every unfinished one offers its `beams` best tokens, and the
  // `beams` best continuations survive, until all of them are finished.
  PrepareBeamSlots();
  for (BeamSlot& slot : beam_slots_) slot.state->AttachPools(model_->confidence() ? confidence_pools_ : nullptr, 1);
  {  // slot 0: this turn so far
    BeamSlot& first = beam_slots_[0];
    first.state->CopyFrom(*state_, /*with_sinks=*/false);
    first.logits = logits_, first.pool = confidence_pool_, first.heads = reason_heads_, first.head_lead = head_lead_;
    first.name_scores = name_scores_, first.name_spent = name_spent_;
    first.cursor.Clear();
    first.cursor.finished = reasoning_.finished, first.cursor.head_open = reasoning_.head_open;
  }
  uint32_t live[SessionOptions::kMaxReasoningBeams], num_live = 1;
  live[0] = 0;
  uint32_t free_slots[SessionOptions::kMaxReasoningBeams];
  for (;;) {
    expansions_.clear();
    for (uint32_t j = 0; j < num_live; ++j) {
      BeamSlot& slot = beam_slots_[live[j]];
      if (slot.cursor.finished) {
        expansions_.push_back({live[j], -1, slot.cursor.score});
        continue;
      }
      StepCandidates& step = slot_steps_[live[j]];
      step.Reset(beams, true);
      SwapHypothesis(slot);
      ReasoningCandidates(reasoning_, step);
      SwapHypothesis(slot);
      if (step.n == 0) {  // (nothing allowed: not expected) the hypothesis ends here
        slot.cursor.finished = true, slot.cursor.last = -1;
        expansions_.push_back({live[j], -1, slot.cursor.score});
      }
      for (uint32_t k = 0; k < step.n; ++k) expansions_.push_back({live[j], int32_t(k), slot.cursor.score + step.LogProb(k)});
    }
    // Ranked by log-probability per token (a sum would favour the shortest
    // plans: dropped arguments, refusals), a reasoning cut short (budget,
    // loop) after every other; ties keep the earlier one.
    for (BeamExpansion& e : expansions_) {
      const ReasoningCursor& c = beam_slots_[e.slot].cursor;
      const bool closed = e.k >= 0 || c.last == int32_t(kThinkEndId);
      e.key = e.score / double(std::max<size_t>(c.think.size() + (closed ? 1 : 0), 1));
      if (!closed) e.key -= 1e9;
    }
    for (size_t i = 1; i < expansions_.size(); ++i) {  // (insertion sort: a few dozen entries, no allocation)
      const BeamExpansion e = expansions_[i];
      size_t j = i;
      for (; j > 0 && expansions_[j - 1].key < e.key; --j) expansions_[j] = expansions_[j - 1];
      expansions_[j] = e;
    }
    if (expansions_.size() > beams) expansions_.resize(beams);
    bool unfinished = false;
    for (const BeamExpansion& e : expansions_) unfinished |= e.k >= 0;
    if (!unfinished) {  // every survivor is finished: the best one wins
      BeamSlot& best = beam_slots_[expansions_[0].slot];
      SwapHypothesis(best);
      decoding_ = nullptr;
      state_->CopyFrom(*best.state, /*with_sinks=*/false);
      break;
    }
    // Slots: a parent's first continuation (or its carried finished
    // hypothesis) keeps its slot, later ones take free slots as copies of
    // the parent, made before any parent moves on.
    bool used[SessionOptions::kMaxReasoningBeams] = {};
    for (const BeamExpansion& e : expansions_) used[e.slot] = true;
    uint32_t num_free = 0;
    for (uint32_t i = 0; i < beams; ++i)
      if (!used[i]) free_slots[num_free++] = i;
    bool claimed[SessionOptions::kMaxReasoningBeams] = {};
    uint32_t target[SessionOptions::kMaxReasoningBeams];
    for (size_t x = 0; x < expansions_.size(); ++x) {
      const uint32_t parent = expansions_[x].slot;
      if (!claimed[parent]) {
        claimed[parent] = true, target[x] = parent;
      } else {
        target[x] = free_slots[--num_free];
        CopyHypothesis(beam_slots_[parent], beam_slots_[target[x]]);
      }
    }
    num_live = 0;
    for (size_t x = 0; x < expansions_.size(); ++x) {
      const BeamExpansion& e = expansions_[x];
      BeamSlot& slot = beam_slots_[target[x]];
      live[num_live++] = target[x];
      if (e.k < 0) continue;
      const StepCandidates& step = slot_steps_[e.slot];
      SwapHypothesis(slot);
      AdvanceReasoning(reasoning_, &step.at[e.k], step.LogProb(uint32_t(e.k)), rules);
      SwapHypothesis(slot);
    }
  }
}

}  // namespace needle
