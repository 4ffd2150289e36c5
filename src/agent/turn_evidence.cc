#include "agent/turn_evidence.h"

#include <algorithm>
#include <sstream>

#include "agent/retrieval.h"      // NamesAnIdentifier, SaysAnIdentifier
#include "said/codes.h"        // SpokenCurrencyCodes, SpokenLanguageCodes, CodeFormatNamedBy
#include "said/dates_times.h"  // SpokenDatesAndTimes, FormatNamedBy, ParseIsoDate
#include "said/numbers.h"      // SpelledNumbers, WrittenNumbers
#include "text/tokenizer.h"

namespace needle {
namespace {

bool IsDigit(char c) { return c >= '0' && c <= '9'; }

// "1e5", "2.5E-3": a digit, e or E, an optional sign, a digit.
bool WritesExponent(std::string_view t) {
  for (size_t i = 1; i + 1 < t.size(); ++i) {
    if ((t[i] != 'e' && t[i] != 'E') || !IsDigit(t[i - 1])) continue;
    size_t j = i + 1;
    if (t[j] == '+' || t[j] == '-') ++j;
    if (j < t.size() && IsDigit(t[j])) return true;
  }
  return false;
}

// A property's "description" in a tool schema ("" when it has none).
std::string PropertyDescription(const nlohmann::ordered_json& tool, const std::string& property) {
  const auto params = tool.find("parameters");
  if (params == tool.end() || !params->is_object()) return "";
  const auto props = params->find("properties");
  if (props == params->end() || !props->is_object()) return "";
  const auto prop = props->find(property);
  if (prop == props->end() || !prop->is_object()) return "";
  const auto description = prop->find("description");
  return description != prop->end() && description->is_string() ? description->get<std::string>() : "";
}

}  // namespace

void TurnEvidence::SetTools(std::shared_ptr<const grammar::ToolGrammar> grammar, const nlohmann::ordered_json& tools) {
  grammar_ = std::move(grammar);
  const grammar::ToolGrammar& g = *grammar_;
  // Number arguments with a declared unit; where one object has several of a
  // dimension (hours, minutes, seconds) they split an amount: none of them.
  unit_nodes_.clear(), unit_node_values_.clear();
  // String arguments whose description spells a date or time layout the
  // schema does not declare, or asks for a currency or language code.
  described_formats_.clear();
  // String arguments naming an identifier ("track_id"): after a lookup, the
  // identifier of the record the request names (RecordNamedBy).
  id_nodes_.clear(), record_id_values_.clear();
  for (size_t t = 0; t < g.tools().size() && t < tools.size(); ++t) {
    const grammar::Node& args = g.nodes[g.tools()[t].args];
    if (args.kind != grammar::NodeKind::kObject) continue;
    std::vector<std::pair<uint32_t, said::Unit>> found;
    for (size_t i = 0; i < args.prop_names.size(); ++i) {
      const grammar::Node& n = g.nodes[args.prop_nodes[i]];
      const std::string description = PropertyDescription(tools[t], args.prop_names[i]);
      if (n.kind == grammar::NodeKind::kNumber) {
        const said::Unit unit = said::DeclaredUnit(args.prop_names[i], description);
        if (unit.dimension != said::Dimension::kNone) found.emplace_back(args.prop_nodes[i], unit);
      }
      if (n.kind != grammar::NodeKind::kString || !n.format.empty()) continue;
      if (NamesAnIdentifier(args.prop_names[i])) id_nodes_.push_back(args.prop_nodes[i]);
      if (!n.pattern.empty()) continue;
      std::string_view format = said::FormatNamedBy(description);
      if (format.empty()) format = said::CodeFormatNamedBy(args.prop_names[i], description);
      if (!format.empty()) described_formats_.emplace_back(args.prop_nodes[i], format);
    }
    for (const auto& [node, unit] : found) {
      size_t same = 0;
      for (const auto& other : found) same += other.second.dimension == unit.dimension;
      if (same == 1) unit_nodes_.emplace_back(node, unit);
    }
  }
  unit_node_values_.resize(unit_nodes_.size());
}

void TurnEvidence::ClearTexts() {
  texts_.clear();
  request_flags_.clear();
  id_said_ = false;
}

void TurnEvidence::RestoreTexts(std::vector<std::string> texts, std::vector<uint8_t> request_flags) {
  texts_ = std::move(texts);
  request_flags_ = std::move(request_flags);
  // (A state saved before the flags were kept: every text counts as a request.)
  if (request_flags_.size() != texts_.size()) request_flags_.assign(texts_.size(), 1);
  id_said_ = false;
  for (const std::string& t : texts_) id_said_ = id_said_ || SaysAnIdentifier(t);
}

void TurnEvidence::KeepTextsOfLastRequests(size_t requests) {
  size_t from = texts_.size();
  for (size_t seen = 0; from > 0 && seen < requests;) seen += request_flags_[--from];
  texts_.erase(texts_.begin(), texts_.begin() + std::ptrdiff_t(from));
  request_flags_.erase(request_flags_.begin(), request_flags_.begin() + std::ptrdiff_t(from));
}

void TurnEvidence::Remember(std::string_view text, bool request, std::string_view facts, std::span<const std::string> pins) {
  texts_.emplace_back(text);
  request_flags_.push_back(request ? 1 : 0);
  size_t total = 0;
  for (const std::string& t : texts_) total += t.size();
  size_t drop = 0;
  while (drop + 1 < texts_.size() && total > kCopyTextBytes) total -= texts_[drop++].size();
  texts_.erase(texts_.begin(), texts_.begin() + std::ptrdiff_t(drop));
  request_flags_.erase(request_flags_.begin(), request_flags_.begin() + std::ptrdiff_t(drop));
  id_said_ = false;
  for (const std::string& t : texts_) id_said_ = id_said_ || SaysAnIdentifier(t);
  Recompute(facts, pins);
}

void TurnEvidence::Recompute(std::string_view facts, std::span<const std::string> pins) {
  exponent_written_ = false;
  for (const std::string& t : texts_) exponent_written_ = exponent_written_ || WritesExponent(t);
  std::vector<std::string_view> segments;
  if (!facts.empty()) segments.push_back(facts);
  for (const std::string& pin : pins) segments.push_back(pin);
  for (const std::string& t : texts_) segments.push_back(t);
  // Numbers spelled in words are copies too, as digits ("fifty seven" -> 57),
  // and dates and times said in words, as schemas write them ("September 6,
  // 2025" -> 2025-09-06, "half past 6 pm" -> 18:30; relative days from the
  // system facts' date).
  said::CivilDate today;
  if (const size_t at = facts.find("date: "); at != std::string_view::npos && (at == 0 || facts[at - 1] == '\n')) {
    today = said::ParseIsoDate(facts.substr(at + 6));
  }
  std::vector<std::string> derived;
  derived.reserve(4 * texts_.size());
  date_values_.clear(), time_values_.clear(), date_time_values_.clear();
  currency_values_.clear(), language_values_.clear();
  bool currency_codes = false, language_codes = false;
  for (const auto& [node, format] : described_formats_) {
    currency_codes = currency_codes || format == "currency-code";
    language_codes = language_codes || format == "language-code";
  }
  // Currencies and languages said by name, as codes, where an argument asks for one.
  auto add_codes = [&](const std::string& said, std::vector<std::string>& values) {
    std::istringstream words(said);
    for (std::string w; words >> w;) {
      if (std::find(values.begin(), values.end(), w) == values.end()) values.push_back(w);
    }
    derived.push_back(said);
  };
  for (const std::string& t : texts_) {
    if (currency_codes) add_codes(said::SpokenCurrencyCodes(t), currency_values_);
    if (language_codes) add_codes(said::SpokenLanguageCodes(t), language_values_);
    derived.push_back(said::SpelledNumbers(t));
    derived.push_back(said::SpokenDatesAndTimes(t, today));
    // Format strings take these whole: a date said with a time also makes a date-time.
    std::vector<std::string> dates, times;
    std::istringstream words(derived.back());
    for (std::string w; words >> w;) (w.size() == 10 ? dates : times).push_back(w);
    for (const std::string& d : dates)
      for (const std::string& h : times) date_time_values_.push_back(d + "T" + h);
    date_values_.insert(date_values_.end(), dates.begin(), dates.end());
    time_values_.insert(time_values_.end(), times.begin(), times.end());
  }
  for (const std::string& t : derived) {
    if (!t.empty()) segments.push_back(t);
  }
  copy_source_.Build(segments);
  // Every number those texts write or spell (and, below, their quantities in
  // each unit-declaring argument's unit): an optional number argument the
  // conversation does not say is dropped from the envelope.
  said_numbers_.clear();
  for (std::string_view s : segments) {
    const std::vector<double> n = said::WrittenNumbers(s);
    said_numbers_.insert(said_numbers_.end(), n.begin(), n.end());
  }
  // Quantities said with a unit, in each unit-declaring argument's unit.
  std::vector<said::Quantity> quantities;
  for (const std::string& t : texts_) {
    const std::vector<said::Quantity> q = said::SpokenQuantities(t);
    quantities.insert(quantities.end(), q.begin(), q.end());
  }
  for (size_t k = 0; k < unit_nodes_.size(); ++k) {
    std::vector<std::string>& values = unit_node_values_[k];
    values.clear();
    const bool integer = grammar_->nodes[unit_nodes_[k].first].integer;
    for (const said::Quantity& q : quantities) {
      std::string v = said::QuantityIn(q, unit_nodes_[k].second, integer);
      if (!v.empty() && std::find(values.begin(), values.end(), v) == values.end()) values.push_back(std::move(v));
    }
    for (const std::string& v : values) {
      const std::vector<double> n = said::WrittenNumbers(v);
      said_numbers_.insert(said_numbers_.end(), n.begin(), n.end());
    }
  }
}

std::string_view TurnEvidence::DescribedFormat(uint32_t node) const {
  std::string_view format;
  for (const auto& [described, named] : described_formats_) {
    if (described == node) format = named;
  }
  return format;
}

const std::vector<std::string>* TurnEvidence::SaidValues(uint32_t node) const {
  const grammar::Node& n = grammar_->nodes[node];
  const std::vector<std::string>* values = nullptr;
  if (n.kind == grammar::NodeKind::kString && n.pattern.empty()) {
    std::string_view format = n.format;
    if (const std::string_view described = DescribedFormat(node); !described.empty()) format = described;
    values = format == "date"            ? &date_values_
             : format == "time"          ? &time_values_
             : format == "date-time"     ? &date_time_values_
             : format == "currency-code" ? &currency_values_
             : format == "language-code" ? &language_values_
                                         : nullptr;
  }
  if (n.kind == grammar::NodeKind::kString && std::find(id_nodes_.begin(), id_nodes_.end(), node) != id_nodes_.end()) {
    values = &record_id_values_;
  } else if (n.kind == grammar::NodeKind::kNumber) {
    for (size_t k = 0; k < unit_nodes_.size(); ++k) {
      if (unit_nodes_[k].first == node) values = &unit_node_values_[k];
    }
  }
  return values && !values->empty() ? values : nullptr;
}

}  // namespace needle
