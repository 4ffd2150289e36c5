// A small flag parser for the `needle` subcommands: --name value, --name=value,
// boolean --flag, positionals. Unknown flags are an error naming the flag.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace needle::cli {

struct FlagSpec {
  std::string name;   // without dashes
  std::string value;  // placeholder for help ("N", "FILE"); empty = boolean flag
  std::string help;
  bool repeatable = false;
};

class Args {
 public:
  Args(std::string command, std::string usage, std::string summary, std::vector<FlagSpec> flags);
  // Returns false when --help was given (help printed to stdout). Throws Error on bad flags.
  bool Parse(int argc, char** argv);

  bool Has(const std::string& name) const { return values_.count(name) > 0; }
  std::string Get(const std::string& name, const std::string& fallback = "") const;
  std::vector<std::string> GetAll(const std::string& name) const;
  long long GetInt(const std::string& name, long long fallback) const;
  double GetDouble(const std::string& name, double fallback) const;
  std::string Require(const std::string& name) const;
  const std::vector<std::string>& positionals() const { return positionals_; }
  std::string Help() const;

 private:
  const FlagSpec* Find(const std::string& name) const;
  std::string command_, usage_, summary_;
  std::vector<FlagSpec> flags_;
  std::map<std::string, std::vector<std::string>> values_;
  std::vector<std::string> positionals_;
};

// The bytes of the file a flag names (`flag` without dashes, for messages): a
// folder, a missing file or an unreadable one is an error naming both.
std::string ReadFlagFile(const std::string& flag, const std::string& path);

// A flag that takes a file or the text inline (JSON, facts): text that opens
// with '{' or '[' is inline, an existing path is read (a folder is an error),
// anything else is inline text.
std::string FlagFileOrInline(const std::string& flag, const std::string& value);

}  // namespace needle::cli
