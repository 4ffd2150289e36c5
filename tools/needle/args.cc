#include "args.h"

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "base/error.h"

namespace needle::cli {

Args::Args(std::string command, std::string usage, std::string summary, std::vector<FlagSpec> flags)
    : command_(std::move(command)), usage_(std::move(usage)), summary_(std::move(summary)), flags_(std::move(flags)) {}

const FlagSpec* Args::Find(const std::string& name) const {
  for (const auto& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

bool Args::Parse(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--help" || a == "-h") {
      std::fputs(Help().c_str(), stdout);
      return false;
    }
    if (a.size() > 2 && a.compare(0, 2, "--") == 0) {
      std::string name = a.substr(2), value;
      bool inline_value = false;
      if (const size_t eq = name.find('='); eq != std::string::npos) {
        value = name.substr(eq + 1), name = name.substr(0, eq), inline_value = true;
      }
      const FlagSpec* f = Find(name);
      if (!f) throw Error(ErrorCode::kInvalidArgument, command_ + ": unknown flag --" + name + " (see --help)");
      if (f->value.empty()) {
        if (inline_value) throw Error(ErrorCode::kInvalidArgument, command_ + ": --" + name + " takes no value");
        value = "1";
      } else if (!inline_value) {
        if (i + 1 >= argc) throw Error(ErrorCode::kInvalidArgument, command_ + ": --" + name + " needs a value (" + f->value + ")");
        value = argv[++i];
      }
      auto& vals = values_[name];
      if (!vals.empty() && !f->repeatable) throw Error(ErrorCode::kInvalidArgument, command_ + ": --" + name + " given twice");
      vals.push_back(value);
    } else {
      positionals_.push_back(a);
    }
  }
  return true;
}

std::string Args::Get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second.back();
}

std::vector<std::string> Args::GetAll(const std::string& name) const {
  auto it = values_.find(name);
  return it == values_.end() ? std::vector<std::string>{} : it->second;
}

long long Args::GetInt(const std::string& name, long long fallback) const {
  if (!Has(name)) return fallback;
  const std::string v = Get(name);
  char* end = nullptr;
  const long long x = std::strtoll(v.c_str(), &end, 10);
  if (v.empty() || *end) throw Error(ErrorCode::kInvalidArgument, command_ + ": --" + name + " expects an integer, got '" + v + "'");
  return x;
}

double Args::GetDouble(const std::string& name, double fallback) const {
  if (!Has(name)) return fallback;
  const std::string v = Get(name);
  char* end = nullptr;
  const double x = std::strtod(v.c_str(), &end);
  if (v.empty() || *end) throw Error(ErrorCode::kInvalidArgument, command_ + ": --" + name + " expects a number, got '" + v + "'");
  return x;
}

std::string Args::Require(const std::string& name) const {
  if (!Has(name)) throw Error(ErrorCode::kInvalidArgument, command_ + ": --" + name + " is required (see --help)");
  return Get(name);
}

std::string Args::Help() const {
  std::string s = "usage: needle " + command_ + " " + usage_ + "\n\n" + summary_ + "\n";
  if (!flags_.empty()) s += "\nflags:\n";
  for (const auto& f : flags_) {
    std::string left = "  --" + f.name + (f.value.empty() ? "" : " " + f.value);
    if (left.size() < 28) left.resize(28, ' ');
    else left += "  ";
    s += left + f.help + "\n";
  }
  s += "  --help                    show this help\n";
  return s;
}

std::string ReadFlagFile(const std::string& flag, const std::string& path) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw Error(ErrorCode::kIo, "--" + flag + ": '" + path + "' is a folder; give a file");
  }
  if (!std::filesystem::exists(path, ec)) throw Error(ErrorCode::kIo, "--" + flag + ": no file '" + path + "'");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, "--" + flag + ": cannot read '" + path + "'");
  std::string bytes{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  if (in.bad()) throw Error(ErrorCode::kIo, "--" + flag + ": cannot read '" + path + "'");
  return bytes;
}

std::string FlagFileOrInline(const std::string& flag, const std::string& value) {
  const size_t start = value.find_first_not_of(" \t\r\n");
  if (start == std::string::npos || value[start] == '{' || value[start] == '[') return value;
  std::error_code ec;
  if (std::filesystem::exists(value, ec)) return ReadFlagFile(flag, value);
  return value;
}

}  // namespace needle::cli
