#include "grammar/matcher.h"

#include <algorithm>
#include <deque>
#include <unordered_map>

#include "base/error.h"         // Error
#include "grammar/number.h"     // NumberIntPrefixViable, ...
#include "io/tokenizer_blob.h"  // kToolCallEndId

namespace needle::grammar {

// Frame fields by node kind:
//   kCalls      phase 0 '[' | 1 after '[' | 2 after a call | 3 after ','; u = calls so far
//   kCall       phase 0 in `{"name":` (u = position) | 1 in the name trie (u = trie node)
//               | 2 in `,"arguments":` (u = position, v = tool) | 3 after the arguments, '}'
//   kObject     phase 0 '{' | 1 after '{' | 2 in a key (u = trie node) | 3 ':' (v = property)
//               | 4 after a value | 5 after ','; w = properties seen (bit mask)
//   kArray,     phase 0 '[' | 1 after '[' | 2 after an item; u = items so far
//   kAnyArray
//   kAnyObject  phase 0 '{' | 1 after '{' | 2 after a key, ':' | 3 after a value | 4 after ','
//   kString     phase 0 '"' | 1 content: u = DFA state, v = code points, a = escape state
//               (0 none, 1 after '\', 2 \u digits, 3 expect '\' of a low surrogate,
//               4 expect 'u', 5 low surrogate digits), b = hex digits, w = hex value,
//               z = copy state (CopySource; plain strings, when a copy source is set)
//   kNumber     phase 0 start | 1 after '-' | 2 integer digits | 3 after '.' | 4 fraction
//               digits | 5 after 'e' | 6 after the exponent sign | 7 exponent digits;
//               a = negative, b = integer digits, c = fraction digits, w = integer part,
//               z = fraction digits as an integer, u = exponent digits,
//               v = copy state (CopySource, when a copy source is set)
//   kLiteral    u = trie node (popped as soon as a value is complete and cannot go on)
//   kUnion      replaced by the alternative its first byte selects

// What a step reads besides the state: the tools admitted, the copy source
// and the call count (GrammarMatcher's settings).
struct MatcherContext {
  const ToolGrammar& g;
  const uint32_t* active_prefix;  // by name rank; nullptr = every tool
  const CopySource* copy;         // tracks the copy state of plain strings (Frame::z) and numbers (Frame::v); nullptr = off
  uint32_t min_calls = 0, max_calls = 0;  // GrammarMatcher::SetCallCount
  bool require_call = false;              // GrammarMatcher::RequireCall
};

namespace {

constexpr std::string_view kCallOpen = "{\"name\":";
constexpr std::string_view kCallArgs = ",\"arguments\":";
// |exponent| <= 99: with at most 15 + 15 digits every admitted number is a finite double.
constexpr uint32_t kMaxExponentDigits = 2;

void InitFrame(Frame& f, const ToolGrammar& g, uint32_t node) {
  f = Frame{};
  f.node = node;
  if (g.nodes[node].kind == NodeKind::kLiteral) f.u = g.nodes[node].literal_trie;
}

bool Push(GrammarState& st, const ToolGrammar& g, uint32_t node) {
  if (st.depth >= kMaxFrames) return false;
  InitFrame(st.frames[st.depth++], g, node);
  return true;
}

int HexDigit(uint8_t b) {
  if (b >= '0' && b <= '9') return b - '0';
  if (b >= 'a' && b <= 'f') return b - 'a' + 10;
  if (b >= 'A' && b <= 'F') return b - 'A' + 10;
  return -1;
}

// Can an accepted string with its length in range still be reached from DFA state s after c code points?
inline bool StringAlive(const Node& n, uint32_t s, uint64_t c) {
  if (c > n.max_len) return false;
  if (!n.alive.empty()) {
    const size_t i = size_t(s) * (size_t(n.len_cap) + 1) + size_t(c < n.len_cap ? c : n.len_cap);
    return (n.alive[i >> 6] >> (i & 63)) & 1;
  }
  return c + n.dfa->dist_to_accept[s] <= n.max_len;
}

// One decoded content byte.
inline bool StringContent(const Node& n, Frame& f, uint8_t byte) {
  const uint16_t t = n.dfa->Step(f.u, byte);
  if (t == kDfaDead) return false;
  const uint64_t c = uint64_t(f.v) + (IsUtf8Lead(byte) ? 1 : 0);
  if (!StringAlive(n, t, c)) return false;
  f.u = t;
  f.v = uint32_t(c);
  return true;
}

inline bool StringContentOk(const Node& n, const Frame& f, uint8_t byte) {
  Frame t = f;
  return StringContent(n, t, byte);
}

constexpr uint8_t kEscapeLetters[] = {'"', '\\', '/', 'b', 'f', 'n', 'r', 't'};
constexpr uint8_t kEscapeDecoded[] = {'"', '\\', '/', '\b', '\f', '\n', '\r', '\t'};

inline bool EscapeViable(const Node& n, const Frame& f) {
  for (uint8_t d : kEscapeDecoded)
    if (StringContentOk(n, f, d)) return true;
  return n.generic_string && n.dfa->Accepting(f.u) && uint64_t(f.v) + 1 <= n.max_len;
}

// Content of a string (phase 1): 0 reject, 1 consumed, 2 consumed the closing quote.
int StringStep(const Node& n, Frame& f, uint8_t b) {
  switch (f.a) {
    case 0:
      if (b == '"') {
        if (!n.dfa->Accepting(f.u) || (n.min_len_exact && f.v < n.min_len)) return 0;
        return 2;
      }
      if (b == '\\') {
        if (!EscapeViable(n, f)) return 0;
        f.a = 1;
        return 1;
      }
      if (b < 0x20) return 0;
      return StringContent(n, f, b) ? 1 : 0;
    case 1: {
      if (b == 'u') {
        if (!n.generic_string || !n.dfa->Accepting(f.u) || uint64_t(f.v) + 1 > n.max_len) return 0;
        f.a = 2, f.b = 0, f.w = 0;
        return 1;
      }
      for (size_t i = 0; i < sizeof kEscapeLetters; ++i) {
        if (kEscapeLetters[i] != b) continue;
        if (!StringContent(n, f, kEscapeDecoded[i])) return 0;
        f.a = 0;
        return 1;
      }
      return 0;
    }
    case 2:
    case 5: {
      const int h = HexDigit(b);
      if (h < 0) return 0;
      if (f.a == 2) {
        if (f.b == 1 && f.w == 0xD && h >= 0xC) return 0;  // a lone low surrogate
      } else {
        if (f.b == 0 && h != 0xD) return 0;  // a low surrogate must follow
        if (f.b == 1 && h < 0xC) return 0;
      }
      f.w = f.w * 16 + uint64_t(h);
      if (++f.b < 4) return 1;
      if (f.a == 2 && f.w >= 0xD800 && f.w <= 0xDBFF) {
        f.a = 3;
        return 1;
      }
      f.v += 1;  // one code point (a surrogate pair counts once)
      f.a = 0;
      return 1;
    }
    case 3:
      if (b != '\\') return 0;
      f.a = 4;
      return 1;
    case 4:
      if (b != 'u') return 0;
      f.a = 5, f.b = 0, f.w = 0;
      return 1;
  }
  return 0;
}

// 1 consumed, 0 rejected, -1 the number is complete and `b` belongs to the parent.
int NumberStep(const Node& n, Frame& f, uint8_t b) {
  const bool digit = b >= '0' && b <= '9';
  const uint64_t d = uint64_t(b - '0');
  switch (f.phase) {
    case 0:
      if (b == '-') {
        if (!n.StartsWith('-')) return 0;
        f.a = 1;
        f.phase = 1;
        return 1;
      }
      [[fallthrough]];
    case 1:
      if (!digit) return 0;
      if (n.integer && f.a && d == 0) return 0;  // no "-0" integers
      if (!NumberIntPrefixViable(n, f.a, d, 1)) return 0;
      f.w = d, f.b = 1, f.phase = 2;
      return 1;
    case 2:
      if (digit) {
        if (f.w == 0 || f.b >= n.max_int_digits) return 0;
        const uint64_t nv = f.w * 10 + d;
        if (!NumberIntPrefixViable(n, f.a, nv, f.b + 1u)) return 0;
        f.w = nv, ++f.b;
        return 1;
      }
      if (b == '.' && !n.integer) {
        if (!NumberFracPrefixViable(n, f.a, f.w, 0, 0)) return 0;
        f.phase = 3;
        return 1;
      }
      if ((b == 'e' || b == 'E') && n.allow_exponent) {
        f.phase = 5;
        return 1;
      }
      return NumberValueOk(n, f.a, f.w, 0, 0) ? -1 : 0;
    case 3:
      if (!digit || !NumberFracPrefixViable(n, f.a, f.w, d, 1)) return 0;
      f.z = d, f.c = 1, f.phase = 4;
      return 1;
    case 4:
      if (digit) {
        if (f.c >= n.max_frac_digits) return 0;
        const uint64_t nz = f.z * 10 + d;
        if (!NumberFracPrefixViable(n, f.a, f.w, nz, f.c + 1u)) return 0;
        f.z = nz, ++f.c;
        return 1;
      }
      if ((b == 'e' || b == 'E') && n.allow_exponent) {
        f.phase = 5;
        return 1;
      }
      return NumberValueOk(n, f.a, f.w, f.z, f.c) ? -1 : 0;
    case 5:
      if (b == '+' || b == '-') {
        f.phase = 6;
        return 1;
      }
      [[fallthrough]];
    case 6:
      if (!digit) return 0;
      f.u = 1, f.phase = 7;
      return 1;
    case 7:
      if (digit) {
        if (f.u >= kMaxExponentDigits) return 0;
        ++f.u;
        return 1;
      }
      return -1;
  }
  return 0;
}

using Ctx = MatcherContext;

// After a consumed byte of a plain string: the copy state follows the decoded
// content. `escape` is the escape state before the byte.
inline void TrackCopy(const CopySource& copy, Frame& f, uint8_t escape, uint8_t b) {
  if (escape == 0 && f.a == 0) {
    f.z = copy.Step(uint32_t(f.z), b);
  } else if (escape == 1 && f.a == 0) {
    for (size_t i = 0; i < sizeof kEscapeLetters; ++i)
      if (kEscapeLetters[i] == b) f.z = copy.Step(uint32_t(f.z), kEscapeDecoded[i]);
  } else if (f.a >= 2) {
    f.z = CopySource::kDead;  // unicode escapes: not worth matching
  }
}

inline bool ToolsBelow(const Ctx& cx, const TrieNode& t) {
  if (cx.active_prefix == nullptr) return t.rank_hi > t.rank_lo;
  return cx.active_prefix[t.rank_hi] > cx.active_prefix[t.rank_lo];
}

bool StepImpl(const Ctx& cx, GrammarState& st, uint8_t b) {
  const ToolGrammar& g = cx.g;
  for (;;) {
    if (st.depth == 0) return false;
    Frame& f = st.frames[st.depth - 1];
    const Node& n = g.nodes[f.node];
    switch (n.kind) {
      case NodeKind::kString: {
        if (f.phase == 0) {
          if (b != '"') return false;
          f.phase = 1;
          return true;
        }
        const uint8_t escape = f.a;
        const int r = StringStep(n, f, b);
        if (r == 2) --st.depth;
        if (r == 1 && cx.copy) TrackCopy(*cx.copy, f, escape, b);
        return r != 0;
      }
      case NodeKind::kNumber: {
        const int r = NumberStep(n, f, b);
        if (r == 1 && cx.copy) f.v = cx.copy->Step(f.v, b);  // the copy state of numbers (v is free there)
        if (r >= 0) return r == 1;
        --st.depth;
        continue;  // the byte goes to the parent
      }
      case NodeKind::kLiteral: {
        const int32_t child = g.TrieChild(f.u, b);
        if (child >= 0) {
          f.u = uint32_t(child);
          const TrieNode& t = g.tries[size_t(child)];
          if (t.value >= 0 && t.edge_count == 0) --st.depth;
          return true;
        }
        if (g.tries[f.u].value < 0) return false;
        --st.depth;  // a complete number literal: the byte goes to the parent
        continue;
      }
      case NodeKind::kUnion: {
        bool found = false;
        for (uint32_t alt : n.alts) {
          if (g.nodes[alt].StartsWith(b)) {
            InitFrame(f, g, alt);
            found = true;
            break;
          }
        }
        if (!found) return false;
        continue;
      }
      case NodeKind::kObject:
        switch (f.phase) {
          case 0:
            if (b != '{') return false;
            f.phase = 1;
            return true;
          case 1:
            if (b == '}') {
              if (n.required != 0) return false;
              --st.depth;
              return true;
            }
            [[fallthrough]];
          case 5: {
            if (b != '"') return false;
            const int32_t c = g.TrieChild(n.key_trie, '"');
            if (c < 0 || (g.tries[size_t(c)].mask & ~f.w) == 0) return false;
            f.u = uint32_t(c);
            f.phase = 2;
            return true;
          }
          case 2: {
            const int32_t c = g.TrieChild(f.u, b);
            if (c < 0) return false;
            const TrieNode& t = g.tries[size_t(c)];
            if ((t.mask & ~f.w) == 0) return false;
            f.u = uint32_t(c);
            if (t.value >= 0) f.v = uint32_t(t.value), f.phase = 3;
            return true;
          }
          case 3:
            if (b != ':') return false;
            f.w |= uint64_t(1) << f.v;
            f.phase = 4;
            return Push(st, g, n.prop_nodes[f.v]);
          case 4:
            if (b == ',') {
              if ((n.all_props & ~f.w) == 0) return false;
              f.phase = 5;
              return true;
            }
            if (b == '}') {
              if ((n.required & ~f.w) != 0) return false;
              --st.depth;
              return true;
            }
            return false;
        }
        return false;
      case NodeKind::kArray:
      case NodeKind::kAnyArray:
        switch (f.phase) {
          case 0:
            if (b != '[') return false;
            f.phase = 1;
            return true;
          case 1:
            if (b == ']') {
              if (n.min_items > 0) return false;
              --st.depth;
              return true;
            }
            if (n.max_items == 0) return false;
            f.phase = 2;
            f.u = 1;
            if (!Push(st, g, n.items)) return false;
            continue;  // the byte starts the first item
          case 2:
            if (b == ',') {
              if (f.u >= n.max_items) return false;
              ++f.u;
              return Push(st, g, n.items);
            }
            if (b == ']') {
              if (f.u < n.min_items) return false;
              --st.depth;
              return true;
            }
            return false;
        }
        return false;
      case NodeKind::kAnyObject:
        switch (f.phase) {
          case 0:
            if (b != '{') return false;
            f.phase = 1;
            return true;
          case 1:
          case 3:
            if (b == '}') {
              --st.depth;
              return true;
            }
            if (f.phase == 3) {
              if (b != ',') return false;
              f.phase = 4;
              return true;
            }
            [[fallthrough]];
          case 4:
            if (b != '"') return false;
            f.phase = 2;
            if (!Push(st, g, g.any_key_string)) return false;
            continue;  // the quote opens the key
          case 2:
            if (b != ':') return false;
            f.phase = 3;
            return Push(st, g, g.any_value);
        }
        return false;
      case NodeKind::kCalls: {
        const uint32_t max_calls = g.options().max_calls;
        const bool more = (max_calls == 0 || f.u < max_calls) && (cx.max_calls == 0 || f.u < cx.max_calls) &&
                          ToolsBelow(cx, g.tries[g.name_trie]);
        switch (f.phase) {
          case 0:
            if (b != '[') return false;
            f.phase = 1;
            return true;
          case 1:
            if (b == ']') {
              if (cx.require_call && more) return false;  // (no tool admitted: "[]" stays the only way out)
              --st.depth;
              return true;
            }
            [[fallthrough]];
          case 3:
            if (b != '{' || !more) return false;
            ++f.u;
            f.phase = 2;
            if (!Push(st, g, g.call)) return false;
            continue;  // the brace opens the call
          case 2:
            if (b == ']') {
              if (f.u < cx.min_calls && more) return false;  // the plan has more calls
              --st.depth;
              return true;
            }
            if (b != ',' || !more) return false;
            f.phase = 3;
            return true;
        }
        return false;
      }
      case NodeKind::kCall:
        switch (f.phase) {
          case 0:
            if (b != uint8_t(kCallOpen[f.u])) return false;
            if (++f.u == kCallOpen.size()) f.phase = 1, f.u = g.name_trie;
            return true;
          case 1: {
            const int32_t c = g.TrieChild(f.u, b);
            if (c < 0) return false;
            const TrieNode& t = g.tries[size_t(c)];
            if (!ToolsBelow(cx, t)) return false;
            f.u = uint32_t(c);
            if (t.value >= 0) f.v = uint32_t(t.value), f.phase = 2, f.u = 0;
            return true;
          }
          case 2:
            if (b != uint8_t(kCallArgs[f.u])) return false;
            if (++f.u == kCallArgs.size()) {
              f.phase = 3;
              return Push(st, g, g.tools()[f.v].args);
            }
            return true;
          case 3:
            if (b != '}') return false;
            --st.depth;
            return true;
        }
        return false;
    }
    return false;
  }
}

}  // namespace

GrammarMatcher::GrammarMatcher(std::shared_ptr<const ToolGrammar> grammar, std::shared_ptr<const TokenTrie> trie)
    : grammar_(std::move(grammar)), trie_(std::move(trie)) {
  if (!grammar_) throw Error(ErrorCode::kInvalidArgument, "GrammarMatcher: no grammar");
  if (grammar_->max_frame_depth > kMaxFrames)
    throw Error(ErrorCode::kUnsupported, "tool schemas nest deeper than the matcher's frame stack");
  walk_.resize(trie_ ? size_t(trie_->max_depth()) + 1 : 1);
  frame_walk_.resize(walk_.size());
  copy_walk_.resize(walk_.size());
  Reset();
}

void GrammarMatcher::Reset() {
  state_.depth = 0;
  Push(state_, *grammar_, grammar_->root);
  min_calls_ = max_calls_ = 0;
  require_call_ = false;
}

MatcherContext GrammarMatcher::MakeCtx(const CopySource* copy) const {
  return MatcherContext{*grammar_, active_prefix_.empty() ? nullptr : active_prefix_.data(), copy, min_calls_, max_calls_, require_call_};
}

void GrammarMatcher::SetCallCount(uint32_t min_calls, uint32_t max_calls) {
  if (max_calls > 0) min_calls = std::min(min_calls, max_calls);
  min_calls_ = min_calls, max_calls_ = max_calls;
}

void GrammarMatcher::RestrictTools(std::span<const uint32_t> tool_indices) {
  const size_t n = grammar_->tools().size();
  std::vector<uint8_t> on(n, 0);
  for (uint32_t t : tool_indices)
    if (t < n) on[t] = 1;
  active_prefix_.assign(n + 1, 0);
  for (size_t r = 0; r < n; ++r) active_prefix_[r + 1] = active_prefix_[r] + on[grammar_->tool_of_rank[r]];
}

void GrammarMatcher::RestrictToolNames(const std::vector<std::string>& names) {
  std::vector<uint32_t> idx;
  for (const std::string& s : names) {
    const int i = grammar_->FindTool(s);
    if (i >= 0) idx.push_back(uint32_t(i));
  }
  RestrictTools(idx);
}

void GrammarMatcher::AllowAllTools() { active_prefix_.clear(); }

bool GrammarMatcher::Step(GrammarState& s, uint8_t b) const {
  const Ctx cx = MakeCtx(copy_);
  return StepImpl(cx, s, b);
}

bool GrammarMatcher::AcceptByte(uint8_t b) {
  scratch_.CopyFrom(state_);
  if (!Step(scratch_, b)) return false;
  state_.CopyFrom(scratch_);
  return true;
}

bool GrammarMatcher::AcceptBytes(std::string_view bytes) {
  scratch_.CopyFrom(state_);
  const Ctx cx = MakeCtx(copy_);
  for (char c : bytes)
    if (!StepImpl(cx, scratch_, uint8_t(c))) return false;
  state_.CopyFrom(scratch_);
  return true;
}

bool GrammarMatcher::CanAccept(std::string_view bytes) const {
  GrammarState s;
  s.CopyFrom(state_);
  const Ctx cx = MakeCtx(copy_);
  for (char c : bytes)
    if (!StepImpl(cx, s, uint8_t(c))) return false;
  return true;
}

bool GrammarMatcher::AcceptToken(int32_t id) {
  if (id == int32_t(kToolCallEndId)) return IsComplete();
  if (!trie_ || !trie_->Eligible(id)) return false;
  return AcceptBytes(trie_->Bytes(id));
}

void GrammarMatcher::WalkTrie(const TokenTrie::Trie& t, std::span<uint32_t> bits) {
  const Ctx cx = MakeCtx(copy_);
  const TokenTrie::Node* nodes = t.nodes.data();
  const int32_t* ids = t.ids.data();
  const uint32_t n = uint32_t(t.nodes.size());
  GrammarState* walk = walk_.data();
  uint32_t* out = bits.data();
  for (uint32_t i = 1; i < n;) {
    const TokenTrie::Node& node = nodes[i];
    GrammarState& s = walk[node.depth];
    s.CopyFrom(walk[node.depth - 1]);
    if (!StepImpl(cx, s, node.byte)) {
      i = node.end;
      continue;
    }
    for (uint32_t k = node.tok_begin; k < node.tok_end; ++k) out[uint32_t(ids[k]) >> 5] |= 1u << (ids[k] & 31);
    ++i;
  }
}

const std::vector<uint32_t>& GrammarMatcher::InsideStringMask(const Node& n, const Frame& top) {
  const uint64_t key = uint64_t(top.node) << 20 | uint64_t(top.a) << 16 | top.u;
  auto it = inside_cache_.find(key);
  if (it != inside_cache_.end()) return it->second;
  std::vector<uint32_t> mask(trie_->mask_words(), 0);
  const TokenTrie::Trie& t = trie_->all();
  frame_walk_[0] = top;
  for (uint32_t i = 1; i < t.nodes.size();) {
    const TokenTrie::Node& node = t.nodes[i];
    Frame& f = frame_walk_[node.depth];
    f = frame_walk_[node.depth - 1];
    if (StringStep(n, f, node.byte) != 1) {  // rejected, or closes the string: not "inside"
      i = node.end;
      continue;
    }
    for (uint32_t k = node.tok_begin; k < node.tok_end; ++k) mask[uint32_t(t.ids[k]) >> 5] |= 1u << (t.ids[k] & 31);
    ++i;
  }
  return inside_cache_.emplace(key, std::move(mask)).first->second;
}

bool GrammarMatcher::BeforeOrInName() const {
  if (state_.depth == 0) return false;
  const Frame& top = state_.frames[state_.depth - 1];
  const NodeKind k = grammar_->nodes[top.node].kind;
  return k == NodeKind::kCalls || (k == NodeKind::kCall && top.phase <= 1);
}

int32_t GrammarMatcher::NamedTool() const {
  if (state_.depth < 2) return -1;
  const Frame& call = state_.frames[1];  // frames[0] is the calls array
  if (grammar_->nodes[call.node].kind != NodeKind::kCall || call.phase < 2) return -1;
  return int32_t(call.v);
}

bool GrammarMatcher::NameCandidates(std::string_view bytes, uint32_t* rank_lo, uint32_t* rank_hi) const {
  if (!BeforeOrInName()) return false;
  GrammarState s;
  s.CopyFrom(state_);
  const Ctx cx = MakeCtx(nullptr);
  for (char c : bytes)
    if (!StepImpl(cx, s, uint8_t(c))) return false;
  if (s.depth < 2) return false;
  const Frame& call = s.frames[1];  // frames[0] is the calls array
  if (grammar_->nodes[call.node].kind != NodeKind::kCall || call.phase == 0) return false;
  if (call.phase == 1) {
    *rank_lo = grammar_->tries[call.u].rank_lo;
    *rank_hi = grammar_->tries[call.u].rank_hi;
    return true;
  }
  for (uint32_t r = 0; r < grammar_->tool_of_rank.size(); ++r) {
    if (grammar_->tool_of_rank[r] == call.v) {
      *rank_lo = r, *rank_hi = r + 1;
      return true;
    }
  }
  return false;
}

size_t GrammarMatcher::ArgumentsCloseAt(std::string_view bytes) const {
  GrammarState s;
  s.CopyFrom(state_);
  const Ctx cx = MakeCtx(nullptr);
  bool inside = s.depth >= 3;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!StepImpl(cx, s, uint8_t(bytes[i]))) return std::string_view::npos;
    if (s.depth >= 3) inside = true;
    if (inside && s.depth < 3) return i;
  }
  return std::string_view::npos;
}

