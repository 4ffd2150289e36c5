// Lloyd–Max quantizers of N(0, 1) from exact Gaussian integrals.
#include "quant/codebook.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "base/error.h"  // Error

namespace needle {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kInvSqrt2 = 0.70710678118654752440;
constexpr double kInvSqrt2Pi = 0.39894228040143267794;

double NormalPdf(double x) { return std::isinf(x) ? 0.0 : kInvSqrt2Pi * std::exp(-0.5 * x * x); }

// x * pdf(x), with the limit 0 at ±infinity.
double XPdf(double x) { return std::isinf(x) ? 0.0 : x * NormalPdf(x); }

// P(a < X < b) for a <= b, using whichever tail avoids cancellation.
double NormalMass(double a, double b) {
  if (a >= 0) return 0.5 * (std::erfc(a * kInvSqrt2) - std::erfc(b * kInvSqrt2));   // Q(a) - Q(b)
  if (b <= 0) return 0.5 * (std::erfc(-b * kInvSqrt2) - std::erfc(-a * kInvSqrt2)); // Phi(b) - Phi(a)
  return 1.0 - 0.5 * std::erfc(-a * kInvSqrt2) - 0.5 * std::erfc(b * kInvSqrt2);
}

// Boundaries of the nearest-centroid cells: -inf, midpoints..., +inf.
std::vector<double> CellBoundaries(const std::vector<double>& c) {
  std::vector<double> b(c.size() + 1);
  b.front() = -kInf;
  b.back() = kInf;
  for (size_t i = 1; i < c.size(); ++i) b[i] = 0.5 * (c[i - 1] + c[i]);
  return b;
}

}  // namespace

std::vector<double> LloydMaxGaussian(int levels) {
  if (levels < 1 || levels > 256) {
    throw Error(ErrorCode::kInvalidArgument,
                "LloydMaxGaussian: levels must be in [1, 256], got " + std::to_string(levels));
  }
  const size_t n = static_cast<size_t>(levels);
  // Start from evenly spaced points over ±2 (symmetric, ascending).
  std::vector<double> c(n, 0.0);
  for (size_t i = 0; i < n && n > 1; ++i) c[i] = -2.0 + 4.0 * static_cast<double>(i) / static_cast<double>(n - 1);

  for (int iter = 0; iter < 200000; ++iter) {
    const std::vector<double> b = CellBoundaries(c);
    double change = 0.0;
    for (size_t i = 0; i < n; ++i) {
      const double mass = NormalMass(b[i], b[i + 1]);
      const double next = mass > 0 ? (NormalPdf(b[i]) - NormalPdf(b[i + 1])) / mass : c[i];
      change = std::max(change, std::fabs(next - c[i]));
      c[i] = next;
    }
    // The problem is symmetric: keep the iterate exactly so.
    for (size_t i = 0; i < n / 2; ++i) {
      const double m = 0.5 * (c[n - 1 - i] - c[i]);
      c[i] = -m;
      c[n - 1 - i] = m;
    }
    if (n % 2 == 1) c[n / 2] = 0.0;
    if (change < 1e-15) break;
  }
  return c;
}

double LloydMaxGaussianMse(const std::vector<double>& centroids) {
  // Per cell (a, b) with centroid q:
  //   ∫ (x - q)² φ = [P + aφ(a) - bφ(b)] - 2q[φ(a) - φ(b)] + q² P.
  const std::vector<double> b = CellBoundaries(centroids);
  double mse = 0.0;
  for (size_t i = 0; i < centroids.size(); ++i) {
    const double lo = b[i], hi = b[i + 1], q = centroids[i];
    const double mass = NormalMass(lo, hi);
    const double second = mass + XPdf(lo) - XPdf(hi);
    const double first = NormalPdf(lo) - NormalPdf(hi);
    mse += second - 2.0 * q * first + q * q * mass;
  }
  return mse;
}

std::array<float, kCodebookLen> ComputeHeaderCodebook(int group_size) {
  if (group_size <= 0) {
    throw Error(ErrorCode::kInvalidArgument,
                "ComputeHeaderCodebook: group_size must be positive, got " + std::to_string(group_size));
  }
  const double inv_sqrt_g = 1.0 / std::sqrt(static_cast<double>(group_size));
  std::array<float, kCodebookLen> cb{};
  for (int bits = 2; bits <= 4; ++bits) {
    const std::vector<double> c = LloydMaxGaussian(1 << bits);
    for (size_t i = 0; i < c.size(); ++i) {
      cb[static_cast<size_t>(CodebookOffset(bits)) + i] = static_cast<float>(c[i] * inv_sqrt_g);
    }
  }
  return cb;
}

}  // namespace needle
