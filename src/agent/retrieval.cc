#include "agent/retrieval.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "base/error.h"
#include "base/hash.h"
#include "io/cact_archive.h"  // WriteFileAtomically

namespace needle {

std::string RetrievalToolText(std::string_view tool_json) { return std::string(tool_json); }

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
  if (!j.is_object() || j.value("format", "") != "needle-tool-index" || !j.contains("entries") || !j["entries"].is_object()) {
    throw Error(ErrorCode::kInvalidJson, "tool index '" + path + "': not a needle tool index (format/entries)");
  }
  if (j.value("dim", 0u) != dim) {
    dirty_ = true;  // another head size: start over (the file is rewritten)
    return;
  }
  for (const auto& [key, value] : j["entries"].items()) {
    if (key.size() != 16 || !value.is_array() || value.size() != dim) continue;  // skip damaged entries, re-embed them
    std::vector<float> v;
    v.reserve(dim);
    bool ok = true;
    for (const auto& x : value) {
      if (!x.is_number()) ok = false;
      else v.push_back(x.get<float>());
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