bool GrammarMatcher::ArgumentsPending(std::string* rest) const {
  if (state_.depth != 2 || NamedTool() < 0) return false;
  for (size_t k = 0; k <= kCallArgs.size(); ++k) {
    std::string bytes(kCallArgs.substr(k));
    bytes.push_back('{');
    if (CanAccept(bytes)) {
      rest->assign(kCallArgs.substr(k));
      return true;
    }
  }
  return false;
}

int32_t GrammarMatcher::BetweenArguments(uint64_t* written, bool* opened) const {
  if (state_.depth != 3 && state_.depth != 4) return -1;  // the calls array, the call, its arguments (, a value)
  const Frame& args = state_.frames[2];
  if (grammar_->nodes[args.node].kind != NodeKind::kObject || (args.phase != 0 && args.phase != 1 && args.phase != 4)) return -1;
  if (state_.depth == 4) {
    // A number or literal that may end here ("3" of "3}" is still open: it could be "35").
    const NodeKind k = grammar_->nodes[state_.frames[3].node].kind;
    if ((k != NodeKind::kNumber && k != NodeKind::kLiteral) || !CanAccept(",")) return -1;
  }
  *written = args.w;
  *opened = args.phase != 0;
  return int32_t(args.node);
}

int32_t GrammarMatcher::OpenString(bool* opened) const {
  if (state_.depth == 0) return -1;
  const Frame& top = state_.frames[state_.depth - 1];
  if (grammar_->nodes[top.node].kind != NodeKind::kString || top.a != 0) return -1;
  *opened = top.phase == 1;
  return int32_t(top.node);
}

