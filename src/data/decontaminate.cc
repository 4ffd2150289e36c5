#include "data/decontaminate.h"

#include <cctype>
#include <filesystem>
#include <fstream>

namespace needle::data {

std::string NormalizedRequest(const std::string& s) {
  std::string out;
  bool gap = false;
  for (unsigned char c : s) {
    if (std::isalnum(c) || c >= 0x80) {
      if (gap && !out.empty()) out += ' ';
      out += static_cast<char>(std::tolower(c));
      gap = false;
    } else {
      gap = true;
    }
  }
  return out;
}

std::set<std::string> EvaluationRequests(const std::string& eval_dir, size_t* files) {
  std::set<std::string> requests;
  std::error_code ec;
  if (!std::filesystem::is_directory(eval_dir, ec)) return requests;
  auto add = [&](const ojson& text) {
    if (text.is_string()) requests.insert(NormalizedRequest(text.get<std::string>()));
  };
  for (const auto& entry : std::filesystem::recursive_directory_iterator(eval_dir)) {
    const std::string ext = entry.path().extension().string();
    if (!entry.is_regular_file() || (ext != ".jsonl" && ext != ".json")) continue;
    if (entry.path().parent_path().filename() == "possible_answer") continue;
    if (files) ++*files;
    std::ifstream in(entry.path());
    for (std::string line; std::getline(in, line);) {
      const ojson e = ojson::parse(line, nullptr, false);
      if (e.is_discarded() || !e.is_object()) continue;
      if (e.contains("query")) add(e["query"]);
      if (e.contains("turns") && e["turns"].is_array()) {
        for (const ojson& t : e["turns"])
          if (t.is_object() && t.contains("query")) add(t["query"]);
      }
      if (e.contains("question") && e["question"].is_array()) {  // BFCL: turns of messages
        for (const ojson& turn : e["question"]) {
          if (!turn.is_array()) continue;
          for (const ojson& m : turn)
            if (m.is_object() && m.value("role", "") == "user" && m.contains("content")) add(m["content"]);
        }
      }
    }
  }
  return requests;
}

bool AsksAnyOf(const ojson& example, const std::set<std::string>& requests) {
  if (requests.empty()) return false;
  auto asked = [&](const ojson& q) { return q.is_string() && requests.count(NormalizedRequest(q.get<std::string>())) > 0; };
  if (example.contains("query") && asked(example["query"])) return true;
  if (example.contains("turns") && example["turns"].is_array()) {
    for (const ojson& t : example["turns"])
      if (t.is_object() && t.contains("query") && asked(t["query"])) return true;
  }
  return false;
}

}  // namespace needle::data
