#include "grammar/copy_source.h"

#include <algorithm>
#include <cstdlib>

namespace needle::grammar {
namespace {
// Joins segments: string content never holds a byte below 0x20 (the grammar
// rejects raw control bytes), so no copy can run across a separator.
constexpr uint8_t kSeparator = 0x01;
// Stands before every word start of the source text (never in content).
constexpr uint8_t kWordStart = 0x02;
}  // namespace

int32_t CopySource::Find(uint32_t state, uint8_t byte) const {
  for (int32_t e = states_[state].edges; e >= 0; e = edges_[size_t(e)].next)
    if (edges_[size_t(e)].byte == byte) return int32_t(edges_[size_t(e)].to);
  return -1;
}

void CopySource::AddEdge(uint32_t from, uint8_t byte, uint32_t to) {
  edges_.push_back({byte, to, states_[from].edges});
  states_[from].edges = int32_t(edges_.size() - 1);
}

// The standard online construction (one new state per byte, clones on demand).
void CopySource::Extend(uint8_t byte, uint32_t* last) {
  const uint32_t cur = uint32_t(states_.size());
  states_.push_back({states_[*last].len + 1, -1, -1, byte});
  int32_t p = int32_t(*last);
  while (p >= 0 && Find(uint32_t(p), byte) < 0) {
    AddEdge(uint32_t(p), byte, cur);
    p = states_[size_t(p)].link;
  }
  if (p < 0) {
    states_[cur].link = 0;
  } else {
    const uint32_t q = uint32_t(Find(uint32_t(p), byte));
    if (states_[q].len == states_[size_t(p)].len + 1) {
      states_[cur].link = int32_t(q);
    } else {
      const uint32_t clone = uint32_t(states_.size());
      states_.push_back({states_[size_t(p)].len + 1, states_[q].link, -1, byte});
      for (int32_t e = states_[q].edges; e >= 0; e = edges_[size_t(e)].next) AddEdge(clone, edges_[size_t(e)].byte, edges_[size_t(e)].to);
      // Redirect p's chain from q to the clone; the edges are found again by byte.
      for (; p >= 0; p = states_[size_t(p)].link) {
        int32_t e = states_[size_t(p)].edges;
        while (e >= 0 && edges_[size_t(e)].byte != byte) e = edges_[size_t(e)].next;
        if (e < 0 || edges_[size_t(e)].to != q) break;
        edges_[size_t(e)].to = clone;
      }
      states_[q].link = int32_t(clone);
      states_[cur].link = int32_t(clone);
    }
  }
  *last = cur;
}

void CopySource::Build(std::span<const std::string_view> segments) {
  // The folded text: every segment behind a separator, a word-start marker
  // before every word byte that follows a non-word byte.
  std::vector<uint8_t> text;
  for (std::string_view s : segments) {
    text.push_back(kSeparator);
    for (char c : s) {
      uint8_t b = Fold(uint8_t(c));
      if (b < 0x20) b = kSeparator;
      if (IsWordByte(b) && !IsWordByte(text.back())) text.push_back(kWordStart);
      text.push_back(b);
    }
  }
  states_.clear();
  edges_.clear();
  states_.reserve(2 * text.size() + 1);
  edges_.reserve(3 * text.size() + 1);
  states_.push_back({0, -1, -1, 0});
  ends_.assign(2 * text.size() + 1, 0);
  uint32_t last = 0;
  auto digit = [](uint8_t b) { return b >= '0' && b <= '9'; };
  for (size_t i = 0; i < text.size(); ++i) {
    Extend(text[i], &last);
    // What follows this occurrence (markers skipped) decides how a copy ending here ends.
    size_t n = i + 1;
    if (n < text.size() && text[n] == kWordStart) ++n;
    const uint8_t next = n < text.size() ? text[n] : kSeparator;
    size_t after = n + 1;  // the byte after a '.', markers skipped
    if (after < text.size() && text[after] == kWordStart) ++after;
    const bool decimal = next == '.' && after < text.size() && digit(text[after]);
    ends_[last] = uint8_t((IsWordByte(next) ? 0 : uint8_t(End::kWord)) | (digit(next) || decimal ? 0 : uint8_t(End::kNumber)));
  }
  ends_.resize(states_.size());
  // A state's occurrences are those of the states below it on suffix links:
  // fold the bits up, longest strings first.
  std::vector<uint32_t> order(states_.size());
  for (uint32_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return states_[a].len > states_[b].len; });
  for (uint32_t st : order)
    if (states_[st].link >= 0) ends_[size_t(states_[st].link)] |= ends_[st];
}