int32_t GrammarMatcher::OpenNumber() const {
  if (state_.depth == 0) return -1;
  const Frame& top = state_.frames[state_.depth - 1];
  return grammar_->nodes[top.node].kind == NodeKind::kNumber ? int32_t(top.node) : -1;
}

int32_t GrammarMatcher::OpenLiteral() const {
  if (state_.depth == 0) return -1;
  const Frame& top = state_.frames[state_.depth - 1];
  return grammar_->nodes[top.node].kind == NodeKind::kLiteral ? int32_t(top.node) : -1;
}

bool GrammarMatcher::LiteralCandidates(std::string_view bytes, uint32_t* rank_lo, uint32_t* rank_hi) const {
  if (OpenLiteral() < 0) return false;
  const ToolGrammar& g = *grammar_;
  uint32_t t = state_.frames[state_.depth - 1].u;
  for (char c : bytes) {
    const int32_t child = g.TrieChild(t, uint8_t(c));
    if (child >= 0) {
      t = uint32_t(child);
      continue;
    }
    if (g.tries[t].value < 0) return false;
    // The value ending here is complete and the rest of the bytes follow it:
    // that value alone (it has the lowest rank below its node).
    *rank_lo = g.tries[t].rank_lo;
    *rank_hi = *rank_lo + 1;
    return true;
  }
  *rank_lo = g.tries[t].rank_lo;
  *rank_hi = g.tries[t].rank_hi;
  return true;
}

