// needle-train: the libtorch commands of `needle` in their own executable.
//
// Loading libtorch costs ~140 MB of resident memory at start-up (its static
// initialisers), which would make every `needle` command — and the memory
// figures of `needle bench` — meaningless for an on-device engine. `needle
// train` runs this binary (found next to `needle`) instead.
#include <cstdio>
#include <cstring>
#include <exception>

#include "base/error.h"
#include "commands.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: needle-train train [flags]   (normally run as `needle train`)\n");
    return 2;
  }
  const char* cmd = argv[1];
  try {
    if (!std::strcmp(cmd, "train")) return needle::cli::RunTrain(argc - 2, argv + 2);
    std::fprintf(stderr, "needle-train: unknown command '%s'\n", cmd);
    return 2;
  } catch (const needle::Error& e) {
    std::fprintf(stderr, "needle %s: error [%s]: %s\n", cmd, needle::ErrorCodeName(e.code()), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "needle %s: error [internal_error]: %s\n", cmd, e.what());
    return 2;
  }
}
