#include "agent/retrieval.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/hash.h"
#include "grammar/copy_source.h"
#include "io/cact_archive.h"  // WriteFileAtomically
#include "text/stop_words.h"   // IsStopWord

namespace needle {

std::string RetrievalToolText(std::string_view tool_json) { return std::string(tool_json); }

namespace {

bool Upper(unsigned char c) { return c >= 'A' && c <= 'Z'; }
bool Lower(unsigned char c) { return c >= 'a' && c <= 'z'; }
bool Digit(unsigned char c) { return c >= '0' && c <= '9'; }
bool WordByte(unsigned char c) { return Upper(c) || Lower(c) || Digit(c) || c >= 0x80; }

// Plural and verb endings, so "switches"/"switch" and "dimming"/"dim" meet
// (Matches covers what this leaves: "minut"/"minute" by prefix,
// "navigate"/"navigation" by a long common start).
std::string Stem(std::string w) {
  auto strip = [&](std::string_view suffix, size_t min_left) {
    if (w.size() >= suffix.size() + min_left && w.compare(w.size() - suffix.size(), suffix.size(), suffix) == 0) {
      w.resize(w.size() - suffix.size());
      return true;
    }
    return false;
  };
  if (strip("ies", 3)) return w + "y";
  if (strip("ing", 3) || strip("es", 3) || strip("ed", 3)) return w;
  if (w.size() > 3 && w.back() == 's' && w[w.size() - 2] != 's') w.pop_back();
  return w;
}

bool Matches(const std::string& a, const std::string& b) {
  if (a == b) return true;
  const std::string& shorter = a.size() < b.size() ? a : b;
  const std::string& longer = a.size() < b.size() ? b : a;
  if (shorter.size() >= 4 && longer.compare(0, shorter.size(), shorter) == 0) return true;
  // Derived forms that change the stem's last letters: "navigate" /
  // "navigation", "reserve" / "reservation", "subscribe" / "subscription".
  size_t common = 0;
  while (common < shorter.size() && shorter[common] == longer[common]) ++common;
  return common >= 5 && common + 2 >= shorter.size();
}

// Verbs that name the same action: the words sibling tools differ by
// ("stop" / "end", "show" / "list", "release" / "open"). A word of a class
// is the class's term (on both sides, so the verb weighs as one word).
std::string_view ActionClass(std::string_view stem) {
  struct Class {
    std::string_view term;
    std::initializer_list<std::string_view> words;
  };
  static const Class kClasses[] = {
      {"~stop", {"stop", "stopp", "end", "halt", "terminate", "quit", "hang", "kill", "cease"}},
      {"~start", {"start", "begin", "beginn", "launch", "commence"}},
      {"~show", {"show", "list", "display", "view", "read", "see", "fetch"}},
      {"~add", {"add", "create", "new", "make", "insert", "save", "log", "record", "book"}},
      {"~remove", {"delete", "remove", "cancel", "clear", "erase", "discard"}},
      {"~open", {"open", "release"}},
      {"~close", {"close", "shut"}},
      {"~forward", {"forward", "ahead", "advance", "onward"}},
      {"~backward", {"backward", "reverse"}},
      {"~more", {"increase", "raise", "louder", "higher", "boost"}},
      {"~less", {"decrease", "lower", "quieter", "reduce", "down", "dim"}},
  };
  for (const Class& c : kClasses) {
    for (std::string_view w : c.words) {
      if (w == stem) return c.term;
    }
  }
  return {};
}

void AddTerms(std::string_view text, std::vector<std::string>& out) {
  size_t i = 0;
  while (i < text.size()) {
    if (!WordByte(uint8_t(text[i]))) {
      ++i;
      continue;
    }
    // One word: up to a non-word byte, a lower-to-upper change ("setLights"),
    // the last capital of a run before a lower-case letter ("HTTPServer") or
    // a letter/digit change ("mp3", "zone2").
    size_t j = i + 1;
    for (; j < text.size(); ++j) {
      const uint8_t prev = uint8_t(text[j - 1]), c = uint8_t(text[j]);
      if (!WordByte(c)) break;
      if (Lower(prev) && Upper(c)) break;
      if (Upper(prev) && Upper(c) && j + 1 < text.size() && Lower(uint8_t(text[j + 1]))) break;
      if (Digit(prev) != Digit(c)) break;
    }
    std::string w(text.substr(i, j - i));
    i = j;
    bool digits = true;
    for (char& c : w) {
      if (Upper(uint8_t(c))) c = char(c - 'A' + 'a');
      digits &= Digit(uint8_t(c));
    }
    if (digits || w.size() < 2 || text::IsStopWord(w, text::kNoToolSignal)) continue;
    w = Stem(std::move(w));
    if (const std::string_view c = ActionClass(w); !c.empty()) w = std::string(c);
    if (std::find(out.begin(), out.end(), w) == out.end()) out.push_back(std::move(w));
  }
}

void AddSchemaTerms(const nlohmann::ordered_json& schema, std::vector<std::string>& out, int depth) {
  if (!schema.is_object() || depth > 8) return;
  if (auto d = schema.find("description"); d != schema.end() && d->is_string()) AddTerms(d->get_ref<const std::string&>(), out);
  if (auto e = schema.find("enum"); e != schema.end() && e->is_array()) {
    for (const auto& v : *e) {
      if (v.is_string()) AddTerms(v.get_ref<const std::string&>(), out);
    }
  }
  if (auto p = schema.find("properties"); p != schema.end() && p->is_object()) {
    for (const auto& [key, sub] : p->items()) {
      AddTerms(key, out);
      AddSchemaTerms(sub, out, depth + 1);
    }
  }
  if (auto it = schema.find("items"); it != schema.end()) AddSchemaTerms(*it, out, depth + 1);
}

}  // namespace

int SaidEnumValue(std::string_view request, const std::vector<nlohmann::json>& values) {
  using grammar::CopySource;  // (Fold, IsWordByte: what a copy counts as a word)
  auto fold = [](char c) { return CopySource::Fold(uint8_t(c)); };
  auto word = [](char c) { return CopySource::IsWordByte(uint8_t(c)); };
  int said = -1;
  for (size_t i = 0; i < values.size(); ++i) {
    if (!values[i].is_string()) continue;
    const std::string& v = values[i].get_ref<const std::string&>();
    if (v.size() < 3) continue;
    bool found = false;
    for (size_t at = 0; !found && at + v.size() <= request.size(); ++at) {
      size_t k = 0;
      while (k < v.size() && fold(request[at + k]) == fold(v[k])) ++k;
      found = k == v.size() && (at == 0 || !word(request[at - 1])) && (at + k == request.size() || !word(request[at + k]));
    }
    if (!found) continue;
    if (said >= 0) return -1;  // several
    said = int(i);
  }
  return said;
}

std::vector<std::string> LexicalTerms(std::string_view text) {
  std::vector<std::string> out;
  AddTerms(text, out);
  return out;
}

std::vector<std::string> ToolLexicalTerms(const nlohmann::ordered_json& tool) {
  std::vector<std::string> out;
  if (!tool.is_object()) return out;
  if (auto n = tool.find("name"); n != tool.end() && n->is_string()) AddTerms(n->get_ref<const std::string&>(), out);
  if (auto d = tool.find("description"); d != tool.end() && d->is_string()) AddTerms(d->get_ref<const std::string&>(), out);
  if (auto p = tool.find("parameters"); p != tool.end()) AddSchemaTerms(*p, out, 0);
  return out;
}

bool TakesAnIdentifier(const nlohmann::ordered_json& tool) {
  const auto params = tool.is_object() ? tool.find("parameters") : tool.end();
  if (params == tool.end() || !params->is_object()) return false;
  const auto props = params->find("properties"), required = params->find("required");
  if (props == params->end() || !props->is_object() || required == params->end() || !required->is_array()) return false;
  for (const auto& key : *required) {
    if (!key.is_string()) continue;
    const std::string& k = key.get_ref<const std::string&>();
    const auto p = props->find(k);
    if (p == props->end() || !p->is_object() || p->contains("enum")) continue;
    // "type": "string", or a list holding it (["string", "null"], as OpenAI's
    // strict schemas write an optional value); value("type", "") threw on a list.
    const auto type = p->find("type");
    const bool string_typed = type != p->end() && (*type == "string" || (type->is_array() && std::find(type->begin(), type->end(), "string") != type->end()));
    if (!string_typed) continue;
    if (NamesAnIdentifier(k)) return true;
  }
  return false;
}

bool NamesAnIdentifier(std::string_view key) {
  size_t start = 0;
  for (size_t i = 1; i < key.size(); ++i) {
    const uint8_t prev = uint8_t(key[i - 1]), c = uint8_t(key[i]);
    if (prev == '_' || prev == '-' || prev == '.' || (Lower(prev) && Upper(c))) start = i;
  }
  std::string last(key.substr(start));
  for (char& c : last) {
    if (Upper(uint8_t(c))) c = char(c - 'A' + 'a');
  }
  return last == "id" || last == "uid";
}

namespace {

// The records of a result: objects inside arrays, with their identifier.
void CollectRecords(const nlohmann::ordered_json& v, int depth, std::vector<std::pair<std::string, const nlohmann::ordered_json*>>& out) {
  if (depth > 3) return;
  if (v.is_array()) {
    for (const auto& e : v) {
      if (!e.is_object()) {
        CollectRecords(e, depth + 1, out);
        continue;
      }
      std::string id;
      for (const auto& [k, f] : e.items()) {
        if (k != "ref" && !NamesAnIdentifier(k)) continue;
        if (f.is_string()) id = f.get<std::string>();
        if (f.is_number_integer()) id = f.dump();
        if (!id.empty()) break;
      }
      if (!id.empty()) out.emplace_back(std::move(id), &e);
      CollectRecords(e, depth + 1, out);
    }
  } else if (v.is_object()) {
    for (const auto& [k, f] : v.items()) CollectRecords(f, depth + 1, out);
  }
}

}  // namespace

std::string RecordNamedBy(const nlohmann::ordered_json& result, const std::vector<std::string>& request_terms) {
  std::vector<std::pair<std::string, const nlohmann::ordered_json*>> records;
  CollectRecords(result, 0, records);
  if (records.empty() || request_terms.empty()) return "";
  std::vector<std::vector<std::string>> terms(records.size());
  for (size_t r = 0; r < records.size(); ++r) {
    for (const auto& [k, f] : records[r].second->items()) {
      if (f.is_string() && k != "ref" && !NamesAnIdentifier(k)) AddTerms(f.get_ref<const std::string&>(), terms[r]);
    }
  }
  const std::vector<float> scores = LexicalScores(request_terms, terms);
  size_t best = 0;
  for (size_t r = 1; r < scores.size(); ++r) {
    if (scores[r] > scores[best]) best = r;
  }
  if (scores[best] <= 0.0f) return "";
  for (size_t r = 0; r < scores.size(); ++r) {
    if (r != best && scores[r] >= scores[best]) return "";  // a tie: the request does not say which
  }
  return records[best].first;
}

bool SaysAnIdentifier(std::string_view text) {
  size_t i = 0;
  while (i < text.size()) {
    size_t j = i;
    bool digit = false;
    for (; j < text.size(); ++j) {
      const uint8_t c = uint8_t(text[j]);
      if (!(Lower(c) || Upper(c) || Digit(c) || c == '_' || c == '-')) break;
      digit |= Digit(c);
    }
    if (digit && j - i >= 5) return true;
    i = j + 1;
  }
  return false;
}

std::vector<float> LexicalScores(const std::vector<std::string>& query_terms,
                                 const std::vector<std::vector<std::string>>& tool_terms) {
  const size_t n = tool_terms.size();
  std::vector<float> scores(n, 0.0f);
  double total = 0.0;
  std::vector<uint8_t> hit(n);
  for (const std::string& q : query_terms) {
    size_t df = 0;
    for (size_t i = 0; i < n; ++i) {
      hit[i] = 0;
      for (const std::string& t : tool_terms[i]) {
        if (Matches(q, t)) {
          hit[i] = 1;
          break;
        }
      }
      df += hit[i];
    }
    const double idf = std::log(1.0 + (double(n) + 1.0) / (double(df) + 0.5));
    total += idf;
    for (size_t i = 0; i < n; ++i) {
      if (hit[i]) scores[i] += float(idf);
    }
  }
  if (total > 0.0) {
    for (float& s : scores) s = float(s / total);
  }
  return scores;
}

namespace {

// Lowercased, without the non-alphanumeric bytes at either end ("415°" ->
// "415", "Yoga." -> "yoga").
std::string Bare(std::string_view s) {
  auto word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) != 0 || static_cast<unsigned char>(c) >= 0x80; };
  while (!s.empty() && !word(s.front())) s.remove_prefix(1);
  while (!s.empty() && !word(s.back())) s.remove_suffix(1);
  std::string out(s);
  for (char& c : out) c = char(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::string UnlistedEnumValue(std::string_view reasoning, const nlohmann::ordered_json& tools) {
  const size_t colon = reasoning.find(':');
  if (colon == std::string_view::npos || reasoning.find(" |") != std::string_view::npos) return "";
  std::string_view name = reasoning.substr(0, colon);
  while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
  const nlohmann::ordered_json* tool = nullptr;
  for (const auto& t : tools) {
    if (t.is_object() && t.contains("name") && t["name"].is_string() && t["name"].get_ref<const std::string&>() == name) tool = &t;
  }
  if (!tool || !tool->contains("parameters") || !(*tool)["parameters"].is_object()) return "";
  const nlohmann::ordered_json& params = (*tool)["parameters"];
  if (!params.contains("properties") || !params["properties"].is_object()) return "";
  const nlohmann::ordered_json& props = params["properties"];
  // Each "'span' -> key value" of the plan; a quote followed by a word byte
  // is an apostrophe inside the span (as ReasoningSpan reads it).
  std::string_view rest = reasoning.substr(colon + 1);
  for (size_t open = rest.find(" '"); open != std::string_view::npos; open = rest.find(" '")) {
    size_t close = open + 2;
    while (close < rest.size() && !(rest[close] == '\'' && (close + 1 == rest.size() || !std::isalnum(static_cast<unsigned char>(rest[close + 1])))))
      ++close;
    if (close >= rest.size()) return "";
    const std::string_view span = rest.substr(open + 2, close - open - 2);
    rest.remove_prefix(close + 1);
    if (!rest.starts_with(" -> ")) continue;
    rest.remove_prefix(4);
    const size_t key_end = std::min(rest.find_first_of(" ;"), rest.size());
    const std::string key(rest.substr(0, key_end));
    rest.remove_prefix(key_end);
    std::string_view value;
    if (rest.starts_with(' ') && !rest.starts_with(" '")) {
      const size_t value_end = std::min(rest.find(';'), rest.size());
      value = rest.substr(1, value_end - 1);
      rest.remove_prefix(value_end);
    }
    if (!props.contains(key) || !props[key].is_object() || !props[key].contains("enum") || !props[key]["enum"].is_array()) continue;
    const std::string said = Bare(span);
    if (said.empty() || Bare(value) != said) continue;
    if (std::none_of(said.begin(), said.end(), [](char c) { return std::isalpha(static_cast<unsigned char>(c)) != 0; })) continue;
    const std::vector<std::string> said_terms = LexicalTerms(said);
    if (said_terms.empty()) continue;  // a function word ("on", "up") is no value asked for
    std::string listed;
    bool shares = false;
    for (const auto& v : props[key]["enum"]) {
      if (!v.is_string()) return "";  // (a numeric or mixed enum: not a word the request could say)
      const std::string& text = v.get_ref<const std::string&>();
      shares = shares || Bare(text) == said;
      for (const std::string& t : LexicalTerms(text))
        for (const std::string& q : said_terms) shares = shares || Matches(q, t);
      listed += (listed.empty() ? "" : ", ") + text;
    }
    if (!shares) return "'" + std::string(span) + "' is not an allowed " + key + " of " + std::string(name) + " (" + listed + ")";
  }
  return "";
}

uint64_t ToolFingerprint(std::string_view tool_json, uint64_t model_fingerprint) {
  return Fnv1a64(tool_json, Fnv1a64(&model_fingerprint, sizeof model_fingerprint));
}

namespace {
std::string Hex(uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}
}  // namespace

void ToolIndex::Load(const std::string& path, uint32_t dim) {
  dim_ = dim;
  entries_.clear();
  dirty_ = false;
  if (path.empty() || !std::filesystem::exists(path)) return;
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ErrorCode::kIo, "tool index: cannot read '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(ss.str());
  } catch (const nlohmann::json::exception& e) {
    throw Error(ErrorCode::kInvalidJson, "tool index '" + path + "' is not JSON: " + e.what());
  }
  if (!j.is_object() || !j.contains("format") || j["format"] != "needle-tool-index" || !j.contains("entries") || !j["entries"].is_object()) {
    throw Error(ErrorCode::kInvalidJson, "tool index '" + path + "': not a needle tool index (format/entries)");
  }
  if (!j.contains("dim") || !j["dim"].is_number_unsigned() || j["dim"].get<uint64_t>() != dim) {
    dirty_ = true;  // another head size: start over (the file is rewritten)
    return;
  }
  for (const auto& [key, value] : j["entries"].items()) {
    // Damaged entries are skipped (and embedded again): a key that is not 16
    // hex digits, a value that is not dim finite numbers within float range
    // (a larger double converted to float is undefined behaviour).
    if (key.size() != 16 || key.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) continue;
    if (!value.is_array() || value.size() != dim) continue;
    std::vector<float> v;
    v.reserve(dim);
    bool ok = true;
    for (const auto& x : value) {
      const double d = x.is_number() ? x.get<double>() : 0.0;
      ok = ok && x.is_number() && std::isfinite(d) && std::fabs(d) <= std::numeric_limits<float>::max();
      if (ok) v.push_back(static_cast<float>(d));
    }
    if (ok) entries_[std::stoull(key, nullptr, 16)] = std::move(v);
  }
}

void ToolIndex::Save(const std::string& path) const {
  nlohmann::json j = {{"format", "needle-tool-index"}, {"version", 1}, {"dim", dim_}};
  nlohmann::json entries = nlohmann::json::object();
  for (const auto& [key, v] : entries_) entries[Hex(key)] = v;
  j["entries"] = std::move(entries);
  const std::string text = j.dump();
  WriteFileAtomically(path, {reinterpret_cast<const uint8_t*>(text.data()), text.size()});
}

const std::vector<float>* ToolIndex::Find(uint64_t key) const {
  const auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

void ToolIndex::Put(uint64_t key, std::vector<float> embedding) {
  entries_[key] = std::move(embedding);
  dirty_ = true;
}

}  // namespace needle