bool GrammarMatcher::ComputeCopyMask(std::span<uint32_t> bits) {
  if (!trie_) throw Error(ErrorCode::kInvalidArgument, "GrammarMatcher::ComputeCopyMask needs a TokenTrie");
  if (bits.size() < trie_->mask_words())
    throw Error(ErrorCode::kInvalidArgument, "GrammarMatcher::ComputeCopyMask: mask buffer too small");
  std::fill(bits.begin(), bits.end(), 0u);
  if (!copy_ || state_.depth == 0) return false;
  const Frame& top = state_.frames[state_.depth - 1];
  const Node& n = grammar_->nodes[top.node];
  if (n.kind == NodeKind::kNumber) {
    // Digits copied from the conversation ("12 minutes" -> 12); a number ends at the byte after it.
    bool any = MarkCopyTokens(*trie_, *copy_, top.v, top.phase > 0, ",}] ", CopySource::End::kNumber, bits, copy_walk_);
    if (any && top.phase == 0) {
      // A lone '-' copies any hyphen ("twenty-two"); it starts a copied number
      // only where a digit follows it in the source.
      const uint32_t minus = copy_->Step(top.v, '-');
      bool digit_follows = false;
      for (uint8_t d = '0'; d <= '9' && !digit_follows; ++d) digit_follows = copy_->Step(minus, d) != CopySource::kDead;
      if (!digit_follows) {
        any = false;
        for (size_t w = 0; w < bits.size(); ++w) {
          for (uint32_t m = bits[w]; m; m &= m - 1) {
            const int32_t id = int32_t(w * 32 + uint32_t(__builtin_ctz(m)));
            const std::string_view bytes = trie_->Bytes(id);
            if (!bytes.empty() && bytes[0] == '-' && (bytes.size() == 1 || bytes[1] < '0' || bytes[1] > '9')) {
              bits[w] &= ~(1u << (id & 31));
            }
          }
          any |= bits[w] != 0;
        }
      }
    }
    return any;
  }
  if (n.kind != NodeKind::kString || top.phase != 1 || top.a != 0) return false;
  return MarkCopyTokens(*trie_, *copy_, uint32_t(top.z), top.v > 0, "\"", CopySource::End::kWord, bits, copy_walk_);
}

