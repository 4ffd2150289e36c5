// Scalar building blocks of the SAN (SPEC §1), written to be read against the
// spec. Both the fp32 reference and the fast path use them where they are not
// hot; the fast path's kernels are tested against these.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>

namespace needle {

inline constexpr float kNormEps = 1e-6f;

inline float Sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
inline float Silu(float x) { return x / (1.0f + std::exp(-x)); }

// out = (1 + scale) * x / sqrt(mean(x^2) + eps). out may alias x.
void ZcRmsNorm(const float* x, const float* scale, size_t n, float* out);
// out = x / sqrt(mean(x^2) + eps). out may alias x.
void RmsUnit(const float* x, size_t n, float* out);

// Half-split RoPE on one head vector of size hd at position `pos`:
// [x1*cos - x2*sin, x2*cos + x1*sin] with frequencies theta^(-2i/hd).
// `inv_freq` holds theta^(-2i/hd) for i < hd/2. Angles are reduced in double
// so that positions in the millions keep full precision.
void ApplyRope(float* x, size_t hd, double pos, const double* inv_freq);

// y[r] = sum_i w[r*in + i] * x[i] for a row-major [rows, in] fp32 matrix.
void MatVec(const float* w, const float* x, size_t rows, size_t in, float* y);

// In place: 20 iterations of log-domain Sinkhorn on an n×n matrix of logits
// (subtract row log-sum-exp, then column log-sum-exp), then exp.
void SinkhornInPlace(float* m, size_t n, int iterations = 20);

// The engram table index of table t (order `order`) at position p, SPEC §1.
// tokens[0..p] are the sequence; positions before 0 count as token 0.
inline uint32_t EngramIndex(uint32_t t, uint32_t order, const int32_t* tokens, int64_t p, uint32_t slots) {
  uint32_t acc = 0x9E3779B9u * (t + 1);
  for (uint32_t j = 0; j < order; ++j) {
    const int64_t q = p - j;
    const uint32_t tok = q >= 0 ? static_cast<uint32_t>(tokens[q]) : 0u;
    acc = (acc ^ tok) * 0x01000193u;
  }
  acc ^= acc >> 15;
  return acc % slots;
}

}  // namespace needle
