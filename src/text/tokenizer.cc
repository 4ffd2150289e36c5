#include "text/tokenizer.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <map>
#include <utility>

#include "base/error.h"

namespace needle {
namespace {

constexpr char kSpaceSymbol[] = "\xE2\x96\x81";  // U+2581, what a space becomes
constexpr size_t kSpaceSymbolLen = 3;
constexpr char kReplacementChar[] = "\xEF\xBF\xBD";  // U+FFFD, what a bad byte becomes

[[noreturn]] void Bad(const std::string& what) { throw Error(ErrorCode::kInvalidTokenizer, "tokenizer: " + what); }

uint64_t Mix(uint64_t x) {
  x ^= x >> 32;
  x *= 0xD6E8FEB86659FD93ull;
  x ^= x >> 32;
  return x;
}

// A fast hash for short piece texts (in-memory only, so byte order does not matter).
uint64_t HashBytes(const char* p, size_t n) {
  uint64_t h = 0x9E3779B97F4A7C15ull * (n + 1);
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    h = Mix(h ^ w) * 0xBF58476D1CE4E5B9ull;
    p += 8, n -= 8;
  }
  if (n) {
    uint64_t w = 0;
    std::memcpy(&w, p, n);
    h = Mix(h ^ w) * 0xBF58476D1CE4E5B9ull;
  }
  return Mix(h);
}

// Length of the well-formed UTF-8 sequence at p, or 0 if the byte at p does
// not start one. Exactly SentencePiece's DecodeUTF8 + IsValidDecodeUTF8: no
// overlong forms, no surrogates, nothing above U+10FFFF.
size_t Utf8Length(const unsigned char* p, size_t n) {
  const unsigned c = p[0];
  if (c < 0x80) return 1;
  auto trail = [](unsigned b) { return (b & 0xC0) == 0x80; };
  if ((c & 0xE0) == 0xC0) {
    if (n < 2 || !trail(p[1])) return 0;
    const unsigned cp = ((c & 0x1F) << 6) | (p[1] & 0x3F);
    return cp >= 0x80 ? 2 : 0;
  }
  if ((c & 0xF0) == 0xE0) {
    if (n < 3 || !trail(p[1]) || !trail(p[2])) return 0;
    const unsigned cp = ((c & 0x0F) << 12) | ((p[1] & 0x3F) << 6) | (p[2] & 0x3F);
    return cp >= 0x800 && (cp < 0xD800 || cp > 0xDFFF) ? 3 : 0;
  }
  if ((c & 0xF8) == 0xF0) {
    if (n < 4 || !trail(p[1]) || !trail(p[2]) || !trail(p[3])) return 0;
    const unsigned cp = ((c & 0x07) << 18) | ((p[1] & 0x3F) << 12) | ((p[2] & 0x3F) << 6) | (p[3] & 0x3F);
    return cp >= 0x10000 && cp <= 0x10FFFF ? 4 : 0;
  }
  return 0;
}

// SentencePiece's OneCharLen: the character length announced by a lead byte
// (used on normalised text, which is well-formed apart from marker bytes).
size_t OneCharLen(unsigned char c) {
  static constexpr uint8_t kLen[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
  return kLen[c >> 4];
}

constexpr size_t kExactReserveLimit = size_t(1) << 24;  // symbols (20 bytes each)

uint64_t PairKey(int32_t left, int32_t right) { return uint64_t(uint32_t(left)) << 32 | uint32_t(right); }

// SentencePiece's order: the higher score first, then the leftmost pair.
bool MergesBefore(float score_a, int32_t left_a, float score_b, int32_t left_b) {
  return score_a > score_b || (score_a == score_b && left_a < left_b);
}

bool IsSpaceSymbol(const char* p, size_t len) { return len == kSpaceSymbolLen && std::memcmp(p, kSpaceSymbol, 3) == 0; }

// Appends s with every space replaced by U+2581.
void AppendEscaped(std::string_view s, std::string& out) {
  for (char c : s) {
    if (c == ' ') out.append(kSpaceSymbol, kSpaceSymbolLen);
    else out.push_back(c);
  }
}

}  // namespace

// A character of the normalised text, or a piece merged from adjacent ones:
// bytes [begin, begin + len), linked to its live neighbours in the segment.
struct Tokenizer::Symbol {
  int32_t prev, next;
  uint32_t begin, len;
  int32_t id;  // the piece with exactly this text, or -1
};

// A possible merge of the symbol at `left` with its right neighbour into
// piece `id`. Stale entries are detected when popped, by SentencePiece's rule:
// symbols only grow, so the pair is live iff the two symbols' lengths still
// sum to the length of `id`.
struct Tokenizer::Candidate {
  float score;
  int32_t left;
  int32_t id;  // the merged piece
};

struct Tokenizer::EncodeState {
  std::string norm;
  std::vector<Symbol> symbols;  // the current segment, reused across segments
  std::vector<Candidate> heap;
  bool prev_unknown = false;  // for merging runs of UNK without byte fallback
};

Tokenizer::Tokenizer(const TokenizerModel& model)
    : pad_id_(static_cast<int32_t>(model.pad_id)),
      eos_id_(static_cast<int32_t>(model.eos_id)),
      bos_id_(static_cast<int32_t>(model.bos_id)),
      unk_id_(static_cast<int32_t>(model.unk_id)),
      add_dummy_prefix_(model.add_dummy_prefix),
      byte_fallback_(model.byte_fallback) {
  const size_t n = model.pieces.size();
  if (n == 0) Bad("the model has no pieces");
  if (n > size_t(std::numeric_limits<int32_t>::max())) Bad("too many pieces");
  const struct {
    const char* name;
    uint32_t id;
  } fixed[] = {{"pad_id", model.pad_id}, {"eos_id", model.eos_id}, {"bos_id", model.bos_id}, {"unk_id", model.unk_id}};
  for (const auto& f : fixed) {
    if (f.id >= n) Bad(std::string(f.name) + " " + std::to_string(f.id) + " >= n_pieces " + std::to_string(n));
  }

  offsets_.reserve(n + 1);
  token_bytes_offsets_.reserve(n + 1);
  scores_.reserve(n);
  types_.reserve(n);
  std::fill(std::begin(byte_id_), std::end(byte_id_), -1);
  std::fill(std::begin(ascii_id_), std::end(ascii_id_), -1);
  for (size_t i = 0; i < n; ++i) {
    const TokenizerPiece& p = model.pieces[i];
    if (p.type > PieceType::kByte) Bad("piece " + std::to_string(i) + " has type " + std::to_string(int(p.type)));
    offsets_.push_back(static_cast<uint32_t>(pool_.size()));
    token_bytes_offsets_.push_back(static_cast<uint32_t>(token_bytes_pool_.size()));
    if (pool_.size() + p.text.size() > std::numeric_limits<uint32_t>::max() / 2) Bad("piece texts are too large");
    pool_ += p.text;
    scores_.push_back(p.score);
    types_.push_back(p.type);
    switch (p.type) {
      case PieceType::kNormal:
      case PieceType::kUserDefined:
        for (size_t k = 0; k < p.text.size();) {  // U+2581 decodes as a space
          if (p.text.compare(k, kSpaceSymbolLen, kSpaceSymbol) == 0) {
            token_bytes_pool_ += ' ';
            k += kSpaceSymbolLen;
          } else {
            token_bytes_pool_ += p.text[k++];
          }
        }
        max_mergeable_bytes_ = std::max(max_mergeable_bytes_, p.text.size());
        break;
      case PieceType::kByte: {
        const int b = ParseBytePiece(p.text);
        if (b < 0) Bad("byte piece " + std::to_string(i) + " '" + p.text + "' is not of the form <0xHH>");
        if (byte_id_[b] < 0) byte_id_[b] = static_cast<int32_t>(i);
        token_bytes_pool_ += static_cast<char>(b);
        break;
      }
      case PieceType::kControl:
      case PieceType::kUnknown: break;
    }
  }
  offsets_.push_back(static_cast<uint32_t>(pool_.size()));
  token_bytes_offsets_.push_back(static_cast<uint32_t>(token_bytes_pool_.size()));
  if (byte_fallback_) {
    for (int b = 0; b < 256; ++b) {
      if (byte_id_[b] < 0) Bad("byte_fallback is set but the byte piece for " + std::to_string(b) + " is missing");
    }
  }

  // The piece table: power-of-two size, at most half full.
  size_t cap = 16;
  while (cap < 2 * n) cap *= 2;
  slots_.assign(cap, Slot{0, -1});
  slot_mask_ = cap - 1;
  for (size_t i = 0; i < n; ++i) {
    const char* text = pool_.data() + offsets_[i];
    const size_t len = offsets_[i + 1] - offsets_[i];
    const uint64_t h = HashBytes(text, len);
    for (uint64_t s = h & slot_mask_;; s = (s + 1) & slot_mask_) {
      Slot& slot = slots_[s];
      if (slot.id < 0) {
        slot = {static_cast<uint32_t>(h >> 32), static_cast<int32_t>(i)};
        break;
      }
      if (offsets_[slot.id + 1] - offsets_[slot.id] == len && std::memcmp(pool_.data() + offsets_[slot.id], text, len) == 0) {
        Bad("piece " + std::to_string(i) + " '" + std::string(text, len) + "' duplicates piece " + std::to_string(slot.id));
      }
    }
  }
  // The pair table: every split of every (short) mergeable piece into two pieces.
  std::vector<std::pair<uint64_t, int32_t>> pairs;
  for (size_t i = 0; i < n; ++i) {
    const size_t len = offsets_[i + 1] - offsets_[i];
    if (!Mergeable(static_cast<int32_t>(i)) || len > kPairTableMaxBytes) continue;
    const char* text = pool_.data() + offsets_[i];
    for (size_t k = 1; k < len; ++k) {
      const int32_t left = Find(text, k);
      if (left < 0) continue;
      const int32_t right = Find(text + k, len - k);
      if (right >= 0) pairs.emplace_back(PairKey(left, right), static_cast<int32_t>(i));
    }
  }
  size_t pair_cap = 16;
  while (pair_cap < 2 * pairs.size()) pair_cap *= 2;
  pair_slots_.assign(pair_cap, PairSlot{0, -1});
  pair_mask_ = pair_cap - 1;
  for (const auto& [key, id] : pairs) {
    uint64_t s = Mix(key * 0x9E3779B97F4A7C15ull) & pair_mask_;
    while (pair_slots_[s].id >= 0) s = (s + 1) & pair_mask_;  // keys are unique: texts are
    pair_slots_[s] = {key, id};
  }

  for (int c = 0; c < 128; ++c) {
    const char ch = static_cast<char>(c);
    ascii_id_[c] = Find(&ch, 1);
  }

  // Merges cannot cross the start of a "▁" symbol unless some mergeable piece
  // holds U+2581 after its first byte; trained models never do (split_by_whitespace).
  split_at_spaces_ = true;
  for (size_t i = 0; i < n && split_at_spaces_; ++i) {
    if (!Mergeable(static_cast<int32_t>(i))) continue;
    const std::string_view text(pool_.data() + offsets_[i], offsets_[i + 1] - offsets_[i]);
    if (text.size() > 1 && text.find(kSpaceSymbol, 1) != std::string_view::npos) split_at_spaces_ = false;
  }

  byte_pairs_.assign(65536 / 64, 0);
  for (size_t i = 0; i < n; ++i) {
    if (!Mergeable(static_cast<int32_t>(i))) continue;
    for (uint32_t k = offsets_[i] + 1; k < offsets_[i + 1]; ++k) {
      const unsigned bit = static_cast<uint8_t>(pool_[k - 1]) << 8 | static_cast<uint8_t>(pool_[k]);
      byte_pairs_[bit >> 6] |= uint64_t(1) << (bit & 63);
    }
  }

  // The USER_DEFINED trie: built with maps, then flattened with sorted edges.
  std::vector<std::map<uint8_t, uint32_t>> children(1);
  std::vector<int32_t> terminal(1, -1);
  for (size_t i = 0; i < n; ++i) {
    if (types_[i] != PieceType::kUserDefined || offsets_[i + 1] == offsets_[i]) continue;
    uint32_t node = 0;
    for (uint32_t k = offsets_[i]; k < offsets_[i + 1]; ++k) {
      const uint8_t b = static_cast<uint8_t>(pool_[k]);
      auto it = children[node].find(b);
      if (it == children[node].end()) {
        it = children[node].emplace(b, static_cast<uint32_t>(children.size())).first;
        children.emplace_back();
        terminal.push_back(-1);
      }
      node = it->second;
    }
    terminal[node] = static_cast<int32_t>(i);
    starts_user_defined_[static_cast<uint8_t>(pool_[offsets_[i]])] = true;
  }
  trie_nodes_.resize(children.size());
  for (size_t v = 0; v < children.size(); ++v) {
    trie_nodes_[v].piece = terminal[v];
    trie_nodes_[v].first_edge = static_cast<uint32_t>(trie_edges_.size());
    trie_nodes_[v].num_edges = static_cast<uint32_t>(children[v].size());
    for (const auto& [b, child] : children[v]) trie_edges_.push_back({b, child});
  }
}

void Tokenizer::CheckId(int32_t id) const {
  if (id < 0 || id >= vocab_size()) {
    throw Error(ErrorCode::kInvalidArgument,
                "token id " + std::to_string(id) + " is outside the vocabulary [0, " + std::to_string(vocab_size()) + ")");
  }
}

std::string_view Tokenizer::IdToPiece(int32_t id) const {
  CheckId(id);
  return {pool_.data() + offsets_[id], offsets_[id + 1] - offsets_[id]};
}

int32_t Tokenizer::PieceToId(std::string_view piece) const { return Find(piece.data(), piece.size()); }

PieceType Tokenizer::Type(int32_t id) const {
  CheckId(id);
  return types_[id];
}

float Tokenizer::Score(int32_t id) const {
  CheckId(id);
  return scores_[id];
}

std::string_view Tokenizer::TokenBytes(int32_t id) const {
  CheckId(id);
  return {token_bytes_pool_.data() + token_bytes_offsets_[id], token_bytes_offsets_[id + 1] - token_bytes_offsets_[id]};
}

int32_t Tokenizer::Find(const char* data, size_t len) const {
  const uint64_t h = HashBytes(data, len);
  const uint32_t tag = static_cast<uint32_t>(h >> 32);
  for (uint64_t s = h & slot_mask_;; s = (s + 1) & slot_mask_) {
    const Slot slot = slots_[s];
    if (slot.id < 0) return -1;
    if (slot.tag == tag) {
      const uint32_t begin = offsets_[slot.id];
      if (offsets_[slot.id + 1] - begin == len && std::memcmp(pool_.data() + begin, data, len) == 0) return slot.id;
    }
  }
}

int32_t Tokenizer::FindPair(int32_t left, int32_t right) const {
  const uint64_t key = PairKey(left, right);
  for (uint64_t s = Mix(key * 0x9E3779B97F4A7C15ull) & pair_mask_;; s = (s + 1) & pair_mask_) {
    const PairSlot& slot = pair_slots_[s];
    if (slot.id < 0) return -1;
    if (slot.key == key) return slot.id;
  }
}

// The mergeable piece whose text is left's text followed by right's (they lie
// contiguously at `text`), or -1.
int32_t Tokenizer::FindMerge(const char* text, const Symbol& left, const Symbol& right) const {
  const size_t size = size_t(left.len) + right.len;
  if (size > max_mergeable_bytes_) return -1;
  if (left.id >= 0 && right.id >= 0 && size <= kPairTableMaxBytes) return FindPair(left.id, right.id);
  const int32_t id = Find(text + left.begin, size);
  return Mergeable(id) ? id : -1;
}

std::pair<size_t, int32_t> Tokenizer::MatchUserDefined(std::string_view s) const {
  std::pair<size_t, int32_t> best{0, -1};
  uint32_t node = 0;
  for (size_t i = 0; i < s.size(); ++i) {
    const TrieNode& v = trie_nodes_[node];
    const TrieEdge* first = trie_edges_.data() + v.first_edge;
    const TrieEdge* last = first + v.num_edges;
    const uint8_t b = static_cast<uint8_t>(s[i]);
    const TrieEdge* e = std::lower_bound(first, last, b, [](const TrieEdge& x, uint8_t y) { return x.byte < y; });
    if (e == last || e->byte != b) break;
    node = e->child;
    if (trie_nodes_[node].piece >= 0) best = {i + 1, trie_nodes_[node].piece};
  }
  return best;
}

// SentencePiece's Normalizer with an identity rule: markers copied, each
// malformed byte -> U+FFFD, each space -> U+2581, one U+2581 in front.
void Tokenizer::Normalize(std::string_view text, bool dummy_prefix, std::string& out) const {
  out.clear();
  if (text.empty()) return;
  out.reserve(text.size() + text.size() / 8 + kSpaceSymbolLen);
  if (dummy_prefix) out.append(kSpaceSymbol, kSpaceSymbolLen);
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const size_t n = text.size();
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (c < 0x80 && c != ' ' && !starts_user_defined_[c]) {  // the common case: copy a plain ASCII run
      size_t j = i + 1;
      while (j < n && p[j] < 0x80 && p[j] != ' ' && !starts_user_defined_[p[j]]) ++j;
      out.append(text.data() + i, j - i);
      i = j;
      continue;
    }
    if (starts_user_defined_[c]) {
      const size_t len = MatchUserDefined(text.substr(i)).first;
      if (len > 0) {
        AppendEscaped(text.substr(i, len), out);
        i += len;
        continue;
      }
    }
    if (c == ' ') {
      out.append(kSpaceSymbol, kSpaceSymbolLen);
      ++i;
      continue;
    }
    const size_t len = Utf8Length(p + i, n - i);
    if (len == 0) {
      out.append(kReplacementChar, 3);
      ++i;
    } else {
      out.append(text.data() + i, len);
      i += len;
    }
  }
}