uint32_t CopySource::Step(uint32_t state, uint8_t byte) const {
  if (state == kDead || state >= states_.size() || byte < 0x20) return kDead;
  const uint8_t b = Fold(byte);
  // A word byte after a non-word byte (or first) starts a word: the source's must too.
  if (IsWordByte(b) && !IsWordByte(states_[state].last)) {
    const int32_t marked = Find(state, kWordStart);
    if (marked < 0) return kDead;
    state = uint32_t(marked);
  }
  const int32_t to = Find(state, b);
  return to < 0 ? kDead : uint32_t(to);
}

bool CopySource::Contains(std::string_view text) const {
  uint32_t s = kRoot;
  for (char c : text) s = Step(s, uint8_t(c));
  return s != kDead;
}

bool MarkCopyTokens(const TokenTrie& trie, const CopySource& source, uint32_t state, bool nonempty, std::string_view close,
                    CopySource::End end, std::span<uint32_t> bits, std::span<uint32_t> walk) {
  std::fill(bits.begin(), bits.end(), 0u);
  if (state == CopySource::kDead) return false;
  const TokenTrie::Trie& t = trie.all();
  const TokenTrie::Node* nodes = t.nodes.data();
  const int32_t* ids = t.ids.data();
  uint32_t* out = bits.data();
  bool any = false;
  auto mark = [&](const TokenTrie::Node& node) {
    for (uint32_t k = node.tok_begin; k < node.tok_end; ++k) out[uint32_t(ids[k]) >> 5] |= 1u << (ids[k] & 31), any = true;
  };
  walk[0] = state;
  for (uint32_t i = 1; i < t.nodes.size();) {
    const TokenTrie::Node& node = nodes[i];
    if (close.find(char(node.byte)) != std::string_view::npos) {
      // Closing a copy (not an empty one) where the source's span ends is as
      // good as continuing it; what follows the close is the caller's business.
      if ((node.depth > 1 || nonempty) && source.Ends(walk[node.depth - 1], end))
        for (uint32_t j = i; j < node.end; ++j) mark(nodes[j]);
      i = node.end;
      continue;
    }
    const uint32_t s = node.byte == '\\' ? CopySource::kDead : source.Step(walk[node.depth - 1], node.byte);
    if (s == CopySource::kDead) {
      i = node.end;
      continue;
    }
    walk[node.depth] = s;
    mark(node);
    ++i;
  }
  return any;
}

namespace {

struct NumberWord {
  std::string_view word;
  uint64_t value;
  enum Kind : uint8_t { kUnit, kTeen, kTens, kHundred, kScale } kind;
};

constexpr NumberWord kNumberWords[] = {
    {"zero", 0, NumberWord::kUnit},        {"one", 1, NumberWord::kUnit},         {"two", 2, NumberWord::kUnit},
    {"three", 3, NumberWord::kUnit},       {"four", 4, NumberWord::kUnit},        {"five", 5, NumberWord::kUnit},
    {"six", 6, NumberWord::kUnit},         {"seven", 7, NumberWord::kUnit},       {"eight", 8, NumberWord::kUnit},
    {"nine", 9, NumberWord::kUnit},        {"ten", 10, NumberWord::kTeen},        {"eleven", 11, NumberWord::kTeen},
    {"twelve", 12, NumberWord::kTeen},     {"thirteen", 13, NumberWord::kTeen},   {"fourteen", 14, NumberWord::kTeen},
    {"fifteen", 15, NumberWord::kTeen},    {"sixteen", 16, NumberWord::kTeen},    {"seventeen", 17, NumberWord::kTeen},
    {"eighteen", 18, NumberWord::kTeen},   {"nineteen", 19, NumberWord::kTeen},   {"twenty", 20, NumberWord::kTens},
    {"thirty", 30, NumberWord::kTens},     {"forty", 40, NumberWord::kTens},      {"fifty", 50, NumberWord::kTens},
    {"sixty", 60, NumberWord::kTens},      {"seventy", 70, NumberWord::kTens},    {"eighty", 80, NumberWord::kTens},
    {"ninety", 90, NumberWord::kTens},     {"hundred", 100, NumberWord::kHundred}, {"thousand", 1000, NumberWord::kScale},
    {"million", 1000000, NumberWord::kScale},
};

const NumberWord* FindNumberWord(std::string_view w) {
  for (const NumberWord& n : kNumberWords) {
    if (n.word == w) return &n;
  }
  return nullptr;
}

// One spelled number being read: `total` (the thousands and millions) plus
// `group` (below a thousand); `last` is the kind of the previous word.
struct SpelledNumber {
  uint64_t total = 0, group = 0;
  bool open = false, pending_and = false;
  NumberWord::Kind last = NumberWord::kUnit;

