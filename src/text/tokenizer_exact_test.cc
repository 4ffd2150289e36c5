// Our tokenizer against libsentencepiece itself (this test binary links the
// library; the engine does not): the same ids on thousands of generated
// prompts, JSON and stress strings, on the golden model, on a model trained
// here with `needle tokenizer-train`, and on a model without byte fallback
// and with extra user-defined symbols. More strings: scripts/tokenizer-check.
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iterator>
#include <span>
#include <fstream>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include <gtest/gtest.h>

#include "base/error.h"
#include "base/testing/temp_dir.h"
#include "io/tokenizer_blob.h"
#include "text/tokenizer.h"
#include "text/tokenizer_testing.h"

namespace needle {
namespace {

const std::string kGolden = NEEDLE_GOLDEN_DIR;

// Strings per model and run; NEEDLE_TOKENIZER_STRINGS and NEEDLE_TOKENIZER_SEED override.
size_t StringCount() {
  const char* v = std::getenv("NEEDLE_TOKENIZER_STRINGS");
  return v ? std::strtoull(v, nullptr, 10) : 3000;
}
uint64_t Seed() {
  const char* v = std::getenv("NEEDLE_TOKENIZER_SEED");
  return v ? std::strtoull(v, nullptr, 10) : 2024;
}

const std::string& TempDir() { return testing::ProcessTempDir("needle-text"); }

// A model trained once per run by the CLI (the production training options).
const std::string& CliTrainedModel() {
  static const std::string path = [] {
    const std::string corpus = TempDir() + "/corpus.txt", out = TempDir() + "/cli";
    std::ofstream(corpus, std::ios::binary) << testing::TrainingCorpus(1, 6000);
    const std::string cmd = std::string(NEEDLE_CLI) + " tokenizer-train --input " + corpus + " --vocab 1000 --out " + out;
    const int status = std::system(cmd.c_str());
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << cmd;
    return out + "/tokenizer.model";
  }();
  return path;
}

// Trained with the library directly: no byte fallback (so UNK appears and
// runs of unknowns merge) and extra user-defined symbols that overlap the markers.
const std::string& NoFallbackModel() {
  static const std::string path = [] {
    const std::string corpus = TempDir() + "/corpus-nbf.txt", prefix = TempDir() + "/nbf";
    std::ofstream(corpus, std::ios::binary) << testing::TrainingCorpus(2, 3000);
    // The map form: the string form logs its command line whatever minloglevel says.
    const std::unordered_map<std::string, std::string> args = {
        {"input", corpus}, {"model_prefix", prefix}, {"model_type", "bpe"}, {"vocab_size", "400"},
        {"normalization_rule_name", "identity"}, {"remove_extra_whitespaces", "false"}, {"add_dummy_prefix", "true"},
        {"byte_fallback", "false"}, {"split_digits", "true"}, {"pad_id", "0"}, {"eos_id", "1"}, {"bos_id", "2"},
        {"unk_id", "3"}, {"character_coverage", "0.99"}, {"minloglevel", "2"},
        {"user_defined_symbols",
         "<|im_start|>,<|im_end|>,<think>,</think>,<tools>,</tools>,<tool_call>,</tool_call>,<tool_result>,"
         "</tool_result>,<tool,<tools>!!,ab,@@"}};
    const auto status = sentencepiece::SentencePieceTrainer::Train(args);
    EXPECT_TRUE(status.ok()) << status.ToString();
    return prefix + ".model";
  }();
  return path;
}

class Exactness : public ::testing::TestWithParam<std::string> {
 protected:
  std::string ModelPath() const {
    if (GetParam() == "golden") return kGolden + "/tokenizer.model";
    if (GetParam() == "cli_trained") return CliTrainedModel();
    return NoFallbackModel();
  }
};

std::string Hex(const std::string& s) {
  static const char* hex = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) out += std::string{hex[c >> 4], hex[c & 15], ' '};
  return out;
}

TEST_P(Exactness, SameVocabularyAsTheLibrary) {
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.Load(ModelPath()).ok());
  const Tokenizer tok(ReadSentencePieceModelFile(ModelPath()));
  ASSERT_EQ(tok.vocab_size(), sp.GetPieceSize());
  for (int id = 0; id < sp.GetPieceSize(); ++id) {
    EXPECT_EQ(tok.IdToPiece(id), sp.IdToPiece(id));
    EXPECT_EQ(tok.Score(id), sp.GetScore(id));
    EXPECT_EQ(tok.IsControl(id), sp.IsControl(id));
    EXPECT_EQ(tok.Type(id) == PieceType::kByte, sp.IsByte(id));
  }
  EXPECT_EQ(tok.unk_id(), sp.unk_id());
  EXPECT_EQ(tok.bos_id(), sp.bos_id());
  EXPECT_EQ(tok.eos_id(), sp.eos_id());
  EXPECT_EQ(tok.pad_id(), sp.pad_id());
}