// A 4-ary max-heap of merge candidates: half the depth of a binary heap, and
// the four children of a node share a cache line, which matters when one
// segment holds millions of candidates (10 MB of one mergeable character).
void Tokenizer::HeapPush(std::vector<Candidate>& h, const Candidate& c) {
  size_t i = h.size();
  h.push_back(c);
  while (i > 0) {
    const size_t parent = (i - 1) / 4;
    if (!MergesBefore(c.score, c.left, h[parent].score, h[parent].left)) break;
    h[i] = h[parent];
    i = parent;
  }
  h[i] = c;
}

Tokenizer::Candidate Tokenizer::HeapPop(std::vector<Candidate>& h) {
  const Candidate top = h.front();
  const Candidate last = h.back();
  h.pop_back();
  const size_t n = h.size();
  if (n == 0) return top;
  size_t i = 0;
  for (;;) {
    const size_t first = 4 * i + 1;
    if (first >= n) break;
    size_t best = first;
    const size_t end = std::min(first + 4, n);
    for (size_t k = first + 1; k < end; ++k) {
      if (MergesBefore(h[k].score, h[k].left, h[best].score, h[best].left)) best = k;
    }
    if (!MergesBefore(h[best].score, h[best].left, last.score, last.left)) break;
    h[i] = h[best];
    i = best;
  }
  h[i] = last;
  return top;
}

