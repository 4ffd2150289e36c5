// The engine's tokenizer (SPEC §7): SentencePiece-exact BPE encoding and
// decoding over the archive's tokenizer blob, without linking SentencePiece.
//
// Encode reproduces the ids that libsentencepiece (0.1.97, the Debian
// library our tokenizers are trained with) gives for BPE models trained with
// identity normalisation, remove_extra_whitespaces=false, byte fallback and
// user-defined chat markers. It is checked against that library on thousands
// of strings per test run (text/tokenizer_exact_test.cc) and by
// scripts/tokenizer-check on 100k+ lines. Where the library's behaviour makes
// SPEC §7 more precise, this is what it does (each point checked empirically):
//
//  1. Normalisation. The blob carries no normaliser, so the SPEC's
//     "identity" is assumed. Only U+0020 becomes U+2581: NBSP, U+3000,
//     U+2000–U+200A, tabs and newlines are kept as they are (and usually end
//     up as byte pieces). Whitespace is never collapsed or stripped.
//  2. Invalid UTF-8. Each byte that does not start a well-formed UTF-8
//     sequence (stray continuation bytes, truncated sequences, overlong
//     forms, surrogates, values above U+10FFFF, 0xF8–0xFF) becomes U+FFFD —
//     one U+FFFD per bad byte — and U+FFFD then falls back to the bytes
//     EF BF BD unless it is a piece. A literal U+FFFD in the input is kept.
//     NUL bytes are ordinary characters.
//  3. Dummy prefix. With add_dummy_prefix, U+2581 is prepended to every
//     non-empty input, also one that starts with a space or a marker
//     (" a" -> "▁▁a", "<think>" -> "▁" "<think>"). The empty string gives no ids.
//  4. Markers. Every USER_DEFINED piece (the ten chat markers and any others)
//     is matched longest-first at each character position, in the raw text
//     (so its bytes are kept) and again in the normalised text; a match is
//     one frozen symbol that never merges. "<<think>>" -> "<" "<think>" ">".
//  5. Merges. Candidate pairs are merged only when their concatenation is a
//     NORMAL or USER_DEFINED piece; the highest score wins, ties go to the
//     leftmost pair. A final symbol takes the id of the piece with its text
//     whatever its type, else it is unknown.
//  6. Unknown symbols. With byte_fallback each unknown symbol becomes one BYTE
//     piece per UTF-8 byte. Without byte_fallback a run of consecutive unknown
//     symbols becomes a single UNK id (the library merges them).
//
// Decoding follows SPEC §7: BYTE pieces give their raw byte, CONTROL and
// UNKNOWN ids are skipped entirely, U+2581 becomes a space, and with
// add_dummy_prefix one U+2581 is removed from the first piece that is not
// skipped when that piece is NORMAL/USER_DEFINED and starts with it (a
// leading BYTE piece, even <0x20>, is never trimmed). Two deliberate
// differences from SentencePieceProcessor::Decode: the library renders an
// UNK id as " ⁇ " (we skip it, as SPEC says), and it turns a byte piece that
// is not part of a well-formed UTF-8 sequence into U+FFFD (we emit the raw
// byte, so that concatenated TokenBytes equal Decode — the grammar relies on
// it). For ids produced by Encode neither case arises (they always decode to
// valid UTF-8 and, with byte fallback, contain no UNK), so
// Decode(Encode(s)) is what the library gives: s itself when s is valid
// UTF-8 without U+2581; otherwise bad bytes come back as U+FFFD and U+2581 as a space.
//
// A Tokenizer is immutable after construction and safe to share between threads.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "io/tokenizer_blob.h"

namespace needle {

class Tokenizer {
 public:
  // Builds the lookup tables. Throws Error(kInvalidTokenizer) for a model the
  // encoder cannot use safely (no pieces, a fixed id out of range, duplicate
  // pieces, a missing byte piece while byte_fallback is set). Every model that
  // ParseTokenizerBlob accepts is accepted.
  explicit Tokenizer(const TokenizerModel& model);

  // Text -> ids. Never throws for any bytes (invalid UTF-8 included) up to
  // kMaxInputBytes. Time O(n) on real text (BPE runs per word-like segment;
  // O(n log n) when one segment is huge: 10 MB of 'a' with a vocabulary of
  // a-runs takes ~3 s). Memory O(n): ~11 bytes per input byte (the ids
  // included), ~35 in that worst case.
  std::vector<int32_t> Encode(std::string_view text) const;
  // The same, into `ids` (cleared first) so a caller can reuse its buffer.
  void Encode(std::string_view text, std::vector<int32_t>& ids) const;
  // Encodes `text` as the continuation of a longer text: no dummy prefix.
  // Prompts are built from marker-delimited segments encoded this way; since
  // markers never merge, segment by segment equals the whole at once.
  // Like Encode, it clears `ids` first: encode into a fresh vector to append.
  void EncodeContinuation(std::string_view text, std::vector<int32_t>& ids) const;
  // Ids -> text (see above). Throws Error(kInvalidArgument) for an id outside [0, vocab_size).
  std::string Decode(std::span<const int32_t> ids) const;

  static constexpr size_t kMaxInputBytes = size_t(1) << 30;  // offsets are 32-bit

  int32_t vocab_size() const { return static_cast<int32_t>(types_.size()); }
  int32_t pad_id() const { return pad_id_; }
  int32_t eos_id() const { return eos_id_; }
  int32_t bos_id() const { return bos_id_; }
  int32_t unk_id() const { return unk_id_; }
  bool add_dummy_prefix() const { return add_dummy_prefix_; }
  bool byte_fallback() const { return byte_fallback_; }

