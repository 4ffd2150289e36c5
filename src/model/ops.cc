#include "model/ops.h"

#include <algorithm>
#include <vector>

namespace needle {

void ZcRmsNorm(const float* x, const float* scale, size_t n, float* out) {
  double ss = 0.0;
  for (size_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  const float inv = 1.0f / std::sqrt(static_cast<float>(ss / n) + kNormEps);
  for (size_t i = 0; i < n; ++i) out[i] = (1.0f + scale[i]) * x[i] * inv;
}

void RmsUnit(const float* x, size_t n, float* out) {
  double ss = 0.0;
  for (size_t i = 0; i < n; ++i) ss += double(x[i]) * x[i];
  const float inv = 1.0f / std::sqrt(static_cast<float>(ss / n) + kNormEps);
  for (size_t i = 0; i < n; ++i) out[i] = x[i] * inv;
}

void ApplyRope(float* x, size_t hd, double pos, const double* inv_freq) {
  const size_t half = hd / 2;
  for (size_t i = 0; i < half; ++i) {
    const double angle = pos * inv_freq[i];
    const float c = static_cast<float>(std::cos(angle)), s = static_cast<float>(std::sin(angle));
    const float x1 = x[i], x2 = x[i + half];
    x[i] = x1 * c - x2 * s;
    x[i + half] = x2 * c + x1 * s;
  }
}

void MatVec(const float* w, const float* x, size_t rows, size_t in, float* y) {
  for (size_t r = 0; r < rows; ++r) {
    const float* row = w + r * in;
    float acc = 0.0f;
    for (size_t i = 0; i < in; ++i) acc += row[i] * x[i];
    y[r] = acc;
  }
}

void SinkhornInPlace(float* m, size_t n, int iterations) {
  for (int it = 0; it < iterations; ++it) {
    for (size_t r = 0; r < n; ++r) {  // rows
      float mx = m[r * n];
      for (size_t c = 1; c < n; ++c) mx = std::max(mx, m[r * n + c]);
      float s = 0.0f;
      for (size_t c = 0; c < n; ++c) s += std::exp(m[r * n + c] - mx);
      const float lse = mx + std::log(s);
      for (size_t c = 0; c < n; ++c) m[r * n + c] -= lse;
    }
    for (size_t c = 0; c < n; ++c) {  // columns
      float mx = m[c];
      for (size_t r = 1; r < n; ++r) mx = std::max(mx, m[r * n + c]);
      float s = 0.0f;
      for (size_t r = 0; r < n; ++r) s += std::exp(m[r * n + c] - mx);
      const float lse = mx + std::log(s);
      for (size_t r = 0; r < n; ++r) m[r * n + c] -= lse;
    }
  }
  for (size_t i = 0; i < n * n; ++i) m[i] = std::exp(m[i]);
}

}  // namespace needle
