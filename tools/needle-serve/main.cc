// needle-serve: `needle serve` as its own executable.
//
// cpp-httplib links OpenSSL: loading libssl and libcrypto costs ~3.4 MB of
// resident memory in every process, which `needle run`, `chat` and `bench`
// need not pay. So the server lives here and `needle serve` runs this binary
// (found next to `needle`).
#include <cstdio>
#include <exception>

#include "base/error.h"
#include "commands.h"

int main(int argc, char** argv) {
  try {
    return needle::cli::RunServe(argc - 1, argv + 1);
  } catch (const needle::Error& e) {
    std::fprintf(stderr, "needle serve: error [%s]: %s\n", needle::ErrorCodeName(e.code()), e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "needle serve: error [internal_error]: %s\n", e.what());
    return 2;
  }
}
