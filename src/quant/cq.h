// CQ ("Cactus-Quants" style) weight quantization, SPEC §5.
//
// A logical [out, in] matrix is stored row by row; each row is padded with
// zeros to in_pad (a multiple of kCqGroup). Per group of 128 values:
//   r = w_group · W_128 (normalised Hadamard), norm = ||r||_2 (fp16),
//   u = r / norm, code = index of the nearest level.
// Reconstruction: w_group = (level[code] * norm) · W_128.
//
// Blob layout ([out, in] matrix at `bits`):
//   codes: out rows × CqRowBytes(in, bits) bytes, one LSB-first bitstream per
//          row (code k occupies bits [k*b, (k+1)*b) of the row);
//   norms: out × (in_pad / 128) fp16, row-major (row, group).
// Widths: bits 2, 3, 4 use the header codebook; bits = 5 is ternary, stored in
// 2-bit fields with codes 3, 0, 1 for levels -1, 0, +1 (sign extension of the
// field gives the level; the never-written code 2 decodes as -2).
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>

namespace needle {

inline constexpr uint32_t kCqGroup = 128;
inline constexpr uint32_t kTernaryBits = 5;  // the record's `bits` for ternary

inline bool IsValidCqBits(uint32_t bits) { return bits == 2 || bits == 3 || bits == 4 || bits == kTernaryBits; }
// Width of one stored code field.
inline uint32_t CqFieldBits(uint32_t bits) { return bits == kTernaryBits ? 2 : bits; }
inline uint64_t CqPaddedIn(uint64_t in) { return (in + kCqGroup - 1) / kCqGroup * kCqGroup; }
inline uint64_t CqRowBytes(uint64_t in, uint32_t bits) { return CqPaddedIn(in) * CqFieldBits(bits) / 8; }
inline uint64_t CqGroupsPerRow(uint64_t in) { return CqPaddedIn(in) / kCqGroup; }
// Total blob size; the reader checks the record's nbytes against this.
inline uint64_t CqBlobBytes(uint64_t out, uint64_t in, uint32_t bits) {
  return out * CqRowBytes(in, bits) + out * CqGroupsPerRow(in) * 2;
}

// The reconstruction level of every field value (2^field_bits entries).
struct CqLevels {
  std::array<float, 16> value{};
  uint32_t count = 0;  // 4, 8, 16 (codebook) or 4 (ternary: 0, +c, -2c, -c)
};
// `header_codebook` is the archive's cb2|cb3|cb4 (kCodebookLen floats).
CqLevels MakeCqLevels(uint32_t bits, std::span<const float> header_codebook);

// Zero-copy view of one CQ blob.
struct CqMatrixView {
  const uint8_t* codes = nullptr;   // [rows][CqRowBytes(in, bits)]
  const uint16_t* norms = nullptr;  // [rows][in_pad / 128] fp16 (may be unaligned-safe: 2-byte aligned)
  uint32_t rows = 0;
  uint32_t in = 0;
  uint32_t bits = 0;
  CqLevels levels;
};
// Builds a view over a blob of CqBlobBytes(rows, in, bits) bytes.
CqMatrixView MakeCqMatrixView(const uint8_t* blob, uint32_t rows, uint32_t in, uint32_t bits,
                              std::span<const float> header_codebook);

// ---- packing ------------------------------------------------------------------
// Packs n field values (each < 2^field_bits) LSB-first into ceil(n*field_bits/8) bytes.
void PackCodes(const uint8_t* fields, size_t n, uint32_t field_bits, uint8_t* out);
void UnpackCodes(const uint8_t* packed, size_t n, uint32_t field_bits, uint8_t* fields);

// ---- quantize / dequantize -----------------------------------------------------
// Quantizes a row-major [rows, in] fp32 matrix into `blob` (CqBlobBytes bytes).
void CqQuantize(const float* w, uint32_t rows, uint32_t in, uint32_t bits,
                std::span<const float> header_codebook, uint8_t* blob);
// Reconstructs row `row` into out[0..in).
void CqDequantizeRow(const CqMatrixView& m, uint32_t row, float* out);
// Reconstructs the whole matrix into out[rows * in].
void CqDequantize(const CqMatrixView& m, float* out);

// ---- reference dot products on the packed form -----------------------------------
// Pads x[0..in) to in_pad and applies W_128 to every group: x_rot[in_pad].
// Done once per activation; every row then dots against it.
void CqRotateActivation(const float* x, uint32_t in, float* x_rot);
// sum_k x_rot[k] * level[code_k] * norm_group(k): equals x · dequantized row.
float CqDotRowReference(const CqMatrixView& m, uint32_t row, const float* x_rot);

}  // namespace needle
