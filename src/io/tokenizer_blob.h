// The tokenizer blob stored as the archive's last tensor (SPEC §7):
//   header (24 bytes): u32 n_pieces, pad_id, eos_id, bos_id, unk_id,
//                      u8 add_dummy_prefix, u8 byte_fallback, u16 pad
//   then per piece, in id order: f32 score, u8 type, u16 len (7 bytes, packed), len UTF-8 bytes.
// The blob must be consumed exactly. text/ builds the encoder on top of it.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace needle {

enum class PieceType : uint8_t { kNormal = 0, kUnknown = 1, kControl = 2, kUserDefined = 3, kByte = 4 };

// Fixed ids (SPEC §7).
inline constexpr uint32_t kPadId = 0, kEosId = 1, kBosId = 2, kUnkId = 3;
inline constexpr uint32_t kImStartId = 4, kImEndId = 5, kThinkId = 6, kThinkEndId = 7, kToolsId = 8,
                          kToolsEndId = 9, kToolCallId = 10, kToolCallEndId = 11, kToolResultId = 12,
                          kToolResultEndId = 13;
inline constexpr uint32_t kNumMarkers = 10;
inline constexpr uint32_t kFirstMarkerId = 4;
// Marker strings for ids 4..13.
extern const char* const kChatMarkers[kNumMarkers];

struct TokenizerPiece {
  std::string text;  // UTF-8; spaces appear as U+2581; BYTE pieces are "<0xHH>"
  float score = 0.0f;
  PieceType type = PieceType::kNormal;
};

// An owned tokenizer description: what the blob encodes.
struct TokenizerModel {
  uint32_t pad_id = kPadId, eos_id = kEosId, bos_id = kBosId, unk_id = kUnkId;
  bool add_dummy_prefix = true;
  bool byte_fallback = true;
  std::vector<TokenizerPiece> pieces;
};

// Parses and validates a blob: bounds of every length, piece types, the fixed
// ids and markers, unique pieces, all 256 byte pieces when byte_fallback is
// set, n_pieces <= vocab. Throws Error(kInvalidTokenizer) naming the field.
TokenizerModel ParseTokenizerBlob(std::span<const uint8_t> blob, uint32_t vocab);
std::vector<uint8_t> SerializeTokenizerBlob(const TokenizerModel& m);

// The fallback vocabulary for archives made without a trained tokenizer:
// PAD/EOS/BOS/UNK, the ten chat markers, the 256 byte pieces and U+2581, so
// every string still round-trips (one token per byte).
TokenizerModel ByteLevelTokenizer();

// Reads a SentencePiece `.model` file (protobuf ModelProto) without linking
// SentencePiece: the pieces, their scores and types, add_dummy_prefix and
// byte_fallback. Throws Error(kInvalidTokenizer) on a malformed file.
TokenizerModel ReadSentencePieceModel(std::span<const uint8_t> proto);
TokenizerModel ReadSentencePieceModelFile(const std::string& path);

// "<0xAB>" -> 0xAB; -1 if the text is not a byte piece.
int ParseBytePiece(std::string_view text);

}  // namespace needle
