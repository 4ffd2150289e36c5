// A loaded model: the archive (mapped, owned or borrowed bytes), the fast
// forward pass, the tokenizer, the token trie of the grammar and the heads.
// Immutable after Open and shared by any number of sessions on any threads.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "grammar/token_trie.h"  // TokenTrie
#include "io/cact_archive.h"     // CactArchive
#include "model/fast_model.h"    // FastModel
#include "model/heads.h"         // HeadWeights
#include "text/tokenizer.h"      // Tokenizer

namespace needle {

class Model {
 public:
  // Throws Error (kIo, kInvalidArchive, kInvalidTokenizer) naming the problem.
  static std::shared_ptr<const Model> Open(const std::string& path);
  static std::shared_ptr<const Model> FromBytes(std::vector<uint8_t> bytes);
  static std::shared_ptr<const Model> FromStatic(std::span<const uint8_t> bytes);  // bytes outlive the model
  // The default model: $NEEDLE_MODEL if set, else the model embedded in the
  // library at build time. Throws Error(kNoModel) when there is neither.
  static std::shared_ptr<const Model> Default();
  // The embedded bytes (empty when the library was built without a model).
  static std::span<const uint8_t> Embedded();

  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  const CactArchive& archive() const { return *archive_; }
  const ModelConfig& config() const { return archive_->config(); }
  const FastModel& fast() const { return *fast_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  const std::shared_ptr<const grammar::TokenTrie>& trie() const { return trie_; }
  const HeadWeights* contrastive() const { return contrastive_ ? &*contrastive_ : nullptr; }
  const HeadWeights* confidence() const { return confidence_ ? &*confidence_ : nullptr; }
  // FNV-1a of the archive bytes: keys retrieval index files and saved sessions.
  uint64_t fingerprint() const { return fingerprint_; }

 private:
  explicit Model(std::unique_ptr<CactArchive> archive);
  std::unique_ptr<CactArchive> archive_;
  std::unique_ptr<FastModel> fast_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::shared_ptr<const grammar::TokenTrie> trie_;
  std::optional<HeadWeights> contrastive_, confidence_;
  uint64_t fingerprint_ = 0;
};

}  // namespace needle