bool GrammarMatcher::ComputeMask(uint32_t* bits) {
  if (!trie_) throw Error(ErrorCode::kInvalidArgument, "GrammarMatcher::ComputeMask needs a TokenTrie");
  return ComputeMask(std::span<uint32_t>(bits, trie_->mask_words()));
}

bool GrammarMatcher::ComputeMask(std::span<uint32_t> bits) {
  if (!trie_) throw Error(ErrorCode::kInvalidArgument, "GrammarMatcher::ComputeMask needs a TokenTrie");
  if (bits.size() < trie_->mask_words())
    throw Error(ErrorCode::kInvalidArgument, "GrammarMatcher::ComputeMask: mask buffer too small");
  std::fill(bits.begin(), bits.end(), 0u);
  if (state_.depth == 0) {
    if (int32_t(kToolCallEndId) < trie_->vocab_size()) bits[kToolCallEndId >> 5] |= 1u << (kToolCallEndId & 31);
    return true;
  }
  walk_[0].CopyFrom(state_);
  const Frame& top = state_.frames[state_.depth - 1];
  const Node& n = grammar_->nodes[top.node];
  if (n.kind == NodeKind::kString && n.generic_string && top.phase == 1 && top.a == 0 && n.dfa->Accepting(top.u)) {
    // A plain string between characters: every plain token that fits is allowed.
    const uint64_t room = n.max_len == UINT32_MAX ? UINT64_MAX : uint64_t(n.max_len) - top.v;
    const std::span<const uint32_t> plain = trie_->PlainMask(room);
    std::copy(plain.begin(), plain.end(), bits.begin());
    WalkTrie(trie_->special(), bits);
  } else if (n.kind == NodeKind::kString && top.phase == 1 && top.a <= 1 && n.max_len == UINT32_MAX && n.alive.empty()) {
    // A string whose content does not depend on its length: what stays inside
    // depends on the automaton state only; only tokens with a quote can close it.
    const std::vector<uint32_t>& inside = InsideStringMask(n, top);
    std::copy(inside.begin(), inside.end(), bits.begin());
    WalkTrie(trie_->quoted(), bits);
  } else {
    WalkTrie(trie_->all(), bits);
  }
  return false;
}

