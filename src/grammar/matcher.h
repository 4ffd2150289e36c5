// The runtime side of the tool-call grammar: a pushdown state over a
// ToolGrammar that accepts bytes, and the allowed-token mask over the whole
// vocabulary for constrained decoding (SPEC §9).
//
// State: a stack of fixed-size frames (one per open JSON value: the calls
// array, a call, an object, an array, a string, a number, ...), stored inline
// in a GrammarState (no heap), so a snapshot is a plain copy of the live
// frames (32 bytes each, typically 4-6 of them). Undo = restore a snapshot.
//
// Decode loop, per generated token (see docs/grammar.md):
//   matcher.ComputeMask(bits)  -> allowed tokens; bit kToolCallEndId is set
//                                 (and true returned) iff IsComplete()
//   sample from the logits masked by `bits`
//   matcher.AcceptToken(id)    -> advances (never fails for an allowed id)
// and </tool_call> is emitted only when IsComplete(). Nothing is allocated in
// the loop: the walk buffers are sized when the matcher is made.
//
// Cost per step: AcceptToken is O(token bytes). ComputeMask zeroes the mask
// and walks the token trie from the current state, copying the state once per
// visited trie node and stepping one byte; a rejected byte prunes the whole
// subtree. Two shortcuts cover the states where most of the vocabulary is
// allowed: inside a free-text string it copies a precomputed mask of the plain
// tokens and walks only the special ones (quotes, backslashes, partial UTF-8);
// inside a pattern/format string without maxLength it copies a cached mask of
// the tokens that stay inside (keyed by node, automaton state and escape
// state; filled on first use, at most one walk per key) and walks only the
// tokens with a quote. grammar_bench measures it (docs/grammar.md has the numbers).
//
// Termination: every reachable state has a finite completion (bounds, length
// limits and patterns are checked for reachability, so the grammar never
// dead-ends), but a string or array without maxLength/maxItems can grow
// without limit. The caller caps the call at a token budget and, when the
// budget is nearly spent, appends CompletionBytes() (a short valid ending)
// instead of sampling further.
//
// A matcher is not thread-safe; use one per session. The grammar and the
// trie are shared, read-only.
#pragma once

#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "grammar/copy_source.h"  // CopySource
#include "grammar/token_trie.h"   // TokenTrie
#include "grammar/tool_grammar.h" // ToolGrammar

namespace needle::grammar {

inline constexpr uint32_t kMaxFrames = 24;

// One open value. Field use depends on the node kind (matcher.cc).
struct Frame {
  uint32_t node;            // index into ToolGrammar::nodes
  uint8_t phase, a, b, c;   // small per-kind fields (phase, sign, digit counts, escape state)
  uint32_t u, v;            // trie node / DFA state / literal position; count / tool / property
  uint64_t w, z;            // seen-keys mask, integer part, \u accumulator; fraction part
};
static_assert(sizeof(Frame) == 32);

struct GrammarState {
  uint32_t depth = 0;  // live frames; 0 = the calls array is complete
  Frame frames[kMaxFrames];

  void CopyFrom(const GrammarState& o) {
    depth = o.depth;
    std::memcpy(frames, o.frames, sizeof(Frame) * o.depth);
  }
};

struct MatcherContext;  // (matcher.cc)

class GrammarMatcher {
 public:
  // `trie` may be null for byte-level use only (no masks or token ids).
  explicit GrammarMatcher(std::shared_ptr<const ToolGrammar> grammar, std::shared_ptr<const TokenTrie> trie = nullptr);

  // Back to the start: nothing consumed, the next byte must be '['. Clears
  // SetCallCount.
  void Reset();

  // The number of calls this array may hold once it holds one (the empty
  // array, a refusal, stays allowed): it closes only after `min_calls` and
  // takes no more than `max_calls` (0 = no limit beyond the grammar's
  // max_calls). The session sets it from the plan in the reasoning.
  void SetCallCount(uint32_t min_calls, uint32_t max_calls);

  // The array must hold a call: "[]" is not admitted while a tool is
  // (tool_choice "required" or a named function). Cleared by Reset().
  void RequireCall(bool on) { require_call_ = on; }

  // Restrict the admitted tool names to these tool indices (retrieval);
  // an empty list admits only "[]". AllowAllTools() undoes it.
  void RestrictTools(std::span<const uint32_t> tool_indices);
  void RestrictToolNames(const std::vector<std::string>& names);  // unknown names are ignored
  void AllowAllTools();

  // Feed bytes. On rejection nothing changes and false is returned.
  bool AcceptByte(uint8_t b);
  bool AcceptBytes(std::string_view bytes);
  // Would these bytes be accepted from the current state?
  bool CanAccept(std::string_view bytes) const;
  // A token's bytes; </tool_call> is accepted (without changing the state)
  // iff IsComplete(); other control/marker tokens are rejected.
  bool AcceptToken(int32_t id);

  // A whole array of calls has been consumed: </tool_call> may follow.
  bool IsComplete() const { return state_.depth == 0; }

  // Allowed tokens: `bits` has at least trie->mask_words() words and is
  // overwritten entirely. Returns whether </tool_call> is allowed (its bit is
  // then set too, when the id is inside the vocabulary).
  bool ComputeMask(std::span<uint32_t> bits);
  // The same into exactly trie->mask_words() words.
  bool ComputeMask(uint32_t* bits);

