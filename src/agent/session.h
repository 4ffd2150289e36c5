// A conversation with a model (SPEC §8–10): tools pinned as KV sinks, turns
// of user queries and tool results on one bounded cache, free reasoning then
// a grammar-constrained call, and the envelope.
//
// Per turn:
//   context  = the turn text (first query | tool result | follow-up query), then <think>
//   think    = greedy free text, at most max_think_tokens, closed by </think>;
//              a loop (the last 16 tokens one cycle of 1-4 tokens) ends it early
//   "</think>\n<tool_call>" forced, then the call: greedy under the grammar mask
//              (tool names limited to the retrieved tools; inside strings
//              tokens that continue a copy of the session's text get
//              copy_bias added to their logits), at most
//              max_new_tokens, completed by the grammar if the budget runs out
//              or the call falls into a loop
//   closing  = </tool_call><|im_end|> EOS fed, exactly as in training
// The call is post-checked (grammar/validate.h); a violation is an error
// envelope (invalid_call), never a silently passed call.
//
// Memory: the cache holds the sink block plus a window of W positions; the
// session's buffers are sized when the sinks are built and the decode loop
// allocates nothing. A Session is not thread-safe; sessions sharing a Model
// may run on different threads at once.
#pragma once

#include <chrono>
#include <cmath>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "agent/call_rules.h"
#include "agent/envelope.h"
#include "agent/model.h"
#include "agent/retrieval.h"
#include "agent/session_options.h"
#include "agent/sink_blocks.h"
#include "agent/turn_evidence.h"
#include "base/thread_pool.h"
#include "grammar/copy_source.h"
#include "grammar/matcher.h"
#include "model/decode_batcher.h"
#include "said/quantities.h"

namespace needle {

// The quoted spans of the reasoning ("name: 'span' -> key"): a span opens
// at a quote after a space and closes at the next quote; `state` follows the
// span's content in the copy source. A quote followed by a word byte was an
// apostrophe ("'I'll be late'"): the span goes on from before it.
struct ReasoningSpan {
  bool open = false, nonempty = false;
  uint32_t state = grammar::CopySource::kDead;
  char prev = ' ';
  void Feed(const grammar::CopySource& source, std::string_view bytes);
};

// The quoted spans of the call plan being written (the reasoning after its
// last " | ", and the earlier segments that plan the same tool), read once
// per step, then asked about each candidate token: a new span may not run
// along an earlier span's words (equal, or inside it) nor, when it closes,
// hold them; function words ("the", "to") alone repeat freely. Views into
// the reasoning: valid while it is unchanged.
class RepeatedSpanCheck {
 public:
  // False when the plan has no closed span yet (nothing to check).
  bool Read(std::string_view written);
  // Whether the open span (a new one when `fresh`), extended by `more` (and
  // closed after it when `closes`), repeats an earlier span.
  bool Repeats(std::string_view more, bool closes, bool fresh = false) const;
  // Whether the next token `bytes` (after the byte `prev`) makes the open
  // span, or the one it opens, repeat an earlier span.
  bool TokenRepeats(std::string_view bytes, char prev) const;
  // Whether a token without a quote may repeat (the open span is empty or
  // runs along an earlier one so far); otherwise only tokens with a quote can.
  bool AnyTokenMay() const { return runs_along_; }

 private:
  // Adds the closed spans of one plan segment (the open one's too, when
  // `current`); false when there are too many to hold.
  bool ReadSpans(std::string_view segment, bool current, bool* open_at_end);

