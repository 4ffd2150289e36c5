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

}  // namespace needle::grammar