  // Copy tracking: with a source set, every string (pattern and format
  // strings too: a `format: date` value copies the "2025-09-06" the session
  // derives from "September 6, 2025") tracks whether its content so far is a substring of `source`
  // (not owned; it must stay alive and unchanged while set, or be unset).
  // It changes no acceptance: it only feeds ComputeCopyMask. Set it before a
  // call starts (strings opened earlier track from wherever they are).
  void SetCopySource(const CopySource* source) { copy_ = source; }
  // Tokens that keep the current string or number a copy of the
  // source: its content then still a substring, or ended after a non-empty
  // copy (a string's closing quote; a number's following ',', '}', ']' or
  // space; the bytes after that are not checked: intersect with ComputeMask).
  // All zero, and false, elsewhere, after the copy broke, or without a
  // source. Returns whether any bit is set.
  bool ComputeCopyMask(std::span<uint32_t> bits);

  // Naming a call: if `bytes` (a candidate token's) start or continue the name
  // of a call from the current state, the tools whose names they still fit,
  // as a range of name ranks [*rank_lo, *rank_hi) (grammar().tool_of_rank
  // maps a rank to a tool; tools left out by RestrictTools may be inside the
  // range). False when the bytes do not reach a name, or the current call is
  // already named, or the bytes are rejected.
  bool NameCandidates(std::string_view bytes, uint32_t* rank_lo, uint32_t* rank_hi) const;
  // Whether the next token may start or continue a call's name (cheap).
  bool BeforeOrInName() const;
  // The tool of the open call once its name is complete (its arguments
  // follow), else -1.
  int32_t NamedTool() const;

  // Would these bytes (a token's) close the current call's arguments object
  // (opened before or within them)?
  bool ClosesArguments(std::string_view bytes) const { return ArgumentsCloseAt(bytes) != std::string_view::npos; }
  // The index in `bytes` of the byte that would close the current call's
  // arguments object (`"}}]` after a string value: 1), npos when they do not.
  size_t ArgumentsCloseAt(std::string_view bytes) const;
  // The call is named and its arguments object not yet pushed: *rest = the
  // bytes that complete `,"arguments":` from here (tokens run across it).
  bool ArgumentsPending(std::string* rest) const;
  // Before or between the arguments of a call (its '{' next, right after
  // it, or after a value, where ',' or '}' comes next; a number or literal
  // that may end here counts as ended): the arguments'
  // kObject node, the mask of the properties written so far (bit i =
  // Node::prop_names[i]) and whether the '{' was consumed; else -1.
  int32_t BetweenArguments(uint64_t* written, bool* opened) const;
  // A string value open now (its opening quote next, or inside it between
  // characters, no escape pending): its kString node, else -1. *opened says
  // whether the opening quote was consumed.
  int32_t OpenString(bool* opened) const;
  // A number value open now (its first byte next, or some of it written and
  // more may follow): its kNumber node, else -1.
  int32_t OpenNumber() const;
  // Choosing an enum / const / boolean value: the kLiteral node of the value
  // open now (its first byte next, or part of it consumed), else -1.
  int32_t OpenLiteral() const;
  // The values of the open literal that `bytes` (a candidate token's) start,
  // continue or complete, as a range of ranks [*rank_lo, *rank_hi) of its
  // trie (Node::value_of_rank maps a rank to an index into Node::values).
  // False when no literal is open or the bytes fit none of its values.
  bool LiteralCandidates(std::string_view bytes, uint32_t* rank_lo, uint32_t* rank_hi) const;

  // Bytes that complete the calls array from here (shortest choices, greedy),
  // so a capped generation can always finish; empty when already complete.
  // Returns false only if no completion was found within 1 MiB (not expected).
  bool CompletionBytes(std::string* out) const;

  const GrammarState& state() const { return state_; }
  void RestoreState(const GrammarState& s) { state_.CopyFrom(s); }
  const ToolGrammar& grammar() const { return *grammar_; }
  const TokenTrie* trie() const { return trie_.get(); }

  // One byte against an explicit state (for tests and tools).
  bool Step(GrammarState& s, uint8_t b) const;

 private:
  void WalkTrie(const TokenTrie::Trie& t, std::span<uint32_t> bits);
  // Tokens that stay inside the pattern string `top` (cached).
  const std::vector<uint32_t>& InsideStringMask(const Node& n, const Frame& top);

  std::shared_ptr<const ToolGrammar> grammar_;
  std::shared_ptr<const TokenTrie> trie_;
  std::vector<uint32_t> active_prefix_;  // [tools + 1] by name rank, empty = all tools
  GrammarState state_;
  GrammarState scratch_;
  std::vector<GrammarState> walk_;  // [trie max depth + 1]
  std::vector<Frame> frame_walk_;   // [trie max depth + 1]: the string-only walk
  std::vector<uint32_t> copy_walk_; // [trie max depth + 1]: copy states along the copy walk
  const CopySource* copy_ = nullptr;
  uint32_t min_calls_ = 0, max_calls_ = 0;  // SetCallCount
  bool require_call_ = false;                // RequireCall
  MatcherContext MakeCtx(const CopySource* copy) const;
  // (node << 20 | escape << 16 | DFA state) -> mask of the tokens that stay inside that string.
  std::unordered_map<uint64_t, std::vector<uint32_t>> inside_cache_;
};

// The token ids a session feeds for bytes from CompletionBytes(), appended to
// ids. A call cut inside a multi-byte character leaves the completion starting
// with that character's continuation bytes; alone they are not UTF-8 (the
// tokenizer would turn each into U+FFFD, which the grammar rejects), so they
// become byte pieces, and the rest is encoded as text. Throws Error(kInternal)
// when the tokenizer has no byte piece for such a byte.
void EncodeCompletion(const Tokenizer& tok, std::string_view bytes, std::vector<int32_t>& ids);

}  // namespace needle::grammar
