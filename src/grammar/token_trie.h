// Every token's bytes (Tokenizer::TokenBytes) in one byte trie, built once
// per tokenizer and shared by all matchers (immutable, thread-safe to read).
// The grammar matcher walks it against its state to build the allowed-token
// mask, pruning a whole subtree at the first rejected byte.
//
// Layout: nodes in preorder, each with the index just past its subtree, so
// the walk is one forward loop with no recursion and a skip on rejection.
//
// Tokens that can never appear inside a call are left out: CONTROL and
// UNKNOWN pieces, the chat markers (ids 4..13; </tool_call> is handled by
// the matcher as the closing flag), and tokens with no bytes or more than
// kMaxTokenBytes bytes.
//
// Plain string tokens: a token whose bytes are whole UTF-8 characters, none
// of them '"', '\' or a control character (< 0x20), can continue any plain
// string at a character boundary, whatever was before. They are kept out of
// the second trie (special_nodes) and summarised as masks by code point
// count, so inside a free-text string argument the mask is a copy of
// PlainMask(room left) plus a walk of the few special tokens. The third trie
// (quoted) holds the tokens with a '"' byte: inside a pattern string, the
// tokens that stay inside depend only on the string's own state (the matcher
// caches them), and only these can close it.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "text/tokenizer.h"  // Tokenizer

namespace needle::grammar {

class TokenTrie {
 public:
  static constexpr uint32_t kMaxTokenBytes = 256;
  static constexpr uint32_t kMaxPlainCodePoints = 64;  // longer plain tokens go to the special trie

  struct Node {
    uint32_t end;        // first node after this subtree (preorder)
    uint32_t tok_begin;  // ids of the tokens ending here: ids[tok_begin, tok_end)
    uint32_t tok_end;
    uint16_t depth;      // bytes from the root; the root is node 0 with depth 0
    uint8_t byte;        // the byte on the edge into this node
  };
  struct Trie {
    std::vector<Node> nodes;
    std::vector<int32_t> ids;
  };

  // The tokenizer must outlive the trie.
  explicit TokenTrie(const Tokenizer& tokenizer);

  const Tokenizer& tokenizer() const { return *tokenizer_; }
  int32_t vocab_size() const { return vocab_size_; }
  // uint32 words of a mask over the vocabulary (bit id % 32 of word id / 32).
  size_t mask_words() const { return (size_t(vocab_size_) + 31) / 32; }
  // May the token appear inside a call (see above)?
  bool Eligible(int32_t id) const { return id >= 0 && id < vocab_size_ && eligible_[size_t(id)] != 0; }
  std::string_view Bytes(int32_t id) const { return tokenizer_->TokenBytes(id); }

  const Trie& all() const { return all_; }          // every eligible token
  const Trie& special() const { return special_; }  // eligible tokens that are not plain
  const Trie& quoted() const { return quoted_; }    // eligible tokens with a '"' byte
  uint32_t max_depth() const { return max_depth_; }  // longest eligible token, bytes

  // Plain tokens of at most `cps` code points (cps is clamped to max_plain_cps()).
  std::span<const uint32_t> PlainMask(uint64_t cps) const {
    const size_t k = size_t(cps < max_plain_cps_ ? cps : max_plain_cps_);
    return {plain_masks_.data() + k * mask_words(), mask_words()};
  }
  uint32_t max_plain_cps() const { return max_plain_cps_; }
  // Code points of a plain token, or -1.
  int32_t PlainCodePoints(int32_t id) const { return plain_cps_[size_t(id)]; }

 private:
  static Trie Build(const Tokenizer& tok, const std::vector<int32_t>& ids);

  const Tokenizer* tokenizer_;
  int32_t vocab_size_ = 0;
  std::vector<uint8_t> eligible_;   // [vocab]
  std::vector<int32_t> plain_cps_;  // [vocab]
  Trie all_, special_, quoted_;
  uint32_t max_depth_ = 0;
  uint32_t max_plain_cps_ = 0;
  std::vector<uint32_t> plain_masks_;  // [(max_plain_cps + 1) * mask_words]: cumulative by code points
};

}  // namespace needle::grammar