  // The piece text as stored (spaces as U+2581, byte pieces as "<0xHH>").
  // The accessors below throw Error(kInvalidArgument) for an id out of range.
  std::string_view IdToPiece(int32_t id) const;
  // The id of the piece with exactly this text, or -1.
  int32_t PieceToId(std::string_view piece) const;
  PieceType Type(int32_t id) const;
  float Score(int32_t id) const;
  bool IsControl(int32_t id) const { return Type(id) == PieceType::kControl; }
  // The id of the byte piece <0xHH>, or -1 when the model has none.
  int32_t ByteToId(uint8_t byte) const { return byte_id_[byte]; }

  // The exact bytes token `id` contributes when decoded: NORMAL/USER_DEFINED
  // pieces with U+2581 as a space, BYTE pieces as their single raw byte,
  // CONTROL/UNKNOWN as nothing. Decode(ids) is the concatenation of these,
  // less one leading space when the dummy-prefix rule above trims it.
  std::string_view TokenBytes(int32_t id) const;

 private:
  struct Symbol;
  struct Candidate;
  struct EncodeState;
  static void HeapPush(std::vector<Candidate>& heap, const Candidate& c);
  static Candidate HeapPop(std::vector<Candidate>& heap);

  void CheckId(int32_t id) const;
  // Piece lookup by text over the pool (open addressing). -1 when absent.
  int32_t Find(const char* data, size_t len) const;
  // Longest USER_DEFINED piece that is a prefix of s: {length, id}; {0, -1} if none.
  std::pair<size_t, int32_t> MatchUserDefined(std::string_view s) const;
  bool Mergeable(int32_t id) const {
    return id >= 0 && (types_[id] == PieceType::kNormal || types_[id] == PieceType::kUserDefined);
  }
  void Normalize(std::string_view text, bool dummy_prefix, std::string& out) const;
  void EncodeWith(std::string_view text, bool dummy_prefix, std::vector<int32_t>& ids) const;
  void EncodeNormalized(std::string_view norm, EncodeState& st, std::vector<int32_t>& ids) const;
  void BpeSegment(std::string_view norm, EncodeState& st, std::vector<int32_t>& ids) const;
  void EmitSymbol(std::string_view text, int32_t id, EncodeState& st, std::vector<int32_t>& ids) const;

  // Pieces, in id order, as one text pool with offsets (copy- and move-safe).
  std::string pool_;
  std::vector<uint32_t> offsets_;  // vocab_size + 1
  std::vector<float> scores_;
  std::vector<PieceType> types_;
  // What each token emits when decoded (TokenBytes), same layout.
  std::string token_bytes_pool_;
  std::vector<uint32_t> token_bytes_offsets_;

  // Hash table over all pieces: slot = (hash tag, id), id -1 = empty.
  struct Slot {
    uint32_t tag;
    int32_t id;
  };
  std::vector<Slot> slots_;
  uint64_t slot_mask_ = 0;

  // Merges of two pieces by id: (left id, right id) -> id of the mergeable
  // piece whose text is their concatenation. Holds every split of every
  // mergeable piece up to kPairTableMaxBytes, so for such sizes it answers
  // exactly what a text lookup would, with one integer hash instead of hashing
  // and comparing bytes. Longer ones (and symbols that are not pieces) fall
  // back to Find; the cap bounds construction time on hostile blobs.
  static constexpr size_t kPairTableMaxBytes = 64;
  struct PairSlot {
    uint64_t key;
    int32_t id;  // -1 = empty
  };
  std::vector<PairSlot> pair_slots_;
  uint64_t pair_mask_ = 0;
  int32_t FindPair(int32_t left, int32_t right) const;
  int32_t FindMerge(const char* text, const Symbol& left, const Symbol& right) const;

  // Byte trie over the USER_DEFINED pieces. Node 0 is the root; edges of a
  // node are sorted by byte, so a lookup is a binary search.
  struct TrieNode {
    int32_t piece = -1;       // id of the piece ending here, or -1
    uint32_t first_edge = 0;  // into trie_edges_
    uint32_t num_edges = 0;
  };
  struct TrieEdge {
    uint8_t byte;
    uint32_t child;
  };
  std::vector<TrieNode> trie_nodes_;
  std::vector<TrieEdge> trie_edges_;
  bool starts_user_defined_[256] = {};  // first bytes of USER_DEFINED pieces

  int32_t byte_id_[256];
  int32_t ascii_id_[128];  // single-character pieces for ASCII, -1 if none
  size_t max_mergeable_bytes_ = 0;
  // Bit (a << 8 | b) is set when some NORMAL/USER_DEFINED piece has byte a
  // directly followed by byte b. A merge across the boundary between two
  // adjacent characters would create such a piece, so where the last byte of
  // one and the first of the next are not a pair, BPE can run on both sides
  // independently: exactly the same result, with much smaller heaps (compact
  // JSON has no spaces, but `{"` and `name` never merge into one piece).
  std::vector<uint64_t> byte_pairs_;  // 65536 bits
  bool CanMergeAcross(unsigned char a, unsigned char b) const {
    const unsigned bit = a << 8 | b;
    return (byte_pairs_[bit >> 6] >> (bit & 63)) & 1;
  }
  // True when no NORMAL/USER_DEFINED piece has U+2581 after its first byte:
  // then no merge can cross the start of a "▁" symbol and BPE may run word by
  // word (exactly the same result; far smaller heaps).
  bool split_at_spaces_ = false;

  int32_t pad_id_, eos_id_, bos_id_, unk_id_;
  bool add_dummy_prefix_, byte_fallback_;
};

}  // namespace needle
