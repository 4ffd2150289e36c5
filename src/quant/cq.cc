// CQ weight quantization (SPEC §5): Hadamard-rotated groups of 128, one fp16
// norm per group, Lloyd–Max (or ternary) levels, LSB-first packed codes.
#include "quant/cq.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <string>
#include <vector>

#include "base/error.h"     // Error
#include "base/fp16.h"      // FloatToHalf, HalfToFloat
#include "quant/codebook.h" // kTernaryLevel, CodebookOffset
#include "quant/hadamard.h" // FastWalshHadamard

namespace needle {
namespace {

// Norms may sit at any even offset of a mapped file: read them bytewise.
float LoadNorm(const uint16_t* norms, size_t index) {
  uint16_t h;
  std::memcpy(&h, reinterpret_cast<const uint8_t*>(norms) + 2 * index, 2);
  return HalfToFloat(h);
}

// Nearest-level search over the codes a quantizer may write, via the sorted
// midpoints between adjacent levels. u exactly on a midpoint goes to the lower level.
struct NearestLevel {
  std::array<float, 16> boundary{};  // [count - 1] ascending midpoints
  std::array<uint8_t, 16> code{};    // [count] code of the i-th smallest level
  uint32_t count = 0;

  NearestLevel(const CqLevels& levels, uint32_t bits) {
    std::array<uint8_t, 16> candidates{};
    if (bits == kTernaryBits) {
      candidates[0] = 3;  // -c
      candidates[1] = 0;  //  0
      candidates[2] = 1;  // +c   (code 2 = -2c is never written)
      count = 3;
    } else {
      count = levels.count;
      for (uint32_t i = 0; i < count; ++i) candidates[i] = static_cast<uint8_t>(i);
    }
    // Header codebooks are ascending, but sort anyway: stable, so equal levels keep the lower code.
    std::stable_sort(candidates.begin(), candidates.begin() + count,
                     [&](uint8_t a, uint8_t b) { return levels.value[a] < levels.value[b]; });
    code = candidates;
    for (uint32_t i = 0; i + 1 < count; ++i) {
      boundary[i] = 0.5f * (levels.value[code[i]] + levels.value[code[i + 1]]);
    }
  }

