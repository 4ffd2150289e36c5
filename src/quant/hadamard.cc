// Fast Walsh–Hadamard transform in Sylvester order (SPEC §1).
#include "quant/hadamard.h"

#include <cmath>

namespace needle {

size_t NextPowerOfTwo(size_t n) {
  size_t p = 1;
  while (p < n) p <<= 1;
  return p;
}

void FastWalshHadamardUnnormalised(float* x, size_t n) {
  // Stage h combines pairs (j, j + h) inside blocks of 2h: exactly the block
  // structure of W_2k = [[W, W], [W, -W]], so the result is x · H_n.
  for (size_t h = 1; h < n; h <<= 1) {
    for (size_t block = 0; block < n; block += 2 * h) {
      float* lo = x + block;
      float* hi = lo + h;
      for (size_t j = 0; j < h; ++j) {
        const float a = lo[j];
        const float b = hi[j];
        lo[j] = a + b;
        hi[j] = a - b;
      }
    }
  }
}

void FastWalshHadamard(float* x, size_t n) {
  FastWalshHadamardUnnormalised(x, n);
  const float scale = static_cast<float>(1.0 / std::sqrt(static_cast<double>(n)));
  for (size_t i = 0; i < n; ++i) x[i] *= scale;
}

}  // namespace needle
