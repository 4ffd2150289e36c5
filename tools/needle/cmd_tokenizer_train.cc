// `needle tokenizer-train`: trains the SentencePiece BPE tokenizer that an
// archive embeds (SPEC §7). The only place outside the tests that links the
// SentencePiece library; the engine reads the result with its own code.
#include <sentencepiece_trainer.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <unordered_map>
#include <vector>

#include "args.h"
#include "base/error.h"
#include "commands.h"
#include "io/cact_archive.h"
#include "io/tokenizer_blob.h"

namespace needle::cli {
namespace {

// Hands the trainer every line of every input file in order, without holding
// a second copy of the corpus. Lines are split at '\n' only, bytes kept exactly.
class FileLines : public sentencepiece::SentenceIterator {
 public:
  explicit FileLines(std::vector<std::string> paths) : paths_(std::move(paths)) { Next(); }
  bool done() const override { return done_; }
  const std::string& value() const override { return line_; }
  sentencepiece::util::Status status() const override { return status_; }
  void Next() override {
    while (!done_) {
      if (in_.is_open() && std::getline(in_, line_)) {
        ++lines_;
        bytes_ += line_.size() + 1;
        return;
      }
      if (in_.is_open() && in_.bad()) {
        status_ = sentencepiece::util::Status(sentencepiece::util::StatusCode::kDataLoss, "error reading " + paths_[next_ - 1]);
        done_ = true;
        return;
      }
      in_.close();
      in_.clear();
      if (next_ == paths_.size()) {
        done_ = true;
        return;
      }
      in_.open(paths_[next_++], std::ios::binary);
      if (!in_) {
        status_ = sentencepiece::util::Status(sentencepiece::util::StatusCode::kNotFound, "cannot open " + paths_[next_ - 1]);
        done_ = true;
      }
    }
  }
  size_t lines() const { return lines_; }
  size_t bytes() const { return bytes_; }

