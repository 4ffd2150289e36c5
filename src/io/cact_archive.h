// Reading and writing `.cact` archives (SPEC §6).
//
// CactArchive maps the file, validates every byte it will ever hand out
// before use, then gives zero-copy views. A bad file throws
// Error(kInvalidArchive or kInvalidTokenizer) with one line naming the field
// and what was expected; nothing is read out of bounds.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/model_config.h"  // ModelConfig
#include "io/cact_format.h"     // CactHeader, TensorRecord, DType
#include "io/cact_layout.h"     // CactLayout, TensorSpec
#include "io/mapped_file.h"     // MappedFile
#include "io/tokenizer_blob.h"  // TokenizerModel
#include "quant/codebook.h"     // kCodebookLen
#include "quant/cq.h"           // CqMatrixView

namespace needle {

struct TensorView {
  const TensorSpec* spec;      // name, family, expected shape
  const TensorRecord* record;  // as stored (unaligned-safe copy)
  std::span<const uint8_t> data;
};

class CactArchive {
 public:
  static CactArchive Open(const std::string& path);
  static CactArchive FromBytes(std::vector<uint8_t> bytes);  // owns the bytes
  static CactArchive FromStatic(std::span<const uint8_t> bytes);  // bytes that outlive the archive, no copy

  CactArchive(CactArchive&&) = default;
  CactArchive& operator=(CactArchive&&) = default;
  CactArchive(const CactArchive&) = delete;
  CactArchive& operator=(const CactArchive&) = delete;

  const CactHeader& header() const { return header_; }
  const ModelConfig& config() const { return config_; }
  std::span<const float> codebook() const { return codebook_; }
  const CactLayout& layout() const { return layout_; }
  const TokenizerModel& tokenizer() const { return tokenizer_; }
  std::span<const uint8_t> bytes() const { return file_.bytes(); }
  // The payload checksum the file carries (verified when it was opened), or
  // nullopt for a file without one (published archives): io/cact_checksum.h.
  std::optional<uint64_t> checksum() const { return checksum_; }

  size_t num_tensors() const { return specs_.size(); }
  TensorView tensor(size_t i) const { return {&specs_[i], &records_[i], data(i)}; }
  std::span<const uint8_t> data(size_t i) const;
  // A CQ tensor as a packed matrix view (its levels from this header's codebook).
  CqMatrixView cq(size_t i) const;
  // A float tensor (fp16 or fp32) widened to fp32.
  std::vector<float> Floats(size_t i) const;
  // Dequantized fp32 copy of any non-raw tensor (CQ reconstructed).
  std::vector<float> Dequantized(size_t i) const;

 private:
  CactArchive() = default;
  void Validate();

  MappedFile file_;
  CactHeader header_{};
  ModelConfig config_;
  std::array<float, kCodebookLen> codebook_{};
  std::vector<TensorRecord> records_;
  std::vector<TensorSpec> specs_;
  CactLayout layout_;
  TokenizerModel tokenizer_;
  std::optional<uint64_t> checksum_;
};

// Header fields derived from a config (num_tensors and codebook_len are set by the writer).
CactHeader HeaderFromConfig(const ModelConfig& c);

// One tensor to write: dtype/shape/group/bits of its record, and its bytes.
struct TensorBlob {
  DType dtype;
  uint32_t ndim;
  std::array<uint32_t, 4> shape;
  uint32_t group_size;
  uint32_t bits;
  std::span<const uint8_t> bytes;
};

// The SPEC layout, deterministically: header, codebook, directory, then each
// blob at the next 64-byte boundary (zero padding), in the given order. Fills
// num_tensors, codebook_len and every offset/nbytes. Same inputs, same bytes.
std::vector<uint8_t> SerializeCact(CactHeader header, std::span<const float> codebook,
                                   std::span<const TensorBlob> tensors);
// The blobs of an archive as it stands, for rewriting it.
std::vector<TensorBlob> BlobsOf(const CactArchive& a);
// Writes to `path.tmp` then renames, so a failure never leaves half a model.
void WriteFileAtomically(const std::string& path, std::span<const uint8_t> bytes);

}  // namespace needle
