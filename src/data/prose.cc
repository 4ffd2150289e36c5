#include "data/prose.h"

#include <algorithm>
#include <fstream>
#include <unordered_set>

#include "base/error.h"  // Error
#include "data/rng.h"    // Rng

namespace needle::data {
namespace {

std::string Trim(const std::string& s) {
  const size_t a = s.find_first_not_of(" \t\r");
  if (a == std::string::npos) return "";
  return s.substr(a, s.find_last_not_of(" \t\r") - a + 1);
}

// "hot_dog" -> "hot dog"; an adjective's syntactic marker "(a)", "(p)", "(ip)" dropped.
std::string Lemma(std::string w) {
  if (const size_t paren = w.find('('); paren != std::string::npos && !w.empty() && w.back() == ')') w.resize(paren);
  std::replace(w.begin(), w.end(), '_', ' ');
  return w;
}

// One data.* line: "offset lex_filenum ss_type w_cnt(hex) word lex_id ... | gloss".
std::string GlossText(const std::string& line) {
  const size_t bar = line.find(" | ");
  if (bar == std::string::npos) return "";
  const std::string gloss = Trim(line.substr(bar + 3));
  if (gloss.empty()) return "";
  std::vector<std::string> fields;
  size_t at = 0;
  while (at < bar && fields.size() < 4) {
    const size_t end = std::min(line.find(' ', at), bar);
    fields.push_back(line.substr(at, end - at));
    at = end + 1;
  }
  if (fields.size() < 4) return "";
  const unsigned long words = std::strtoul(fields[3].c_str(), nullptr, 16);
  std::vector<std::string> lemmas;
  for (unsigned long i = 0; i < words && at < bar; ++i) {
    const size_t end = std::min(line.find(' ', at), bar);
    std::string w = Lemma(line.substr(at, end - at));
    at = std::min(line.find(' ', end + 1), bar) + 1;  // past the lex_id
    if (!w.empty() && std::find(lemmas.begin(), lemmas.end(), w) == lemmas.end()) lemmas.push_back(std::move(w));
  }
  if (lemmas.empty()) return "";
  std::string text;
  for (const std::string& w : lemmas) text += (text.empty() ? "" : ", ") + w;
  return text + ": " + gloss;
}

}  // namespace

std::vector<std::string> WordNetGlossTexts(const std::string& dir) {
  std::vector<std::string> out;
  for (const char* pos : {"noun", "verb", "adj", "adv"}) {
    const std::string path = dir + "/data." + pos;
    std::ifstream in(path);
    if (!in) throw Error(ErrorCode::kIo, "prose: cannot read " + path + " (Debian: apt-get install wordnet-base)");
    for (std::string line; std::getline(in, line);) {
      if (line.empty() || line[0] == ' ') continue;  // the licence header
      std::string text = GlossText(line);
      if (!text.empty()) out.push_back(std::move(text));
    }
  }
  return out;
}

std::vector<std::string> PackageDescriptionTexts(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw Error(ErrorCode::kIo, "prose: cannot read " + path);
  std::vector<std::string> out;
  std::string name, text;
  bool in_description = false;
  auto finish = [&] {
    if (!name.empty() && !text.empty()) out.push_back(name + ": " + text);
    name.clear();
    text.clear();
    in_description = false;
  };
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      finish();
      continue;
    }
    if (line[0] == ' ' || line[0] == '\t') {  // a continuation line
      if (!in_description) continue;
      const std::string body = Trim(line);
      if (body == ".") text += "\n";  // a paragraph break
      else text += (text.empty() || text.back() == '\n' ? "" : " ") + body;
      continue;
    }
    in_description = false;
    if (line.rfind("Package:", 0) == 0) {
      name = Trim(line.substr(8));
    } else if (line.rfind("Description:", 0) == 0 || line.rfind("Description-en:", 0) == 0) {
      std::string synopsis = Trim(line.substr(line.find(':') + 1));
      if (!synopsis.empty() && synopsis.back() != '.') synopsis += '.';
      text = synopsis + "\n";
      in_description = true;
    }
  }
  finish();
  for (std::string& t : out)
    while (!t.empty() && t.back() == '\n') t.pop_back();
  return out;
}

std::vector<std::string> DrawProse(std::vector<std::string> texts, uint64_t count, uint64_t seed) {
  std::unordered_set<std::string> seen;
  std::vector<std::string> unique;
  for (std::string& t : texts)
    if (seen.insert(t).second) unique.push_back(std::move(t));
  std::vector<std::string> out;
  if (unique.empty()) return out;
  Rng rng(seed);
  while (out.size() < count) {
    std::vector<size_t> order(unique.size());
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    for (size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);  // Fisher-Yates
    for (size_t i = 0; i < order.size() && out.size() < count; ++i) out.push_back(unique[order[i]]);
  }
  return out;
}

}  // namespace needle::data