  static constexpr size_t kMaxSpans = 16;
  std::string_view closed_[kMaxSpans], open_;
  size_t spans_ = 0;
  bool open_now_ = false, runs_along_ = false;
};

// Whether ids ends in a degenerate loop: its last kLoopTokens tokens repeat one
// cycle of at most kLoopMaxPeriod tokens ("[][][]...", "_TO_TO_TO..."). Greedy
// reasoning that falls into one never leaves it, so the session stops there
// instead of spending the rest of max_think_tokens on it.
inline constexpr uint32_t kLoopTokens = 16, kLoopMaxPeriod = 4;
bool EndsInLoop(std::span<const int32_t> ids);

class Session {
 public:
  explicit Session(std::shared_ptr<const Model> model, SessionOptions options = {});
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // ---- setup (throw Error naming the problem; the session keeps its previous setup)
  // Tools: a JSON array of {"name", "description"?, "parameters"} (or {"tools": [...]}).
  void SetTools(const nlohmann::ordered_json& tools);
  void SetToolsJson(std::string_view tools_json);
  // System facts (SPEC §10 keys) as an object, or a rendered string; null clears.
  void SetSystem(const nlohmann::ordered_json& facts);
  // Custom sinks: pins extra text (e.g. a user profile) in the sink block,
  // after the system facts; it stays visible for the whole session. The sink
  // block must fit the KV budget beside the window.
  void PinSpan(std::string_view text);
  void ClearPins();
  // New options from the next turn on (window_requests: the requests beyond
  // the new reach leave the window at once). Throws Error naming an option
  // out of range or a creation option (OptionScope::kCreation) that differs;
  // then nothing changes.
  void SetOptions(const SessionOptions& options);
  const SessionOptions& options() const { return opt_; }
  // Batched decoding across sessions on other threads (model/decode_batcher.h):
  // from now on this session's single-token steps go through `batcher`
  // (nullptr: alone), joined with the steps other sessions ask for at the same
  // time. Answers do not change: the batcher's logits are the lone pass's, bit
  // for bit. A batcher of another model than this session's is not used.
  void SetDecodeBatcher(std::shared_ptr<DecodeBatcher> batcher) { batcher_ = std::move(batcher); }
  // Sink blocks shared with other sessions (agent/sink_blocks.h): from the
  // next setup on, this session reads the block of its sink tokens from
  // `blocks` (built there when absent) and holds only its window. nullptr:
  // its own copy, as by default. Answers do not change.
  void SetSinkBlocks(std::shared_ptr<SinkBlocks> blocks);

  // ---- turns (never throw: failures are error envelopes)
  // The C ABI's rule (SPEC §11): after a `call` envelope the text is that
  // call's result (JSON); otherwise it is a new user query.
  Envelope Complete(std::string_view text, uint32_t max_new_tokens = 0);
  Envelope Query(std::string_view query, uint32_t max_new_tokens = 0);
  Envelope ToolResult(std::string_view result_json, uint32_t max_new_tokens = 0);
  // Drops the conversation; tools, facts, pins and the sink cache stay.
  void Reset();
  // A past turn given rather than generated (a stateless client such as an
  // OpenAI one sends the whole conversation each time): the request (or,
  // with `tool_result`, the result of the last call) and the assistant's
  // answer, its calls ([] for a refusal or the end of the loop), go into the
  // cache as if this session had written them; the next turn continues
  // after it. Throws Error naming a malformed call or input; then the
  // session is as after Reset().
  void ReplayTurn(std::string_view text, const nlohmann::ordered_json& calls, bool tool_result = false);

  // ---- run(): executes calls through callbacks until respond/refuse or max_steps
  using ToolFn = std::function<nlohmann::ordered_json(const nlohmann::ordered_json& arguments)>;
  void Bind(const std::string& tool_name, ToolFn fn);
  // A tool from a C++ callable: declares it (appended to the tools) and binds it.
  void AddTool(const nlohmann::ordered_json& schema, ToolFn fn);
  Envelope Run(std::string_view query, uint32_t max_steps = 4, uint32_t max_new_tokens = 0);

  // ---- persistence: the whole session, cache included (same model required)
  void Save(const std::string& path) const;
  // A file that cannot be restored (unreadable, another model, corrupt) is
  // an Error; the session then keeps its own tools, system and pins, and no
  // conversation (as after Reset).
  void Restore(const std::string& path);

