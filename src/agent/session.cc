#include "agent/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "grammar/codes.h"        // SpokenCurrencyCodes, SpokenLanguageCodes, CodeFormatNamedBy
#include "grammar/dates_times.h"  // SpokenDatesAndTimes, FormatNamedBy
#include "grammar/validate.h"
#include "io/cact_archive.h"     // WriteFileAtomically
#include "io/tokenizer_blob.h"   // fixed marker ids
#include "text/prompt.h"

namespace needle {
namespace {

using Clock = std::chrono::steady_clock;
double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

void MaskSet(uint32_t* m, int32_t id) { m[size_t(id) >> 5] |= 1u << (id & 31); }

nlohmann::ordered_json ToolsArray(const nlohmann::ordered_json& tools) {
  if (tools.is_object() && tools.contains("tools")) return tools["tools"];
  return tools;
}


}  // namespace

Session::Session(std::shared_ptr<const Model> model, SessionOptions options) : model_(std::move(model)), opt_(options) {
  if (!model_) throw Error(ErrorCode::kNoModel, "session: no model");
  if (!(opt_.tool_score_bias >= 0.0f) || std::isinf(opt_.tool_score_bias))
    throw Error(ErrorCode::kInvalidArgument, "session: tool_score_bias must be finite and >= 0");
  if (!(opt_.lexical_weight >= 0.0f) || std::isinf(opt_.lexical_weight))
    throw Error(ErrorCode::kInvalidArgument, "session: lexical_weight must be finite and >= 0");
  if (!(opt_.refusal_score_penalty >= 0.0f) || std::isinf(opt_.refusal_score_penalty) || !std::isfinite(opt_.refusal_score_threshold))
    throw Error(ErrorCode::kInvalidArgument, "session: refusal_score_penalty must be finite and >= 0, refusal_score_threshold finite");
  if (!(opt_.no_tool_bias >= 0.0f) || std::isinf(opt_.no_tool_bias) || !std::isfinite(opt_.no_tool_cosine))
    throw Error(ErrorCode::kInvalidArgument, "session: no_tool_bias must be finite and >= 0, no_tool_cosine finite");
  if (!(opt_.date_time_bias >= 0.0f)) throw Error(ErrorCode::kInvalidArgument, "session: date_time_bias must be >= 0 (0 turns it off)");
  if (!(opt_.enum_word_bias >= 0.0f)) throw Error(ErrorCode::kInvalidArgument, "session: enum_word_bias must be >= 0 (0 turns it off)");
  if (!(opt_.copy_bias >= 0.0f)) throw Error(ErrorCode::kInvalidArgument, "session: copy_bias must be >= 0 (0 turns copying off)");
  if (opt_.reasoning_beams < 1 || opt_.reasoning_beams > SessionOptions::kMaxReasoningBeams)
    throw Error(ErrorCode::kInvalidArgument, "session: reasoning_beams must be 1 to " + std::to_string(SessionOptions::kMaxReasoningBeams));
  if (opt_.threads > 1) pool_ = std::make_unique<ThreadPool>(opt_.threads);
  const Tokenizer& tok = model_->tokenizer();
  const int32_t V = static_cast<int32_t>(model_->config().vocab_size);
  logits_.assign(size_t(V), 0.0f);
  mask_.assign(model_->trie()->mask_words(), 0);
  copy_mask_.assign(model_->trie()->mask_words(), 0);
  case_mask_.assign(model_->trie()->mask_words(), 0);
  case_text_.reserve(512);
  enum_mask_.assign(model_->trie()->mask_words(), 0);
  value_mask_.assign(model_->trie()->mask_words(), 0);
  distinct_mask_.assign(model_->trie()->mask_words(), 0);
  written_values_.reserve(64);
  call_bytes_.reserve(size_t(opt_.max_new_tokens) * 32);
  copy_walk_.assign(size_t(model_->trie()->max_depth()) + 1, 0);
  // Free reasoning may use any text token, and </think> to stop: no control
  // pieces, no other chat marker (they would break the turn structure).
  text_mask_.assign(model_->trie()->mask_words(), 0);
  quote_mask_.assign(model_->trie()->mask_words(), 0);
  for (int32_t id = 0; id < std::min(V, tok.vocab_size()); ++id) {
    const PieceType t = tok.Type(id);
    if (t == PieceType::kControl || t == PieceType::kUnknown) continue;
    if (id >= int32_t(kImStartId) && id <= int32_t(kToolResultEndId) && id != int32_t(kThinkEndId)) continue;
    if (tok.TokenBytes(id).empty() && id != int32_t(kThinkEndId)) continue;
    MaskSet(text_mask_.data(), id);
    if (tok.TokenBytes(id).find('\'') != std::string_view::npos) MaskSet(quote_mask_.data(), id);
  }
  if (const HeadWeights* c = model_->confidence()) {
    confidence_pool_ = ProbePool(*c);
    confidence_at_sinks_ = ProbePool(*c);
  }
  if (const HeadWeights* c = model_->contrastive()) {
    contrastive_pool_ = ProbePool(*c);
    index_.Load(opt_.tool_index_path, c->out);
  }
  SetTools(nlohmann::ordered_json::array());
}

Session::~Session() = default;

namespace {

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

void Session::SetToolsJson(std::string_view tools_json) {
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(tools_json);
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kInvalidJson, std::string("tools: not valid JSON: ") + e.what());
  }
  SetTools(j);
}

void Session::SetTools(const nlohmann::ordered_json& tools_in) {
  const nlohmann::ordered_json tools = ToolsArray(tools_in);
  if (!tools.is_array()) throw Error(ErrorCode::kInvalidArgument, "tools: expected a JSON array of tool schemas");
  RenderToolsJson(tools);  // validates names/shape with the prompt's rules
  auto grammar = grammar::ToolGrammar::Compile(nlohmann::json::parse(tools.dump()));
  tools_ = tools;
  chain_called_.clear();  // (indices into the old tools)
  tool_terms_.clear();
  for (const auto& t : tools_) tool_terms_.push_back(ToolLexicalTerms(t));
  takes_id_.clear();
  for (const auto& t : tools_) takes_id_.push_back(TakesAnIdentifier(t));
  grammar_ = std::move(grammar);
  warnings_ = grammar_->warnings();
  matcher_ = std::make_unique<grammar::GrammarMatcher>(grammar_, model_->trie());
  // The words of every enum's string values (enum_word_bias scores them per request).
  enum_terms_.clear(), enum_favoured_.clear();
  for (uint32_t node = 0; node < grammar_->nodes.size(); ++node) {
    const grammar::Node& n = grammar_->nodes[node];
    if (n.kind != grammar::NodeKind::kLiteral) continue;
    std::vector<std::vector<std::string>> terms(n.values.size());
    bool any = false;
    for (size_t v = 0; v < n.values.size(); ++v) {
      if (n.values[v].is_string()) terms[v] = LexicalTerms(n.values[v].get_ref<const std::string&>()), any = true;
    }
    if (any) enum_terms_.emplace_back(node, std::move(terms));
  }
  // Number arguments with a declared unit; where one object has several of a
  // dimension (hours, minutes, seconds) they split an amount: none of them.
  unit_nodes_.clear(), unit_node_values_.clear();
  for (size_t t = 0; t < grammar_->tools().size() && t < tools_.size(); ++t) {
    const grammar::Node& args = grammar_->nodes[grammar_->tools()[t].args];
    if (args.kind != grammar::NodeKind::kObject) continue;
    std::vector<std::pair<uint32_t, grammar::Unit>> found;
    for (size_t i = 0; i < args.prop_names.size(); ++i) {
      if (grammar_->nodes[args.prop_nodes[i]].kind != grammar::NodeKind::kNumber) continue;
      const std::string description = PropertyDescription(tools_[t], args.prop_names[i]);
      const grammar::Unit unit = grammar::DeclaredUnit(args.prop_names[i], description);
      if (unit.dimension != grammar::Dimension::kNone) found.emplace_back(args.prop_nodes[i], unit);
    }
    for (const auto& [node, unit] : found) {
      size_t same = 0;
      for (const auto& other : found) same += other.second.dimension == unit.dimension;
      if (same == 1) unit_nodes_.emplace_back(node, unit);
    }
  }
  unit_node_values_.resize(unit_nodes_.size());
  // String arguments whose description spells a date or time layout the
  // schema does not declare, or asks for a currency or language code.
  described_formats_.clear();
  for (size_t t = 0; t < grammar_->tools().size() && t < tools_.size(); ++t) {
    const grammar::Node& args = grammar_->nodes[grammar_->tools()[t].args];
    if (args.kind != grammar::NodeKind::kObject) continue;
    for (size_t i = 0; i < args.prop_names.size(); ++i) {
      const grammar::Node& n = grammar_->nodes[args.prop_nodes[i]];
      if (n.kind != grammar::NodeKind::kString || !n.format.empty() || !n.pattern.empty()) continue;
      const std::string description = PropertyDescription(tools_[t], args.prop_names[i]);
      std::string_view format = grammar::FormatNamedBy(description);
      if (format.empty()) format = grammar::CodeFormatNamedBy(args.prop_names[i], description);
      if (!format.empty()) described_formats_.emplace_back(args.prop_nodes[i], format);
    }
  }
  // String arguments naming an identifier ("track_id"): after a lookup, the
  // identifier of the record the request names (RecordNamedBy).
  id_nodes_.clear(), record_id_values_.clear();
  for (size_t t = 0; t < grammar_->tools().size(); ++t) {
    const grammar::Node& args = grammar_->nodes[grammar_->tools()[t].args];
    if (args.kind != grammar::NodeKind::kObject) continue;
    for (size_t i = 0; i < args.prop_names.size(); ++i) {
      const grammar::Node& n = grammar_->nodes[args.prop_nodes[i]];
      if (n.kind == grammar::NodeKind::kString && n.format.empty() && NamesAnIdentifier(args.prop_names[i])) {
        id_nodes_.push_back(args.prop_nodes[i]);
      }
    }
  }
  sinks_dirty_ = true;
  active_.clear();
}

