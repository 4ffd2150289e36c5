// The call's decoding rules (agent/call_rules.h), one a file in this folder.
// Each says what it guarantees or prefers, and why, where it is defined;
// docs/agent.md has the table of their measured effects.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include "agent/call_rules.h"

namespace needle::rules {

// Format guarantee: a free string value never starts with JSON punctuation
// ({ } [ ] : , or a backslash): no value is ":{}},{" or "]]".
class NoPunctuationValue final : public CallRule {
 public:
  std::string_view name() const override { return "no_punctuation_value"; }
  void Prepare(size_t words) override { keep_.assign(words, 0); }
  void Apply(CallView& view, CallStep& step) override;

 private:
  std::vector<uint32_t> keep_;
};

// A required one-word string argument does not repeat another required
// argument's value in the same call ("USD" as both currencies of a
// conversion, the street as the city). (distinct_argument_values)
class DistinctRequiredValues final : public CallRule {
 public:
  std::string_view name() const override { return "distinct_required_values"; }
  void Prepare(size_t words) override { keep_.assign(words, 0), written_.reserve(64); }
  void Apply(CallView& view, CallStep& step) override;

 private:
  std::vector<uint32_t> keep_;
  std::vector<std::pair<std::string_view, std::string_view>> written_;  // (key, value) views into the call
};

// Format guarantee: a number is written in plain decimal notation unless the
// conversation itself writes one with an exponent ("9e+44" is no value a
// request gave).
class NumberAsWritten final : public CallRule {
 public:
  std::string_view name() const override { return "number_as_written"; }
  void Prepare(size_t words) override { keep_.assign(words, 0); }
  void Apply(CallView& view, CallStep& step) override;

 private:
  std::vector<uint32_t> keep_;
};

// Inside a date / time / date-time string, a currency or language code, an
// identifier after a lookup, or a number with a declared unit: the values the
// conversation says in that form (TurnEvidence::SaidValues) get the option's
// bonus (date_time_bias, record_id_bias, quantity_bias; INFINITY: only them).
class SaidValue final : public CallRule {
 public:
  SaidValue(float date_time_bias, float quantity_bias, float record_id_bias)
      : date_time_bias_(date_time_bias), quantity_bias_(quantity_bias), record_id_bias_(record_id_bias) {}
  std::string_view name() const override { return "said_value"; }
  void Prepare(size_t words) override { keep_.assign(words, 0); }
  void Apply(CallView& view, CallStep& step) override;

 private:
  float date_time_bias_, quantity_bias_, record_id_bias_;
  std::vector<uint32_t> keep_;
};

// Argument text (strings, numbers) copied from the conversation: the tokens
// that keep the value a copy get copy_bias (INFINITY: only them, whenever one
// fits).
class CopyValue final : public CallRule {
 public:
  explicit CopyValue(float bias) : bias_(bias) {}
  std::string_view name() const override { return "copy_value"; }
  void Prepare(size_t words) override { copy_.assign(words, 0); }
  void Apply(CallView& view, CallStep& step) override;

 private:
  float bias_;
  std::vector<uint32_t> copy_;
};

// Inside an enum value: the values sharing the most words with the request
// get enum_word_bias ("a delicates cycle" -> "delicates").
class EnumWords final : public CallRule {
 public:
  explicit EnumWords(float bias) : bias_(bias) {}
  std::string_view name() const override { return "enum_words"; }
  void Prepare(size_t words) override { keep_.assign(words, 0); }
  void SetTools(const grammar::ToolGrammar& grammar) override;
  void BeginRequest(const grammar::ToolGrammar& grammar, std::span<const std::string> request_terms) override;
  void Apply(CallView& view, CallStep& step) override;

 private:
  float bias_;
  std::vector<uint32_t> keep_;
  // kLiteral nodes with string values: the values' LexicalTerms (per tool set).
  std::vector<std::pair<uint32_t, std::vector<std::vector<std::string>>>> terms_;
  // kLiteral node -> per trie rank, 1 = a favoured value (per request; only
  // enums where some value is favoured).
  std::unordered_map<uint32_t, std::vector<uint8_t>> favoured_;
};

// Naming a call: tool_score_bias x (the best ranking score among the tools a
// token still fits - the best overall), so the tool the retrieval ranking
// prefers is preferred; refusing (closing the calls array before any call)
// gets the turn's refusal bias.
class ToolNaming final : public CallRule {
 public:
  explicit ToolNaming(float bias) : bias_(bias) {}
  std::string_view name() const override { return "tool_naming"; }
  void Apply(CallView& view, CallStep& step) override;

 private:
  float bias_;
};

}  // namespace needle::rules
