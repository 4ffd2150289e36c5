// needle-tokenizer-train: `needle tokenizer-train` as its own executable.
//
// libsentencepiece carries its own copy of protobuf-lite and exports its
// symbols; libtorch (linked by `needle` for the trainer) loads the full
// libprotobuf. In one process the two interpose and crash during static
// initialisation, so the SentencePiece trainer lives here and `needle
// tokenizer-train` runs this binary (found next to `needle`).
#include <cstdio>
#include <exception>

#include "base/error.h"
#include "commands.h"

int main(int argc, char** argv) {
  try {
    return needle::cli::RunTokenizerTrain(argc - 1, argv + 1);
  } catch (const needle::Error& e) {
    std::fprintf(stderr, "needle tokenizer-train: error [%s]: %s\n", needle::ErrorCodeName(e.code()), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "needle tokenizer-train: error [internal_error]: %s\n", e.what());
    return 2;
  }
}
