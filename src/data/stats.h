// Summary of a generated data set (`needle generate-data --stats`).
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "data/generator.h"  // Example

namespace needle::data {

class DataStats {
 public:
  void Add(const Example& ex);
  // Human-readable report; token counts are estimated as characters / 4 of
  // the SPEC §8 rendering (prompt + target, all turns).
  std::string Report() const;

  size_t examples() const { return n_; }
  size_t refusals() const { return refusals_; }
  size_t distinct_tool_names() const { return names_.size(); }

 private:
  size_t n_ = 0, refusals_ = 0, tools_ = 0, calls_ = 0, parallel_ = 0, sessions_ = 0, session_turns_ = 0;
  size_t with_system_ = 0, with_date_ = 0;
  std::vector<size_t> tool_hist_ = std::vector<size_t>(9, 0);
  std::vector<size_t> tokens_, tool_tokens_;
  std::set<std::string> names_;
  std::map<std::string, size_t> kinds_, domains_, origins_;
};

}  // namespace needle::data
