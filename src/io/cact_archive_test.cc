#include "io/cact_archive.h"

#include <cstring>
#include <fstream>
#include <iterator>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "base/error.h"
#include "io/cact_checksum.h"
#include "kv/budget.h"
#include "model/export.h"

namespace needle {
namespace {

const std::string kGolden = NEEDLE_GOLDEN_DIR;

std::vector<uint8_t> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in) << path;
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

ModelConfig TinyConfig() { return LoadConfig(std::string(NEEDLE_SOURCE_DIR) + "/src/io/testdata/tiny.json"); }

std::vector<uint8_t> TinyArchive(const std::string& bits = "2", uint64_t seed = 1) {
  const ModelConfig c = TinyConfig();
  const std::vector<HeadSpec> heads = {DefaultHeadSpec(HeadKind::kContrastive, c), DefaultHeadSpec(HeadKind::kConfidence, c)};
  ModelWeights w = RandomWeights(c, heads, seed);
  return ExportArchive(w, ParseBitsMap(bits, w.specs), ByteLevelTokenizer());
}

// ---- golden archives from the published exporter -------------------------------

class GoldenArchive : public ::testing::TestWithParam<std::string> {};

TEST_P(GoldenArchive, LoadsValidatesAndMatchesManifest) {
  const auto manifest = nlohmann::json::parse(std::ifstream(kGolden + "/manifest.json"));
  const auto& entry = manifest["archives"][GetParam()];
  const CactArchive a = CactArchive::Open(kGolden + "/" + entry["file"].get<std::string>());
  const auto& cfg = manifest["config"];
  const CactHeader& h = a.header();
  EXPECT_EQ(a.bytes().size(), entry["bytes"].get<uint64_t>());
  EXPECT_EQ(a.num_tensors(), entry["tensors"].get<size_t>());
  EXPECT_EQ(h.vocab, cfg["vocab_size"].get<uint32_t>());
  EXPECT_EQ(h.d_model, cfg["d_model"].get<uint32_t>());
  EXPECT_EQ(h.num_heads, cfg["num_heads"].get<uint32_t>());
  EXPECT_EQ(h.num_kv_heads, cfg["num_kv_heads"].get<uint32_t>());
  EXPECT_EQ(h.num_layers, cfg["num_layers"].get<uint32_t>());
  EXPECT_EQ(h.max_seq_len, cfg["max_seq_len"].get<uint32_t>());
  EXPECT_EQ(h.engram_slots, cfg["engram_slots"].get<uint32_t>());
  EXPECT_EQ(h.mhc_lanes, cfg["mhc_lanes"].get<uint32_t>());
  EXPECT_FLOAT_EQ(h.rope_theta, cfg["rope_theta"].get<float>());
  EXPECT_EQ(a.config().engram_layers, cfg["engram_layers"].get<std::vector<uint32_t>>());
  EXPECT_EQ(a.config().engram_orders, cfg["engram_orders"].get<std::vector<uint32_t>>());
  EXPECT_EQ(h.hada_n, 128u);
  EXPECT_EQ(h.head_dim, 24u);
  EXPECT_EQ(h.num_engram_tables, 2u);
  EXPECT_EQ(h.engram_sub_dim, 48u);
  ASSERT_EQ(a.layout().heads.size(), 2u);
  EXPECT_EQ(a.layout().heads[0].spec.kind, HeadKind::kContrastive);
  EXPECT_EQ(a.layout().heads[1].spec.kind, HeadKind::kConfidence);
  EXPECT_EQ(a.tokenizer().pieces.size(), 400u);
}

TEST_P(GoldenArchive, RewritesToIdenticalBytes) {
  const auto manifest = nlohmann::json::parse(std::ifstream(kGolden + "/manifest.json"));
  const std::string path = kGolden + "/" + manifest["archives"][GetParam()]["file"].get<std::string>();
  const CactArchive a = CactArchive::Open(path);
  const std::vector<uint8_t> rewritten = SerializeCact(a.header(), a.codebook(), BlobsOf(a));
  const std::vector<uint8_t> original = ReadFile(path);
  ASSERT_EQ(rewritten.size(), original.size());
  EXPECT_TRUE(rewritten == original);
}

TEST_P(GoldenArchive, TokenizerBlobEqualsTheSentencePieceModel) {
  const auto manifest = nlohmann::json::parse(std::ifstream(kGolden + "/manifest.json"));
  const CactArchive a = CactArchive::Open(kGolden + "/" + manifest["archives"][GetParam()]["file"].get<std::string>());
  const TokenizerModel spm = ReadSentencePieceModelFile(kGolden + "/tokenizer.model");
  const std::vector<uint8_t> blob = SerializeTokenizerBlob(spm);
  const auto stored = a.data(a.layout().tokenizer);
  EXPECT_TRUE(std::equal(blob.begin(), blob.end(), stored.begin(), stored.end()));
}

INSTANTIATE_TEST_SUITE_P(All, GoldenArchive, ::testing::Values("b4", "b3", "b2", "mixed", "ternary"));

TEST(GoldenArchive, BitsMapsAsRecorded) {
  const CactArchive mixed = CactArchive::Open(kGolden + "/golden-mixed.cact");
  const CactLayout& l = mixed.layout();
  auto bits = [&](uint32_t i) { return mixed.tensor(i).record->bits; };
  EXPECT_EQ(bits(l.embedding), 4u);
  EXPECT_EQ(bits(l.layers[0].q_proj), 4u);
  EXPECT_EQ(bits(l.layers[0].v_proj), 3u);
  EXPECT_EQ(bits(l.layers[0].k_proj), 2u);
  EXPECT_EQ(bits(l.engram[0].tables), 3u);
  EXPECT_EQ(bits(l.engram[1].tables), 2u);
  const CactArchive ternary = CactArchive::Open(kGolden + "/golden-ternary.cact");
  EXPECT_EQ(ternary.tensor(ternary.layout().embedding).record->bits, 4u);
  EXPECT_EQ(ternary.tensor(ternary.layout().layers[0].q_proj).record->bits, kTernaryBits);
  // Our bits-map parser reads the published spelling and agrees with the records.
  const std::vector<TensorSpec> specs(mixed.tensor(0).spec, mixed.tensor(0).spec + mixed.num_tensors());
  const BitsMap m = ParseBitsMap("default=2,attn.q_proj=4,attn.v_proj=3,embedding=4,engram0.tables=3", specs);
  for (size_t i = 0; i < mixed.num_tensors(); ++i) {
    if (specs[i].storage == TensorStorage::kQuantized) {
      EXPECT_EQ(m.BitsFor(specs[i]), bits(i)) << specs[i].name;
    }
  }
}

TEST(GoldenArchive, BudgetWindowsMatchTheCalculator) {
  const auto j = nlohmann::json::parse(std::ifstream(kGolden + "/budget_windows.json"));
  for (const char* name : {"needle2", "needle-large"}) {
    EXPECT_EQ(budget_window(PresetConfig(name)), j[name]["budget_window"].get<uint32_t>());
    EXPECT_EQ(effective_window(PresetConfig(name)), j[name]["effective_window"].get<uint32_t>());
  }
}

// ---- our writer -----------------------------------------------------------------

TEST(CactWriter, DeterministicAndValid) {
  const auto a = TinyArchive("2", 7), b = TinyArchive("2", 7), c = TinyArchive("2", 8);
  EXPECT_TRUE(a == b);
  EXPECT_FALSE(a == c);
  const CactArchive archive = CactArchive::FromBytes(a);
  EXPECT_EQ(archive.header().kv_window, 32u);
  EXPECT_EQ(archive.layout().heads.size(), 2u);
  EXPECT_EQ(archive.config().contrastive_dim, 16u);
  // Every blob 64-byte aligned, rewriting is the identity.
  for (size_t i = 0; i < archive.num_tensors(); ++i) EXPECT_EQ(archive.tensor(i).record->offset % 64, 0u);
  EXPECT_TRUE(SerializeCact(archive.header(), archive.codebook(), BlobsOf(archive)) == a);
}

// A stage that leaves tensors alone (train-heads, a build at the base's width)
// re-exports the dequantized weights: with the base passed on, those keep their
// bytes; a changed tensor, or one asked at another width, is quantized afresh.
TEST(CactWriter, UnchangedTensorsKeepTheBaseBytes) {
  const CactArchive base = CactArchive::FromBytes(TinyArchive("4", 3));
  const ModelConfig c = base.config();
  std::vector<HeadSpec> heads;
  for (const HeadTensors& h : base.layout().heads) heads.push_back(h.spec);
  ModelWeights w = ZeroWeights(c, heads);
  for (size_t i = 0; i < w.specs.size(); ++i) w.tensors[i] = base.Dequantized(i);
  const TokenizerModel& tok = base.tokenizer();
  const std::vector<uint8_t> plain = ExportArchive(w, ParseBitsMap("4", w.specs), tok);
  const std::vector<uint8_t> kept = ExportArchive(w, ParseBitsMap("4", w.specs), tok, &base);
  EXPECT_FALSE(plain == std::vector<uint8_t>(base.bytes().begin(), base.bytes().end()));  // re-quantizing moves them
  EXPECT_TRUE(kept == std::vector<uint8_t>(base.bytes().begin(), base.bytes().end()));

  size_t changed = w.specs.size(), cq = 0;
  for (size_t i = 0; i < w.specs.size(); ++i) {
    if (w.specs[i].storage != TensorStorage::kQuantized) continue;
    if (++cq == 2) changed = i;
  }
  ASSERT_LT(changed, w.specs.size());
  w.tensors[changed][0] += 0.25f;
  const CactArchive one = CactArchive::FromBytes(ExportArchive(w, ParseBitsMap("4", w.specs), tok, &base));
  const CactArchive at3 = CactArchive::FromBytes(ExportArchive(w, ParseBitsMap("3", w.specs), tok, &base));
  for (size_t i = 0; i < w.specs.size(); ++i) {
    if (w.specs[i].storage != TensorStorage::kQuantized) continue;
    const auto a = one.data(i), b = base.data(i);
    const bool same = a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size()) == 0;
    EXPECT_EQ(same, i != changed) << w.specs[i].name;
    EXPECT_EQ(at3.tensor(i).record->bits, 3u) << w.specs[i].name;
  }
}

