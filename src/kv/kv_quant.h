// Int8 K/V quantization: one scale per 32 values (max |x| / 127), values
// rounded half to even. SIMD (Highway) with the scalar reference beside it;
// both give the same bytes and floats.
#pragma once

#include <cstdint>

namespace needle {

// Int8 quantization of n values with one scale per 32 (the last group may be shorter).
void QuantizeKvRow(const float* x, uint32_t n, int8_t* q, float* scales);
void QuantizeKvRowReference(const float* x, uint32_t n, int8_t* q, float* scales);
// x replaced by the values its QuantizeKvRow form stands for (q * scale): the
// attention queries go through this, so the kernels may score them as int8.
void SnapToKvGrid(float* x, uint32_t n);
void SnapToKvGridReference(float* x, uint32_t n);

}  // namespace needle