void Session::SetSystem(const nlohmann::ordered_json& facts) {
  RenderSystemFacts(facts);  // validates the keys
  facts_ = facts;
  sinks_dirty_ = true;
}

void Session::PinSpan(std::string_view text) {
  pins_.emplace_back(text);
  sinks_dirty_ = true;
}

void Session::ClearPins() {
  pins_.clear();
  sinks_dirty_ = true;
}

void Session::Bind(const std::string& tool_name, ToolFn fn) { callbacks_[tool_name] = std::move(fn); }

void Session::AddTool(const nlohmann::ordered_json& schema, ToolFn fn) {
  if (!schema.is_object() || !schema.contains("name") || !schema["name"].is_string()) {
    throw Error(ErrorCode::kInvalidArgument, "AddTool: expected a schema object with a string \"name\"");
  }
  nlohmann::ordered_json tools = tools_;
  tools.push_back(schema);
  SetTools(tools);
  Bind(schema["name"].get<std::string>(), std::move(fn));
}

uint64_t Session::state_bytes() const {
  uint64_t bytes = state_ ? state_->bytes() : 0;
  for (const BeamSlot& slot : beam_slots_) bytes += slot.state ? slot.state->bytes() : 0;
  return bytes;
}

void Session::Feed(std::span<const int32_t> ids, bool want_logits) {
  if (ids.empty()) return;
  model_->fast().Forward(decoding_ ? *decoding_ : *state_, ids, want_logits ? logits_.data() : nullptr, false, pool_.get());
}

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

int32_t Session::Argmax(const uint32_t* allowed) const {
  int32_t best = -1;
  float best_v = -INFINITY;
  const size_t words = mask_.size();
  for (size_t w = 0; w < words; ++w) {
    uint32_t bits = allowed[w];
    while (bits) {
      const int32_t id = int32_t(w * 32 + __builtin_ctz(bits));
      bits &= bits - 1;
      if (size_t(id) < logits_.size() && logits_[size_t(id)] > best_v) best_v = logits_[size_t(id)], best = id;
    }
  }
  return best;
}

int32_t Session::ArgmaxWithBonus(const uint32_t* allowed, const uint32_t* bonus, float bias) const {
  int32_t best = -1;
  float best_v = -INFINITY;
  for (size_t w = 0; w < mask_.size(); ++w) {
    for (uint32_t bits = allowed[w]; bits; bits &= bits - 1) {
      const uint32_t bit = bits & (0u - bits);
      const int32_t id = int32_t(w * 32 + __builtin_ctz(bits));
      if (size_t(id) >= logits_.size()) continue;
      const float v = logits_[size_t(id)] + ((bonus[w] & bit) ? bias : 0.0f);
      if (v > best_v) best_v = v, best = id;
    }
  }
  return best;
}

void Session::ResetNameScores() {
  // A tool that needs an identifier the conversation does not hold is the
  // second step of a lookup, not the request's call (unsaid_id_penalty).
  name_base_.assign(tools_.size(), -INFINITY);
  for (uint32_t i : active_) name_base_[i] = tool_scores_[i] - (!id_said_ && takes_id_[i] ? opt_.unsaid_id_penalty : 0.0f);
  name_scores_ = name_base_;
  name_spent_.assign(tools_.size(), 0);
  // After a tool result the ranking is still the request's: the tools its
  // calls named so far (the lookup) get no push, as a second call's tool
  // in one turn (before: the lookup, named again after its own result).
  for (uint32_t t : chain_called_) SpendNameScore(int32_t(t));
}

void Session::SpendNameScore(int32_t tool) {
  if (tool < 0 || size_t(tool) >= name_spent_.size()) return;
  name_spent_[size_t(tool)] = 1;
  float best_unspent = -INFINITY;
  for (uint32_t i : active_)
    if (!name_spent_[i]) best_unspent = std::max(best_unspent, name_base_[i]);
  if (best_unspent == -INFINITY) best_unspent = 0.0f;  // every tool named: no push at all
  for (uint32_t i : active_)
    if (name_spent_[i]) name_scores_[i] = best_unspent;
}

float Session::NamingLogit(int32_t id, float best_score) const {
  const Tokenizer& tok = model_->tokenizer();
  const std::vector<uint32_t>& tool_of_rank = matcher_->grammar().tool_of_rank;
  float v = logits_[size_t(id)];
  uint32_t lo = 0, hi = 0;
  if (id != int32_t(kToolCallEndId) && matcher_->NameCandidates(tok.TokenBytes(id), &lo, &hi)) {
    float fit = -INFINITY;
    for (uint32_t r = lo; r < hi && r < tool_of_rank.size(); ++r) fit = std::max(fit, name_scores_[tool_of_rank[r]]);
    if (fit > -INFINITY) v += opt_.tool_score_bias * (fit - best_score);
  } else if (refusal_bias_ != 0.0f && tok.TokenBytes(id).find(']') != std::string_view::npos) {
    v += refusal_bias_;
  }
  return v;
}

float Session::BestNameScore() const {
  float best_score = -INFINITY;
  for (float s : name_scores_) best_score = std::max(best_score, s);
  return best_score;
}

int32_t Session::ArgmaxNamingCall(double* log_p) const {
  const float best_score = BestNameScore();
  int32_t best = -1;
  // Running log-sum-exp: sum of exp(v - top) over the tokens seen, top their maximum.
  double top = -INFINITY, sum = 0.0;
  for (size_t w = 0; w < mask_.size(); ++w) {
    for (uint32_t bits = mask_[w]; bits; bits &= bits - 1) {
      const int32_t id = int32_t(w * 32 + __builtin_ctz(bits));
      if (size_t(id) >= logits_.size()) continue;
      const double v = NamingLogit(id, best_score);
      if (v > top) {
        sum = (best < 0 ? 0.0 : sum * std::exp(top - v)) + 1.0;
        top = v, best = id;
      } else {
        sum += std::exp(v - top);
      }
    }
  }
  *log_p = best < 0 ? 0.0 : -std::log(sum);
  return best;
}

double Session::LogProbWithBonus(const uint32_t* allowed, const uint32_t* bonus, float bias, int32_t chosen) const {
  return DecoderLogProb(logits_, std::span<const uint32_t>(allowed, mask_.size()), bonus, bias, chosen);
}

void ReasoningSpan::Feed(const grammar::CopySource& source, std::string_view bytes) {
  for (char c : bytes) {
    if (!open) {
      if (c == '\'' && prev == ' ') {
        open = true, nonempty = false, state = grammar::CopySource::kRoot;
      } else if (prev == '\'' && nonempty && grammar::CopySource::IsWordByte(uint8_t(c))) {
        open = true, state = source.Step(source.Step(state, uint8_t('\'')), uint8_t(c));  // an apostrophe
      }
    } else if (c == '\'') {
      open = false;
    } else {
      state = source.Step(state, uint8_t(c));
      nonempty = true;
    }
    prev = c;
  }
}

namespace {

bool EqualFolded(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (grammar::CopySource::Fold(uint8_t(a[i])) != grammar::CopySource::Fold(uint8_t(b[i]))) return false;
  }
  return true;
}

// Up to kMax words of `text` (runs of word bytes); false when it has more.
struct SpanWords {
  static constexpr size_t kMax = 24;
  std::string_view at[kMax];
  size_t n = 0;
  bool Split(std::string_view text) {
    n = 0;
    for (size_t i = 0; i < text.size();) {
      if (!grammar::CopySource::IsWordByte(uint8_t(text[i]))) {
        ++i;
        continue;
      }
      size_t j = i;
      while (j < text.size() && grammar::CopySource::IsWordByte(uint8_t(text[j]))) ++j;
      if (n == kMax) return false;
      at[n++] = text.substr(i, j - i);
      i = j;
    }
    return true;
  }
  // Are a's words a contiguous run of b's?
  static bool Inside(const SpanWords& a, const SpanWords& b) {
    if (a.n == 0 || a.n > b.n) return false;
    for (size_t s = 0; s + a.n <= b.n; ++s) {
      size_t k = 0;
      while (k < a.n && EqualFolded(a.at[k], b.at[s + k])) ++k;
      if (k == a.n) return true;
    }
    return false;
  }
};