void Tokenizer::EmitSymbol(std::string_view text, int32_t id, EncodeState& st, std::vector<int32_t>& ids) const {
  if (id >= 0 && types_[id] != PieceType::kUnknown) {
    ids.push_back(id);
    st.prev_unknown = false;
    return;
  }
  if (byte_fallback_) {
    for (char c : text) ids.push_back(byte_id_[static_cast<uint8_t>(c)]);
  } else if (!st.prev_unknown) {
    ids.push_back(unk_id_);
  }
  st.prev_unknown = true;
}

// BPE over st.symbols, which lie contiguously in `norm`: repeatedly merge the
// live adjacent pair whose concatenation is the highest-scoring piece, the
// leftmost on ties (SentencePiece's bpe_model.cc, same comparator).
void Tokenizer::BpeSegment(std::string_view norm, EncodeState& st, std::vector<int32_t>& ids) const {
  std::vector<Symbol>& sym = st.symbols;
  if (sym.empty()) return;
  if (sym.size() > 1) {
    std::vector<Candidate>& heap = st.heap;
    heap.clear();
    auto try_pair = [&](int32_t left, int32_t right) {
      const int32_t id = FindMerge(norm.data(), sym[left], sym[right]);
      if (id < 0) return;
      HeapPush(heap, {scores_[id], left, id});
    };
    // At most one live pair per symbol plus the stale ones: 2x the symbols.
    heap.reserve(std::min(2 * sym.size(), 2 * kExactReserveLimit));
    for (size_t i = 1; i < sym.size(); ++i) try_pair(static_cast<int32_t>(i - 1), static_cast<int32_t>(i));
    while (!heap.empty()) {
      const Candidate top = HeapPop(heap);
      Symbol& left = sym[top.left];
      if (left.len == 0 || left.next < 0) continue;
      Symbol& right = sym[left.next];
      const uint32_t size = offsets_[top.id + 1] - offsets_[top.id];
      if (left.len + right.len != size) continue;  // stale
      left.len = size;
      left.id = top.id;
      left.next = right.next;
      if (right.next >= 0) sym[right.next].prev = top.left;
      right.len = 0;
      if (left.prev >= 0) try_pair(left.prev, top.left);
      if (left.next >= 0) try_pair(top.left, left.next);
    }
  }
  for (int32_t i = 0; i >= 0; i = sym[i].next) EmitSymbol(norm.substr(sym[i].begin, sym[i].len), sym[i].id, st, ids);
  sym.clear();
}

