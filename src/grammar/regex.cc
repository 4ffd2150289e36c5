#include "grammar/regex.h"

#include <algorithm>
#include <deque>
#include <map>

#include "base/error.h"  // Error

namespace needle::grammar {

namespace {

constexpr uint32_t kMaxCodePoint = 0x10FFFF;
constexpr uint32_t kInf = 0xFFFFFFFFu;
constexpr uint32_t kMaxRepeat = 1000;
constexpr uint32_t kMaxNfaStates = 200000;
constexpr int kMaxGroupDepth = 64;

struct Range {
  uint32_t lo, hi;
};
using CharSet = std::vector<Range>;  // sorted, disjoint, no surrogates

CharSet Normalize(CharSet s) {
  std::sort(s.begin(), s.end(), [](const Range& a, const Range& b) { return a.lo < b.lo; });
  CharSet merged;
  for (const Range& r : s) {
    if (!merged.empty() && r.lo <= merged.back().hi + 1) {
      merged.back().hi = std::max(merged.back().hi, r.hi);
    } else {
      merged.push_back(r);
    }
  }
  CharSet out;  // without the surrogates D800-DFFF (not characters; UTF-8 cannot encode them)
  for (const Range& r : merged) {
    if (r.hi < 0xD800 || r.lo > 0xDFFF) {
      out.push_back(r);
      continue;
    }
    if (r.lo < 0xD800) out.push_back({r.lo, 0xD7FF});
    if (r.hi > 0xDFFF) out.push_back({0xE000, r.hi});
  }
  return out;
}

CharSet Complement(const CharSet& s) {
  CharSet out;
  uint32_t next = 0;
  for (const Range& r : s) {
    if (r.lo > next) out.push_back({next, r.lo - 1});
    next = r.hi + 1;
  }
  if (next <= kMaxCodePoint) out.push_back({next, kMaxCodePoint});
  return Normalize(out);
}

CharSet Single(uint32_t c) { return {{c, c}}; }
CharSet DigitSet() { return {{'0', '9'}}; }
CharSet WordSet() { return Normalize({{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}}); }
CharSet SpaceSet() { return Normalize({{'\t', '\r'}, {' ', ' '}}); }  // \t \n \v \f \r and space
CharSet DotSet() { return Complement(Normalize({{'\n', '\n'}, {'\r', '\r'}, {0x2028, 0x2029}})); }

int HexValue(uint32_t c) {
  if (c >= '0' && c <= '9') return int(c - '0');
  if (c >= 'a' && c <= 'f') return int(c - 'a' + 10);
  if (c >= 'A' && c <= 'F') return int(c - 'A' + 10);
  return -1;
}

struct Ast {
  enum Kind : uint8_t { kEmpty, kSet, kConcat, kAlt, kRepeat } kind = kEmpty;
  CharSet set;
  std::vector<uint32_t> kids;
  uint32_t min = 0, max = 0;  // kRepeat; max == kInf: unbounded
};

// Recursive-descent parser over the pattern's code points.
class Parser {
 public:
  explicit Parser(std::string_view pattern) : pattern_(pattern) {
    size_t i = 0;
    while (i < pattern.size()) {
      const uint8_t b0 = uint8_t(pattern[i]);
      uint32_t cp = 0;
      size_t len = 0;
      if (b0 < 0x80) {
        cp = b0, len = 1;
      } else if (b0 >= 0xC2 && b0 <= 0xDF) {
        cp = b0 & 0x1F, len = 2;
      } else if (b0 >= 0xE0 && b0 <= 0xEF) {
        cp = b0 & 0x0F, len = 3;
      } else if (b0 >= 0xF0 && b0 <= 0xF4) {
        cp = b0 & 0x07, len = 4;
      } else {
        Fail("invalid UTF-8", i);
      }
      if (i + len > pattern.size()) Fail("invalid UTF-8", i);
      for (size_t k = 1; k < len; ++k) {
        const uint8_t b = uint8_t(pattern[i + k]);
        if ((b & 0xC0) != 0x80) Fail("invalid UTF-8", i);
        cp = cp << 6 | (b & 0x3F);
      }
      if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > kMaxCodePoint)))
        Fail("invalid UTF-8", i);
      cps_.push_back(cp);
      offsets_.push_back(i);
      i += len;
    }
    offsets_.push_back(pattern.size());
  }

  uint32_t Parse() {
    const uint32_t root = ParseAlt(true);
    if (i_ < cps_.size()) Fail("unbalanced ')'");
    return root;
  }
  const std::vector<Ast>& ast() const { return ast_; }

 private:
  [[noreturn]] void Fail(const std::string& what, size_t byte_offset) const {
    throw Error(ErrorCode::kUnsupported, "pattern " + std::string(1, '"') + std::string(pattern_) + "\": " + what +
                                             " at offset " + std::to_string(byte_offset));
  }
  [[noreturn]] void Fail(const std::string& what) const { Fail(what, offsets_[std::min(i_, cps_.size())]); }

  bool AtEnd() const { return i_ >= cps_.size(); }
  uint32_t Peek(size_t ahead = 0) const { return i_ + ahead < cps_.size() ? cps_[i_ + ahead] : kInf; }

  uint32_t Add(Ast a) {
    ast_.push_back(std::move(a));
    return uint32_t(ast_.size() - 1);
  }
  uint32_t AddSet(CharSet s) {
    Ast a;
    a.kind = Ast::kSet;
    a.set = std::move(s);
    return Add(std::move(a));
  }

  uint32_t ParseAlt(bool top) {
    std::vector<uint32_t> kids{ParseConcat(top)};
    while (Peek() == '|') {
      ++i_;
      kids.push_back(ParseConcat(top));
    }
    if (kids.size() == 1) return kids[0];
    Ast a;
    a.kind = Ast::kAlt;
    a.kids = std::move(kids);
    return Add(std::move(a));
  }

  uint32_t ParseConcat(bool top) {
    Ast a;
    a.kind = Ast::kConcat;
    if (top && Peek() == '^') ++i_;
    while (!AtEnd() && Peek() != '|' && Peek() != ')') {
      if (Peek() == '$') {
        if (top && (Peek(1) == kInf || Peek(1) == '|')) {
          ++i_;
          break;
        }
        Fail("'$' is supported only at the end of the pattern (anchors are implied)");
      }
      if (Peek() == '^') Fail("'^' is supported only at the start of the pattern (anchors are implied)");
      a.kids.push_back(ParseRepeat());
    }
    if (a.kids.size() == 1) return a.kids[0];
    return Add(std::move(a));
  }

  // Parses {m}, {m,}, {m,n} at i_ without consuming on failure.
  bool TryBraces(uint32_t* min, uint32_t* max, size_t* end) const {
    size_t j = i_;
    if (j >= cps_.size() || cps_[j] != '{') return false;
    ++j;
    auto number = [&](uint32_t* out) {
      const size_t start = j;
      uint64_t v = 0;
      while (j < cps_.size() && cps_[j] >= '0' && cps_[j] <= '9') {
        v = std::min<uint64_t>(v * 10 + (cps_[j] - '0'), uint64_t(kInf) - 1);
        ++j;
      }
      *out = uint32_t(v);
      return j > start;
    };
    if (!number(min)) return false;
    *max = *min;
    if (j < cps_.size() && cps_[j] == ',') {
      ++j;
      if (!number(max)) *max = kInf;
    }
    if (j >= cps_.size() || cps_[j] != '}') return false;
    *end = j + 1;
    return true;
  }

  bool IsQuantifier() const {
    const uint32_t c = Peek();
    if (c == '*' || c == '+' || c == '?') return true;
    uint32_t a, b;
    size_t e;
    return c == '{' && TryBraces(&a, &b, &e);
  }

  uint32_t ParseRepeat() {
    uint32_t atom = ParseAtom();
    if (!IsQuantifier()) return atom;
    uint32_t min = 0, max = kInf;
    const uint32_t c = Peek();
    if (c == '*') {
      ++i_;
    } else if (c == '+') {
      min = 1, ++i_;
    } else if (c == '?') {
      max = 1, ++i_;
    } else {
      size_t end = 0;
      TryBraces(&min, &max, &end);
      if (max != kInf && min > max) Fail("numbers out of order in {m,n}");
      if (min > kMaxRepeat || (max != kInf && max > kMaxRepeat)) Fail("repeat counts above 1000 are not supported");
      i_ = end;
    }
    if (Peek() == '?') ++i_;  // lazy: the same strings match
    if (IsQuantifier()) Fail("nothing to repeat (nested quantifier)");
    Ast a;
    a.kind = Ast::kRepeat;
    a.kids = {atom};
    a.min = min;
    a.max = max;
    return Add(std::move(a));
  }

  uint32_t ParseAtom() {
    const uint32_t c = Peek();
    switch (c) {
      case '(': {
        ++i_;
        if (Peek() == '?') {
          if (Peek(1) == ':') {
            i_ += 2;
          } else if (Peek(1) == '<' && Peek(2) != '=' && Peek(2) != '!') {
            i_ += 2;
            while (!AtEnd() && Peek() != '>') ++i_;
            if (AtEnd()) Fail("unterminated group name");
            ++i_;
          } else {
            Fail("lookaround, flags and other (?...) groups are not supported");
          }
        }
        if (++depth_ > kMaxGroupDepth) Fail("groups nested too deeply");
        const uint32_t inner = ParseAlt(false);
        --depth_;
        if (Peek() != ')') Fail("missing ')'");
        ++i_;
        return inner;
      }
      case '[':
        return AddSet(ParseClass());
      case '.':
        ++i_;
        return AddSet(DotSet());
      case '\\':
        return AddSet(ParseEscape(false));
      case '*':
      case '+':
      case '?':
        Fail("nothing to repeat");
      case '{':
        if (IsQuantifier()) Fail("nothing to repeat");
        ++i_;
        return AddSet(Single('{'));
      default:
        ++i_;
        return AddSet(Single(c));
    }
  }

  // At a backslash. Returns the set (one code point for character escapes).
  CharSet ParseEscape(bool in_class) {
    ++i_;
    if (AtEnd()) Fail("trailing backslash");
    const uint32_t c = cps_[i_++];
    switch (c) {
      case 'd': return DigitSet();
      case 'D': return Complement(DigitSet());
      case 'w': return WordSet();
      case 'W': return Complement(WordSet());
      case 's': return SpaceSet();
      case 'S': return Complement(SpaceSet());
      case 'n': return Single('\n');
      case 'r': return Single('\r');
      case 't': return Single('\t');
      case 'f': return Single('\f');
      case 'v': return Single('\v');
      case '0':
        if (Peek() >= '0' && Peek() <= '9') Fail("octal escapes are not supported");
        return Single(0);
      case 'x': {
        const int h = HexValue(Peek()), l = HexValue(Peek(1));
        if (h < 0 || l < 0) Fail("\\x needs two hex digits");
        i_ += 2;
        return Single(uint32_t(h * 16 + l));
      }
      case 'u': {
        auto hex4 = [&](size_t at, uint32_t* out) {
          uint32_t v = 0;
          for (size_t k = 0; k < 4; ++k) {
            const int h = HexValue(at + k < cps_.size() ? cps_[at + k] : kInf);
            if (h < 0) return false;
            v = v * 16 + uint32_t(h);
          }
          *out = v;
          return true;
        };
        uint32_t v = 0;
        if (!hex4(i_, &v)) Fail("\\u needs four hex digits");
        i_ += 4;
        if (v >= 0xD800 && v <= 0xDBFF) {
          uint32_t lo = 0;
          if (Peek() == '\\' && Peek(1) == 'u' && hex4(i_ + 2, &lo) && lo >= 0xDC00 && lo <= 0xDFFF) {
            i_ += 6;
            return Single(0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00));
          }
          Fail("lone surrogate escape");
        }
        if (v >= 0xDC00 && v <= 0xDFFF) Fail("lone surrogate escape");
        return Single(v);
      }
      case 'b':
        if (in_class) return Single('\b');
        Fail("word boundaries (\\b) are not supported");
      case 'B': Fail("word boundaries (\\B) are not supported");
      case 'p':
      case 'P': Fail("Unicode property escapes are not supported");
      default:
        if (c >= '1' && c <= '9') Fail("backreferences are not supported");
        if (c < 0x80 && !((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
          return Single(c);  // escaped punctuation
        Fail("unknown escape");
    }
  }

  CharSet ParseClass() {
    ++i_;  // '['
    bool negate = false;
    if (Peek() == '^') negate = true, ++i_;
    CharSet set;
    auto atom = [&](uint32_t* single) -> CharSet {
      if (AtEnd()) Fail("unterminated character class");
      CharSet s;
      if (Peek() == '\\') {
        s = ParseEscape(true);
      } else {
        s = Single(cps_[i_++]);
      }
      *single = (s.size() == 1 && s[0].lo == s[0].hi) ? s[0].lo : kInf;
      return s;
    };
    for (;;) {
      if (AtEnd()) Fail("unterminated character class");
      if (Peek() == ']') {
        ++i_;
        break;
      }
      uint32_t lo = kInf;
      CharSet a = atom(&lo);
      if (Peek() == '-' && Peek(1) != ']' && Peek(1) != kInf) {
        ++i_;
        uint32_t hi = kInf;
        atom(&hi);
        if (lo == kInf || hi == kInf) Fail("a class escape cannot be a range end");
        if (lo > hi) Fail("range out of order in character class");
        set.push_back({lo, hi});
      } else {
        set.insert(set.end(), a.begin(), a.end());
      }
    }
    set = Normalize(set);
    return negate ? Complement(set) : set;
  }

  std::string_view pattern_;
  std::vector<uint32_t> cps_;
  std::vector<size_t> offsets_;
  size_t i_ = 0;
  int depth_ = 0;
  std::vector<Ast> ast_;
};

// ---- code point ranges -> UTF-8 byte-range sequences ---------------------------

using ByteSeq = std::vector<std::pair<uint8_t, uint8_t>>;

size_t EncodeUtf8(uint32_t cp, uint8_t* out) {
  if (cp < 0x80) {
    out[0] = uint8_t(cp);
    return 1;
  }
  if (cp < 0x800) {
    out[0] = uint8_t(0xC0 | (cp >> 6));
    out[1] = uint8_t(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = uint8_t(0xE0 | (cp >> 12));
    out[1] = uint8_t(0x80 | ((cp >> 6) & 0x3F));
    out[2] = uint8_t(0x80 | (cp & 0x3F));
    return 3;
  }
  out[0] = uint8_t(0xF0 | (cp >> 18));
  out[1] = uint8_t(0x80 | ((cp >> 12) & 0x3F));
  out[2] = uint8_t(0x80 | ((cp >> 6) & 0x3F));
  out[3] = uint8_t(0x80 | (cp & 0x3F));
  return 4;
}

// Splits [lo, hi] (no surrogates) into ranges whose encodings are products of byte ranges.
void Utf8Sequences(uint32_t lo, uint32_t hi, std::vector<ByteSeq>& out) {
  static constexpr uint32_t kLengthMax[] = {0x7F, 0x7FF, 0xFFFF};
  for (uint32_t m : kLengthMax) {
    if (lo <= m && hi > m) {
      Utf8Sequences(lo, m, out);
      Utf8Sequences(m + 1, hi, out);
      return;
    }
  }
  uint8_t a[4], b[4];
  const size_t n = EncodeUtf8(lo, a);
  for (size_t i = 1; i < n; ++i) {
    const uint32_t m = (1u << (6 * i)) - 1;
    if ((lo & ~m) != (hi & ~m)) {
      if ((lo & m) != 0) {
        Utf8Sequences(lo, lo | m, out);
        Utf8Sequences((lo | m) + 1, hi, out);
        return;
      }
      if ((hi & m) != m) {
        Utf8Sequences(lo, (hi & ~m) - 1, out);
        Utf8Sequences(hi & ~m, hi, out);
        return;
      }
    }
  }
  EncodeUtf8(hi, b);
  ByteSeq seq;
  for (size_t i = 0; i < n; ++i) seq.push_back({a[i], b[i]});
  out.push_back(std::move(seq));
}

// ---- Thompson NFA --------------------------------------------------------------

struct Nfa {
  struct Edge {
    uint8_t lo, hi;
    uint32_t to;
  };
  std::vector<std::vector<Edge>> edges;
  std::vector<std::vector<uint32_t>> eps;
  std::string_view pattern;

  uint32_t New() {
    if (edges.size() >= kMaxNfaStates)
      throw Error(ErrorCode::kUnsupported, "pattern \"" + std::string(pattern) + "\": too large (expanded repeats)");
    edges.emplace_back();
    eps.emplace_back();
    return uint32_t(edges.size() - 1);
  }
};

struct Frag {
  uint32_t start, end;
};

Frag Build(const std::vector<Ast>& ast, uint32_t id, Nfa& nfa) {
  const Ast& a = ast[id];
  switch (a.kind) {
    case Ast::kEmpty: {
      const uint32_t s = nfa.New();
      return {s, s};
    }
    case Ast::kSet: {
      const uint32_t s = nfa.New(), e = nfa.New();
      std::vector<ByteSeq> seqs;
      for (const Range& r : a.set) Utf8Sequences(r.lo, r.hi, seqs);
      for (const ByteSeq& seq : seqs) {
        uint32_t cur = s;
        for (size_t k = 0; k + 1 < seq.size(); ++k) {
          const uint32_t n = nfa.New();
          nfa.edges[cur].push_back({seq[k].first, seq[k].second, n});
          cur = n;
        }
        nfa.edges[cur].push_back({seq.back().first, seq.back().second, e});
      }
      return {s, e};
    }
    case Ast::kConcat: {
      if (a.kids.empty()) {
        const uint32_t s = nfa.New();
        return {s, s};
      }
      Frag f = Build(ast, a.kids[0], nfa);
      for (size_t k = 1; k < a.kids.size(); ++k) {
        const Frag g = Build(ast, a.kids[k], nfa);
        nfa.eps[f.end].push_back(g.start);
        f.end = g.end;
      }
      return f;
    }
    case Ast::kAlt: {
      const uint32_t s = nfa.New(), e = nfa.New();
      for (uint32_t k : a.kids) {
        const Frag g = Build(ast, k, nfa);
        nfa.eps[s].push_back(g.start);
        nfa.eps[g.end].push_back(e);
      }
      return {s, e};
    }
    case Ast::kRepeat: {
      const uint32_t s = nfa.New();
      uint32_t end = s;
      for (uint32_t k = 0; k < a.min; ++k) {
        const Frag g = Build(ast, a.kids[0], nfa);
        nfa.eps[end].push_back(g.start);
        end = g.end;
      }
      if (a.max == kInf) {
        const uint32_t loop = nfa.New();
        nfa.eps[end].push_back(loop);
        const Frag g = Build(ast, a.kids[0], nfa);
        nfa.eps[loop].push_back(g.start);
        nfa.eps[g.end].push_back(loop);
        return {s, loop};
      }
      const uint32_t e = nfa.New();
      nfa.eps[end].push_back(e);
      for (uint32_t k = a.min; k < a.max; ++k) {
        const Frag g = Build(ast, a.kids[0], nfa);
        nfa.eps[end].push_back(g.start);
        nfa.eps[g.end].push_back(e);
        end = g.end;
      }
      return {s, e};
    }
  }
  return {0, 0};
}

void Closure(const Nfa& nfa, std::vector<uint32_t>& set, std::vector<uint8_t>& mark) {
  std::vector<uint32_t> stack(set.begin(), set.end());
  for (uint32_t s : set) mark[s] = 1;
  while (!stack.empty()) {
    const uint32_t s = stack.back();
    stack.pop_back();
    for (uint32_t t : nfa.eps[s]) {
      if (!mark[t]) {
        mark[t] = 1;
        set.push_back(t);
        stack.push_back(t);
      }
    }
  }
  for (uint32_t s : set) mark[s] = 0;
  std::sort(set.begin(), set.end());
}

ByteDfa Determinize(const Nfa& nfa, Frag frag, uint32_t max_states, std::string_view pattern,
                    const uint64_t* producible) {
  std::vector<uint8_t> mark(nfa.edges.size(), 0);
  std::map<std::vector<uint32_t>, uint32_t> ids;
  std::vector<std::vector<uint32_t>> sets;
  std::vector<uint32_t> next;  // [states * 256], kInf = none
  std::vector<uint32_t> start{frag.start};
  Closure(nfa, start, mark);
  ids.emplace(start, 0);
  sets.push_back(start);
  for (size_t d = 0; d < sets.size(); ++d) {
    next.resize((d + 1) * 256, kInf);
    // Byte classes: the boundaries of every edge out of this set.
    std::vector<uint32_t> cuts{0, 256};
    for (uint32_t s : sets[d])
      for (const Nfa::Edge& e : nfa.edges[s]) cuts.push_back(e.lo), cuts.push_back(uint32_t(e.hi) + 1);
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
      const uint32_t b = cuts[c];
      std::vector<uint32_t> target;
      for (uint32_t s : sets[d])
        for (const Nfa::Edge& e : nfa.edges[s])
          if (b >= e.lo && b <= e.hi && !mark[e.to]) mark[e.to] = 1, target.push_back(e.to);
      for (uint32_t t : target) mark[t] = 0;
      if (target.empty()) continue;
      Closure(nfa, target, mark);
      auto it = ids.find(target);
      uint32_t id;
      if (it == ids.end()) {
        if (sets.size() >= max_states)
          throw Error(ErrorCode::kUnsupported, "pattern \"" + std::string(pattern) + "\": needs more than " +
                                                   std::to_string(max_states) + " automaton states");
        id = uint32_t(sets.size());
        ids.emplace(target, id);
        sets.push_back(std::move(target));
      } else {
        id = it->second;
      }
      for (uint32_t x = cuts[c]; x < cuts[c + 1]; ++x) next[d * 256 + x] = id;
    }
  }
  const size_t n = sets.size();
  if (producible)
    for (size_t d = 0; d < n; ++d)
      for (size_t b = 0; b < 256; ++b)
        if (!((producible[b >> 6] >> (b & 63)) & 1)) next[d * 256 + b] = kInf;
  std::vector<uint8_t> accepting(n, 0);
  for (size_t d = 0; d < n; ++d) accepting[d] = std::binary_search(sets[d].begin(), sets[d].end(), frag.end);

  // Keep only states that can reach acceptance.
  std::vector<std::vector<uint32_t>> rev(n);
  for (size_t d = 0; d < n; ++d)
    for (size_t b = 0; b < 256; ++b)
      if (next[d * 256 + b] != kInf) rev[next[d * 256 + b]].push_back(uint32_t(d));
  std::vector<uint8_t> live(n, 0);
  std::vector<uint32_t> queue;
  for (size_t d = 0; d < n; ++d)
    if (accepting[d]) live[d] = 1, queue.push_back(uint32_t(d));
  while (!queue.empty()) {
    const uint32_t d = queue.back();
    queue.pop_back();
    for (uint32_t p : rev[d])
      if (!live[p]) live[p] = 1, queue.push_back(p);
  }
  if (!live[0]) throw Error(ErrorCode::kInvalidArgument, "pattern \"" + std::string(pattern) + "\" admits no string");
  std::vector<uint32_t> renum(n, kInf);
  uint32_t count = 0;
  for (size_t d = 0; d < n; ++d)
    if (live[d]) renum[d] = count++;
  ByteDfa dfa;
  dfa.num_states = count;
  dfa.next.assign(size_t(count) * 256, kDfaDead);
  dfa.accepting.assign(count, 0);
  for (size_t d = 0; d < n; ++d) {
    if (!live[d]) continue;
    dfa.accepting[renum[d]] = accepting[d];
    for (size_t b = 0; b < 256; ++b) {
      const uint32_t t = next[d * 256 + b];
      if (t != kInf && live[t]) dfa.next[size_t(renum[d]) * 256 + b] = uint16_t(renum[t]);
    }
  }
  // Fewest code points to acceptance: 0-1 BFS backwards (lead bytes cost 1).
  std::vector<std::vector<std::pair<uint32_t, uint8_t>>> back(count);
  for (uint32_t s = 0; s < count; ++s)
    for (uint32_t b = 0; b < 256; ++b) {
      const uint16_t t = dfa.Step(s, uint8_t(b));
      if (t != kDfaDead) back[t].push_back({s, uint8_t(IsUtf8Lead(uint8_t(b)) ? 1 : 0)});
    }
  dfa.dist_to_accept.assign(count, kInf);
  std::deque<uint32_t> dq;
  for (uint32_t s = 0; s < count; ++s)
    if (dfa.accepting[s]) dfa.dist_to_accept[s] = 0, dq.push_back(s);
  while (!dq.empty()) {
    const uint32_t t = dq.front();
    dq.pop_front();
    for (auto [s, cost] : back[t]) {
      const uint32_t d = dfa.dist_to_accept[t] + cost;
      if (d < dfa.dist_to_accept[s]) {
        dfa.dist_to_accept[s] = d;
        if (cost) dq.push_back(s);
        else dq.push_front(s);
      }
    }
  }
  return dfa;
}

}  // namespace