namespace {

// Bytes to close the string in `f` (phase 1), ending with the closing quote.
bool CompleteString(const Node& n, const Frame& f0, std::string* out) {
  if (n.generic_string) {
    // Greedy: close if possible, else finish the escape / character, else add 'a'.
    static const std::string kOrder = [] {
      std::string s = "\"a0123456789ABCDEF\\un";
      for (int b = 0x80; b <= 0xBF; ++b) s.push_back(char(b));
      return s;
    }();
    Frame f = f0;
    for (size_t guard = 0; guard < (size_t(1) << 20); ++guard) {
      bool stepped = false;
      for (char c : kOrder) {
        Frame t = f;
        const int r = StringStep(n, t, uint8_t(c));
        if (r == 0) continue;
        out->push_back(c);
        if (r == 2) return true;
        f = t;
        stepped = true;
        break;
      }
      if (!stepped) return false;
    }
    return false;
  }
  // Pattern/format strings: breadth-first over (DFA state, count, escape) to the closing quote.
  struct Item {
    Frame f;
    int64_t parent;
    uint8_t byte;
  };
  std::vector<Item> items{{f0, -1, 0}};
  std::unordered_map<uint64_t, bool> seen;
  auto key = [](const Frame& f) { return uint64_t(f.u) | uint64_t(f.a) << 16 | uint64_t(f.v) << 24; };
  seen[key(f0)] = true;
  for (size_t i = 0; i < items.size() && items.size() < (size_t(1) << 20); ++i) {
    for (int b = 0x20; b < 0xF5; ++b) {
      Frame t = items[i].f;
      const int r = StringStep(n, t, uint8_t(b));
      if (r == 0) continue;
      if (r == 2) {
        std::string path(1, char(b));
        for (int64_t k = int64_t(i); items[size_t(k)].parent >= 0; k = items[size_t(k)].parent)
          path.push_back(char(items[size_t(k)].byte));
        out->append(path.rbegin(), path.rend());
        return true;
      }
      if (seen.emplace(key(t), true).second) items.push_back({t, int64_t(i), uint8_t(b)});
    }
  }
  return false;
}

}  // namespace

