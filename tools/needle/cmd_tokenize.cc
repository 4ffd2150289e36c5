// `needle tokenize`: the engine's tokenizer (text/tokenizer.h) on the command
// line, so its ids can be compared with the SentencePiece library's from outside.
#include <cstdio>
#include <fstream>
#include <iostream>
#include <string>
#include <vector>

#include "args.h"
#include "base/error.h"
#include "commands.h"
#include "io/cact_archive.h"
#include "io/tokenizer_blob.h"
#include "text/tokenizer.h"

namespace needle::cli {
namespace {

TokenizerModel LoadTokenizer(const std::string& path) {
  // A SentencePiece file is accepted too, so a freshly trained model can be
  // checked before it is embedded; anything else must be an archive.
  if (path.size() >= 6 && path.compare(path.size() - 6, 6, ".model") == 0) return ReadSentencePieceModelFile(path);
  return CactArchive::Open(path).tokenizer();
}

// In a --lines file, the two characters backslash and 'n' stand for a newline.
std::string Unescape(const std::string& line) {
  std::string s;
  s.reserve(line.size());
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '\\' && i + 1 < line.size() && line[i + 1] == 'n') {
      s += '\n';
      ++i;
    } else {
      s += line[i];
    }
  }
  return s;
}

void AppendTokens(const Tokenizer& tok, const std::vector<int32_t>& ids, bool pieces, std::string& out) {
  for (size_t i = 0; i < ids.size(); ++i) {
    if (i) out += ' ';
    if (pieces) out += tok.IdToPiece(ids[i]);
    else out += std::to_string(ids[i]);
  }
  out += '\n';
}

void Flush(std::string& out) {
  if (std::fwrite(out.data(), 1, out.size(), stdout) != out.size()) throw Error(ErrorCode::kIo, "tokenize: cannot write to stdout");
  out.clear();
}

}  // namespace

int RunTokenize(int argc, char** argv) {
  Args args("tokenize", "--model FILE.cact|SPM.model [--lines FILE] [--pieces] [TEXT]",
            "Encodes TEXT with the archive's tokenizer and prints the ids, space-separated.\n"
            "With --lines, encodes each line of FILE ('-' = stdin) and prints one output\n"
            "line per input line; in those lines a literal \\n (backslash, n) stands for a\n"
            "newline. A SentencePiece .model file may be given instead of an archive.",
            {{"model", "FILE", "a .cact archive, or a SentencePiece .model file (required)"},
             {"lines", "FILE", "encode every line of FILE instead of TEXT ('-' reads stdin)"},
             {"pieces", "", "print the pieces instead of their ids"}});
  if (!args.Parse(argc, argv)) return 0;
  const Tokenizer tok(LoadTokenizer(args.Require("model")));
  const bool pieces = args.Has("pieces");
  std::vector<int32_t> ids;
  std::string out;
  if (!args.Has("lines")) {
    if (args.positionals().size() != 1) {
      throw Error(ErrorCode::kInvalidArgument, "tokenize: give exactly one TEXT argument (quote it) or --lines FILE");
    }
    tok.Encode(args.positionals()[0], ids);
    AppendTokens(tok, ids, pieces, out);
    Flush(out);
    return 0;
  }
  if (!args.positionals().empty()) throw Error(ErrorCode::kInvalidArgument, "tokenize: TEXT and --lines are exclusive");
  const std::string path = args.Get("lines");
  std::ifstream file;
  if (path != "-") {
    file.open(path, std::ios::binary);
    if (!file) throw Error(ErrorCode::kIo, "tokenize: cannot open '" + path + "'");
  }
  std::istream& in = path == "-" ? std::cin : file;
  std::string line;
  while (std::getline(in, line)) {
    tok.Encode(Unescape(line), ids);
    AppendTokens(tok, ids, pieces, out);
    if (out.size() > (1 << 20)) Flush(out);
  }
  if (in.bad()) throw Error(ErrorCode::kIo, "tokenize: error reading '" + path + "'");
  Flush(out);
  return 0;
}

}  // namespace needle::cli