  uint8_t operator()(float u) const {
    uint32_t rank = 0;
    for (uint32_t i = 0; i + 1 < count; ++i) rank += u > boundary[i] ? 1u : 0u;
    return code[rank];
  }
};

void CheckView(const CqMatrixView& m, uint32_t row) {
  if (row >= m.rows) {
    throw Error(ErrorCode::kInvalidArgument,
                "CQ row " + std::to_string(row) + " out of range (rows = " + std::to_string(m.rows) + ")");
  }
}

}  // namespace

CqLevels MakeCqLevels(uint32_t bits, std::span<const float> header_codebook) {
  CqLevels levels;
  if (bits == kTernaryBits) {
    // Field values 0, 1, 2, 3 sign-extend to 0, +1, -2, -1 (times c / sqrt(g)).
    const float c = static_cast<float>(kTernaryLevel / std::sqrt(static_cast<double>(kCqGroup)));
    levels.value[0] = 0.0f;
    levels.value[1] = c;
    levels.value[2] = -2.0f * c;
    levels.value[3] = -c;
    levels.count = 4;
    return levels;
  }
  if (bits != 2 && bits != 3 && bits != 4) {
    throw Error(ErrorCode::kInvalidArgument,
                "CQ bits must be 2, 3, 4 or 5 (ternary), got " + std::to_string(bits));
  }
  const size_t offset = static_cast<size_t>(CodebookOffset(static_cast<int>(bits)));
  const uint32_t count = 1u << bits;
  if (header_codebook.size() < offset + count) {
    throw Error(ErrorCode::kInvalidArgument,
                "CQ codebook has " + std::to_string(header_codebook.size()) + " entries, " +
                    std::to_string(bits) + "-bit levels need " + std::to_string(offset + count));
  }
  for (uint32_t i = 0; i < count; ++i) levels.value[i] = header_codebook[offset + i];
  levels.count = count;
  return levels;
}

CqMatrixView MakeCqMatrixView(const uint8_t* blob, uint32_t rows, uint32_t in, uint32_t bits,
                              std::span<const float> header_codebook) {
  CqMatrixView m;
  m.levels = MakeCqLevels(bits, header_codebook);  // validates bits
  m.codes = blob;
  m.norms = reinterpret_cast<const uint16_t*>(blob + static_cast<uint64_t>(rows) * CqRowBytes(in, bits));
  m.rows = rows;
  m.in = in;
  m.bits = bits;
  return m;
}

// ---- packing ------------------------------------------------------------------

void PackCodes(const uint8_t* fields, size_t n, uint32_t field_bits, uint8_t* out) {
  if (field_bits < 1 || field_bits > 8) {
    throw Error(ErrorCode::kInvalidArgument, "PackCodes: field_bits must be 1..8, got " + std::to_string(field_bits));
  }
  const size_t nbytes = (n * field_bits + 7) / 8;
  std::memset(out, 0, nbytes);
  const uint32_t mask = (1u << field_bits) - 1;
  for (size_t k = 0; k < n; ++k) {
    const size_t bit = k * field_bits;
    const uint32_t shifted = (fields[k] & mask) << (bit & 7);  // at most 15 bits
    out[bit >> 3] |= static_cast<uint8_t>(shifted);
    if ((bit & 7) + field_bits > 8) out[(bit >> 3) + 1] |= static_cast<uint8_t>(shifted >> 8);
  }
}

void UnpackCodes(const uint8_t* packed, size_t n, uint32_t field_bits, uint8_t* fields) {
  if (field_bits < 1 || field_bits > 8) {
    throw Error(ErrorCode::kInvalidArgument, "UnpackCodes: field_bits must be 1..8, got " + std::to_string(field_bits));
  }
  const uint32_t mask = (1u << field_bits) - 1;
  switch (field_bits) {  // common widths: whole fields per byte
    case 2:
      for (size_t k = 0; k < n; ++k) fields[k] = (packed[k >> 2] >> (2 * (k & 3))) & 3u;
      return;
    case 4:
      for (size_t k = 0; k < n; ++k) fields[k] = (packed[k >> 1] >> (4 * (k & 1))) & 15u;
      return;
    default:
      break;
  }
  for (size_t k = 0; k < n; ++k) {
    const size_t bit = k * field_bits;
    const size_t byte = bit >> 3;
    uint32_t window = packed[byte];
    if ((bit & 7) + field_bits > 8) window |= static_cast<uint32_t>(packed[byte + 1]) << 8;
    fields[k] = static_cast<uint8_t>((window >> (bit & 7)) & mask);
  }
}

// ---- quantize / dequantize -----------------------------------------------------

void CqQuantize(const float* w, uint32_t rows, uint32_t in, uint32_t bits,
                std::span<const float> header_codebook, uint8_t* blob) {
  const CqLevels levels = MakeCqLevels(bits, header_codebook);  // validates bits
  const NearestLevel nearest(levels, bits);
  const uint32_t field_bits = CqFieldBits(bits);
  const size_t in_pad = CqPaddedIn(in);
  const size_t groups = CqGroupsPerRow(in);
  const size_t row_bytes = CqRowBytes(in, bits);
  uint8_t* norms = blob + static_cast<size_t>(rows) * row_bytes;

  std::vector<float> r(in_pad);          // one padded row, rotated group by group
  std::vector<uint8_t> codes(in_pad);    // its codes before packing
  for (size_t row = 0; row < rows; ++row) {
    std::copy(w + row * in, w + row * in + in, r.begin());
    std::fill(r.begin() + in, r.end(), 0.0f);
    for (size_t g = 0; g < groups; ++g) {
      float* rg = r.data() + g * kCqGroup;
      FastWalshHadamard(rg, kCqGroup);
      double sum_sq = 0.0;
      for (uint32_t k = 0; k < kCqGroup; ++k) sum_sq += static_cast<double>(rg[k]) * rg[k];
      const float norm = static_cast<float>(std::sqrt(sum_sq));
      uint8_t* cg = codes.data() + g * kCqGroup;
      if (norm > 0.0f) {
        for (uint32_t k = 0; k < kCqGroup; ++k) cg[k] = nearest(rg[k] / norm);
      } else {
        std::fill(cg, cg + kCqGroup, nearest(0.0f));
      }
      const uint16_t h = FloatToHalf(norm);
      std::memcpy(norms + 2 * (row * groups + g), &h, 2);
    }
    PackCodes(codes.data(), in_pad, field_bits, blob + row * row_bytes);
  }
}

void CqDequantizeRow(const CqMatrixView& m, uint32_t row, float* out) {
  CheckView(m, row);
  const uint32_t field_bits = CqFieldBits(m.bits);
  const size_t groups = CqGroupsPerRow(m.in);
  const size_t group_bytes = kCqGroup * field_bits / 8;
  const uint8_t* row_codes = m.codes + row * CqRowBytes(m.in, m.bits);
  uint8_t codes[kCqGroup];
  float group[kCqGroup];
  for (size_t g = 0; g < groups; ++g) {
    UnpackCodes(row_codes + g * group_bytes, kCqGroup, field_bits, codes);
    const float norm = LoadNorm(m.norms, row * groups + g);
    for (uint32_t k = 0; k < kCqGroup; ++k) group[k] = m.levels.value[codes[k]] * norm;
    FastWalshHadamard(group, kCqGroup);
    const size_t begin = g * kCqGroup;
    const size_t take = std::min<size_t>(kCqGroup, m.in - begin);  // drop the padding
    std::copy(group, group + take, out + begin);
  }
}

void CqDequantize(const CqMatrixView& m, float* out) {
  for (uint32_t row = 0; row < m.rows; ++row) CqDequantizeRow(m, row, out + static_cast<size_t>(row) * m.in);
}

// ---- reference dot products on the packed form -----------------------------------

void CqRotateActivation(const float* x, uint32_t in, float* x_rot) {
  const size_t in_pad = CqPaddedIn(in);
  std::copy(x, x + in, x_rot);
  std::fill(x_rot + in, x_rot + in_pad, 0.0f);
  for (size_t g = 0; g < in_pad; g += kCqGroup) FastWalshHadamard(x_rot + g, kCqGroup);
}

float CqDotRowReference(const CqMatrixView& m, uint32_t row, const float* x_rot) {
  CheckView(m, row);
  const uint32_t field_bits = CqFieldBits(m.bits);
  const size_t groups = CqGroupsPerRow(m.in);
  const size_t group_bytes = kCqGroup * field_bits / 8;
  const uint8_t* row_codes = m.codes + row * CqRowBytes(m.in, m.bits);
  uint8_t codes[kCqGroup];
  double total = 0.0;
  for (size_t g = 0; g < groups; ++g) {
    UnpackCodes(row_codes + g * group_bytes, kCqGroup, field_bits, codes);
    const float* xg = x_rot + g * kCqGroup;
    double acc = 0.0;
    for (uint32_t k = 0; k < kCqGroup; ++k) acc += static_cast<double>(xg[k]) * m.levels.value[codes[k]];
    total += acc * LoadNorm(m.norms, row * groups + g);
  }
  return static_cast<float>(total);
}

}  // namespace needle