TEST(CactWriter, RecordsTheEffectiveWindow) {
  ModelConfig c = PresetConfig("needle2");
  c.kv_window = 4096;  // above the budget: capped to 704
  c.num_layers = 3;
  c.engram_layers = {1};
  c.vocab_size = 300;
  c.engram_slots = 16;
  ModelWeights w = RandomWeights(c, {}, 1);
  const CactArchive a = CactArchive::FromBytes(ExportArchive(w, ParseBitsMap("2", w.specs), ByteLevelTokenizer()));
  EXPECT_EQ(a.header().kv_window, effective_window(c));
  EXPECT_TRUE(a.layout().heads.empty());
  EXPECT_EQ(a.layout().heads_manifest, -1);
}

TEST(CactWriter, InitialisationFollowsTheSpec) {
  const CactArchive a = CactArchive::FromBytes(TinyArchive("4"));
  const CactLayout& l = a.layout();
  const ModelConfig& c = a.config();
  for (float v : a.Floats(l.layers[0].norm_in)) EXPECT_EQ(v, 0.0f);
  for (float v : a.Floats(l.layers[1].d1)) EXPECT_EQ(v, 1.0f);
  for (float v : a.Floats(l.layers[1].d3)) EXPECT_NEAR(v, 0.02f, 1e-5);
  for (float v : a.Floats(l.mhc_a_res)) EXPECT_NEAR(v, 0.01f, 1e-5);
  const auto b_res = a.Floats(l.mhc_b_res);
  for (uint32_t r = 0; r < 4; ++r)
    for (uint32_t col = 0; col < 4; ++col) EXPECT_EQ(b_res[r * 4 + col], r == col ? 4.0f : 0.0f);
  const auto taps = a.Floats(l.engram[0].taps);
  for (uint32_t k = 0; k < 4 * c.d_model; ++k) EXPECT_EQ(taps[k], k < c.d_model ? 1.0f : 0.0f);
  // The out projection is drawn with std 0.02/sqrt(2L): measure it after quantization.
  const auto out = a.Dequantized(l.layers[0].out_proj);
  double ss = 0;
  for (float v : out) ss += double(v) * v;
  EXPECT_NEAR(std::sqrt(ss / out.size()), 0.02 / std::sqrt(4.0), 0.002);
  const auto q = a.Dequantized(l.layers[0].q_proj);
  ss = 0;
  for (float v : q) ss += double(v) * v;
  EXPECT_NEAR(std::sqrt(ss / q.size()), 0.02, 0.002);
}

