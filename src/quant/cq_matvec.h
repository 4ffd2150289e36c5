// The fast path's matrix products on packed CQ weights with int8 activations
// (SPEC §5, "A8"). Weights are never dequantized into memory:
//
//   y[r] = sum_g norm[r,g] · xs[g] · ls · sum_k xq[g,k] · lq[code[r,g,k]]
//
// where the activation group g was rotated by W_128 once and quantized to
// int8 (xq, scale xs), and the levels of the weight's width were quantized to
// int8 (lq, scale ls). Integer dot products per group, float across groups.
//
// Activations are laid out per weight width ("planar" order inside each group
// of 128) so the SIMD kernel can decode a plane of codes with one shift+mask:
//   2-bit fields (2-bit, ternary): slot j*32 + i holds column 4i + j
//   4-bit fields:                  slot j*64 + i holds column 2i + j
//   3-bit fields:                  natural order (a group is decoded to bytes first)
#pragma once

#include <cstdint>

#include "quant/cq.h"  // CqMatrixView, CqLevels

namespace needle {

// int8 levels of one width, as int16 for widening multiplies.
struct CqLevelsQ8 {
  int16_t level[16] = {};
  uint8_t level_u8[16] = {};  // the same values as int8 bit patterns (for byte table lookups)
  float scale = 0.0f;          // level value = level[code] * scale
};
CqLevelsQ8 QuantizeLevels(const CqLevels& levels);

// One activation vector prepared for matrices of a given field width.
// Buffers are owned by the caller (sized with in_pad and groups).
struct ActivationQ8 {
  int8_t* q = nullptr;     // [in_pad], in [-127, 127], planar order for `field_bits`
  float* scale = nullptr;  // [in_pad / 128]
  int32_t* sum = nullptr;  // [in_pad / 128]: the sum of each group's q (for byte products, see cq_matvec.cc)
  uint32_t in_pad = 0;
  uint32_t field_bits = 0;
};

// Rotates x[0..in) (zero-padded to in_pad) by W_128 per group into `rotated`,
// then quantizes per group into `out` (whose q/scale buffers must hold in_pad/groups).
void RotateForCq(const float* x, uint32_t in, float* rotated);
void QuantizeActivation(const float* rotated, uint32_t in_pad, uint32_t field_bits, ActivationQ8& out);
// The scalar yardstick of QuantizeActivation (identical output).
void QuantizeActivationReference(const float* rotated, uint32_t in_pad, uint32_t field_bits, ActivationQ8& out);

// y[r - r0] for rows [r0, r1). Scalar reference: readable, the yardstick.
void CqMatVecA8Reference(const CqMatrixView& w, const CqLevelsQ8& lv, const ActivationQ8& x, uint32_t r0,
                         uint32_t r1, float* y);
// The same with SIMD for every width (2-bit, ternary, 3-bit, 4-bit);
// results equal the reference up to float summation order.
void CqMatVecA8(const CqMatrixView& w, const CqLevelsQ8& lv, const ActivationQ8& x, uint32_t r0, uint32_t r1,
                float* y);
// Several activations against the same rows, decoding each code once:
// y[b * y_stride + (r - r0)] for b < batch.
void CqMatMulA8(const CqMatrixView& w, const CqLevelsQ8& lv, const ActivationQ8* xs, uint32_t batch, uint32_t r0,
                uint32_t r1, float* y, uint32_t y_stride);

// Which SIMD target the dispatcher chose (for bench output), e.g. "AVX3".
const char* CqKernelTarget();

}  // namespace needle
