// The constrained call's decoding rules as a chain (in the shape of
// llama.cpp's sampler chain). Each step of the call:
//
//   logits [vocab] --grammar mask--> allowed tokens (a bit per id)
//                  --rule 1..n-----> fewer allowed tokens, and logit bonuses
//                  --argmax--------> the token; its probability under the
//                                    final distribution is the confidence's
//
// A rule sees what the call is writing (CallView) and edits the step
// (CallStep): it removes tokens, keeps only some (an infinite bonus), or adds
// a finite bonus to some. Rules act one after another in the chain's order,
// and several may act on the same step: an earlier restriction narrows what a
// later rule sees. A restriction that would leave no token is not applied.
// One rule a file in src/agent/rules/; the chain is built in one place
// (MakeCallRules) from the session's options.
//
// Rules are called once or twice per generated token and never allocate
// there: their scratch masks are sized once by Prepare.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/matcher.h"  // GrammarMatcher

namespace needle {

class Tokenizer;
class TurnEvidence;
struct SessionOptions;

// One step's candidates: the allowed tokens and a logit bias per token.
class CallStep {
 public:
  // Sizes the buffers (once per model): `vocab` logits, `words` mask words.
  void Prepare(size_t vocab, size_t words);
  // A new step over these logits: no token allowed yet, no bias.
  void Begin(std::span<const float> logits);

  std::span<uint32_t> allowed() { return allowed_; }
  std::span<const uint32_t> allowed() const { return allowed_; }
  bool IsAllowed(int32_t id) const { return id >= 0 && size_t(id) < logits_.size() && ((allowed_[size_t(id) >> 5] >> (id & 31)) & 1); }
  // Keeps only `keep`'s tokens when that leaves any (returns whether it did).
  bool Restrict(std::span<const uint32_t> keep);
  // `tokens` (a mask) get `bias` added; an infinite bias keeps only them (Restrict).
  void AddBonus(std::span<const uint32_t> tokens, float bias);
  void AddBias(int32_t id, float bias);

  // The allowed token with the highest logit + bias (the lowest id on ties); -1: none.
  int32_t Argmax() const;
  // log P(id) under softmax over the allowed tokens of logit + bias.
  double LogProb(int32_t id) const;
  float Score(int32_t id) const { return logits_[size_t(id)] + bias_[size_t(id)]; }

  bool can_close = false;  // the grammar allows </tool_call> here (set by the grammar link)

 private:
  std::span<const float> logits_;
  std::vector<uint32_t> allowed_;  // [words]
  std::vector<float> bias_;        // [vocab], 0 where no rule added any
  std::vector<uint32_t> biased_;   // [words] ids whose bias_ is set (cleared by Begin)
};

// What the rules read at a step: the grammar's state, the call so far, what
// the conversation says, and this turn's naming scores.
struct CallView {
  const Tokenizer& tok;
  grammar::GrammarMatcher& matcher;
  std::string_view call;      // the calls array written so far
  TurnEvidence& evidence;     // the recent texts and the values they say
  // The tool naming preference (empty scores: none this turn): per declared
  // tool its ranking score (-inf: not active), and the bias on refusing.
  std::span<const float> name_scores;
  float refusal_bias = 0.0f;
};

class CallRule {
 public:
  virtual ~CallRule() = default;
  virtual std::string_view name() const = 0;
  // Buffers sized for the model (mask words, vocabulary).
  virtual void Prepare(size_t /*words*/) {}
  // A new tool set (its grammar compiled): tables a rule keeps per tool set.
  virtual void SetTools(const grammar::ToolGrammar& /*grammar*/) {}
  // A new user request (its LexicalTerms): state a rule keeps per request.
  virtual void BeginRequest(const grammar::ToolGrammar& /*grammar*/, std::span<const std::string> /*request_terms*/) {}
  // Edits the step: called after the earlier links of the chain.
  virtual void Apply(CallView& view, CallStep& step) = 0;
};

class CallRuleChain {
 public:
  void Add(std::unique_ptr<CallRule> rule) { rules_.push_back(std::move(rule)); }
  void Prepare(size_t words) {
    for (auto& r : rules_) r->Prepare(words);
  }
  void SetTools(const grammar::ToolGrammar& g) {
    for (auto& r : rules_) r->SetTools(g);
  }
  void BeginRequest(const grammar::ToolGrammar& g, std::span<const std::string> terms) {
    for (auto& r : rules_) r->BeginRequest(g, terms);
  }
  // The grammar's mask, then each rule in order.
  void Apply(CallView& view, CallStep& step) {
    step.can_close = view.matcher.ComputeMask(step.allowed());
    for (auto& r : rules_) r->Apply(view, step);
  }
  std::vector<std::string_view> names() const {
    std::vector<std::string_view> n;
    for (const auto& r : rules_) n.push_back(r->name());
    return n;
  }

 private:
  std::vector<std::unique_ptr<CallRule>> rules_;
};

// The chain the session's options ask for, in its fixed order (see
// docs/agent.md, "The call's rules").
CallRuleChain MakeCallRules(const SessionOptions& options);

}  // namespace needle