TEST(BitsMap, RejectsUnknownKeysAndWidths) {
  const ModelConfig c = TinyConfig();
  const auto specs = BuildTensorSpecs(c, {}, nullptr);
  EXPECT_THROW(ParseBitsMap("7", specs), Error);
  EXPECT_THROW(ParseBitsMap("default=2,attn.qproj=4", specs), Error);
  EXPECT_THROW(ParseBitsMap("default=2,final_norm=4", specs), Error);
  const BitsMap m = ParseBitsMap("default=ternary,engram.tables=3,engram0.tables=4", specs);
  EXPECT_EQ(m.default_bits, kTernaryBits);
  for (const auto& s : specs) {
    if (s.name == "engram0.tables") {
      EXPECT_EQ(m.BitsFor(s), 4u);  // exact name beats family key
    }
  }
}

// ---- bad input: one test per case, each naming the field -------------------------

constexpr size_t kDirOffset = 120 + 4 * 28;
size_t RecordOffset(size_t i) { return kDirOffset + 44 * i; }

template <typename T>
void Poke(std::vector<uint8_t>& b, size_t off, T v) { std::memcpy(b.data() + off, &v, sizeof v); }
template <typename T>
T Peek(const std::vector<uint8_t>& b, size_t off) {
  T v;
  std::memcpy(&v, b.data() + off, sizeof v);
  return v;
}

