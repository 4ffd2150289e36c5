// CqMatMulA8's kernel for 2- and 4-bit widths on CPUs with 512-bit VNNI:
// four weight rows per vector (cq_matmul_rows4.cc). Private to quant/.
#pragma once

#include <cstdint>

#include "quant/cq_matvec.h"

namespace needle {

// Rows [r0, r0 + done) of CqMatMulA8's products, where done is the largest
// multiple of 4 <= r1 - r0; returns done, or 0 (nothing written) where the
// CPU or the width has no such kernel. Each activation's result depends only
// on it, never on the batch, so a batch equals one activation at a time.
uint32_t CqMatMulRows4(const CqMatrixView& w, const CqLevelsQ8& lv, const ActivationQ8* xs, uint32_t batch, uint32_t r0,
                       uint32_t r1, float* y, uint32_t y_stride);

}  // namespace needle