void Tokenizer::EncodeNormalized(std::string_view norm, EncodeState& st, std::vector<int32_t>& ids) const {
  const auto* p = reinterpret_cast<const unsigned char*>(norm.data());
  const size_t n = norm.size();
  std::vector<Symbol>& sym = st.symbols;
  sym.clear();
  // At most one symbol per byte. Reserved up front so a huge segment does not
  // regrow (a regrowth briefly holds old and new copies); pages are only
  // touched as far as the longest segment reaches. Inputs beyond the limit
  // grow geometrically instead of reserving address space for all of it.
  sym.reserve(std::min(n, kExactReserveLimit));
  size_t i = 0;
  while (i < n) {
    const unsigned char c = p[i];
    if (starts_user_defined_[c]) {
      const auto [len, id] = MatchUserDefined(norm.substr(i));
      if (len > 0) {  // a frozen symbol: it ends the segment and never merges
        BpeSegment(norm, st, ids);
        EmitSymbol(norm.substr(i, len), id, st, ids);
        i += len;
        continue;
      }
    }
    const size_t len = std::min(n - i, OneCharLen(c));
    // Start a new segment where no merge can cross (see byte_pairs_, split_at_spaces_).
    if (!sym.empty() && (!CanMergeAcross(p[i - 1], c) || (split_at_spaces_ && IsSpaceSymbol(norm.data() + i, len)))) {
      BpeSegment(norm, st, ids);
    }
    const int32_t id = c < 0x80 ? ascii_id_[c] : Find(norm.data() + i, len);
    const int32_t index = static_cast<int32_t>(sym.size());
    sym.push_back({index - 1, -1, static_cast<uint32_t>(i), static_cast<uint32_t>(len), id});
    if (index > 0) sym[index - 1].next = index;
    i += len;
  }
  BpeSegment(norm, st, ids);
}

