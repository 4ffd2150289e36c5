#include "io/tokenizer_blob.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <unordered_set>

#include "base/error.h"

namespace needle {

const char* const kChatMarkers[kNumMarkers] = {
    "<|im_start|>", "<|im_end|>",   "<think>",       "</think>",       "<tools>",
    "</tools>",     "<tool_call>",  "</tool_call>",  "<tool_result>",  "</tool_result>"};

namespace {

constexpr size_t kBlobHeaderBytes = 24;
constexpr size_t kPieceHeaderBytes = 7;

[[noreturn]] void Bad(const std::string& what) {
  throw Error(ErrorCode::kInvalidTokenizer, "tokenizer blob: " + what);
}

template <typename T>
T Load(const uint8_t* p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

template <typename T>
void Append(std::vector<uint8_t>& out, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  out.insert(out.end(), p, p + sizeof(T));
}

std::string BytePieceText(int b) {
  static const char* hex = "0123456789ABCDEF";
  return std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
}

void ValidateModel(const TokenizerModel& m, uint32_t vocab) {
  const size_t n = m.pieces.size();
  if (n == 0) Bad("n_pieces is 0");
  if (vocab && n > vocab) Bad("n_pieces " + std::to_string(n) + " exceeds the model vocab " + std::to_string(vocab));
  const struct {
    const char* name;
    uint32_t id, expected;
    PieceType type;
  } fixed[] = {{"pad_id", m.pad_id, kPadId, PieceType::kControl},
               {"eos_id", m.eos_id, kEosId, PieceType::kControl},
               {"bos_id", m.bos_id, kBosId, PieceType::kControl},
               {"unk_id", m.unk_id, kUnkId, PieceType::kUnknown}};
  for (const auto& f : fixed) {
    if (f.id != f.expected) Bad(std::string(f.name) + " is " + std::to_string(f.id) + ", expected " + std::to_string(f.expected));
    if (f.id >= n) Bad(std::string(f.name) + " " + std::to_string(f.id) + " >= n_pieces " + std::to_string(n));
    if (m.pieces[f.id].type != f.type) Bad(std::string(f.name) + " piece has type " + std::to_string(int(m.pieces[f.id].type)) + ", expected " + std::to_string(int(f.type)));
  }
  if (n < kFirstMarkerId + kNumMarkers) Bad("n_pieces " + std::to_string(n) + " cannot hold the 10 chat markers at ids 4-13");
  for (uint32_t i = 0; i < kNumMarkers; ++i) {
    const TokenizerPiece& p = m.pieces[kFirstMarkerId + i];
    if (p.text != kChatMarkers[i] || p.type != PieceType::kUserDefined) {
      Bad("piece " + std::to_string(kFirstMarkerId + i) + " is '" + p.text + "', expected the user-defined marker " + kChatMarkers[i]);
    }
  }
  std::unordered_set<std::string_view> seen;
  seen.reserve(n * 2);
  bool have_byte[256] = {};
  for (size_t i = 0; i < n; ++i) {
    const TokenizerPiece& p = m.pieces[i];
    if (!std::isfinite(p.score)) Bad("piece " + std::to_string(i) + " has a non-finite score");
    if (p.text.empty() && p.type != PieceType::kControl && p.type != PieceType::kUnknown) Bad("piece " + std::to_string(i) + " is empty");
    if (!seen.insert(p.text).second) Bad("piece " + std::to_string(i) + " '" + p.text + "' is a duplicate");
    if (p.type == PieceType::kByte) {
      const int b = ParseBytePiece(p.text);
      if (b < 0) Bad("byte piece " + std::to_string(i) + " '" + p.text + "' is not of the form <0xHH>");
      have_byte[b] = true;
    }
  }
  if (m.byte_fallback) {
    for (int b = 0; b < 256; ++b) {
      if (!have_byte[b]) Bad("byte_fallback is set but the byte piece " + BytePieceText(b) + " is missing");
    }
  }
}

}  // namespace

int ParseBytePiece(std::string_view t) {
  if (t.size() != 6 || t[0] != '<' || t[1] != '0' || t[2] != 'x' || t[5] != '>') return -1;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  const int hi = hex(t[3]), lo = hex(t[4]);
  return hi < 0 || lo < 0 ? -1 : hi * 16 + lo;
}

TokenizerModel ParseTokenizerBlob(std::span<const uint8_t> blob, uint32_t vocab) {
  if (blob.size() < kBlobHeaderBytes) Bad("size " + std::to_string(blob.size()) + " is smaller than its 24-byte header");
  const uint8_t* p = blob.data();
  TokenizerModel m;
  const uint32_t n = Load<uint32_t>(p);
  m.pad_id = Load<uint32_t>(p + 4);
  m.eos_id = Load<uint32_t>(p + 8);
  m.bos_id = Load<uint32_t>(p + 12);
  m.unk_id = Load<uint32_t>(p + 16);
  const uint8_t adp = p[20], bf = p[21];
  if (adp > 1) Bad("add_dummy_prefix is " + std::to_string(adp) + ", expected 0 or 1");
  if (bf > 1) Bad("byte_fallback is " + std::to_string(bf) + ", expected 0 or 1");
  m.add_dummy_prefix = adp;
  m.byte_fallback = bf;
  // Each piece needs at least its 7-byte header: bound n before reserving.
  if (n > (blob.size() - kBlobHeaderBytes) / kPieceHeaderBytes) {
    Bad("n_pieces " + std::to_string(n) + " cannot fit in " + std::to_string(blob.size()) + " bytes");
  }
  m.pieces.reserve(n);
  size_t off = kBlobHeaderBytes;
  for (uint32_t i = 0; i < n; ++i) {
    if (blob.size() - off < kPieceHeaderBytes) Bad("piece " + std::to_string(i) + " header runs past the end of the blob");
    TokenizerPiece piece;
    piece.score = Load<float>(p + off);
    const uint8_t type = p[off + 4];
    const uint16_t len = Load<uint16_t>(p + off + 5);
    off += kPieceHeaderBytes;
    if (type > static_cast<uint8_t>(PieceType::kByte)) Bad("piece " + std::to_string(i) + " has type " + std::to_string(type) + ", expected 0-4");
    if (blob.size() - off < len) Bad("piece " + std::to_string(i) + " length " + std::to_string(len) + " runs past the end of the blob");
    piece.type = static_cast<PieceType>(type);
    piece.text.assign(reinterpret_cast<const char*>(p + off), len);
    off += len;
    m.pieces.push_back(std::move(piece));
  }
  if (off != blob.size()) Bad(std::to_string(blob.size() - off) + " trailing bytes after the last piece");
  ValidateModel(m, vocab);
  return m;
}

std::vector<uint8_t> SerializeTokenizerBlob(const TokenizerModel& m) {
  ValidateModel(m, 0);
  std::vector<uint8_t> out;
  Append<uint32_t>(out, static_cast<uint32_t>(m.pieces.size()));
  Append<uint32_t>(out, m.pad_id);
  Append<uint32_t>(out, m.eos_id);
  Append<uint32_t>(out, m.bos_id);
  Append<uint32_t>(out, m.unk_id);
  out.push_back(m.add_dummy_prefix ? 1 : 0);
  out.push_back(m.byte_fallback ? 1 : 0);
  Append<uint16_t>(out, 0);
  for (const TokenizerPiece& p : m.pieces) {
    if (p.text.size() > 0xFFFF) throw Error(ErrorCode::kInvalidTokenizer, "tokenizer: piece longer than 65535 bytes");
    Append<float>(out, p.score);
    out.push_back(static_cast<uint8_t>(p.type));
    Append<uint16_t>(out, static_cast<uint16_t>(p.text.size()));
    out.insert(out.end(), p.text.begin(), p.text.end());
  }
  return out;
}

TokenizerModel ByteLevelTokenizer() {
  TokenizerModel m;
  m.pieces.push_back({"<pad>", 0.0f, PieceType::kControl});
  m.pieces.push_back({"</s>", 0.0f, PieceType::kControl});
  m.pieces.push_back({"<s>", 0.0f, PieceType::kControl});
  m.pieces.push_back({"<unk>", 0.0f, PieceType::kUnknown});
  for (const char* marker : kChatMarkers) m.pieces.push_back({marker, 0.0f, PieceType::kUserDefined});
  for (int b = 0; b < 256; ++b) m.pieces.push_back({BytePieceText(b), 0.0f, PieceType::kByte});
  m.pieces.push_back({"\xE2\x96\x81", 0.0f, PieceType::kNormal});  // U+2581, the space
  return m;
}

// ---- SentencePiece ModelProto, read with a minimal protobuf walker ----------------
namespace {

struct ProtoReader {
  const uint8_t* p;
  const uint8_t* end;

