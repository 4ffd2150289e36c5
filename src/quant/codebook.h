// Lloyd–Max quantizer levels for the standard normal, computed from exact
// Gaussian integrals (no sampling). CQ stores them divided by sqrt(group) in
// the archive header; readers use the stored values and never recompute them.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

namespace needle {

// The optimal `levels`-level quantizer of N(0, 1): centroids in ascending
// order, iterated until boundaries (midpoints) and centroids (conditional
// means) are consistent to ~1e-15.
std::vector<double> LloydMaxGaussian(int levels);

// Expected mean squared error of that quantizer on N(0, 1) (exact integral).
double LloydMaxGaussianMse(const std::vector<double>& centroids);

// Header codebook: cb2[4] | cb3[8] | cb4[16], each Lloyd–Max set / sqrt(group).
inline constexpr int kCodebookLen = 28;
std::array<float, kCodebookLen> ComputeHeaderCodebook(int group_size);

// Offsets of each width inside the header codebook.
inline constexpr int CodebookOffset(int bits) { return bits == 2 ? 0 : bits == 3 ? 4 : 12; }

// Ternary (1.58-bit) level c: levels {-c, 0, +c} / sqrt(group), not stored.
inline constexpr double kTernaryLevel = 1.2240064;

}  // namespace needle
