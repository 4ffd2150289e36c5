#include "grammar/token_trie.h"

#include <algorithm>

#include "io/tokenizer_blob.h"  // kFirstMarkerId, kNumMarkers, PieceType

namespace needle::grammar {

namespace {

// Code points when `s` is whole UTF-8 characters without '"', '\' or controls; else -1.
int32_t CountPlainCodePoints(std::string_view s) {
  int32_t cps = 0;
  size_t i = 0;
  while (i < s.size()) {
    const uint8_t b0 = uint8_t(s[i]);
    size_t len;
    uint32_t cp;
    if (b0 < 0x80) {
      if (b0 < 0x20 || b0 == '"' || b0 == '\\') return -1;
      ++i, ++cps;
      continue;
    } else if (b0 >= 0xC2 && b0 <= 0xDF) {
      len = 2, cp = b0 & 0x1F;
    } else if (b0 >= 0xE0 && b0 <= 0xEF) {
      len = 3, cp = b0 & 0x0F;
    } else if (b0 >= 0xF0 && b0 <= 0xF4) {
      len = 4, cp = b0 & 0x07;
    } else {
      return -1;
    }
    if (i + len > s.size()) return -1;
    for (size_t k = 1; k < len; ++k) {
      const uint8_t b = uint8_t(s[i + k]);
      if ((b & 0xC0) != 0x80) return -1;
      cp = cp << 6 | (b & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp <= 0xDFFF))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
      return -1;
    i += len, ++cps;
  }
  return cps;
}

}  // namespace

TokenTrie::Trie TokenTrie::Build(const Tokenizer& tok, const std::vector<int32_t>& ids_in) {
  std::vector<std::pair<std::string_view, int32_t>> entries;
  for (int32_t id : ids_in) entries.push_back({tok.TokenBytes(id), id});
  std::sort(entries.begin(), entries.end());
  Trie t;
  t.nodes.push_back({0, 0, 0, 0, 0});
  std::vector<uint32_t> path{0};  // path[d] = node at depth d
  std::string_view prev;
  for (const auto& [s, id] : entries) {
    size_t common = 0;
    while (common < prev.size() && common < s.size() && prev[common] == s[common]) ++common;
    while (path.size() > common + 1) {
      t.nodes[path.back()].end = uint32_t(t.nodes.size());
      path.pop_back();
    }
    for (size_t d = common; d < s.size(); ++d) {
      const uint32_t tb = uint32_t(t.ids.size());
      t.nodes.push_back({0, tb, tb, uint16_t(d + 1), uint8_t(s[d])});
      path.push_back(uint32_t(t.nodes.size() - 1));
    }
    Node& leaf = t.nodes[path.back()];
    if (leaf.tok_end != t.ids.size()) leaf.tok_begin = uint32_t(t.ids.size());  // first token at this node
    t.ids.push_back(id);
    leaf.tok_end = uint32_t(t.ids.size());
    prev = s;
  }
  while (!path.empty()) {
    t.nodes[path.back()].end = uint32_t(t.nodes.size());
    path.pop_back();
  }
  return t;
}

TokenTrie::TokenTrie(const Tokenizer& tokenizer) : tokenizer_(&tokenizer), vocab_size_(tokenizer.vocab_size()) {
  eligible_.assign(size_t(vocab_size_), 0);
  plain_cps_.assign(size_t(vocab_size_), -1);
  std::vector<int32_t> all, special, quoted;
  for (int32_t id = 0; id < vocab_size_; ++id) {
    const PieceType type = tokenizer.Type(id);
    if (type == PieceType::kControl || type == PieceType::kUnknown) continue;
    if (id >= int32_t(kFirstMarkerId) && id < int32_t(kFirstMarkerId + kNumMarkers)) continue;
    const std::string_view b = tokenizer.TokenBytes(id);
    if (b.empty() || b.size() > kMaxTokenBytes) continue;
    eligible_[size_t(id)] = 1;
    all.push_back(id);
    if (b.find('"') != std::string_view::npos) quoted.push_back(id);
    max_depth_ = std::max<uint32_t>(max_depth_, uint32_t(b.size()));
    const int32_t cps = CountPlainCodePoints(b);
    if (cps >= 1 && uint32_t(cps) <= kMaxPlainCodePoints) {
      plain_cps_[size_t(id)] = cps;
      max_plain_cps_ = std::max<uint32_t>(max_plain_cps_, uint32_t(cps));
    } else {
      special.push_back(id);
    }
  }
  all_ = Build(tokenizer, all);
  special_ = Build(tokenizer, special);
  quoted_ = Build(tokenizer, quoted);
  const size_t words = mask_words();
  plain_masks_.assign((size_t(max_plain_cps_) + 1) * words, 0);
  for (int32_t id = 0; id < vocab_size_; ++id) {
    const int32_t cps = plain_cps_[size_t(id)];
    if (cps < 0) continue;
    for (uint32_t k = uint32_t(cps); k <= max_plain_cps_; ++k) plain_masks_[k * words + size_t(id) / 32] |= 1u << (id % 32);
  }
}

}  // namespace needle::grammar