void ExpectRejected(std::vector<uint8_t> bytes, ErrorCode code, const std::string& needle_text) {
  try {
    CactArchive::FromBytes(std::move(bytes));
    ADD_FAILURE() << "accepted a corrupt archive (expected: " << needle_text << ")";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), code) << e.what();
    EXPECT_NE(std::string(e.what()).find(needle_text), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line: " << e.what();
  }
}

TEST(CactReaderRejects, TruncatedFile) {
  const auto good = TinyArchive();
  for (size_t len : {size_t(0), size_t(50), size_t(119), size_t(200), RecordOffset(3), good.size() / 2, good.size() - 1}) {
    std::vector<uint8_t> b(good.begin(), good.begin() + static_cast<long>(len));
    try {
      CactArchive::FromBytes(b);
      ADD_FAILURE() << "accepted a file truncated to " << len;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidArchive) << e.what();
    }
  }
  std::vector<uint8_t> b(good.begin(), good.begin() + 100);
  ExpectRejected(b, ErrorCode::kInvalidArchive, "smaller than the 120-byte header");
  b.assign(good.begin(), good.end() - 1);
  ExpectRejected(b, ErrorCode::kInvalidArchive, "tensor " + std::to_string(CactArchive::FromBytes(good).layout().tokenizer) + " (tokenizer)");
}

