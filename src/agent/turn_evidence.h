// What the conversation says, as the call's decoding rules read it: the
// recent turn texts (the copy source), and the values derived from them that
// fit particular arguments — dates and times for format strings, currency
// and language codes, quantities in an argument's declared unit, the
// identifier of the record a request names, every number written or spelled.
//
// Two parts: tables fixed with the tools (which argument takes what), and the
// per-turn values, rebuilt by Remember() whenever a turn's text is added.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "grammar/copy_source.h"  // CopySource
#include "said/quantities.h"   // Unit
#include "grammar/tool_grammar.h"  // ToolGrammar, Node

namespace needle {

class Tokenizer;

class TurnEvidence {
 public:
  // Recent turn texts kept for copying: kCopyTextBytes in all at most, the newest whole.
  static constexpr size_t kCopyTextBytes = 2048;

  // The argument tables of a tool set (unit-declaring numbers, described
  // formats, identifier strings); forgets the turn texts' derived values.
  void SetTools(std::shared_ptr<const grammar::ToolGrammar> grammar, const nlohmann::ordered_json& tools);
  // Forgets the turn texts (a new sink block, a reset).
  void ClearTexts();
  // Adds a turn's text (a request, or a tool result as the model sees it) and
  // recomputes what the texts say. `facts` is the rendered system facts (its
  // "date: " line resolves relative days), `pins` the pinned spans.
  void Remember(std::string_view text, bool request, std::string_view facts, std::span<const std::string> pins);
  // Forgets the texts older than the `requests` most recent user requests
  // (window_requests; the values are recomputed by the next Remember).
  void KeepTextsOfLastRequests(size_t requests);
  // Restores saved texts (Session::Restore); flags shorter than texts count as requests.
  void RestoreTexts(std::vector<std::string> texts, std::vector<uint8_t> request_flags);

  // The values the conversation says that fit `node` (nullptr when none).
  const std::vector<std::string>* SaidValues(uint32_t node) const;
  // Which kind of said values `values` (from SaidValues) is.
  bool IsRecordId(const std::vector<std::string>* values) const { return values == &record_id_values_; }
  // The date/time/code format a string node's description names ("" when none).
  std::string_view DescribedFormat(uint32_t node) const;
  void SetRecordIds(std::vector<std::string> ids) { record_id_values_ = std::move(ids); }
  const std::vector<std::string>& record_ids() const { return record_id_values_; }

  const std::vector<std::string>& texts() const { return texts_; }
  const std::vector<uint8_t>& request_flags() const { return request_flags_; }
  const grammar::CopySource& copy_source() const { return copy_source_; }
  // Every number the texts (and facts, pins) write or spell, and each
  // unit-declaring argument's quantities as numbers.
  const std::vector<double>& said_numbers() const { return said_numbers_; }
  // A recent text SaysAnIdentifier.
  bool id_said() const { return id_said_; }
  // A recent text writes a number with an exponent ("1e5", "2.5E-3").
  bool exponent_written() const { return exponent_written_; }

 private:
  void Recompute(std::string_view facts, std::span<const std::string> pins);

  std::shared_ptr<const grammar::ToolGrammar> grammar_;
  // Set with the tools.
  std::vector<std::pair<uint32_t, std::string_view>> described_formats_;  // node, "date" / "time" / "currency-code" / "language-code"
  std::vector<std::pair<uint32_t, said::Unit>> unit_nodes_;          // number node, its declared unit
  std::vector<uint32_t> id_nodes_;                                      // string nodes naming an identifier
  // Per turn.
  std::vector<std::string> texts_;     // newest last
  std::vector<uint8_t> request_flags_;  // per text: 1 = a user request, 0 = a tool result
  grammar::CopySource copy_source_;
  std::vector<std::string> date_values_, time_values_, date_time_values_;  // YYYY-MM-DD, HH:MM, both
  std::vector<std::string> currency_values_, language_values_;             // only when an argument asks for codes
  std::vector<std::vector<std::string>> unit_node_values_;                 // parallel to unit_nodes_
  std::vector<std::string> record_id_values_;                              // after a tool result: RecordNamedBy
  std::vector<double> said_numbers_;
  bool id_said_ = false;
  bool exponent_written_ = false;
};

}  // namespace needle