// Words a span may share with another without saying the same thing ("the
// workbench" after "the small wrench"). (A word still being written counts
// as what it is so far: "th" is content, "the" is not.)
bool IsFunctionWord(std::string_view w) {
  static constexpr std::string_view kWords[] = {"a", "an", "the", "to", "of", "in", "on", "at", "for", "from", "with", "by", "and", "or", "my", "me", "your", "our", "this", "that"};
  for (std::string_view f : kWords)
    if (EqualFolded(w, f)) return true;
  return false;
}

}  // namespace

bool RepeatedSpanCheck::ReadSpans(std::string_view segment, bool current, bool* open_at_end) {
  // The spans as ReasoningSpan reads them: open at a quote after a space,
  // closed at the next quote unless a word byte follows it (an apostrophe).
  const size_t first = spans_;
  size_t start = 0;
  bool open = false;
  char prev = ' ';
  for (size_t i = 0; i < segment.size(); ++i) {
    const char c = segment[i];
    if (!open) {
      if (c == '\'' && prev == ' ') {
        open = true, start = i + 1;
      } else if (prev == '\'' && spans_ > first && closed_[spans_ - 1].data() + closed_[spans_ - 1].size() == segment.data() + i - 1 &&
                 grammar::CopySource::IsWordByte(uint8_t(c))) {
        open = true, start = size_t(closed_[--spans_].data() - segment.data());  // an apostrophe: the span goes on
      }
    } else if (c == '\'') {
      open = false;
      if (spans_ == kMaxSpans) return false;
      closed_[spans_++] = segment.substr(start, i - start);
    }
    prev = c;
  }
  if (current) {
    open_ = open ? segment.substr(start) : std::string_view();
    *open_at_end = open;
  }
  return true;
}

namespace {

// The tool a plan segment names ("name: ..." or " name: ...").
std::string_view SegmentTool(std::string_view segment) {
  while (!segment.empty() && segment[0] == ' ') segment.remove_prefix(1);
  const size_t colon = segment.find(": ");
  return colon == std::string_view::npos ? std::string_view() : segment.substr(0, colon);
}

}  // namespace

bool RepeatedSpanCheck::Read(std::string_view written) {
  // The current call's segment, and the earlier segments that plan the same
  // tool: a second call of it says other values ("setPace: 'slow' -> pace
  // SLOW | setPace: 'slow' -> pace SLOW" is one call planned twice).
  const size_t bar = written.rfind(" |");
  const std::string_view segment = bar == std::string_view::npos ? written : written.substr(bar + 2);
  const std::string_view tool = SegmentTool(segment);
  spans_ = 0;
  bool open = false;
  for (size_t from = 0; from <= written.size();) {
    size_t end = written.find(" |", from);
    if (end == std::string_view::npos) end = written.size();
    const std::string_view part = written.substr(from, end - from);
    const bool current = end == written.size();
    if (current || (!tool.empty() && SegmentTool(part) == tool)) {
      if (!ReadSpans(part, current, &open)) return false;
    }
    from = end + 2;
  }
  open_now_ = open;
  // An open span so far off every earlier one stays off them until it closes.
  // (Function words alone, "the", may still go on along one.)
  SpanWords words;
  bool content = false;
  if (open && words.Split(open_)) {
    for (size_t k = 0; k < words.n && !content; ++k) content = !IsFunctionWord(words.at[k]);
  }
  runs_along_ = open && spans_ > 0 && (!content || Repeats("", false));
  return spans_ > 0;
}

bool RepeatedSpanCheck::TokenRepeats(std::string_view bytes, char prev) const {
  size_t from = 0;
  if (!open_now_) {
    // A token that opens a span (a quote after a space) starts a new one.
    size_t q = 0;
    for (; q < bytes.size(); ++q)
      if (bytes[q] == '\'' && (q == 0 ? prev : bytes[q - 1]) == ' ') break;
    if (q == bytes.size()) return false;
    from = q + 1;
  }
  const std::string_view rest = bytes.substr(from);
  const size_t q = rest.find('\'');
  const bool closes = q != std::string_view::npos && !(q + 1 < rest.size() && grammar::CopySource::IsWordByte(uint8_t(rest[q + 1])));
  return Repeats(closes ? rest.substr(0, q) : rest, closes, !open_now_);
}

bool RepeatedSpanCheck::Repeats(std::string_view more, bool closes, bool fresh) const {
  const std::string_view open = fresh ? std::string_view() : open_;
  char text[256];  // the open span and `more` (a bounded copy: no allocation)
  if (open.size() + more.size() > sizeof(text)) return false;
  if (!open.empty()) std::memcpy(text, open.data(), open.size());  // (an empty view's data() may be null)
  if (!more.empty()) std::memcpy(text + open.size(), more.data(), more.size());
  const std::string_view span_text(text, open.size() + more.size());
  SpanWords span, earlier;
  if (!span.Split(span_text) || span.n == 0) return false;
  // The last word may go on unless the span closes or a non-word byte ends it.
  const bool partial = !closes && grammar::CopySource::IsWordByte(uint8_t(span_text.back()));
  bool content = false;
  for (size_t k = 0; k < span.n && !content; ++k) content = !IsFunctionWord(span.at[k]);
  for (size_t e = 0; e < spans_; ++e) {
    if (!earlier.Split(closed_[e]) || earlier.n == 0) continue;
    // The span so far runs along the earlier one's words (its last word a
    // prefix of theirs while it may go on) ...
    for (size_t at = 0; content && at + span.n <= earlier.n; ++at) {
      size_t k = 0;
      for (; k < span.n; ++k) {
        const std::string_view w = span.at[k], v = earlier.at[at + k];
        if (!(partial && k + 1 == span.n ? w.size() <= v.size() && EqualFolded(w, v.substr(0, w.size())) : EqualFolded(w, v))) break;
      }
      if (k == span.n) return true;
    }
    // ... or, closed, holds them.
    if (closes && SpanWords::Inside(earlier, span)) {
      for (size_t k = 0; k < earlier.n; ++k)
        if (!IsFunctionWord(earlier.at[k])) return true;
    }
  }
  return false;
}

double DecoderLogProb(std::span<const float> logits, std::span<const uint32_t> allowed, const uint32_t* bonus, float bias,
                      int32_t chosen) {
  auto value = [&](size_t j) {
    return double(logits[j]) + ((bonus && ((bonus[j >> 5] >> (j & 31)) & 1)) ? double(bias) : 0.0);
  };
  const double top = value(size_t(chosen));
  double z = 0.0;
  for (size_t w = 0; w < allowed.size(); ++w) {
    for (uint32_t bits = allowed[w]; bits; bits &= bits - 1) {
      const size_t j = w * 32 + __builtin_ctz(bits);
      if (j < logits.size()) z += std::exp(value(j) - top);
    }
  }
  return -std::log(z);
}

namespace {

// out = the tokens of `allowed` (but </tool_call>) whose bytes `keep` accepts;
// returns whether any is. (The enum and format-value preferences.)
template <typename Keep>
bool MarkAllowed(const Tokenizer& tok, const std::vector<uint32_t>& allowed, std::vector<uint32_t>& out, Keep keep) {
  bool any = false;
  for (size_t w = 0; w < allowed.size(); ++w) {
    uint32_t kept = 0;
    for (uint32_t bits = allowed[w]; bits; bits &= bits - 1) {
      const int32_t id = int32_t(w * 32 + __builtin_ctz(bits));
      if (id != int32_t(kToolCallEndId) && keep(tok.TokenBytes(id))) kept |= bits & (0u - bits);
    }
    out[w] = kept;
    any |= kept != 0;
  }
  return any;
}

}  // namespace

