#include "agent/model.h"

#include <cstdlib>
#include <mutex>

#include "base/error.h"
#include "base/hash.h"

// Defined by the generated embedded_model.S when models/needle-mini.cact
// exists (NEEDLE_EMBEDDED_MODEL: a strong reference, so static links pull it
// in); weak otherwise, so the engine links and reports no_model.
#if NEEDLE_EMBEDDED_MODEL
#define NEEDLE_EMBEDDED_LINKAGE
#else
#define NEEDLE_EMBEDDED_LINKAGE __attribute__((weak))
#endif
extern "C" {
extern const uint8_t needle_embedded_model_begin[] NEEDLE_EMBEDDED_LINKAGE;
extern const uint8_t needle_embedded_model_end[] NEEDLE_EMBEDDED_LINKAGE;
}

namespace needle {

Model::Model(std::unique_ptr<CactArchive> archive) : archive_(std::move(archive)) {
  fast_ = std::make_unique<FastModel>(*archive_);
  tokenizer_ = std::make_unique<Tokenizer>(archive_->tokenizer());
  trie_ = std::make_shared<const grammar::TokenTrie>(*tokenizer_);
  contrastive_ = LoadHead(*archive_, HeadKind::kContrastive);
  confidence_ = LoadHead(*archive_, HeadKind::kConfidence);
  const auto b = archive_->bytes();
  fingerprint_ = Fnv1a64(b.data(), b.size());
}

std::shared_ptr<const Model> Model::Open(const std::string& path) {
  return std::shared_ptr<const Model>(new Model(std::make_unique<CactArchive>(CactArchive::Open(path))));
}

std::shared_ptr<const Model> Model::FromBytes(std::vector<uint8_t> bytes) {
  return std::shared_ptr<const Model>(new Model(std::make_unique<CactArchive>(CactArchive::FromBytes(std::move(bytes)))));
}

std::shared_ptr<const Model> Model::FromStatic(std::span<const uint8_t> bytes) {
  return std::shared_ptr<const Model>(new Model(std::make_unique<CactArchive>(CactArchive::FromStatic(bytes))));
}

std::span<const uint8_t> Model::Embedded() {
#if !NEEDLE_EMBEDDED_MODEL
  if (!needle_embedded_model_begin || !needle_embedded_model_end) return {};
#endif
  return {needle_embedded_model_begin, size_t(needle_embedded_model_end - needle_embedded_model_begin)};
}

std::shared_ptr<const Model> Model::Default() {
  // One shared instance per process: sessions that ask for the default share its mapping.
  static std::mutex mu;
  static std::weak_ptr<const Model> cached;
  std::lock_guard<std::mutex> lock(mu);
  if (auto m = cached.lock()) return m;
  std::shared_ptr<const Model> m;
  if (const char* path = std::getenv("NEEDLE_MODEL"); path && *path) {
    m = Open(path);
  } else if (const auto e = Embedded(); !e.empty()) {
    m = FromStatic(e);
  } else {
    throw Error(ErrorCode::kNoModel, "no model: this library was built without an embedded model and NEEDLE_MODEL is not set");
  }
  cached = m;
  return m;
}

}  // namespace needle
