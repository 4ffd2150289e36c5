// `needle tokenizer-train` runs the sibling executable needle-tokenizer-train
// (see tools/needle-tokenizer-train/main.cc for why it is separate).
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <string>
#include <vector>

#include "base/error.h"
#include "commands.h"

namespace needle::cli {

int ExecTokenizerTrain(int argc, char** argv) {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof(self) - 1);
  if (n <= 0) throw Error(ErrorCode::kIo, "tokenizer-train: cannot locate the needle executable");
  self[n] = '\0';
  std::string path(self);
  path = path.substr(0, path.rfind('/') + 1) + "needle-tokenizer-train";
  std::vector<char*> args;
  args.push_back(path.data());
  for (int i = 0; i < argc; ++i) args.push_back(argv[i]);
  args.push_back(nullptr);
  ::execv(path.c_str(), args.data());
  throw Error(ErrorCode::kIo, "tokenizer-train: cannot run " + path + ": " + std::strerror(errno));
}

}  // namespace needle::cli
