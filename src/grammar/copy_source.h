// The text a call's free-text arguments are most likely copied from (the
// user's requests and tool results in the session), as a suffix automaton:
// one uint32 state answers "is what was typed so far in this string a
// substring of the source?", and one step per byte keeps answering it. The
// grammar matcher carries that state in a string's frame and uses it to mark
// the tokens that continue a copy (GrammarMatcher::ComputeCopyMask); the
// session prefers those tokens by a logit bonus (SessionOptions::copy_bias).
//
// Matching is ASCII case-insensitive ("Cora" continues "give cora a call").
// Segments (one per request or result) are joined with a byte that no string
// content can hold, so no match spans two of them.
//
// A copy is a whole span, not a piece of a word: every word in it starts
// where a word starts in the source ("End" is not copied out of
// "Siahend719"), and it may end only where a word ends ("p_f54c25" is not
// closed after "p_f54c2"); a copied number ends where the source's digits
// end. Word bytes are ASCII letters and digits, '_' and every byte of a
// multi-byte UTF-8 character. (The automaton is built over the text with a
// marker byte before each word start; Step takes the marker itself before a
// word byte that follows a non-word byte, so the anchoring costs nothing.)
//
// Build allocates (once per turn, O(source bytes)); Step and MarkCopyTokens
// do not. The session also uses it for the quoted spans of the reasoning
// ("name: 'span' -> key", the default model's format).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "grammar/token_trie.h"  // TokenTrie

namespace needle::grammar {

class CopySource {
 public:
  static constexpr uint32_t kRoot = 0;           // the empty string: every source admits it
  static constexpr uint32_t kDead = 0xFFFFFFFFu; // no substring of the source
  enum class End : uint8_t { kWord = 1, kNumber = 2 };  // where a copied string / number may end

  // Replaces the source by these segments (bytes as given; ASCII letters are folded).
  void Build(std::span<const std::string_view> segments);
  void Clear() { Build({}); }

  // The state after one more byte (ASCII letters folded); kDead stays kDead.
  uint32_t Step(uint32_t state, uint8_t byte) const;
  // Is `text` a substring of the source that starts where a word starts (or
  // with a non-word byte)? (Tests and tools.)
  bool Contains(std::string_view text) const;

  // Does some occurrence of the state's strings end where a word (kWord) or
  // the digits of a number (kNumber) end in the source?
  bool Ends(uint32_t state, End end) const {
    return state < ends_.size() && (ends_[state] & uint8_t(end)) != 0;
  }

  bool empty() const { return states_.size() <= 1; }
  size_t states() const { return states_.size(); }

  static uint8_t Fold(uint8_t b) { return (b >= 'A' && b <= 'Z') ? uint8_t(b + ('a' - 'A')) : b; }
  static bool IsWordByte(uint8_t b) {
    return (b >= 'a' && b <= 'z') || (b >= 'A' && b <= 'Z') || (b >= '0' && b <= '9') || b == '_' || b >= 0x80;
  }

 private:
  struct State {
    uint32_t len;    // longest string ending here
    int32_t link;    // suffix link (-1 at the root)
    int32_t edges;   // first outgoing edge in edges_, -1 for none
    uint8_t last;    // the byte every string of this state ends with (0 at the root)
  };
  struct Edge {
    uint8_t byte;
    uint32_t to;
    int32_t next;    // next edge of the same state, -1 at the end
  };
  int32_t Find(uint32_t state, uint8_t byte) const;
  void AddEdge(uint32_t from, uint8_t byte, uint32_t to);
  void Extend(uint8_t byte, uint32_t* last);

  std::vector<State> states_;
  std::vector<Edge> edges_;
  std::vector<uint8_t> ends_;  // per state: End bits
};

// Marks in `bits` (overwritten, trie mask_words() words) the tokens of `trie`
// that keep a copy going from `state`: every byte continues it, or the bytes
// continue it up to one of the `close` bytes, the copy is then not empty
// (`nonempty` says whether it already is; bytes from the close on are not
// checked) and it ends as `end` asks. A backslash or control byte ends a
// copy. `walk` is scratch of at least trie.max_depth() + 1 entries. Returns
// whether any token was marked.
bool MarkCopyTokens(const TokenTrie& trie, const CopySource& source, uint32_t state, bool nonempty, std::string_view close,
                    CopySource::End end, std::span<uint32_t> bits, std::span<uint32_t> walk);


}  // namespace needle::grammar
