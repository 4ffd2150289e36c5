// needle-train: the libtorch commands of `needle` in their own executable.
//
// Loading libtorch costs ~140 MB of resident memory at start-up (its static
// initialisers), which would make every `needle` command — and the memory
// figures of `needle bench` — meaningless for an on-device engine. `needle
// train`, `needle finetune` and `needle build` run this binary (found next to
// `needle`) instead.
#include <cstdio>
#include <cstring>
#include <exception>

#include <malloc.h>

#include "base/error.h"
#include "commands.h"

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: needle-train train|train-heads|train-bench|finetune|build [flags]   (normally run as `needle train` etc.)\n");
    return 2;
  }
  const char* cmd = argv[1];
  // Autograd allocates and frees tensors of tens of MB every step; with
  // glibc's defaults each one is a fresh mmap whose pages fault in again
  // (sys time was ~40% of the run). Keeping them on the heap: ~1.5x tok/s.
  // glibc caps M_MMAP_THRESHOLD at 32 MB (a larger value is refused), and a
  // step's lane tensors are just above it: M_MMAP_MAX 0 keeps those on the
  // heap too (another ~4%).
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  mallopt(M_TOP_PAD, 256 << 20);
  try {
    if (!std::strcmp(cmd, "train")) return needle::cli::RunTrain(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "finetune")) return needle::cli::RunFinetune(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "build")) return needle::cli::RunBuild(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "train-heads")) return needle::cli::RunTrainHeads(argc - 2, argv + 2);
    if (!std::strcmp(cmd, "train-bench")) return needle::cli::RunTrainBench(argc - 2, argv + 2);
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