 private:
  std::vector<std::string> paths_;
  size_t next_ = 0;
  std::ifstream in_;
  std::string line_;
  bool done_ = false;
  sentencepiece::util::Status status_;
  size_t lines_ = 0, bytes_ = 0;
};

}  // namespace

int RunTokenizerTrain(int argc, char** argv) {
  Args args("tokenizer-train", "--input FILE [FILE...] --vocab N --out DIR [flags]",
            "Trains a SentencePiece BPE tokenizer the way SPEC §7 requires: identity\n"
            "normalisation with whitespace kept exactly as typed, a dummy prefix, byte\n"
            "fallback, digits split one per token, PAD/EOS/BOS/UNK at ids 0-3 and the ten\n"
            "chat markers as user-defined symbols at ids 4-13. Each input line is one\n"
            "training sentence. The result is deterministic: same inputs and flags, same\n"
            "bytes. Writes DIR/tokenizer.model (embed it with `needle random --tokenizer`).",
            {{"input", "FILE", "training text, one sentence per line (repeatable; more FILEs may follow)", true},
             {"vocab", "N", "vocabulary size with the 14 fixed ids and 256 byte pieces (required; needle2: 8192)"},
             {"out", "DIR", "output directory, created if missing (required)"},
             {"threads", "N", "trainer threads (default 1; the pieces do not depend on it, the file records it)"},
             {"character-coverage", "F", "share of characters that get their own piece (default 0.9995; the rest use bytes)"},
             {"max-sentence-length", "BYTES", "longer lines are skipped by the trainer (default 65536)"},
             {"verbose", "", "show the SentencePiece trainer's log"}});
  if (!args.Parse(argc, argv)) return 0;
  std::vector<std::string> inputs = args.GetAll("input");
  for (const std::string& p : args.positionals()) inputs.push_back(p);  // --input a b c
  if (inputs.empty()) throw Error(ErrorCode::kInvalidArgument, "tokenizer-train: --input is required (see --help)");
  const std::string out_dir = args.Require("out");
  const long long vocab = args.GetInt("vocab", -1);
  if (!args.Has("vocab")) throw Error(ErrorCode::kInvalidArgument, "tokenizer-train: --vocab is required (see --help)");
  // 4 fixed ids + 10 markers + 256 byte pieces + at least the space piece.
  if (vocab < 271 || vocab > (1 << 24)) {
    throw Error(ErrorCode::kInvalidArgument, "tokenizer-train: --vocab must be in [271, 16777216], got " + std::to_string(vocab));
  }
  const long long threads = args.GetInt("threads", 1);
  if (threads < 1 || threads > 1024) throw Error(ErrorCode::kInvalidArgument, "tokenizer-train: --threads must be in [1, 1024]");
  const double coverage = args.GetDouble("character-coverage", 0.9995);
  if (!(coverage >= 0.98 && coverage <= 1.0)) {
    throw Error(ErrorCode::kInvalidArgument, "tokenizer-train: --character-coverage must be in [0.98, 1]");
  }
  const long long max_len = args.GetInt("max-sentence-length", 65536);
  if (max_len < 1 || max_len > (1 << 30)) throw Error(ErrorCode::kInvalidArgument, "tokenizer-train: --max-sentence-length must be in [1, 2^30]");
  for (const std::string& p : inputs) {  // fail before a long training run, naming the file
    if (!std::ifstream(p, std::ios::binary)) throw Error(ErrorCode::kIo, "tokenizer-train: cannot open input '" + p + "'");
  }

  std::string markers;
  for (const char* m : kChatMarkers) markers += (markers.empty() ? "" : ",") + std::string(m);
  // Every option that shapes the result is spelled out rather than left to the
  // library's defaults, so an upgrade of the library cannot change it silently.
  const std::unordered_map<std::string, std::string> options = {
      {"model_type", "bpe"},
      {"vocab_size", std::to_string(vocab)},
      {"normalization_rule_name", "identity"},
      {"remove_extra_whitespaces", "false"},
      {"add_dummy_prefix", "true"},
      {"byte_fallback", "true"},
      {"split_digits", "true"},
      {"split_by_whitespace", "true"},
      {"split_by_unicode_script", "true"},
      {"split_by_number", "true"},
      {"treat_whitespace_as_suffix", "false"},
      {"allow_whitespace_only_pieces", "false"},
      {"max_sentencepiece_length", "16"},
      {"character_coverage", std::to_string(coverage)},
      {"pad_id", "0"},
      {"eos_id", "1"},
      {"bos_id", "2"},
      {"unk_id", "3"},
      {"pad_piece", "<pad>"},
      {"eos_piece", "</s>"},
      {"bos_piece", "<s>"},
      {"unk_piece", "<unk>"},
      {"user_defined_symbols", markers},
      {"hard_vocab_limit", "true"},
      {"vocabulary_output_piece_score", "true"},
      // Determinism: use every sentence, in file order, no sampling.
      {"input_sentence_size", "0"},
      {"shuffle_input_sentence", "false"},
      {"max_sentence_length", std::to_string(max_len)},
      {"num_threads", std::to_string(threads)},
      {"minloglevel", args.Has("verbose") ? "0" : "2"},
  };

  const auto t0 = std::chrono::steady_clock::now();
  FileLines lines(inputs);
  std::string proto;
  const auto status = sentencepiece::SentencePieceTrainer::Train(options, &lines, &proto);
  if (!lines.status().ok()) throw Error(ErrorCode::kIo, "tokenizer-train: " + lines.status().ToString());
  if (!status.ok()) throw Error(ErrorCode::kInvalidArgument, "tokenizer-train: sentencepiece: " + status.ToString());

  // Read it back with the engine's own reader: what an archive will embed.
  const std::vector<uint8_t> bytes(proto.begin(), proto.end());
  const TokenizerModel model = ReadSentencePieceModel(bytes);
  if (model.pieces.size() != static_cast<size_t>(vocab)) {
    throw Error(ErrorCode::kInternal, "tokenizer-train: the trainer produced " + std::to_string(model.pieces.size()) +
                                          " pieces, expected " + std::to_string(vocab));
  }
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) throw Error(ErrorCode::kIo, "tokenizer-train: cannot create '" + out_dir + "': " + ec.message());
  const std::string out = (std::filesystem::path(out_dir) / "tokenizer.model").string();
  WriteFileAtomically(out, bytes);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "needle tokenizer-train: %zu lines (%.1f MB) -> %s (%lld pieces) in %.1f s\n", lines.lines(),
               lines.bytes() / 1e6, out.c_str(), vocab, secs);
  return 0;
}

}  // namespace needle::cli