TEST_P(Exactness, SameIdsAsTheLibrary) {
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.Load(ModelPath()).ok());
  const Tokenizer tok(ReadSentencePieceModelFile(ModelPath()));
  const std::vector<std::string> strings = testing::TestStrings(Seed(), StringCount());
  size_t mismatches = 0, round_trips = 0, with_unk = 0;
  std::vector<int32_t> ours;
  for (const std::string& s : strings) {
    std::vector<int> theirs;
    ASSERT_TRUE(sp.Encode(s, &theirs).ok());
    tok.Encode(s, ours);
    if (std::vector<int32_t>(theirs.begin(), theirs.end()) != ours) {
      if (++mismatches <= 10) ADD_FAILURE() << "ids differ for [" << s << "] (" << Hex(s) << ")";
      continue;
    }
    std::string their_text;
    ASSERT_TRUE(sp.Decode(theirs, &their_text).ok());
    const std::string our_text = tok.Decode(ours);
    // The library renders UNK as " ⁇ "; we skip it (SPEC §7). Otherwise identical.
    if (std::find(ours.begin(), ours.end(), tok.unk_id()) != ours.end()) {
      ++with_unk;
    } else {
      EXPECT_EQ(our_text, their_text) << Hex(s);
    }
    if (their_text == s) {
      ++round_trips;
      EXPECT_EQ(our_text, s) << Hex(s);
    }
  }
  EXPECT_EQ(mismatches, 0u) << "of " << strings.size();
  // Most strings are valid UTF-8 without U+2581 and round-trip, unless unknown
  // characters become UNK (no byte fallback).
  if (tok.byte_fallback()) {
    EXPECT_GT(round_trips, strings.size() / 2);
  }
  RecordProperty("strings", static_cast<int>(strings.size()));
  RecordProperty("round_trips", static_cast<int>(round_trips));
  RecordProperty("with_unk", static_cast<int>(with_unk));
}

// The longest inputs: whole conversations glued together and a 1 MB prompt stream.
TEST_P(Exactness, SameIdsOnLongInputs) {
  sentencepiece::SentencePieceProcessor sp;
  ASSERT_TRUE(sp.Load(ModelPath()).ok());
  const Tokenizer tok(ReadSentencePieceModelFile(ModelPath()));
  testing::TextRng rng(Seed() + 1);
  std::string text;
  while (text.size() < (1u << 20)) text += rng.Chance(0.1) ? testing::RandomStress(rng) : testing::RandomPrompt(rng);
  std::vector<int> theirs;
  ASSERT_TRUE(sp.Encode(text, &theirs).ok());
  EXPECT_TRUE(std::vector<int32_t>(theirs.begin(), theirs.end()) == tok.Encode(text));
}

INSTANTIATE_TEST_SUITE_P(Models, Exactness, ::testing::Values("golden", "cli_trained", "no_fallback"),
                         [](const auto& info) { return info.param; });

// Training is deterministic: the same corpus and flags give the same bytes;
// another thread count gives the same pieces (the file records the count).
TEST(TokenizerTrain, DeterministicAndReadableByTheEngine) {
  const std::string corpus = TempDir() + "/corpus-det.txt";
  std::ofstream(corpus, std::ios::binary) << testing::TrainingCorpus(3, 2000);
  std::string files[3];
  for (int i = 0; i < 3; ++i) {
    const std::string out = TempDir() + "/det" + std::to_string(i);
    const std::string cmd = std::string(NEEDLE_CLI) + " tokenizer-train --input " + corpus + " --vocab 600 --threads " +
                            (i < 2 ? "1" : "2") + " --out " + out + " 2>/dev/null";
    ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
    std::ifstream in(out + "/tokenizer.model", std::ios::binary);
    files[i].assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    ASSERT_FALSE(files[i].empty());
  }
  EXPECT_TRUE(files[0] == files[1]) << "two runs with the same flags wrote different files";
  auto read = [](const std::string& bytes) {
    return ReadSentencePieceModel(std::span(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
  };
  const TokenizerModel m = read(files[0]), threaded = read(files[2]);
  ASSERT_EQ(m.pieces.size(), 600u);
  ASSERT_EQ(threaded.pieces.size(), 600u);
  for (size_t i = 0; i < m.pieces.size(); ++i) {
    EXPECT_EQ(m.pieces[i].text, threaded.pieces[i].text);
    EXPECT_EQ(m.pieces[i].score, threaded.pieces[i].score);
  }
  EXPECT_TRUE(m.byte_fallback && m.add_dummy_prefix);
  for (uint32_t i = 0; i < kNumMarkers; ++i) EXPECT_EQ(m.pieces[kFirstMarkerId + i].text, kChatMarkers[i]);
  // Digits are split: no piece holds two digits; and no piece holds U+2581 after its start.
  for (const TokenizerPiece& p : m.pieces) {
    if (p.type != PieceType::kNormal) continue;
    int digits = 0;
    for (char c : p.text) digits += c >= '0' && c <= '9';
    EXPECT_LE(digits, 1) << p.text;
    EXPECT_EQ(p.text.find("\xE2\x96\x81", 1), std::string::npos) << p.text;
  }
}

}  // namespace
}  // namespace needle
