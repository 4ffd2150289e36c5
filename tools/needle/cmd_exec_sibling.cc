// Subcommands that live in sibling executables (found next to `needle`):
// `tokenizer-train` (needle-tokenizer-train: SentencePiece's protobuf collides
// with libtorch's), the libtorch commands (needle-train: libtorch costs
// ~140 MB of resident memory just by being loaded) and `serve` (needle-serve:
// cpp-httplib's OpenSSL costs ~3.4 MB resident in every process).
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "commands.h"

namespace needle::cli {
namespace {

[[noreturn]] void ExecSibling(const char* binary, const char* subcommand, int argc, char** argv) {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) throw Error(ErrorCode::kIo, "cannot locate the needle executable");
  self[n] = '\0';
  std::string path(self);
  path = path.substr(0, path.rfind('/') + 1) + binary;
  std::vector<char*> args;
  args.push_back(path.data());
  std::string sub = subcommand ? subcommand : "";
  if (subcommand) args.push_back(sub.data());
  for (int i = 0; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execv(path.c_str(), args.data());
  if (errno == ENOENT && std::strcmp(binary, "needle-train") == 0) {
    throw Error(ErrorCode::kUnsupported, "this build has no trainer (libtorch was not found: run scripts/setup, then rebuild)");
  }
  if (errno == ENOENT && std::strcmp(binary, "needle-serve") == 0) {
    throw Error(ErrorCode::kUnsupported, "this build has no HTTP server: install libcpp-httplib-dev (scripts/setup) and rebuild");
  }
  throw Error(ErrorCode::kIo, "cannot run " + path + ": " + std::strerror(errno));
}

}  // namespace

int ExecTokenizerTrain(int argc, char** argv) { ExecSibling("needle-tokenizer-train", nullptr, argc, argv); }
int ExecTrain(int argc, char** argv) { ExecSibling("needle-train", "train", argc, argv); }
int ExecFinetune(int argc, char** argv) { ExecSibling("needle-train", "finetune", argc, argv); }
int ExecBuild(int argc, char** argv) { ExecSibling("needle-train", "build", argc, argv); }
int ExecTrainHeads(int argc, char** argv) { ExecSibling("needle-train", "train-heads", argc, argv); }
int ExecTrainBench(int argc, char** argv) { ExecSibling("needle-train", "train-bench", argc, argv); }
int ExecServe(int argc, char** argv) { ExecSibling("needle-serve", nullptr, argc, argv); }

}  // namespace needle::cli