void EncodeCompletion(const Tokenizer& tok, std::string_view bytes, std::vector<int32_t>& ids) {
  size_t lead = 0;
  while (lead < bytes.size() && (uint8_t(bytes[lead]) & 0xC0) == 0x80) {
    const int32_t id = tok.ByteToId(uint8_t(bytes[lead]));
    if (id < 0) throw Error(ErrorCode::kInternal, "grammar: the tokenizer has no byte piece to finish a character");
    ids.push_back(id);
    ++lead;
  }
  std::vector<int32_t> text;
  tok.EncodeContinuation(bytes.substr(lead), text);  // (it clears its output)
  ids.insert(ids.end(), text.begin(), text.end());
}

bool GrammarMatcher::CompletionBytes(std::string* out) const {
  out->clear();
  static const std::string kOrder = [] {
    std::string s = "]}\",:0123456789tfn[{-.";
    for (int b = 0x20; b < 0x7F; ++b)
      if (s.find(char(b)) == std::string::npos) s.push_back(char(b));
    for (int b = 0x80; b < 0x100; ++b) s.push_back(char(b));
    return s;
  }();
  const Ctx cx = MakeCtx(copy_);
  GrammarState s, t;
  s.CopyFrom(state_);
  while (out->size() < (size_t(1) << 20)) {
    if (s.depth == 0) return true;
    const Frame& top = s.frames[s.depth - 1];
    const Node& n = grammar_->nodes[top.node];
    if (n.kind == NodeKind::kString && top.phase == 1) {
      std::string tail;
      if (!CompleteString(n, top, &tail)) return false;
      for (char c : tail)
        if (!StepImpl(cx, s, uint8_t(c))) return false;
      out->append(tail);
      continue;
    }
    bool stepped = false;
    for (char c : kOrder) {
      t.CopyFrom(s);
      if (StepImpl(cx, t, uint8_t(c))) {
        s.CopyFrom(t);
        out->push_back(c);
        stepped = true;
        break;
      }
    }
    if (!stepped) return false;
  }
  return false;
}

}  // namespace needle::grammar
