// The session: setup (tools, facts, pins), the sink block and retrieval, and
// the turn as named stages (agent/turn_stages.cc, agent/reasoning.cc,
// agent/call_decoder.cc); persistence is in agent/session_persist.cc.
#include "agent/session.h"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "base/error.h"
#include "base/utf8.h"
#include "grammar/schema_compose.h"
#include "kv/budget.h"  // budget_window
#include "io/tokenizer_blob.h"  // fixed marker ids
#include "text/prompt.h"

namespace needle {
namespace {

void MaskSet(uint32_t* m, int32_t id) { m[size_t(id) >> 5] |= 1u << (id & 31); }

nlohmann::ordered_json ToolsArray(const nlohmann::ordered_json& tools) {
  if (tools.is_object() && tools.contains("tools")) return tools["tools"];
  return tools;
}

}  // namespace

Session::Session(std::shared_ptr<const Model> model, SessionOptions options) : model_(std::move(model)), opt_(options) {
  if (!model_) throw Error(ErrorCode::kNoModel, "session: no model");
  CheckOptions(opt_);
  if (opt_.threads > 1) pool_ = std::make_unique<ThreadPool>(opt_.threads);
  const Tokenizer& tok = model_->tokenizer();
  const int32_t V = static_cast<int32_t>(model_->config().vocab_size);
  logits_.assign(size_t(V), 0.0f);
  mask_.assign(model_->trie()->mask_words(), 0);
  copy_mask_.assign(model_->trie()->mask_words(), 0);
  call_rules_ = MakeCallRules(opt_);
  call_rules_.Prepare(model_->trie()->mask_words());
  call_step_.Prepare(size_t(V), model_->trie()->mask_words());
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
  // Composition ($ref, allOf, anyOf, nullable) rewritten once, so the prompt,
  // the rules and retrieval read the same plain schemas as the grammar.
  std::vector<std::string> composition_warnings;
  const nlohmann::ordered_json tools = grammar::ComposeToolSchemas(ToolsArray(tools_in), &composition_warnings);
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
  warnings_ = std::move(composition_warnings);
  warnings_.insert(warnings_.end(), grammar_->warnings().begin(), grammar_->warnings().end());
  matcher_ = std::make_unique<grammar::GrammarMatcher>(grammar_, model_->trie());
  evidence_.SetTools(grammar_, tools_);
  call_rules_.SetTools(*grammar_);
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

void Session::SetSinkBlocks(std::shared_ptr<SinkBlocks> blocks) {
  sink_blocks_ = std::move(blocks);  // the next sink block built is read from there
}

void Session::Feed(std::span<const int32_t> ids, bool want_logits) {
  if (ids.empty()) return;
  DecoderState& st = decoding_ ? *decoding_ : *state_;
  if (batcher_ && ids.size() == 1 && want_logits && &batcher_->model() == &model_->fast()) {
    batcher_->Forward(st, ids[0], logits_.data(), pool_.get());
    return;
  }
  model_->fast().Forward(st, ids, want_logits ? logits_.data() : nullptr, false, pool_.get());
}


void Session::ResetNameScores() {
  // A tool that needs an identifier the conversation does not hold is the
  // second step of a lookup, not the request's call (unsaid_id_penalty).
  name_base_.assign(tools_.size(), -INFINITY);
  for (uint32_t i : active_) name_base_[i] = tool_scores_[i] - (!evidence_.id_said() && takes_id_[i] ? opt_.unsaid_id_penalty : 0.0f);
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


float Session::BestNameScore() const {
  float best_score = -INFINITY;
  for (float s : name_scores_) best_score = std::max(best_score, s);
  return best_score;
}

void Session::RestrictToActiveTools() {
  if (active_.size() == tools_.size()) {
    matcher_->AllowAllTools();
  } else {
    matcher_->RestrictTools(active_);
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

std::vector<uint32_t>::iterator Session::LowestRanked(std::vector<uint32_t>& selection) const {
  if (tool_scores_.size() != tools_.size()) return selection.end() - 1;  // no ranking: the last declared
  auto lowest = selection.begin();
  for (auto it = selection.begin(); it != selection.end(); ++it)
    if (tool_scores_[*it] <= tool_scores_[*lowest]) lowest = it;
  return lowest;
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
  if (state_ && !sinks_dirty_ && selection == selected_) return;
  const auto t0 = Clock::now();
  selected_ = selection;
  std::string facts = RenderSystemFacts(facts_);
  for (const std::string& pin : pins_) facts.append(facts.empty() ? "" : "\n").append(pin);
  const PromptEncoder enc(model_->tokenizer());
  EncodedPrompt p;
  // The pinned block must fit the KV budget beside the window: while it does
  // not, the lowest-ranked chosen tool is left out (the grammar then names
  // only the tools that stayed). One tool alone that does not fit is the
  // budget error NewState names.
  const uint32_t window = opt_.window ? opt_.window : model_->fast().window();
  const uint64_t budget = budget_window(model_->config());
  for (;;) {
    nlohmann::ordered_json chosen = nlohmann::ordered_json::array();
    for (uint32_t i : selection) chosen.push_back(tools_[i]);
    p = EncodedPrompt{};
    enc.BeginSession(p, facts, RenderToolsJson(chosen));
    if (selection.size() <= 1 || uint64_t{p.sink_length} + window <= budget) break;
    selection.erase(LowestRanked(selection));
  }
  if (selection.size() < selected_.size()) {
    const std::string w = "retrieval: " + std::to_string(selection.size()) + " of the " +
                          std::to_string(selected_.size()) + " chosen tools fit the KV budget beside the window; the others were left out";
    if (std::find(warnings_.begin(), warnings_.end(), w) == warnings_.end()) warnings_.push_back(w);
  }
  state_.reset();  // the old cache goes before the new one is allocated
  sink_block_.reset();
  ++sink_epoch_;
  // Feeds the sink tokens into `st`, the confidence head's pool `conf` (reset) attached.
  auto prefill = [&](DecoderState& st, ProbePool& conf) {
    ProbePool* pools[1] = {&conf};
    if (model_->confidence()) {
      conf = ProbePool(*model_->confidence());
      st.AttachPools(pools, 1);
    }
    model_->fast().Forward(st, p.ids, nullptr, false, pool_.get());
    st.AttachPools(nullptr, 0);
  };
  if (sink_blocks_ && p.sink_length > 0) {
    // The block of these sink tokens, shared; this state holds the window only.
    sink_block_ = sink_blocks_->Get(model_->fingerprint(), p.ids, [&] {
      auto block = std::make_unique<SinkBlock>();
      block->state = model_->fast().NewState({p.sink_length, 1, 32, false});
      prefill(*block->state, block->confidence);
      return block;
    });
    state_ = model_->fast().NewState({p.sink_length, opt_.window, 32, false, sink_block_->state.get()});
    state_->StartAfterSinks(*sink_block_->state);
    if (model_->confidence()) confidence_pool_ = sink_block_->confidence;
  } else {
    state_ = model_->fast().NewState({p.sink_length, opt_.window, 32, false});
    prefill(*state_, confidence_pool_);
  }
  sink_ids_ = p.ids;
  if (model_->confidence()) confidence_at_sinks_ = confidence_pool_;
  active_ = std::move(selection);
  RestrictToActiveTools();
  sinks_dirty_ = false;
  turns_ = 0;
  conversation_ids_.clear();
  evidence_.ClearTexts();
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
  // Bytes that are not text are refused before the turn starts, so the
  // session stays where it was (a call still waits for its result).
  try {
    CheckText(text, kind == TurnKind::kQuery ? "the query" : "the tool result");
  } catch (const Error& e) {
    return ErrorEnvelope(e.code(), e.what());
  }
  try {
    Envelope env = TurnOrThrow(kind, text, max_new_tokens);
    RememberTurnIds();
    return env;
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
  TurnStats stats;
  const uint32_t call_budget = max_new_tokens ? max_new_tokens : opt_.max_new_tokens;
  // 1. the turn's text after the sinks and earlier turns, prefilled; the
  //    copy source and said values from it
  PrefillTurn(kind, text, call_budget, stats);
  // 2. this turn's naming preference (retrieval ranking) and refusal bias
  const bool name_bias = PrepareNaming(kind);
  // 3. the reasoning: the plan, greedy or by beam search
  auto t = Clock::now();
  Reason({name_bias, kind != TurnKind::kQuery, opt_.reasoning_names && !active_.empty()});
  for (BeamSlot& slot : beam_slots_) slot.state->AttachPools(nullptr, 0);
  BridgeToCall(stats);
  // 4. what the plan asks of the call: how many calls, or a refusal
  const CallPlan plan = ReadPlan(kind);
  // 5. the call, under the grammar and the chain of rules
  DecodedCall call = DecodeCall(plan, call_budget, name_bias, stats);
  stats.decode_s += Since(t);
  state_->AttachPools(nullptr, 0);
  // 6. the envelope: validated, format guarantees, confidence
  return FinishEnvelope(kind, plan, call, stats);
}

void Session::SetOptions(const SessionOptions& next) {
  CheckOptions(next);
  const nlohmann::ordered_json now = OptionsToJson(opt_), wanted = OptionsToJson(next);
  ForEachOption(next, [&](const OptionInfo& info, const auto&) {
    const std::string name(info.name);
    if (info.scope == OptionScope::kCreation && now[name] != wanted[name]) {
      throw Error(ErrorCode::kInvalidArgument, "option " + name + " is fixed when the session is created (it stays " +
                                                   now[name].dump() + ")");
    }
  });
  if (next.window_requests != opt_.window_requests) {  // older requests leave the window at once
    while (request_starts_.size() > next.window_requests) request_starts_.erase(request_starts_.begin());
    if (next.window_requests == 0 && state_) state_->cache().SetWindowFloor(0);
  }
  if (next.reasoning_beams == 1) beam_slots_.clear();  // (their states' memory goes back)
  opt_ = next;
  call_rules_ = MakeCallRules(opt_);  // the rules' state: rebuilt for the tools and the request in progress
  call_rules_.Prepare(model_->trie()->mask_words());
  if (grammar_) {
    call_rules_.SetTools(*grammar_);
    if (turns_ > 0) call_rules_.BeginRequest(*grammar_, request_terms_);
  }
  call_bytes_.reserve(size_t(opt_.max_new_tokens) * 32);
}

void Session::Reset() {
  if (state_) state_->cache().ResetToSinks();
  turns_ = 0;
  conversation_ids_.clear();
  evidence_.ClearTexts();
  chain_called_.clear();
  request_starts_.clear();
  last_type_ = EnvelopeType::kRefuse;
}

void Session::ReplayTurn(std::string_view text, const nlohmann::ordered_json& calls, bool tool_result) {
  try {
    if (!calls.is_array()) throw Error(ErrorCode::kInvalidArgument, "replayed calls must be an array");
    for (const auto& c : calls) {
      if (!c.is_object() || !c.contains("name") || !c["name"].is_string() || (c.contains("arguments") && !c["arguments"].is_object())) {
        throw Error(ErrorCode::kInvalidArgument, "a replayed call must be {\"name\": string, \"arguments\": object}: " + c.dump());
      }
    }
    CheckText(text, tool_result ? "the tool result" : "the query");
    const TurnKind kind = tool_result ? TurnKind::kToolResult : TurnKind::kQuery;
    TurnStats stats;
    PrefillTurn(kind, text, opt_.max_new_tokens, stats);  // the turn's text and <think>
    if (kind == TurnKind::kQuery) chain_called_.clear();
    // The answer as training spells it (no reasoning: the client never saw one):
    // </think>, a newline, <tool_call>, the calls, </tool_call><|im_end|>, EOS.
    const Tokenizer& tok = model_->tokenizer();
    std::vector<int32_t> answer, part;
    answer.push_back(int32_t(kThinkEndId));
    tok.EncodeContinuation("\n", part);
    answer.insert(answer.end(), part.begin(), part.end());
    answer.push_back(int32_t(kToolCallId));
    tok.EncodeContinuation(RenderCallsJson(calls), part);
    answer.insert(answer.end(), part.begin(), part.end());
    answer.insert(answer.end(), {int32_t(kToolCallEndId), int32_t(kImEndId), tok.eos_id()});
    turn_ids_.insert(turn_ids_.end(), answer.begin(), answer.end());
    decoding_ = nullptr;
    Feed(answer, false);
    state_->AttachPools(nullptr, 0);
    for (const auto& c : calls) {
      if (const int t = grammar_ ? grammar_->FindTool(c["name"].get_ref<const std::string&>()) : -1; t >= 0) {
        chain_called_.push_back(uint32_t(t));
      }
    }
    ++turns_;
    last_type_ = !calls.empty() ? EnvelopeType::kCall : tool_result ? EnvelopeType::kRespond : EnvelopeType::kRefuse;
    RememberTurnIds();
  } catch (...) {
    Reset();
    throw;
  }
}

void Session::RememberTurnIds() {
  if (!state_) return;
  const size_t window = state_->cache().geometry().window;
  conversation_ids_.insert(conversation_ids_.end(), turn_ids_.begin(), turn_ids_.end());
  if (conversation_ids_.size() > 2 * window) conversation_ids_.erase(conversation_ids_.begin(), conversation_ids_.end() - std::ptrdiff_t(window));
}

std::vector<int32_t> Session::window_ids() const {
  if (!state_) return {};
  const WindowSinkCache& cache = state_->cache();
  // The window shows the last W conversation tokens, from the floor on when one is set.
  size_t n = std::min<size_t>(conversation_ids_.size(), cache.geometry().window);
  if (cache.window_floor() > int64_t(state_->sink_length())) n = std::min<size_t>(n, size_t(std::max<int64_t>(0, cache.tokens() - cache.window_floor())));
  return std::vector<int32_t>(conversation_ids_.end() - std::ptrdiff_t(n), conversation_ids_.end());
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

nlohmann::ordered_json ExtractTool(const nlohmann::ordered_json& schema) {
  if (schema.is_object() && schema.contains("parameters")) return schema;
  return {{"name", "extract"}, {"description", "Extract the fields of this record from the text"}, {"parameters", schema}};
}

Envelope Extract(std::shared_ptr<const Model> model, std::string_view text, const nlohmann::ordered_json& schema,
                 const SessionOptions& options) {
  try {
    Session s(std::move(model), options);
    s.SetTools(nlohmann::ordered_json::array({ExtractTool(schema)}));
    return s.Query(text);
  } catch (const Error& e) {
    return ErrorEnvelope(e.code(), e.what());
  }
}

}  // namespace needle
