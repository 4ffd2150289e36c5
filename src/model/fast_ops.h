// SIMD versions of the fast path's per-token elementwise work (Highway,
// dispatched at run time). Each has its scalar yardstick in model/ops.h and a
// test comparing the two; results agree to float rounding (vector sums and
// Highway's exp/log instead of libm), not bit for bit.
#pragma once

#include <cstddef>
#include <cstdint>

namespace needle {

// out = (1 + scale) * x / sqrt(mean(x^2) + eps); out may alias x. (ops.h ZcRmsNorm)
void ZcRmsNormFast(const float* x, const float* scale, size_t n, float* out);
// out = x / sqrt(mean(x^2) + eps); out may alias x. (ops.h RmsUnit)
void RmsUnitFast(const float* x, size_t n, float* out);
// o[i] *= sigmoid(g[i]): the attention output gate.
void MulSigmoid(float* o, const float* g, size_t n);
// z[i] = silu(d2[i] * z[i]): the Hadamard MLP's nonlinearity.
void SiluScaled(float* z, const float* d2, size_t n);
// The mHC lane update: out[r*d + i] = hpost[r] * y[i] + sum_c hres[r*lanes + c] * x[c*d + i].
void MixLanesFast(const float* x, const float* y, const float* hres, const float* hpost, uint32_t lanes, uint32_t d,
                  float* out);
// ops.h SinkhornInPlace (log domain, `iterations` row/column passes, then exp);
// a vector kernel for 4x4 (the mHC lanes), the scalar one otherwise.
void SinkhornFast(float* m, size_t n, int iterations = 20);

}  // namespace needle