void Tokenizer::EncodeWith(std::string_view text, bool dummy_prefix, std::vector<int32_t>& ids) const {
  ids.clear();
  if (text.size() > kMaxInputBytes) {
    throw Error(ErrorCode::kInvalidArgument,
                "tokenizer: input of " + std::to_string(text.size()) + " bytes exceeds the limit of " + std::to_string(kMaxInputBytes));
  }
  EncodeState st;
  Normalize(text, dummy_prefix, st.norm);
  EncodeNormalized(st.norm, st, ids);
}

void Tokenizer::Encode(std::string_view text, std::vector<int32_t>& ids) const { EncodeWith(text, add_dummy_prefix_, ids); }

void Tokenizer::EncodeContinuation(std::string_view text, std::vector<int32_t>& ids) const { EncodeWith(text, false, ids); }

std::vector<int32_t> Tokenizer::Encode(std::string_view text) const {
  std::vector<int32_t> ids;
  Encode(text, ids);
  return ids;
}

std::string Tokenizer::Decode(std::span<const int32_t> ids) const {
  std::string out;
  out.reserve(ids.size() * 4);
  bool at_start = add_dummy_prefix_;
  for (const int32_t id : ids) {
    CheckId(id);
    const PieceType type = types_[id];
    if (type == PieceType::kControl || type == PieceType::kUnknown) continue;
    std::string_view bytes(token_bytes_pool_.data() + token_bytes_offsets_[id],
                           token_bytes_offsets_[id + 1] - token_bytes_offsets_[id]);
    if (at_start) {
      at_start = false;
      if (type != PieceType::kByte && IdToPiece(id).starts_with(kSpaceSymbol)) bytes.remove_prefix(1);
    }
    out.append(bytes);
  }
  return out;
}

}  // namespace needle