  bool done() const { return p >= end; }
  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) Bad("sentencepiece model: truncated varint");
      const uint8_t c = *p++;
      v |= uint64_t(c & 0x7F) << shift;
      if (!(c & 0x80)) return v;
    }
    Bad("sentencepiece model: varint too long");
  }
  std::span<const uint8_t> Bytes() {
    const uint64_t len = Varint();
    if (len > uint64_t(end - p)) Bad("sentencepiece model: length-delimited field runs past the end");
    std::span<const uint8_t> s(p, len);
    p += len;
    return s;
  }
  uint32_t Fixed32() {
    if (end - p < 4) Bad("sentencepiece model: truncated fixed32");
    uint32_t v;
    std::memcpy(&v, p, 4);
    p += 4;
    return v;
  }
  void Skip(uint32_t wire) {
    switch (wire) {
      case 0: Varint(); break;
      case 1:
        if (end - p < 8) Bad("sentencepiece model: truncated fixed64");
        p += 8;
        break;
      case 2: Bytes(); break;
      case 5: Fixed32(); break;
      default: Bad("sentencepiece model: unsupported wire type " + std::to_string(wire));
    }
  }
};

}  // namespace

TokenizerModel ReadSentencePieceModel(std::span<const uint8_t> proto) {
  TokenizerModel m;
  int64_t unk = 0, bos = 1, eos = 2, pad = -1;  // SentencePiece defaults
  bool byte_fallback = false, add_dummy_prefix = true, remove_extra_ws = true;
  int64_t model_type = 1;  // UNIGRAM
  std::string normalizer = "nmt_nfkc";
  ProtoReader top{proto.data(), proto.data() + proto.size()};
  while (!top.done()) {
    const uint64_t key = top.Varint();
    const uint32_t field = static_cast<uint32_t>(key >> 3), wire = key & 7;
    if (field == 1 && wire == 2) {  // SentencePiece piece
      ProtoReader r{nullptr, nullptr};
      auto s = top.Bytes();
      r.p = s.data(), r.end = s.data() + s.size();
      TokenizerPiece piece;
      int64_t type = 1;
      while (!r.done()) {
        const uint64_t k = r.Varint();
        const uint32_t f = static_cast<uint32_t>(k >> 3), w = k & 7;
        if (f == 1 && w == 2) {
          auto b = r.Bytes();
          piece.text.assign(reinterpret_cast<const char*>(b.data()), b.size());
        } else if (f == 2 && w == 5) {
          const uint32_t bits = r.Fixed32();
          std::memcpy(&piece.score, &bits, 4);
        } else if (f == 3 && w == 0) {
          type = static_cast<int64_t>(r.Varint());
        } else {
          r.Skip(w);
        }
      }
      switch (type) {  // SentencePiece enum -> blob type
        case 1: piece.type = PieceType::kNormal; break;
        case 2: piece.type = PieceType::kUnknown; break;
        case 3: piece.type = PieceType::kControl; break;
        case 4: piece.type = PieceType::kUserDefined; break;
        case 6: piece.type = PieceType::kByte; break;
        default: Bad("sentencepiece model: piece " + std::to_string(m.pieces.size()) + " has unsupported type " + std::to_string(type));
      }
      m.pieces.push_back(std::move(piece));
    } else if ((field == 2 || field == 3) && wire == 2) {  // TrainerSpec / NormalizerSpec
      auto s = top.Bytes();
      ProtoReader r{s.data(), s.data() + s.size()};
      while (!r.done()) {
        const uint64_t k = r.Varint();
        const uint32_t f = static_cast<uint32_t>(k >> 3), w = k & 7;
        if (field == 2 && w == 0 && (f == 3 || f == 35 || (f >= 40 && f <= 43))) {
          const int64_t v = static_cast<int64_t>(r.Varint());
          if (f == 3) model_type = v;
          else if (f == 35) byte_fallback = v != 0;
          else if (f == 40) unk = static_cast<int32_t>(v);
          else if (f == 41) bos = static_cast<int32_t>(v);
          else if (f == 42) eos = static_cast<int32_t>(v);
          else pad = static_cast<int32_t>(v);
        } else if (field == 3 && f == 1 && w == 2) {
          auto b = r.Bytes();
          normalizer.assign(reinterpret_cast<const char*>(b.data()), b.size());
        } else if (field == 3 && (f == 3 || f == 4) && w == 0) {
          (f == 3 ? add_dummy_prefix : remove_extra_ws) = r.Varint() != 0;
        } else {
          r.Skip(w);
        }
      }
    } else {
      top.Skip(wire);
    }
  }
  if (model_type != 2) Bad("sentencepiece model: model_type " + std::to_string(model_type) + " is not BPE (2)");
  if (normalizer != "identity") Bad("sentencepiece model: normalizer '" + normalizer + "' is not 'identity'");
  if (remove_extra_ws) Bad("sentencepiece model: remove_extra_whitespaces is set; train with it off so spaces are kept exactly");
  auto id = [](int64_t v, const char* name) {
    if (v < 0) Bad(std::string("sentencepiece model: ") + name + " is disabled (" + std::to_string(v) + ")");
    return static_cast<uint32_t>(v);
  };
  m.unk_id = id(unk, "unk_id");
  m.bos_id = id(bos, "bos_id");
  m.eos_id = id(eos, "eos_id");
  m.pad_id = id(pad, "pad_id");
  m.byte_fallback = byte_fallback;
  m.add_dummy_prefix = add_dummy_prefix;
  ValidateModel(m, 0);
  return m;
}

TokenizerModel ReadSentencePieceModelFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, "cannot open tokenizer model '" + path + "'");
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return ReadSentencePieceModel(bytes);
}

}  // namespace needle