  const nlohmann::ordered_json& tools() const { return tools_; }
  const std::vector<std::string>& warnings() const { return warnings_; }
  EnvelopeType last_type() const { return last_type_; }
  // Tools in the context now (indices into tools()).
  const std::vector<uint32_t>& active_tools() const { return active_; }
  // The contrastive head's similarity of the last query to each declared tool
  // (empty when not computed: no head, or neither retrieval nor the naming bias needed it).
  const std::vector<float>& tool_scores() const { return tool_scores_; }
  // The contrastive head's cosine per tool for the last query (empty without a head).
  const std::vector<float>& tool_cosines() const { return tool_cosines_; }
  // The first conversation token the window shows (window_requests), 0: the whole window.
  int64_t window_floor() const { return state_ ? state_->cache().window_floor() : 0; }
  // The tokens of the sink block, and of the last turn (context through EOS):
  // together what the confidence head scored (rollouts for its training).
  const std::vector<int32_t>& sink_ids() const { return sink_ids_; }
  const std::vector<int32_t>& turn_ids() const { return turn_ids_; }
  // The conversation tokens the window shows now (after the sinks), oldest first.
  std::vector<int32_t> window_ids() const;
  // The probability the decoder gave the last turn's call tokens: the cap the
  // reported confidence takes over the head (SPEC §10), so the head is trained
  // on min(head, this) as the user sees it. 1 before the first turn.
  double call_probability() const { return call_probability_; }
  // The turn texts argument values may be copied from (newest last): the
  // recent turns, and with window_requests only those of the requests in view.
  const std::vector<std::string>& copy_texts() const { return evidence_.texts(); }
  // Bytes of the cache and scratch (constant while the sinks stay the same).
  uint64_t state_bytes() const;
  const Model& model() const { return *model_; }