// The optional payload checksum (io/cact_checksum.h): an archive with one
// loads and reports it, a flipped bit anywhere before the trailer is named, a
// damaged trailer is an error, and an archive without one (the published
// layout) still loads.
TEST(CactChecksum, VerifiedOnLoadWhenPresent) {
  const auto plain = TinyArchive();
  EXPECT_FALSE(CactArchive::FromBytes(plain).checksum().has_value());
  const auto sealed = WithChecksum(plain);
  const CactArchive a = CactArchive::FromBytes(sealed);
  ASSERT_TRUE(a.checksum().has_value());
  EXPECT_EQ(*a.checksum(), PayloadChecksum(plain));
  for (size_t at : {size_t(5), size_t(200), RecordOffset(2) + 9, plain.size() / 2, plain.size() - 1}) {
    auto b = sealed;
    b[at] ^= 0x10;
    ExpectRejected(b, ErrorCode::kInvalidArchive, "payload checksum mismatch");
  }
  auto grown = sealed;  // bytes added after the trailer: the trailer is no longer last, so none is found...
  grown.push_back(0);
  EXPECT_FALSE(CactArchive::FromBytes(grown).checksum().has_value());  // ... and the structure still validates
  auto damaged = sealed;
  Poke<uint64_t>(damaged, sealed.size() - kChecksumTrailerBytes + 8, 12345);
  ExpectRejected(damaged, ErrorCode::kInvalidArchive, "checksum trailer: covers 12345 bytes");
}

TEST(CactReaderRejects, WrongTag) {
  auto b = TinyArchive();
  Poke<uint32_t>(b, 0, 0x12345678);
  ExpectRejected(b, ErrorCode::kInvalidArchive, "header.tag is 0x12345678, expected 0x05E12A83");
}

TEST(CactReaderRejects, OffsetPastTheEnd) {
  auto b = TinyArchive();
  Poke<uint64_t>(b, RecordOffset(1) + 20, (uint64_t(b.size()) + 64 * 100) / 64 * 64);
  ExpectRejected(b, ErrorCode::kInvalidArchive, "tensor 1 (layer0.norm_in): blob");
  auto c = TinyArchive();
  Poke<uint64_t>(c, RecordOffset(1) + 20, ~uint64_t(63));  // near 2^64: no overflow in the check
  ExpectRejected(c, ErrorCode::kInvalidArchive, "runs past the end of the file");
}

TEST(CactReaderRejects, MisalignedOffset) {
  auto b = TinyArchive();
  Poke<uint64_t>(b, RecordOffset(2) + 20, Peek<uint64_t>(b, RecordOffset(2) + 20) + 8);
  ExpectRejected(b, ErrorCode::kInvalidArchive, "tensor 2 (layer0.attn.q_proj): offset");
  ExpectRejected(b, ErrorCode::kInvalidArchive, "is not 64-byte aligned");
}

TEST(CactReaderRejects, ShapeDisagreesWithHeader) {
  auto b = TinyArchive();
  Poke<uint32_t>(b, RecordOffset(3) + 4, 17);  // k_proj rows
  ExpectRejected(b, ErrorCode::kInvalidArchive, "tensor 3 (layer0.attn.k_proj): shape [17, 32] (ndim 2) does not match the header geometry, expected [16, 32]");
  auto c = TinyArchive();
  Poke<uint8_t>(c, RecordOffset(10) + 1, 2);  // attn_gate ndim
  ExpectRejected(c, ErrorCode::kInvalidArchive, "tensor 10 (layer0.attn_gate): shape");
  auto d = TinyArchive();
  Poke<uint32_t>(d, 24, 33);  // header d_model: shapes no longer agree (and heads no longer divide it)
  ExpectRejected(d, ErrorCode::kInvalidArchive, "header.num_heads 2 does not divide d_model 33");
  auto e = TinyArchive();
  Poke<uint32_t>(e, 48, 128);  // header hada_n
  ExpectRejected(e, ErrorCode::kInvalidArchive, "header.hada_n is 128, expected the next power of two >= d_model, 32");
}

