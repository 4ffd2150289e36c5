#include <chrono>
#include <filesystem>
#include <cstdio>

#include "args.h"
#include "base/error.h"
#include "base/install_paths.h"
#include "base/model_config.h"
#include "commands.h"
#include "io/cact_archive.h"
#include "io/cact_checksum.h"  // WithChecksum
#include "io/tokenizer_blob.h"
#include "model/export.h"

namespace needle::cli {

int RunRandom(int argc, char** argv) {
  Args args("random", "--preset NAME|FILE.json --out FILE.cact [flags]",
            "Creates a complete archive with random weights initialised as SPEC §1 says,\n"
            "quantized with CQ, the preset's kv_window recorded, and a tokenizer blob.",
            {{"preset", "NAME|FILE", "needle2, needle-large, or a JSON config file (required)"},
             {"bits", "W|MAP", "2, 3, 4, ternary, or a map like default=2,attn.v_proj=4 (default 4)"},
             {"seed", "N", "random seed (default 0)"},
             {"tokenizer", "SPM.model", "embed this SentencePiece model; 'bytes' for the byte-level vocabulary\n"
                                        "                            (default: models/tokenizer.model, or an installed copy's\n"
                                        "                            share/needle/tokenizer.model, when it fits the vocab, else bytes)"},
             {"no-heads", "", "omit the contrastive and confidence heads"},
             {"out", "FILE", "output archive (required)"}});
  if (!args.Parse(argc, argv)) return 0;
  if (!args.positionals().empty()) throw Error(ErrorCode::kInvalidArgument, "random: unexpected argument '" + args.positionals()[0] + "'");
  const ModelConfig config = LoadConfig(args.Require("preset"));
  const std::string out = args.Require("out");
  const long long seed = args.GetInt("seed", 0);
  if (seed < 0) throw Error(ErrorCode::kInvalidArgument, "random: --seed must be >= 0");

  std::vector<HeadSpec> heads;
  if (!args.Has("no-heads")) {
    heads = {DefaultHeadSpec(HeadKind::kContrastive, config), DefaultHeadSpec(HeadKind::kConfidence, config)};
  }
  TokenizerModel tokenizer;
  const std::string tok_arg = args.Get("tokenizer");
  if (tok_arg == "bytes") {
    tokenizer = ByteLevelTokenizer();
  } else if (!tok_arg.empty()) {
    tokenizer = ReadSentencePieceModelFile(tok_arg);
  } else {
    // The project's default tokenizer, when this geometry's vocabulary can hold it.
    // (An installed CLI's copy first: the source tree may be gone.)
    std::string def = InstalledShareFile("tokenizer.model");
    if (def.empty()) def = NEEDLE_DEFAULT_TOKENIZER;
    std::error_code ec;
    if (std::filesystem::exists(def, ec)) {
      tokenizer = ReadSentencePieceModelFile(def);
      if (tokenizer.pieces.size() > config.vocab_size) tokenizer = ByteLevelTokenizer();
    } else {
      tokenizer = ByteLevelTokenizer();
    }
  }

  const auto t0 = std::chrono::steady_clock::now();
  const ModelWeights weights = RandomWeights(config, heads, static_cast<uint64_t>(seed));
  const BitsMap bits = ParseBitsMap(args.Get("bits", "4"), weights.specs);
  const std::vector<uint8_t> bytes = WithChecksum(ExportArchive(weights, bits, tokenizer));
  // Validate what we are about to write with the same reader every consumer uses.
  CactArchive::FromBytes(bytes);
  WriteFileAtomically(out, bytes);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::fprintf(stderr, "needle random: %s, bits %s, %.1fM parameters -> %s (%.2f MB) in %.1f s\n",
               args.Get("preset").c_str(), bits.ToString().c_str(), config.ParameterCount() / 1e6, out.c_str(),
               bytes.size() / 1e6, secs);
  return 0;
}

}  // namespace needle::cli