 private:
  void RestoreOrThrow(const std::string& path);  // Restore, without the rollback
  enum class TurnKind { kQuery, kToolResult };
  using Clock = std::chrono::steady_clock;
  static double Since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
  // What a turn measured (the envelope's speeds).
  struct TurnStats {
    double prefill_s = 0, decode_s = 0;
    uint64_t prefill_n = 0, decode_n = 0;
  };
  // What the finished reasoning asks of the call.
  struct CallPlan {
    std::string reasoning;       // its bytes
    uint32_t calls = 0;          // calls it plans (0: no plan)
    uint32_t max_calls = 0;      // at most this many (0: no maximum: the reasoning was cut short)
    bool refuses = false;        // it says why no tool can be called: the call is "[]"
    std::string refusal_reason;  // an enum value its tool lacks, a required value unsaid ("" none)
  };
  struct DecodedCall {
    std::vector<int32_t> tokens;
    double log_p = 0.0;  // the decoder's log-probability of the call (confidence)
    uint32_t budget = 0;
    bool truncated = false, looped = false;
  };
  Envelope Turn(TurnKind kind, std::string_view text, uint32_t max_new_tokens);
  // The turn as stages (Turn reads like this list).
  Envelope TurnOrThrow(TurnKind kind, std::string_view text, uint32_t max_new_tokens);
  // 1. The turn's text (a query: sinks for its tools first), prefilled after
  //    the window; the evidence (copy source, said values) from it.
  void PrefillTurn(TurnKind kind, std::string_view text, uint32_t call_budget, TurnStats& stats);
  // 2. This turn's naming scores and refusal bias; whether naming is biased.
  bool PrepareNaming(TurnKind kind);
  // 3. (Reason, below) then "</think>\n<tool_call>" fed.
  void BridgeToCall(TurnStats& stats);
  // 4. The plan the reasoning wrote.
  CallPlan ReadPlan(TurnKind kind);
  // 5. The call under the grammar and the call rules (agent/call_decoder.cc).
  DecodedCall DecodeCall(const CallPlan& plan, uint32_t call_budget, bool name_bias, TurnStats& stats);
  // 6. The envelope: validation, format guarantees, envelope rules, confidence.
  Envelope FinishEnvelope(TurnKind kind, const CallPlan& plan, const DecodedCall& call, const TurnStats& stats);
  // Picks the tools for a query (retrieval above top_k) and (re)builds the
  // sink block when the selection or setup changed.
  void PrepareSinks(std::string_view query, double* prefill_seconds, uint64_t* prefill_tokens);
  std::vector<uint32_t> SelectTools(std::string_view query);
  // Contrastive similarity of the query to every declared tool (embeddings cached).
  std::vector<float> ScoreTools(std::string_view query);
  // The tool of `selection` retrieval ranked lowest (the last one without a ranking).
  std::vector<uint32_t>::iterator LowestRanked(std::vector<uint32_t>& selection) const;
  float BestNameScore() const;
  // A call of this turn named `tool`: the query's retrieval score has been
  // used on it, so a later call of the turn gets no push towards it (its
  // score becomes the best of the unused tools': the model's own logits
  // choose between calling it again and the next tool).
  void SpendNameScore(int32_t tool);
  // This turn's naming scores: the active tools' ranking scores, none spent.
  void ResetNameScores();
  void Feed(std::span<const int32_t> ids, bool want_logits);
  // The reasoning's heads (reasoning_names): a plan's start (the active
  // tools' names with the naming bias, "no declared tool" with the refusal
  // bias, a quote; after_result: the phrases saying nothing more is to be
  // called instead), or after "-> " one of the planned tool's keys. `plan`:
  // the reasoning so far, whose "T: no arguments needed" calls are not
  // planned again (distinct_plan_spans).
  void RestrictToActiveTools();  // the grammar admits the active tools' names only (all: no restriction)
  void OpenToolHeads(bool name_bias, std::string_view lead, bool after_result, std::string_view plan = {});
  // The planned tool's keys, less those this plan segment gave a span already
  // (`planned`, a bit per property index; all of them when none is left).
  bool OpenKeyHeads(uint32_t tool, uint64_t planned);  // false when the tool has no keys
  // The reasoning's next tokens while a head is open: only tokens that keep
  // `written` (the head so far) a prefix of one of reason_heads_ (and its
  // separator), with its bias; each says whether it completes a head and
  // which tool a completed plan head named.
  struct StepCandidates;
  void HeadCandidates(std::string_view written, StepCandidates& out);
  // Between a call's arguments, as the model would close them: the key of
  // an unwritten argument the conversation says a value for (UnwrittenSaidValueKey)
  // is written instead; true when it was.
  bool ForceSaidArgumentKey(int32_t id, std::vector<int32_t>& call, TurnStats& stats);
  // The key of an unwritten argument that has SaidValues (dates and times
  // with date_time_bias a rule, quantities with quantity_bias a rule) while
  // the conversation says such a value that the calls do not hold yet, or an
  // unwritten enum whose value the request says (SaysOneEnumValue); "" else.
  std::string UnwrittenSaidValueKey(uint32_t args_node, uint64_t written) const;
  // An enum (kLiteral `node`) exactly one of whose string values (3 bytes or
  // more) the request says as a whole phrase, case aside, in a turn whose
  // plan has one call (with enum_word_bias > 0).
  bool SaysOneEnumValue(uint32_t node) const;

  std::shared_ptr<const Model> model_;
  SessionOptions opt_;
  std::unique_ptr<ThreadPool> pool_;
  std::shared_ptr<DecodeBatcher> batcher_;

  nlohmann::ordered_json tools_ = nlohmann::ordered_json::array();
  nlohmann::ordered_json facts_;
  std::vector<std::string> pins_;
  std::vector<std::string> warnings_;
  std::shared_ptr<const grammar::ToolGrammar> grammar_;
  std::unique_ptr<grammar::GrammarMatcher> matcher_;
  std::map<std::string, ToolFn> callbacks_;
  ToolIndex index_;

