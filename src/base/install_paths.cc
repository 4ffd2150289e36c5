#include "base/install_paths.h"

#include <unistd.h>

#include <climits>
#include <filesystem>

namespace needle {

std::string InstalledShareFile(std::string_view relative) {
  char self[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) return "";
  const std::filesystem::path exe(std::string(self, size_t(n)));
  const std::filesystem::path candidate = exe.parent_path().parent_path() / "share" / "needle" / std::string(relative);
  std::error_code ec;
  return std::filesystem::exists(candidate, ec) ? candidate.string() : std::string();
}

}  // namespace needle