const std::vector<std::string>* Session::SaidValues(uint32_t node) const {
  const grammar::Node& n = matcher_->grammar().nodes[node];
  const std::vector<std::string>* values = nullptr;
  if (n.kind == grammar::NodeKind::kString && n.pattern.empty()) {
    std::string_view format = n.format;
    for (const auto& [described, named] : described_formats_) {
      if (described == node) format = named;
    }
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

namespace {

bool IsNumberByte(char c) { return (c >= '0' && c <= '9') || c == '-' || c == '+' || c == '.' || c == 'e' || c == 'E'; }

}  // namespace

bool Session::ComputeSaidValueMask(float* bias) {
  bool opened = false;
  int32_t node = opt_.date_time_bias > 0.0f || opt_.record_id_bias > 0.0f ? matcher_->OpenString(&opened) : -1;
  const bool number = node < 0;
  if (number) node = opt_.quantity_bias > 0.0f ? matcher_->OpenNumber() : -1;
  if (node < 0) return false;
  const std::vector<std::string>* values = SaidValues(uint32_t(node));
  if (!values) return false;
  *bias = number ? opt_.quantity_bias : values == &record_id_values_ ? opt_.record_id_bias : opt_.date_time_bias;
  if (*bias <= 0.0f) return false;
  // The value so far: a number's bytes end the call so far; a string's
  // content follows the call's last quote (dates and times hold no quotes).
  std::string_view content;
  if (number) {
    size_t start = call_bytes_.size();
    while (start > 0 && IsNumberByte(call_bytes_[start - 1])) --start;
    content = std::string_view(call_bytes_).substr(start);
  } else if (opened) {
    const size_t q = call_bytes_.rfind('"');
    if (q == std::string::npos) return false;
    content = std::string_view(call_bytes_).substr(q + 1);
  }
  return MarkAllowed(model_->tokenizer(), mask_, value_mask_, [&](std::string_view piece) {
    if (!number && !opened) {
      if (piece.empty() || piece[0] != '"') return false;
      piece.remove_prefix(1);
    }
    // The token's part of the value, and whether the value ends within it.
    size_t end = 0;
    if (number) {
      while (end < piece.size() && IsNumberByte(piece[end])) ++end;
    } else {
      end = std::min(piece.find('"'), piece.size());
    }
    const bool ends = end < piece.size();
    const std::string_view head = piece.substr(0, end);
    for (const std::string& v : *values) {
      // content + head must be a prefix of v, and all of v where the token ends the value.
      if (content.size() + head.size() > v.size() || v.compare(0, content.size(), content) != 0 ||
          v.compare(content.size(), head.size(), head) != 0) {
        continue;
      }
      if (!ends || content.size() + head.size() == v.size()) return true;
    }
    return false;
  });
}

namespace {

// Where a calls array written so far (`[{"name": ..., "arguments": {...}}, ...`)
// stands: `values` gets the (key, string value) pairs of the last call's
// arguments (direct ones, as written: escapes kept); returns whether an argument's value
// comes next or is being written as a string (then `content` is what the
// string holds so far, `key` the argument's key).
bool ArgumentValuesSoFar(std::string_view calls, std::vector<std::pair<std::string_view, std::string_view>>& values,
                         std::string_view* content, std::string_view* key) {
  values.clear();
  *key = {};
  int depth = 0;
  bool in_string = false, escaped = false, value_string = false, after_colon = false;
  size_t start = 0;
  for (size_t i = 0; i < calls.size(); ++i) {
    const char c = calls[i];
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (c == '\\') {
        escaped = true;
      } else if (c == '"') {
        in_string = false;
        if (value_string) {
          values.emplace_back(*key, calls.substr(start, i - start));
        } else if (depth == 3) {
          *key = calls.substr(start, i - start);
        }
      }
      continue;
    }
    switch (c) {
      case '"': in_string = true, start = i + 1, value_string = after_colon && depth == 3; break;
      case '{': case '[':
        if (++depth == 2) values.clear();  // the next call
        after_colon = false;
        break;
      case '}': case ']': --depth, after_colon = false; break;
      case ':': after_colon = true; break;
      case ',': after_colon = false; break;
      default: break;
    }
  }
  if (in_string) {
    *content = calls.substr(start);
    return value_string && !escaped;
  }
  *content = {};
  return after_colon && depth == 3;
}

bool IsOneWord(std::string_view v) {
  if (v.empty()) return false;
  for (char c : v) {
    if (!grammar::CopySource::IsWordByte(uint8_t(c))) return false;
  }
  return true;
}

}  // namespace

void Session::ExcludeRepeatedValue() {
  bool opened = false;
  const int32_t node = matcher_->OpenString(&opened);
  if (node < 0) return;
  if (opened) {
    // Decided as the value starts (its quote, maybe spaces, end the call so
    // far): once it has content, nothing to scan on each further token.
    const size_t last = call_bytes_.find_last_not_of(' ');
    if (last == std::string::npos || call_bytes_[last] != '"') return;
  }
  const grammar::Node& n = matcher_->grammar().nodes[size_t(node)];
  if (!n.format.empty() || !n.pattern.empty()) return;  // (dates, times, codes: the value rules' or the pattern's)
  for (const auto& [described, format] : described_formats_) {
    // (A currency or language code is not repeated either: "from USD to USD".)
    if (described == uint32_t(node) && format != "currency-code" && format != "language-code") return;
  }
  std::string_view content, key;
  if (!ArgumentValuesSoFar(call_bytes_, written_values_, &content, &key) || written_values_.empty()) return;
  if (content.find_first_not_of(' ') != std::string_view::npos) return;  // (decided as the value starts)
  // Required arguments only, on both sides: an optional one that repeats a
  // value is dropped from the envelope (DropEchoedArguments), which beats a
  // made-up other value.
  const int32_t tool = matcher_->NamedTool();
  if (tool < 0) return;
  const grammar::Node& args = matcher_->grammar().nodes[matcher_->grammar().tools()[size_t(tool)].args];
  auto required = [&](std::string_view k) {
    const auto at = std::find(args.prop_names.begin(), args.prop_names.end(), k);
    const size_t i = size_t(at - args.prop_names.begin());
    return at != args.prop_names.end() && i < 64 && ((args.required >> i) & 1);
  };
  if (!required(key)) return;
  const bool any = MarkAllowed(model_->tokenizer(), mask_, distinct_mask_, [&](std::string_view piece) {
    if (!opened) {
      if (piece.empty() || piece[0] != '"') return true;
      piece.remove_prefix(1);
    }
    std::string_view head = piece.substr(0, std::min(piece.find('"'), piece.size()));
    while (!head.empty() && head[0] == ' ') head.remove_prefix(1);
    if (head.empty()) return true;
    for (const auto& [k, v] : written_values_) {
      if (!IsOneWord(v) || !required(k)) continue;
      // The value would start with the earlier one-word value ("USD"), or a piece of it.
      if (head.size() <= v.size() ? EqualFolded(head, v.substr(0, head.size()))
                                  : EqualFolded(head.substr(0, v.size()), v) && !grammar::CopySource::IsWordByte(uint8_t(head[v.size()]))) {
        return false;
      }
    }
    return true;
  });
  if (any) mask_.swap(distinct_mask_);
}

// Words that are never a string argument's whole value: articles,
// prepositions, conjunctions, pronouns, politeness. ("on", "off", "up",
// "all", "me", "now" can be: a power state, "all" rooms, "remind me"; and
// in capitals a word is a code: "US", "IT".)
namespace {
constexpr std::string_view kNeverAValue[] = {
    "a",   "an",    "and",  "are",  "as",   "at",    "be",    "by",    "can",  "could", "do",   "for",  "from", "i",
    "in",  "is",    "it",   "my",   "of",   "or",    "our",   "so",    "that", "the",   "this", "to",   "us",   "we",
    "with", "would", "will", "what", "which", "there", "please", "thanks", "thank", "hey",  "okay", "ok",  "just", "you",
    "your", "want",  "need", "was",  "were", "has",   "have",  "if",    "but",  "then",  "also", "its",  "it's", "i'm",
};
}  // namespace

bool IsFunctionWordValue(std::string_view v) {
  while (!v.empty() && (v.front() == ' ' || !grammar::CopySource::IsWordByte(uint8_t(v.front())))) v.remove_prefix(1);
  while (!v.empty() && (v.back() == ' ' || !grammar::CopySource::IsWordByte(uint8_t(v.back())))) v.remove_suffix(1);
  if (v.empty() || v.size() > 6) return false;
  // In capitals it is a code ("US", "IT", "IN", "OR", "A"), not a function word.
  if (std::none_of(v.begin(), v.end(), [](char c) { return c >= 'a' && c <= 'z'; })) return false;
  for (std::string_view w : kNeverAValue)
    if (EqualFolded(v, w)) return true;
  return false;
}

void Session::ExcludeFunctionWordValue() {
  bool opened = false;
  const int32_t node = matcher_->OpenString(&opened);
  if (node < 0) return;
  const grammar::Node& n = matcher_->grammar().nodes[size_t(node)];
  if (!n.format.empty() || !n.pattern.empty() || !n.values.empty()) return;
  // Only a value of at most 8 bytes so far can still close as a function
  // word: past that, skip the scan of the call (the bytes after the last
  // quote are part of the open value, so more than 8 of them settle it).
  if (opened) {
    const size_t quote = call_bytes_.rfind('"');
    if (quote != std::string::npos && call_bytes_.size() - quote - 1 > 8) return;
  }
  std::string_view content, key;
  if (!ArgumentValuesSoFar(call_bytes_, written_values_, &content, &key)) return;
  if (content.size() > 8) return;
  const bool any = MarkAllowed(model_->tokenizer(), mask_, distinct_mask_, [&](std::string_view piece) {
    if (!opened) {
      if (piece.empty() || piece[0] != '"') return true;
      piece.remove_prefix(1);
    }
    const size_t quote = piece.find('"');
    if (quote == std::string_view::npos) return true;  // the value goes on
    if (content.size() + quote > 8) return true;
    char value[16];  // (no allocation per token)
    if (!content.empty()) std::memcpy(value, content.data(), content.size());
    if (quote > 0) std::memcpy(value + content.size(), piece.data(), quote);
    return !IsFunctionWordValue(std::string_view(value, content.size() + quote));
  });
  if (any) mask_.swap(distinct_mask_);
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
    const std::vector<std::string>* values = SaidValues(n.prop_nodes[i]);
    if (!values || values == &record_id_values_) continue;  // (identifiers: only where the model writes one)
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

void Session::ScoreEnumValues() {
  enum_favoured_.clear();
  for (const auto& [node, terms] : enum_terms_) {
    const grammar::Node& n = grammar_->nodes[node];
    const std::vector<float> scores = LexicalScores(request_terms_, terms);
    float lo = INFINITY, hi = -INFINITY;
    for (float x : scores) lo = std::min(lo, x), hi = std::max(hi, x);
    if (!(hi > 0.0f && hi > lo)) continue;  // no value shares a word, or all share as many
    std::vector<uint8_t> favoured(n.value_of_rank.size(), 0);
    for (size_t r = 0; r < favoured.size(); ++r) favoured[r] = scores[n.value_of_rank[r]] == hi;
    enum_favoured_.emplace(node, std::move(favoured));
  }
}

bool Session::ComputeEnumWordMask() {
  const int32_t node = matcher_->OpenLiteral();
  if (node < 0) return false;
  const auto it = enum_favoured_.find(uint32_t(node));
  if (it == enum_favoured_.end()) return false;
  const std::vector<uint8_t>& favoured = it->second;
  return MarkAllowed(model_->tokenizer(), mask_, enum_mask_, [&](std::string_view piece) {
    uint32_t lo = 0, hi = 0;
    if (!matcher_->LiteralCandidates(piece, &lo, &hi)) return false;
    for (uint32_t r = lo; r < hi && r < favoured.size(); ++r)
      if (favoured[r]) return true;
    return false;
  });
}

namespace {

// Byte k of a reasoning head written `lead` + `head` + `tail` (tail 0: none).
char HeadByte(std::string_view lead, std::string_view head, char tail, size_t k) {
  return k < lead.size() ? lead[k] : k < lead.size() + head.size() ? head[k - lead.size()] : tail;
}

}  // namespace

void Session::RestrictToActiveTools() {
  if (active_.size() == tools_.size()) {
    matcher_->AllowAllTools();
  } else {
    matcher_->RestrictTools(active_);
  }
}

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
      grammar::MarkCopyTokens(*model_->trie(), copy_source_, c.span.state, c.span.nonempty, "'", grammar::CopySource::End::kWord,
                               copy_mask_, copy_walk_)) {
    for (size_t w = 0; w < mask_.size(); ++w) copying |= (copy_mask_[w] &= text_mask_[w]) != 0;
    if (copying && opt_.exact_case) {
      const size_t quote = c.bytes.rfind('\'');
      KeepExactCase(std::string_view(c.bytes).substr(quote == std::string::npos ? c.bytes.size() : quote + 1), '\'');
    }
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
  c.span.Feed(copy_source_, piece);
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

void Session::KeepExactCase(std::string_view content, char quote) {
  // The copy automaton folds ASCII case (a request typed in lower case still
  // copies into a name); among the tokens that continue the copy, the ones
  // that keep the value as a recent text writes it, case and all, are the
  // copy: "GOOGL" stays "GOOGL", not "GoOGL".
  const Tokenizer& tok = model_->tokenizer();
  bool any = false;
  for (size_t w = 0; w < copy_mask_.size(); ++w) {
    case_mask_[w] = 0;
    for (uint32_t bits = copy_mask_[w]; bits; bits &= bits - 1) {
      const int32_t id = int32_t(w * 32 + __builtin_ctz(bits));
      std::string_view part = tok.TokenBytes(id);
      part = part.substr(0, part.find(quote));
      case_text_.assign(content).append(part);
      bool found = case_text_.empty();
      for (size_t t = copy_texts_.size(); t-- > 0 && !found;) found = copy_texts_[t].find(case_text_) != std::string::npos;
      if (found) case_mask_[w] |= 1u << (id & 31), any = true;
    }
  }
  if (any) std::copy(case_mask_.begin(), case_mask_.end(), copy_mask_.begin());
}

void Session::KeepTextsOfLastRequests(size_t requests) {
  size_t from = copy_texts_.size();
  for (size_t seen = 0; from > 0 && seen < requests;) seen += copy_text_requests_[--from];
  copy_texts_.erase(copy_texts_.begin(), copy_texts_.begin() + std::ptrdiff_t(from));
  copy_text_requests_.erase(copy_text_requests_.begin(), copy_text_requests_.begin() + std::ptrdiff_t(from));
}

void Session::RememberTurnText(std::string_view text, bool request) {
  copy_texts_.emplace_back(text);
  copy_text_requests_.push_back(request ? 1 : 0);
  size_t total = 0;
  for (const std::string& t : copy_texts_) total += t.size();
  size_t drop = 0;
  while (drop + 1 < copy_texts_.size() && total > kCopyTextBytes) total -= copy_texts_[drop++].size();
  copy_texts_.erase(copy_texts_.begin(), copy_texts_.begin() + std::ptrdiff_t(drop));
  copy_text_requests_.erase(copy_text_requests_.begin(), copy_text_requests_.begin() + std::ptrdiff_t(drop));
  id_said_ = false;  // (read by ResetNameScores, twice a turn)
  for (const std::string& t : copy_texts_) id_said_ = id_said_ || SaysAnIdentifier(t);
  std::vector<std::string_view> segments;
  std::string facts;
  if (!facts_.is_null()) facts = RenderSystemFacts(facts_);
  if (!facts.empty()) segments.push_back(facts);
  for (const std::string& pin : pins_) segments.push_back(pin);
  for (const std::string& t : copy_texts_) segments.push_back(t);
  // Numbers spelled in words are copies too, as digits ("fifty seven" -> 57),
  // and dates and times said in words, as schemas write them ("September 6,
  // 2025" -> 2025-09-06, "half past 6 pm" -> 18:30; relative days from the
  // system facts' date).
  grammar::CivilDate today;
  if (const size_t at = facts.find("date: "); at != std::string::npos && (at == 0 || facts[at - 1] == '\n')) {
    today = grammar::ParseIsoDate(std::string_view(facts).substr(at + 6));
  }
  std::vector<std::string> derived;
  derived.reserve(4 * copy_texts_.size());
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
  for (const std::string& t : copy_texts_) {
    if (currency_codes) add_codes(grammar::SpokenCurrencyCodes(t), currency_values_);
    if (language_codes) add_codes(grammar::SpokenLanguageCodes(t), language_values_);
    derived.push_back(grammar::SpelledNumbers(t));
    derived.push_back(grammar::SpokenDatesAndTimes(t, today));
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
    const std::vector<double> n = grammar::WrittenNumbers(s);
    said_numbers_.insert(said_numbers_.end(), n.begin(), n.end());
  }
  // Quantities said with a unit, in each unit-declaring argument's unit.
  std::vector<grammar::Quantity> quantities;
  for (const std::string& t : copy_texts_) {
    const std::vector<grammar::Quantity> q = grammar::SpokenQuantities(t);
    quantities.insert(quantities.end(), q.begin(), q.end());
  }
  for (size_t k = 0; k < unit_nodes_.size(); ++k) {
    std::vector<std::string>& values = unit_node_values_[k];
    values.clear();
    const bool integer = grammar_->nodes[unit_nodes_[k].first].integer;
    for (const grammar::Quantity& q : quantities) {
      std::string v = grammar::QuantityIn(q, unit_nodes_[k].second, integer);
      if (!v.empty() && std::find(values.begin(), values.end(), v) == values.end()) values.push_back(std::move(v));
    }
    for (const std::string& v : values) {
      const std::vector<double> n = grammar::WrittenNumbers(v);
      said_numbers_.insert(said_numbers_.end(), n.begin(), n.end());
    }
  }
}

std::vector<uint32_t> Session::SelectTools(std::string_view query) {
  const uint32_t n = static_cast<uint32_t>(tools_.size());
  std::vector<uint32_t> all(n);
  for (uint32_t i = 0; i < n; ++i) all[i] = i;
  const HeadWeights* head = model_->contrastive();
  tool_scores_.clear();
  tool_cosines_.clear();
  const bool lexical = opt_.lexical_weight > 0.0f;
  if ((head || lexical) && n > 0 && (n > opt_.retrieval_top_k || opt_.tool_score_bias > 0.0f)) {
    tool_scores_ = head ? ScoreTools(query) : std::vector<float>(n, 0.0f);
    if (head) tool_cosines_ = tool_scores_;
    if (lexical) {
      const std::vector<float> words = LexicalScores(LexicalTerms(query), tool_terms_);
      for (uint32_t i = 0; i < n; ++i) tool_scores_[i] += opt_.lexical_weight * words[i];
    }
  }
  if (n <= opt_.retrieval_top_k) return all;
  if (!head && !lexical) {
    const std::string w = "retrieval: the model has no contrastive head; all " + std::to_string(n) + " tools are in the context";
    if (std::find(warnings_.begin(), warnings_.end(), w) == warnings_.end()) warnings_.push_back(w);
    return all;
  }
  std::vector<std::pair<float, uint32_t>> scored(n);
  for (uint32_t i = 0; i < n; ++i) scored[i] = {tool_scores_[i], i};
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<uint32_t> top;
  for (uint32_t i = 0; i < opt_.retrieval_top_k; ++i) top.push_back(scored[i].second);
  std::sort(top.begin(), top.end());  // declaration order in the prompt
  return top;
}

std::vector<float> Session::ScoreTools(std::string_view query) {
  const uint32_t n = static_cast<uint32_t>(tools_.size());
  const HeadWeights* head = model_->contrastive();
  const Tokenizer& tok = model_->tokenizer();
  if (!embed_state_) embed_state_ = model_->fast().NewState({0, opt_.window, 32, false});
  ProbePool* pools[1] = {&contrastive_pool_};
  auto embed = [&](std::string_view text) {
    std::vector<int32_t> ids{tok.bos_id()};
    std::vector<int32_t> body = tok.Encode(text);
    if (body.size() > opt_.max_input_tokens) body.resize(opt_.max_input_tokens);
    ids.insert(ids.end(), body.begin(), body.end());
    embed_state_->cache().ResetToSinks();
    contrastive_pool_.Reset();
    embed_state_->AttachPools(pools, 1);
    model_->fast().Forward(*embed_state_, ids, nullptr, false, pool_.get());
    embed_state_->AttachPools(nullptr, 0);
    std::vector<float> v(head->out);
    contrastive_pool_.Output(v.data());
    NormalizeEmbedding(v.data(), head->out);
    return v;
  };
  std::vector<std::vector<float>> tool_vecs(n);
  for (uint32_t i = 0; i < n; ++i) {
    const std::string text = RetrievalToolText(tools_[i].dump());
    const uint64_t key = ToolFingerprint(text, model_->fingerprint());
    if (const auto* v = index_.Find(key)) {
      tool_vecs[i] = *v;
    } else {
      tool_vecs[i] = embed(text);
      index_.Put(key, tool_vecs[i]);
    }
  }
  if (index_.dirty() && !opt_.tool_index_path.empty()) index_.Save(opt_.tool_index_path);
  const std::vector<float> q = embed(query);
  std::vector<float> scores(n);
  for (uint32_t i = 0; i < n; ++i) {
    float s = 0;
    for (uint32_t k = 0; k < head->out; ++k) s += q[k] * tool_vecs[i][k];
    scores[i] = s;
  }
  return scores;
}

void Session::PrepareSinks(std::string_view query, double* prefill_seconds, uint64_t* prefill_tokens) {
  std::vector<uint32_t> selection = SelectTools(query);
  if (state_ && !sinks_dirty_ && selection == active_) return;
  const auto t0 = Clock::now();
  std::string facts = RenderSystemFacts(facts_);
  for (const std::string& pin : pins_) facts.append(facts.empty() ? "" : "\n").append(pin);
  nlohmann::ordered_json chosen = nlohmann::ordered_json::array();
  for (uint32_t i : selection) chosen.push_back(tools_[i]);
  const PromptEncoder enc(model_->tokenizer());
  EncodedPrompt p;
  enc.BeginSession(p, facts, RenderToolsJson(chosen));
  state_.reset();  // the old cache goes before the new one is allocated
  state_ = model_->fast().NewState({p.sink_length, opt_.window, 32, false});
  ++sink_epoch_;
  if (model_->confidence()) {
    confidence_pool_.Reset();
    state_->AttachPools(confidence_pools_, 1);
  }
  Feed(p.ids, false);
  state_->AttachPools(nullptr, 0);
  sink_ids_ = p.ids;
  if (model_->confidence()) confidence_at_sinks_ = confidence_pool_;
  active_ = std::move(selection);
  RestrictToActiveTools();
  sinks_dirty_ = false;
  turns_ = 0;
  copy_texts_.clear();
  copy_text_requests_.clear();
  id_said_ = false;
  *prefill_seconds += Since(t0);
  *prefill_tokens += p.ids.size();
}

Envelope Session::Complete(std::string_view text, uint32_t max_new_tokens) {
  return last_type_ == EnvelopeType::kCall ? ToolResult(text, max_new_tokens) : Query(text, max_new_tokens);
}

Envelope Session::Query(std::string_view query, uint32_t max_new_tokens) { return Turn(TurnKind::kQuery, query, max_new_tokens); }

Envelope Session::ToolResult(std::string_view result_json, uint32_t max_new_tokens) {
  return Turn(TurnKind::kToolResult, result_json, max_new_tokens);
}

Envelope Session::Turn(TurnKind kind, std::string_view text, uint32_t max_new_tokens) {
  try {
    return TurnOrThrow(kind, text, max_new_tokens);
  } catch (const Error& e) {
    last_type_ = EnvelopeType::kError;
    return ErrorEnvelope(e.code(), e.what());
  } catch (const std::bad_alloc&) {
    last_type_ = EnvelopeType::kError;
    return ErrorEnvelope(ErrorCode::kBudget, "out of memory");
  } catch (const std::exception& e) {
    last_type_ = EnvelopeType::kError;
    return ErrorEnvelope(ErrorCode::kInternal, e.what());
  }
}

Envelope Session::TurnOrThrow(TurnKind kind, std::string_view text, uint32_t max_new_tokens) {
  const Tokenizer& tok = model_->tokenizer();
  const uint32_t call_budget = max_new_tokens ? max_new_tokens : opt_.max_new_tokens;
  double prefill_s = 0, decode_s = 0;
  uint64_t prefill_n = 0, decode_n = 0;

  // ---- the turn's context
  std::string turn_text, rendered;
  if (kind == TurnKind::kQuery) {
    PrepareSinks(text, &prefill_s, &prefill_n);
    request_.assign(text);
    request_terms_ = LexicalTerms(text);
    record_id_values_.clear();
    ScoreEnumValues();
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
    record_id_values_.clear();
    if (const std::string id = RecordNamedBy(result, request_terms_); !id.empty()) record_id_values_.push_back(id);
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
  if (kind == TurnKind::kQuery && opt_.window_requests > 0) KeepTextsOfLastRequests(opt_.window_requests - 1);
  RememberTurnText(text, kind == TurnKind::kQuery);
  if (kind == TurnKind::kQuery && opt_.window_requests > 0) {
    // The window starts at the window_requests-th most recent request (a
    // reset or rebuilt sink block leaves only the sinks: no earlier request).
    WindowSinkCache& cache = state_->cache();
    if (cache.tokens() <= int64_t(state_->sink_length())) request_starts_.clear();
    request_starts_.push_back(cache.tokens());
    if (request_starts_.size() > opt_.window_requests) request_starts_.erase(request_starts_.begin());
    cache.SetWindowFloor(request_starts_.front());
  }

  const bool scored = model_->confidence() != nullptr;
  if (scored) {
    confidence_pool_ = confidence_at_sinks_;  // the head scores the sink block plus this turn
    state_->AttachPools(confidence_pools_, 1);
  }
  turn_ids_.clear();
  turn_ids_.reserve(ids.size() + opt_.max_think_tokens + call_budget + 64);  // no growth while decoding
  turn_ids_.insert(turn_ids_.end(), ids.begin(), ids.end());
  auto t = Clock::now();
  Feed(ids, true);
  prefill_s += Since(t);
  prefill_n += ids.size();

  // The naming preferences (reasoning and call).
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

  // ---- the reasoning: its plan starts with the tool it means ("name: 'span'
  // -> key", "name needs ...") or a refusal: with reasoning_names, its head is
  // a declared tool's name under the call's naming preference, "no declared
  // tool" or a quote (after a tool result: "done", "request complete", ...);
  // again after " | " (the next call's plan).
  t = Clock::now();
  Reason({name_bias, kind != TurnKind::kQuery, opt_.reasoning_names && !active_.empty()});
  for (BeamSlot& slot : beam_slots_) slot.state->AttachPools(nullptr, 0);
  const std::vector<int32_t>& think = reasoning_.think;
  const int32_t next = reasoning_.last;
  turn_ids_.insert(turn_ids_.end(), think.begin(), think.end());
  decode_n += think.size();
  // </think>, the newline and <tool_call> exactly as the training target spells them.
  // (EncodeContinuation clears its output: the newline is encoded on its own.)
  std::vector<int32_t> bridge;
  tok.EncodeContinuation("\n", bridge);
  bridge.insert(bridge.begin(), int32_t(kThinkEndId));
  bridge.push_back(int32_t(kToolCallId));
  turn_ids_.insert(turn_ids_.end(), bridge.begin(), bridge.end());
  Feed(bridge, true);

  // ---- the constrained call
  if (name_bias) ResetNameScores();  // (the reasoning's plans spent scores of their own)
  matcher_->Reset();
  matcher_->SetCopySource(opt_.copy_bias > 0.0f ? &copy_source_ : nullptr);
  std::string reasoning;
  for (int32_t id : think) reasoning.append(tok.TokenBytes(id));
  {
    // The calls follow the reasoning's plan: once the model writes a call, it
    // writes as many as the reasoning planned (it often plans two and closes
    // after one); a refusal stays possible. A reasoning cut short (budget,
    // loop) may not have planned them all, so it sets no maximum; one without
    // a plan (another model's free-form reasoning) sets nothing.
    const uint32_t planned = PlannedCalls(reasoning);
    planned_calls_ = planned;
    if (planned > 0) matcher_->SetCallCount(planned, next == int32_t(kThinkEndId) ? planned : 0);
  }
  // A finished reasoning that says why no tool can be called is the answer:
  // the grammar admits no tool name this turn (restored below).
  const bool planned_query = opt_.reasoning_names && kind == TurnKind::kQuery && next == int32_t(kThinkEndId);
  std::string unlisted;  // why the plan cannot be called: an enum value its tool lacks, a required value unsaid
  if (planned_query && opt_.refuse_unlisted_enum_values) unlisted = UnlistedEnumValue(reasoning, tools_);
  if (planned_query && unlisted.empty() && opt_.refuse_unplanned_required_values) unlisted = UnplannedRequiredValue(reasoning, tools_, !facts_.is_null() && !facts_.empty());
  const bool refusing = planned_query && ((opt_.refusal_plan_refuses && PlansRefusal(reasoning)) || !unlisted.empty());
  if (refusing) matcher_->RestrictTools({});
  struct ActiveToolsBack {
    Session* s;
    bool on;
    ~ActiveToolsBack() {
      if (on) s->RestrictToActiveTools();
    }
  } active_tools_back{this, refusing};
  std::vector<int32_t> call;
  call_bytes_.clear();
  double log_p = 0.0;
  bool truncated = false, looped = false;
  for (;;) {
    const bool can_close = matcher_->ComputeMask(mask_.data());
    // A call that fell into a loop ("p. p. p. ...", a string no copy rule
    // holds) never leaves it: it ends here, completed as at the budget.
    looped = EndsInLoop(call);
    if (call.size() >= call_budget || looped) {
      truncated = !can_close;
      break;
    }
    if (opt_.distinct_argument_values) ExcludeRepeatedValue();
    if (opt_.function_word_values_excluded) ExcludeFunctionWordValue();
    bool copying = false;
    if (opt_.copy_bias > 0.0f && matcher_->ComputeCopyMask(copy_mask_)) {
      for (size_t w = 0; w < mask_.size(); ++w) copying |= (copy_mask_[w] &= mask_[w]) != 0;
      if (copying && opt_.exact_case) {
        if (bool opened = false; matcher_->OpenString(&opened) >= 0 && opened) {
          const size_t quote = call_bytes_.rfind('"');
          if (quote != std::string::npos) KeepExactCase(std::string_view(call_bytes_).substr(quote + 1), '"');
        }
      }
    }
    const bool naming = name_bias && matcher_->BeforeOrInName();
    // The decoder's distribution this step: the allowed tokens' logits plus
    // `bias` on the `bonus` tokens (an infinite bias: the bonus tokens only).
    const uint32_t* allowed = mask_.data();
    const uint32_t* bonus = nullptr;
    float bias = 0.0f;
    if (naming) {
      // (ArgmaxNamingCall)
    } else if (float said_bias = 0.0f; ComputeSaidValueMask(&said_bias)) {
      bonus = value_mask_.data(), bias = said_bias;
    } else if (!copying && opt_.enum_word_bias > 0.0f && ComputeEnumWordMask()) {
      bonus = enum_mask_.data(), bias = opt_.enum_word_bias;
    } else if (copying) {
      bonus = copy_mask_.data(), bias = opt_.copy_bias;
    }
    if (bonus && std::isinf(bias)) allowed = bonus, bonus = nullptr, bias = 0.0f;
    double naming_log_p = 0.0;
    const int32_t id = naming ? ArgmaxNamingCall(&naming_log_p) : bonus ? ArgmaxWithBonus(allowed, bonus, bias) : Argmax(allowed);
    if (id < 0) throw Error(ErrorCode::kInternal, "grammar: no allowed token");
    // The confidence's call probability is the decoder's (SPEC §10): what the
    // model assigned, moved by the same bonuses and rules that picked the
    // token (the model's own masked probability was near 0 on a third of the
    // exact calls, whose values the copy / date / naming rules had chosen).
    log_p += naming ? naming_log_p : LogProbWithBonus(allowed, bonus, bias, id);
    if (id == int32_t(kToolCallEndId)) break;
    // A date, time or quantity the request says goes into the call's
    // unwritten date / time / unit argument when the model would close the
    // arguments without it (it leaves optional ones out): the key is written
    // instead, and the value rule picks the value. Only as the arguments close, so the model's own
    // order of keys stays (forcing the key first disturbed the others).
    if ((std::isinf(opt_.date_time_bias) || std::isinf(opt_.quantity_bias) || (opt_.enum_word_bias > 0.0f && planned_calls_ == 1)) &&
        call.size() + 8 < call_budget &&
        matcher_->ClosesArguments(tok.TokenBytes(id))) {
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
      if (const std::string key = args >= 0 ? UnwrittenSaidValueKey(uint32_t(args), written) : ""; !key.empty()) {
        bytes += std::string(!opened ? "{" : written ? "," : "") + nlohmann::json(key).dump() + ":";
        std::vector<int32_t> forced;
        tok.EncodeContinuation(bytes, forced);
        grammar::GrammarState before;
        before.CopyFrom(matcher_->state());
        bool ok = true;
        for (int32_t f : forced) ok = ok && matcher_->AcceptToken(f);
        if (ok) {
          for (int32_t f : forced) call_bytes_.append(tok.TokenBytes(f));
          call.insert(call.end(), forced.begin(), forced.end());
          turn_ids_.insert(turn_ids_.end(), forced.begin(), forced.end());
          Feed(forced, true);
          decode_n += forced.size();
          continue;
        }
        matcher_->RestoreState(before);  // (not expected: the key is declared and unwritten)
      }
    }
    if (!matcher_->AcceptToken(id)) throw Error(ErrorCode::kInternal, "grammar: an allowed token was rejected");
    call_bytes_.append(tok.TokenBytes(id));
    if (naming) SpendNameScore(matcher_->NamedTool());
    if (refusal_bias_ != 0.0f && matcher_->NamedTool() >= 0) refusal_bias_ = 0.0f;  // a call is named: no refusal left
    call.push_back(id);
    turn_ids_.push_back(id);
    Feed(std::span<const int32_t>(&id, 1), true);
    ++decode_n;
  }
  if (truncated) {
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
  decode_s += Since(t);
  state_->AttachPools(nullptr, 0);

  // ---- the envelope
  std::string call_text;
  for (int32_t id : call) call_text.append(tok.TokenBytes(id));
  ++turns_;
  Envelope env;
  env.reasoning = reasoning;
  env.warnings = warnings_;
  if (!unlisted.empty()) env.warnings.push_back("refused: " + unlisted);
  if (looped) {
    env.warnings.push_back("the call fell into a repeating loop and was completed by the grammar");
  } else if (truncated) {
    env.warnings.push_back("the call reached max_new_tokens (" + std::to_string(call_budget) + ") and was completed by the grammar");
  }
  env.prefill_tps = prefill_s > 0 ? double(prefill_n) / prefill_s : 0.0;
  env.decode_tps = decode_s > 0 ? double(decode_n) / decode_s : 0.0;
  env.peak_ram_mb = PeakRssMb();
  if (const auto bad = grammar::ValidateCall(call_text, *grammar_)) {
    last_type_ = EnvelopeType::kError;
    Envelope err = ErrorEnvelope(ErrorCode::kInvalidCall, "the generated call fails its schema: " + bad->message);
    err.reasoning = env.reasoning;
    err.function_calls = nlohmann::ordered_json::parse(call_text, nullptr, false);
    if (err.function_calls.is_discarded()) err.function_calls = nlohmann::ordered_json::array();
    err.prefill_tps = env.prefill_tps, err.decode_tps = env.decode_tps;
    return err;
  }
  env.function_calls = nlohmann::ordered_json::parse(call_text);
  DropRepeatedCalls(env);
  if (opt_.drop_echoed_arguments) DropEchoedArguments(env, tools_);
  if (opt_.drop_unsaid_numbers) DropUnsaidOptionalNumbers(env, tools_, said_numbers_);
  if (opt_.order_from_to_pairs && kind == TurnKind::kQuery) OrderFromToPairs(env, tools_, request_);
  if (!env.function_calls.empty()) {
    env.type = EnvelopeType::kCall;
    for (const auto& c : env.function_calls) {
      if (const int t = matcher_->grammar().FindTool(c["name"].get_ref<const std::string&>()); t >= 0) chain_called_.push_back(uint32_t(t));
    }
  } else {
    env.type = kind == TurnKind::kQuery ? EnvelopeType::kRefuse : EnvelopeType::kRespond;
  }
  call_probability_ = std::exp(log_p);
  if (scored) {
    float logit = 0.0f;
    confidence_pool_.Output(&logit);
    const double head = 1.0 / (1.0 + std::exp(-double(logit)));
    env.confidence = std::min(head, call_probability_);
  }
  last_type_ = env.type;
  return env;
}

void Session::SetWindowRequests(uint32_t n) {
  opt_.window_requests = n;
  while (request_starts_.size() > n) request_starts_.erase(request_starts_.begin());
  if (n == 0 && state_) state_->cache().SetWindowFloor(0);
}

void Session::SetReasoningBeams(uint32_t n) {
  if (n < 1 || n > SessionOptions::kMaxReasoningBeams) {
    throw Error(ErrorCode::kInvalidArgument,
                "session: reasoning_beams must be 1 to " + std::to_string(SessionOptions::kMaxReasoningBeams));
  }
  opt_.reasoning_beams = n;
  if (n == 1) beam_slots_.clear();  // (their states' memory goes back)
}

void Session::Reset() {
  if (state_) state_->cache().ResetToSinks();
  turns_ = 0;
  copy_texts_.clear();
  copy_text_requests_.clear();
  id_said_ = false;
  chain_called_.clear();
  request_starts_.clear();
  last_type_ = EnvelopeType::kRefuse;
}

Envelope Session::Run(std::string_view query, uint32_t max_steps, uint32_t max_new_tokens) {
  nlohmann::ordered_json executed = nlohmann::ordered_json::array();
  Envelope env = Query(query, max_new_tokens);
  for (uint32_t step = 0; env.type == EnvelopeType::kCall && step < max_steps; ++step) {
    nlohmann::ordered_json results = nlohmann::ordered_json::array();
    for (const auto& c : env.function_calls) {
      const std::string name = c["name"].get<std::string>();
      const auto it = callbacks_.find(name);
      if (it == callbacks_.end()) {
        Envelope err = ErrorEnvelope(ErrorCode::kInvalidState, "run: no callback bound for tool '" + name + "'");
        err.results = executed;
        return err;
      }
      nlohmann::ordered_json r;
      try {
        r = it->second(c["arguments"]);
      } catch (const std::exception& e) {
        r = {{"error", e.what()}};  // the model sees the failure as the tool's result
      }
      executed.push_back({{"name", name}, {"arguments", c["arguments"]}, {"result", r}});
      results.push_back(std::move(r));
    }
    const nlohmann::ordered_json fed = results.size() == 1 ? results[0] : results;
    env = ToolResult(fed.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace), max_new_tokens);
  }
  env.results = executed;
  return env;
}

// ---- persistence

namespace {
constexpr char kSessionMagic[8] = {'N', 'E', 'E', 'D', 'L', 'E', 'S', '1'};
}

void Session::Save(const std::string& path) const {
  nlohmann::ordered_json head = {{"model", model_->fingerprint()}, {"tools", tools_}, {"system", facts_},
                                 {"pins", pins_},    {"active", active_}, {"turns", turns_},
                                 {"last_type", int(last_type_)}, {"has_state", state_ != nullptr && !sinks_dirty_},
                                 {"sink_length", state_ ? state_->sink_length() : 0}, {"window", opt_.window},
                                 {"copy_texts", copy_texts_}, {"copy_text_requests", copy_text_requests_}, {"chain_called", chain_called_},
                                 {"request_starts", request_starts_}, {"request", request_},
                                 {"record_ids", record_id_values_}};
  const std::string h = head.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::string out(kSessionMagic, sizeof kSessionMagic);
  const uint64_t hn = h.size();
  out.append(reinterpret_cast<const char*>(&hn), sizeof hn).append(h);
  if (state_ && !sinks_dirty_) {
    state_->cache().Serialize(out);
    if (model_->confidence()) confidence_at_sinks_.Serialize(out);
  }
  WriteFileAtomically(path, {reinterpret_cast<const uint8_t*>(out.data()), out.size()});
}

void Session::Restore(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, "session: cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  std::string_view v = data;
  uint64_t hn = 0;
  if (v.size() < sizeof kSessionMagic + sizeof hn || std::memcmp(v.data(), kSessionMagic, sizeof kSessionMagic) != 0) {
    throw Error(ErrorCode::kInvalidArgument, "session: '" + path + "' is not a saved needle session");
  }
  v.remove_prefix(sizeof kSessionMagic);
  std::memcpy(&hn, v.data(), sizeof hn);
  v.remove_prefix(sizeof hn);
  if (hn > v.size()) throw Error(ErrorCode::kInvalidArgument, "session: truncated header in '" + path + "'");
  const auto head = nlohmann::ordered_json::parse(v.substr(0, hn), nullptr, false);
  v.remove_prefix(hn);
  if (head.is_discarded() || !head.is_object()) throw Error(ErrorCode::kInvalidArgument, "session: corrupt header in '" + path + "'");
  if (head.value("model", uint64_t(0)) != model_->fingerprint()) {
    throw Error(ErrorCode::kInvalidArgument, "session: '" + path + "' was saved with another model");
  }
  // Rebuild the setup, then the cache exactly as it was.
  SetTools(head["tools"]);
  SetSystem(head["system"]);
  pins_ = head["pins"].get<std::vector<std::string>>();
  opt_.window = head.value("window", 0u);
  state_.reset();
  sinks_dirty_ = true;
  if (head.value("has_state", false)) {
    state_ = model_->fast().NewState({head.value("sink_length", 0u), opt_.window, 32, false});
    ++sink_epoch_;
    state_->cache().Restore(v);
    if (model_->confidence()) confidence_at_sinks_.Restore(v);
    active_ = head["active"].get<std::vector<uint32_t>>();
    for (uint32_t i : active_) {
      if (i >= tools_.size()) throw Error(ErrorCode::kInvalidArgument, "session: active tool index out of range");
    }
    RestrictToActiveTools();
    sinks_dirty_ = false;
  }
  turns_ = head.value("turns", 0u);
  copy_texts_.clear();
  copy_text_requests_.clear();
  id_said_ = false;
  if (head.contains("copy_texts") && head["copy_texts"].is_array()) {
    for (const auto& t : head["copy_texts"])
      if (t.is_string()) copy_texts_.push_back(t.get<std::string>());
  }
  if (head.contains("copy_text_requests") && head["copy_text_requests"].is_array()) {
    for (const auto& r : head["copy_text_requests"]) copy_text_requests_.push_back(r.is_number_integer() && r.get<int>() != 0);
  }
  // (A state saved before the flags were kept: every text counts as a request.)
  if (copy_text_requests_.size() != copy_texts_.size()) copy_text_requests_.assign(copy_texts_.size(), 1);
  for (const std::string& t : copy_texts_) id_said_ = id_said_ || SaysAnIdentifier(t);
  chain_called_.clear();
  if (head.contains("chain_called") && head["chain_called"].is_array()) {
    for (const auto& t : head["chain_called"])
      if (t.is_number_unsigned() && t.get<uint64_t>() < tools_.size()) chain_called_.push_back(t.get<uint32_t>());
  }
  // The request's ranking, words and named record: a tool result right after
  // Restore is decoded as it would have been without the save.
  request_ = head.value("request", std::string());
  if (!request_.empty()) {
    SelectTools(request_);  // (tool_scores_; the active tools are the saved ones)
    request_terms_ = LexicalTerms(request_);
    ScoreEnumValues();
  }
  record_id_values_.clear();
  if (head.contains("record_ids") && head["record_ids"].is_array()) {
    for (const auto& t : head["record_ids"])
      if (t.is_string()) record_id_values_.push_back(t.get<std::string>());
  }
  request_starts_.clear();
  if (head.contains("request_starts") && head["request_starts"].is_array()) {
    for (const auto& t : head["request_starts"])
      if (t.is_number_integer()) request_starts_.push_back(t.get<int64_t>());
  }
  // (The window floor is the session's, not the cache's: set again here.)
  if (state_ && !request_starts_.empty() && opt_.window_requests > 0) {
    while (request_starts_.size() > opt_.window_requests) request_starts_.erase(request_starts_.begin());
    state_->cache().SetWindowFloor(std::min(request_starts_.front(), state_->cache().tokens()));
  }
  last_type_ = static_cast<EnvelopeType>(std::clamp(head.value("last_type", 1), 0, 3));
}

Envelope Extract(std::shared_ptr<const Model> model, std::string_view text, const nlohmann::ordered_json& schema,
                 const SessionOptions& options) {
  try {
    Session s(std::move(model), options);
    s.SetTools(nlohmann::ordered_json::array(
        {{{"name", "extract"}, {"description", "Extract the fields of this record from the text"}, {"parameters", schema}}}));
    return s.Query(text);
  } catch (const Error& e) {
    return ErrorEnvelope(e.code(), e.what());
  }
}

}  // namespace needle