TEST(CactReaderRejects, NbytesDisagreesWithShape) {
  auto b = TinyArchive();
  Poke<uint64_t>(b, RecordOffset(0) + 28, Peek<uint64_t>(b, RecordOffset(0) + 28) - 2);
  ExpectRejected(b, ErrorCode::kInvalidArchive, "tensor 0 (embedding): nbytes");
  auto c = TinyArchive();
  Poke<uint32_t>(c, RecordOffset(0) + 40, 3);  // bits says 3, bytes are 2-bit sized
  ExpectRejected(c, ErrorCode::kInvalidArchive, "expected " + std::to_string(CqBlobBytes(320, 32, 3)));
  auto d = TinyArchive();
  Poke<uint32_t>(d, RecordOffset(0) + 40, 6);
  ExpectRejected(d, ErrorCode::kInvalidArchive, "bits 6, expected 2, 3, 4 or 5 (ternary)");
  auto e = TinyArchive();
  Poke<uint8_t>(e, RecordOffset(1), 3);  // a norm marked CQ
  ExpectRejected(e, ErrorCode::kInvalidArchive, "tensor 1 (layer0.norm_in): dtype 3, expected 1 (FP16) or 2 (FP32)");
}

TEST(CactReaderRejects, WrongTensorCount) {
  auto b = TinyArchive();
  Poke<uint32_t>(b, 4, Peek<uint32_t>(b, 4) - 1);
  ExpectRejected(b, ErrorCode::kInvalidArchive, "header.num_tensors");
  auto c = TinyArchive();
  Poke<uint32_t>(c, 4, 5);
  ExpectRejected(c, ErrorCode::kInvalidArchive, "header.num_tensors is 5, expected at least");
}

TEST(CactReaderRejects, CorruptCodebookAndManifest) {
  auto b = TinyArchive();
  Poke<float>(b, 120, 1.0f);  // cb2[0] > cb2[1]
  ExpectRejected(b, ErrorCode::kInvalidArchive, "codebook: the 2-bit levels");
  auto c = TinyArchive();
  const CactArchive a = CactArchive::FromBytes(c);
  const uint64_t manifest_off = a.tensor(static_cast<size_t>(a.layout().heads_manifest)).record->offset;
  Poke<uint16_t>(c, manifest_off, 0x4200);  // 3.0
  ExpectRejected(c, ErrorCode::kInvalidArchive, "heads.manifest[0] is 3");
}

// The tokenizer blob: rebuild an archive around a hand-corrupted blob.
std::vector<uint8_t> WithTokenizerBlob(const std::vector<uint8_t>& blob) {
  const auto good = TinyArchive();
  const CactArchive a = CactArchive::FromBytes(good);
  auto blobs = BlobsOf(a);
  blobs.back().bytes = blob;
  return SerializeCact(a.header(), a.codebook(), blobs);
}

