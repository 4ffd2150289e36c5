// A scratch directory for one test process: made on first use under /tmp
// (mkdtemp, so parallel ctest processes never share one) and removed with
// everything in it when the process exits. ctest runs each test case in its
// own process: a directory left behind per process adds up to hundreds.
#pragma once

#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>
#include <system_error>

namespace needle::testing {

inline const std::string& ProcessTempDir(const char* prefix) {
  struct Dir {
    std::string path;
    ~Dir() {
      std::error_code ignored;
      std::filesystem::remove_all(path, ignored);
    }
  };
  static const Dir dir = [prefix] {
    std::string tmpl = std::string("/tmp/") + prefix + "-XXXXXX";
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("cannot make a temporary directory " + tmpl);
    return Dir{tmpl};
  }();
  return dir.path;
}

}  // namespace needle::testing