  // Whether `n` continues this number ("fifty" then "seven": yes; "five" then "one": no).
  bool Continues(const NumberWord& n) const {
    if (!open) return false;
    switch (n.kind) {
      case NumberWord::kUnit: return last == NumberWord::kTens || last == NumberWord::kHundred || last == NumberWord::kScale;
      case NumberWord::kTeen:
      case NumberWord::kTens: return last == NumberWord::kHundred || last == NumberWord::kScale;
      case NumberWord::kHundred: return last == NumberWord::kUnit || last == NumberWord::kTeen || (last == NumberWord::kTens && group % 100 != 0);
      case NumberWord::kScale: return last != NumberWord::kScale && total % (n.value * 1000) == 0;
    }
    return false;
  }
  void Add(const NumberWord& n) {
    if (n.kind == NumberWord::kHundred) {
      group = (group ? group : 1) * 100;
    } else if (n.kind == NumberWord::kScale) {
      total += (group ? group : 1) * n.value;
      group = 0;
    } else {
      group += n.value;
    }
    open = true, pending_and = false, last = n.kind;
  }
  void Flush(std::vector<SpelledNumberSpan>& out) {
    if (open) out.push_back({begin, end, total + group});
    *this = {};
  }
  size_t begin = 0, end = 0;  // bytes of the words read so far
};

}  // namespace

std::vector<SpelledNumberSpan> FindSpelledNumbers(std::string_view text) {
  std::vector<SpelledNumberSpan> out;
  std::string word;
  SpelledNumber number;
  for (size_t i = 0; i <= text.size(); ++i) {
    const uint8_t c = i < text.size() ? uint8_t(text[i]) : uint8_t('.');
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
      word.push_back(char(CopySource::Fold(c)));
      continue;
    }
    if (!word.empty()) {
      if (const NumberWord* n = FindNumberWord(word)) {
        if (!number.Continues(*n)) number.Flush(out);
        if (!number.open) number.begin = i - word.size();
        number.Add(*n);  // "hundred" / "thousand" alone ("a hundred") count one of them
        number.end = i;
      } else if (word == "and" && number.open && !number.pending_and &&
                 (number.last == NumberWord::kHundred || number.last == NumberWord::kScale)) {
        number.pending_and = true;  // "one hundred and five"
      } else {
        number.Flush(out);
      }
      word.clear();
    }
    // Words join across spaces and hyphens ("twenty-two"); anything else ends a number ("five, six", "5").
    if (c != ' ' && c != '-') number.Flush(out);
  }
  return out;
}

std::vector<double> WrittenNumbers(std::string_view text) {
  std::vector<double> out;
  auto digit = [&](size_t i) { return i < text.size() && text[i] >= '0' && text[i] <= '9'; };
  size_t i = 0;
  while (i < text.size()) {
    if (!digit(i)) {
      ++i;
      continue;
    }
    const bool negative = i > 0 && text[i - 1] == '-' && (i == 1 || text[i - 2] == ' ');
    // Digit groups joined by single commas, then a decimal part.
    std::string joined;
    std::vector<double> groups;
    size_t j = i;
    for (;;) {
      const size_t start = j;
      while (digit(j)) ++j;
      joined.append(text.substr(start, j - start));
      groups.push_back(std::strtod(std::string(text.substr(start, j - start)).c_str(), nullptr));
      if (j + 1 < text.size() && text[j] == ',' && digit(j + 1)) {
        ++j;
        continue;
      }
      break;
    }
    if (j + 1 < text.size() && text[j] == '.' && digit(j + 1)) {
      const size_t start = ++j;
      while (digit(j)) ++j;
      joined.append(".").append(text.substr(start, j - start));
      if (groups.size() == 1) groups.clear();  // "20.9" is one number, not 20 and 9
    }
    const double sign = negative ? -1.0 : 1.0;
    out.push_back(sign * std::strtod(joined.c_str(), nullptr));
    if (groups.size() > 1) {
      for (double g : groups) out.push_back(sign * g);
    }
    i = j;
  }
  return out;
}

std::string SpelledNumbers(std::string_view text) {
  std::string out;
  for (const SpelledNumberSpan& n : FindSpelledNumbers(text)) out += (out.empty() ? "" : " ") + std::to_string(n.value);
  return out;
}

}  // namespace needle::grammar