bool ByteDfa::Matches(std::string_view s) const {
  if (num_states == 0) return false;
  uint32_t st = 0;
  for (char c : s) {
    const uint16_t t = Step(st, uint8_t(c));
    if (t == kDfaDead) return false;
    st = t;
  }
  return Accepting(st);
}

ByteDfa CompileRegex(std::string_view pattern, uint32_t max_states, const uint64_t* producible) {
  Parser parser(pattern);
  const uint32_t root = parser.Parse();
  Nfa nfa;
  nfa.pattern = pattern;
  const Frag frag = Build(parser.ast(), root, nfa);
  return Determinize(nfa, frag, std::min<uint32_t>(max_states, kDfaDead), pattern, producible);
}

const ByteDfa& AnyStringDfa() {
  static const ByteDfa dfa = CompileRegex("[^]*");
  return dfa;
}

std::string_view FormatPattern(std::string_view format) {
  // Dates: the month decides the days, and the year whether 29 February
  // exists (leap: the last two digits a nonzero multiple of 4, or 00 after a
  // multiple of 4, as 2000 and 2400 but not 1900), so no call is generated
  // that only the post-check would reject.
#define NEEDLE_DATE                                                                                   \
  "([0-9]{4}-((0[13578]|1[02])-(0[1-9]|[12][0-9]|3[01])|(0[469]|11)-(0[1-9]|[12][0-9]|30)|02-(0[1-9]|1[0-9]|2[0-8]))" \
  "|([0-9]{2}(0[48]|[2468][048]|[13579][26])|([02468][048]|[13579][26])00)-02-29)"
#define NEEDLE_TIME "([01][0-9]|2[0-3]):[0-5][0-9](:[0-5][0-9])?"
  if (format == "date") return NEEDLE_DATE;
  if (format == "time") return NEEDLE_TIME;
  if (format == "date-time") return NEEDLE_DATE "[T ]" NEEDLE_TIME "(\\.[0-9]{1,9})?(Z|[+-]([01][0-9]|2[0-3]):[0-5][0-9])?";
#undef NEEDLE_DATE
#undef NEEDLE_TIME
  if (format == "email")
    return "[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+(\\.[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+)*"
           "@[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?(\\.[A-Za-z0-9]([A-Za-z0-9-]*[A-Za-z0-9])?)+";
  if (format == "uri") return "[A-Za-z][A-Za-z0-9+.-]*:[^\\x00-\\x20\"<>\\\\^`{|}\\x7f]+";
  return {};
}

bool FormatSemanticsOk(std::string_view format, std::string_view value) {
  if (format != "date" && format != "date-time") return true;
  if (value.size() < 10) return false;
  auto num = [&](size_t at, size_t n) {
    int v = 0;
    for (size_t i = at; i < at + n; ++i) {
      if (value[i] < '0' || value[i] > '9') return -1;
      v = v * 10 + (value[i] - '0');
    }
    return v;
  };
  const int y = num(0, 4), m = num(5, 2), d = num(8, 2);
  if (y < 0 || m < 1 || m > 12 || d < 1 || value[4] != '-' || value[7] != '-') return false;
  static constexpr int kDays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  const bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return d <= kDays[m - 1] + (m == 2 && leap ? 1 : 0);
}

}  // namespace needle::grammar