TEST(CactReaderRejects, CorruptTokenizerBlob) {
  const std::vector<uint8_t> good = SerializeTokenizerBlob(ByteLevelTokenizer());
  ASSERT_NO_THROW(CactArchive::FromBytes(WithTokenizerBlob(good)));
  {  // a piece length past the end
    auto b = good;
    Poke<uint16_t>(b, 24 + 5, 60000);
    ExpectRejected(WithTokenizerBlob(b), ErrorCode::kInvalidTokenizer, "piece 0 length 60000 runs past the end of the blob");
  }
  {  // n_pieces past the end
    auto b = good;
    Poke<uint32_t>(b, 0, 1000000);
    ExpectRejected(WithTokenizerBlob(b), ErrorCode::kInvalidTokenizer, "n_pieces 1000000 cannot fit");
  }
  {  // a type out of range
    auto b = good;
    b[24 + 4] = 9;
    ExpectRejected(WithTokenizerBlob(b), ErrorCode::kInvalidTokenizer, "piece 0 has type 9, expected 0-4");
  }
  {  // truncated blob
    std::vector<uint8_t> b(good.begin(), good.end() - 3);
    ExpectRejected(WithTokenizerBlob(b), ErrorCode::kInvalidTokenizer, "runs past the end of the blob");
  }
  {  // trailing garbage
    auto b = good;
    b.push_back(0);
    ExpectRejected(WithTokenizerBlob(b), ErrorCode::kInvalidTokenizer, "1 trailing bytes");
  }
  {  // missing byte pieces with byte_fallback set
    TokenizerModel m = ByteLevelTokenizer();
    m.byte_fallback = false;
    m.pieces[14 + 0x41].text = "A";  // <0x41> replaced by a normal piece
    m.pieces[14 + 0x41].type = PieceType::kNormal;
    auto b = SerializeTokenizerBlob(m);
    b[21] = 1;  // byte_fallback on
    ExpectRejected(WithTokenizerBlob(b), ErrorCode::kInvalidTokenizer, "byte piece <0x41> is missing");
  }
  {  // duplicate markers
    TokenizerModel m = ByteLevelTokenizer();
    m.pieces.push_back({"<tools>", 0.0f, PieceType::kUserDefined});
    ExpectRejected(WithTokenizerBlob([&] {
                     auto b = SerializeTokenizerBlob(ByteLevelTokenizer());
                     // Append the duplicate by hand: the serializer itself refuses it.
                     Poke<uint32_t>(b, 0, Peek<uint32_t>(b, 0) + 1);
                     const std::string t = "<tools>";
                     float s = 0;
                     b.insert(b.end(), reinterpret_cast<uint8_t*>(&s), reinterpret_cast<uint8_t*>(&s) + 4);
                     b.push_back(3);
                     b.push_back(static_cast<uint8_t>(t.size()));
                     b.push_back(0);
                     b.insert(b.end(), t.begin(), t.end());
                     return b;
                   }()),
                   ErrorCode::kInvalidTokenizer, "'<tools>' is a duplicate");
    EXPECT_THROW(SerializeTokenizerBlob(m), Error);
  }
  {  // a marker moved away from its fixed id
    TokenizerModel m = ByteLevelTokenizer();
    std::swap(m.pieces[8], m.pieces[9]);
    EXPECT_THROW(SerializeTokenizerBlob(m), Error);
  }
}

TEST(CactReaderRejects, MoreTokenizerPiecesThanVocab) {
  ModelConfig c = TinyConfig();
  c.vocab_size = 200;  // byte-level vocabulary has 271 pieces
  ModelWeights w = RandomWeights(c, {}, 1);
  EXPECT_THROW(ExportArchive(w, ParseBitsMap("2", w.specs), ByteLevelTokenizer()), Error);
}

TEST(SentencePieceModel, ReadsTheGoldenModel) {
  const TokenizerModel m = ReadSentencePieceModelFile(kGolden + "/tokenizer.model");
  EXPECT_EQ(m.pieces.size(), 400u);
  EXPECT_TRUE(m.byte_fallback);
  EXPECT_TRUE(m.add_dummy_prefix);
  EXPECT_EQ(m.pieces[4].text, "<|im_start|>");
  EXPECT_EQ(m.pieces[14].text, "<0x00>");
  EXPECT_EQ(m.pieces[14].type, PieceType::kByte);
  // Truncations of a protobuf are errors, never crashes.
  const auto bytes = ReadFile(kGolden + "/tokenizer.model");
  for (size_t len = 0; len < bytes.size(); len += 97) {
    try {
      ReadSentencePieceModel(std::span(bytes.data(), len));
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ErrorCode::kInvalidTokenizer);
    }
  }
}

}  // namespace
}  // namespace needle