  // Cache and per-turn state. state_ reads sink_block_'s rows when shared,
  // so it is declared after it (destroyed first).
  std::shared_ptr<SinkBlocks> sink_blocks_;
  std::shared_ptr<const SinkBlock> sink_block_;
  std::unique_ptr<DecoderState> state_;
  DecoderState* decoding_ = nullptr;  // what Feed feeds: state_ (null), or a beam search hypothesis's
  bool sinks_dirty_ = true;         // setup changed since the sinks were built
  std::vector<uint32_t> active_;    // tools in the sink block
  std::vector<uint32_t> selected_;  // what retrieval chose for them (active_ less the tools the budget left out)
  uint32_t turns_ = 0;              // turns since the sinks (0: next query is the first)
  EnvelopeType last_type_ = EnvelopeType::kRefuse;
  std::unique_ptr<DecoderState> embed_state_;  // retrieval embeddings (no sinks)
  ProbePool confidence_pool_, confidence_at_sinks_, contrastive_pool_;
  ProbePool* confidence_pools_[1] = {&confidence_pool_};  // attached to the decoding state(s) for a turn

  std::vector<int32_t> sink_ids_, turn_ids_;
  std::vector<int32_t> conversation_ids_;  // the turns' tokens since the sinks (bounded: 2 windows)
  void RememberTurnIds();  // after a turn: its ids join conversation_ids_
  double call_probability_ = 1.0;
  std::vector<float> tool_scores_;   // [tools] for the last query (empty: none)
  std::vector<float> tool_cosines_;  // [tools] the head's part of tool_scores_ (empty: no head)
  float refusal_bias_ = 0.0f;        // this turn: added to the logits of refusing tokens
  std::vector<std::vector<std::string>> tool_terms_;  // [tools] ToolLexicalTerms
  std::vector<float> name_base_;  // [tools] this turn: the naming score before any is spent
  std::vector<uint8_t> takes_id_;  // [tools] TakesAnIdentifier
  std::string request_;                  // the last user request (Restore ranks it again)
  uint32_t planned_calls_ = 0;           // the calls this turn's reasoning planned (0: no plan)
  std::vector<int64_t> request_starts_;  // cache counter where each of the last window_requests requests began
  std::vector<float> name_scores_;  // [tools] this turn: score of active tools, -inf otherwise
  // The reasoning's open head (reasoning_names): the texts it may take.
  struct ReasonHead {
    std::string_view text;  // in tools_, the grammar or static
    float bonus;
    enum Kind : uint8_t { kTool, kKey, kFixed } kind;
    uint32_t tool;  // kTool, kKey: the tool
    uint32_t key = 0;  // kKey: its index among the tool's properties
  };
  std::vector<ReasonHead> reason_heads_;
  // ---- the reasoning (greedy, or a beam search over hypotheses)
  // One reasoning hypothesis: its tokens and where its plan stands.
  struct ReasoningCursor {
    std::vector<int32_t> think;
    std::string bytes;
    ReasoningSpan span;
    size_t head_start = 0;  // where the open head began in bytes
    bool head_open = false;
    int32_t plan_tool = -1;  // the tool the current plan segment names
    uint64_t planned_keys = 0;  // the keys it gave a span (a bit per property index)
    int32_t last = -1;       // the last token picked (kThinkEndId: closed; -1 none)
    bool finished = false;
    double score = 0.0;      // sum of the picked tokens' log-probabilities (beam search)
    void Clear();
  };
  // What a turn's reasoning may write (fixed for the turn).
  struct ReasoningRules {
    bool name_bias = false, after_result = false, plan_heads = false;
  };
  // A reasoning step's best tokens (value: logit plus the head's or the
  // naming bonus), best first, and optionally the log-sum-exp of every
  // allowed token's value (their log-probabilities).
  struct StepCandidate {
    int32_t id = -1;
    float value = 0.0f;
    bool head_done = false;  // completes the open head
    int32_t tool = -1;       // the tool a completed plan head named (-1: none)
    int32_t key = -1;        // the property index a completed key head named (-1: none)
  };
  struct StepCandidates {
    uint32_t n = 0, cap = 1;
    bool log_probs = false;
    double top = -INFINITY, sum = 0.0;  // running log-sum-exp of the values
    StepCandidate at[SessionOptions::kMaxReasoningBeams];
    void Reset(uint32_t capacity, bool with_log_probs);
    void Add(int32_t id, float value, bool head_done, int32_t tool, int32_t key = -1);
    double LogProb(uint32_t k) const { return double(at[k].value) - (top + std::log(sum)); }
  };
  // A beam search slot: a hypothesis's decoder state, next-token logits,
  // confidence pool, open heads, naming scores and cursor. The session's own
  // fields hold the hypothesis being stepped (SwapHypothesis swaps them in,
  // and again out; Feed feeds its state meanwhile).
  struct BeamSlot {
    std::unique_ptr<DecoderState> state;
    std::vector<float> logits;
    ProbePool pool;
    std::vector<ReasonHead> heads;
    std::string_view head_lead;
    std::vector<float> name_scores;
    std::vector<uint8_t> name_spent;
    ReasoningCursor cursor;
  };
  // The turn's reasoning into reasoning_ (and the winning hypothesis's cache,
  // logits and pool into the session's).
  void Reason(const ReasoningRules& rules);
  void ReasoningCandidates(const ReasoningCursor& c, StepCandidates& out);
  RepeatedSpanCheck span_check_;  // (ReasoningCandidates: the plan's spans this step)
  // Takes candidate k (nullptr: none was allowed) with log-probability lp:
  // the plan's heads move on, the token is fed.
  void AdvanceReasoning(ReasoningCursor& c, const StepCandidate* k, double lp, const ReasoningRules& rules);
  void SwapHypothesis(BeamSlot& slot);
  void CopyHypothesis(const BeamSlot& from, BeamSlot& to);
  // beam_slots_ for this sink block: reasoning_beams states holding its sinks.
  void PrepareBeamSlots();
  ReasoningCursor reasoning_;
  StepCandidates step_;
  std::vector<BeamSlot> beam_slots_;
  uint64_t sink_epoch_ = 0, beam_epoch_ = ~uint64_t(0);  // the sink block the slots copied
  struct BeamExpansion {
    uint32_t slot;
    int32_t k;  // candidate index, -1: the slot's finished hypothesis carried over
    double score;    // the hypothesis's sum of log-probabilities with it
    double key = 0;  // its rank: score per token
  };
  std::vector<BeamExpansion> expansions_;
  std::vector<StepCandidates> slot_steps_;
  std::string_view head_lead_;  // bytes before each of them (" " after "->" and " |")
  std::vector<uint8_t> head_alive_;  // [2 x reason_heads_] scratch: head with separator 0 / 1 still fits
  std::vector<uint32_t> chain_called_;  // the tools this request's calls named so far (saved)
  std::vector<std::string> request_terms_;  // LexicalTerms of the last user request
  std::vector<uint8_t> name_spent_;  // [tools] this turn: 1 = a call already named it
  // What the conversation says (copy source, dates, quantities, ...), and
  // the call's rules with the step they edit.
  TurnEvidence evidence_;
  CallRuleChain call_rules_;
  CallStep call_step_;
  std::string call_bytes_;  // this turn's call so far (reserved once per model)
  // Decode buffers, sized once per model.
  std::vector<float> logits_;
  std::vector<uint32_t> mask_, text_mask_, copy_mask_;  // [mask words] reasoning: allowed, text tokens, copy tokens
  std::vector<uint32_t> quote_mask_;  // tokens whose bytes hold a quote (they open and close plan spans)
  std::vector<uint32_t> copy_walk_;  // [trie max depth + 1]
};

// The one tool extract() declares: a tool {"name", "parameters", ...} as it
// is, any other value as the parameters of a tool named "extract".
nlohmann::ordered_json ExtractTool(const nlohmann::ordered_json& schema);

// extract(text, schema): a one-tool session whose only tool is
// ExtractTool(schema); the envelope's single call carries the record.
Envelope Extract(std::shared_ptr<const Model> model, std::string_view text, const nlohmann::ordered_json& schema,
                 const SessionOptions& options = {});

}  // namespace needle
