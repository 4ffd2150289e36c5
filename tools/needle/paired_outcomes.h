// Paired comparison of one metric on the same cases measured twice (turn 1
// vs after N turns of traffic, `needle eval --long-session N`). Comparing two
// percentages of 100 cases each hides how noisy the gap is; the pairs show
// which cases changed and how sure the difference is.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace needle::cli {

struct PairedOutcomes {
  uint64_t both = 0, lost = 0, gained = 0, neither = 0;  // counts of cases: right before and after, before only, after only, never

  void Add(bool before, bool after) { ++(before ? (after ? both : lost) : (after ? gained : neither)); }
  void Merge(const PairedOutcomes& o) { both += o.both, lost += o.lost, gained += o.gained, neither += o.neither; }
  uint64_t pairs() const { return both + lost + gained + neither; }

  // after - before, in percentage points.
  double DifferencePoints() const { return pairs() ? 100.0 * (double(gained) - double(lost)) / double(pairs()) : 0.0; }

  // 95% interval of the difference (points): Agresti & Min's adjusted Wald
  // interval for matched proportions (half a case added to each of the four
  // cells), which keeps its coverage when few cases change.
  void Interval95(double* lo, double* hi) const {
    const double n = double(pairs()) + 2.0, b = double(lost) + 0.5, c = double(gained) + 0.5;
    const double d = (c - b) / n, se = std::sqrt(std::max(0.0, (b + c) - (c - b) * (c - b) / n)) / n;
    *lo = 100.0 * std::max(-1.0, d - 1.959964 * se);
    *hi = 100.0 * std::min(1.0, d + 1.959964 * se);
  }

  // Exact two-sided McNemar test: P(a split of the changed cases at least as
  // uneven as this one) when a change is as likely to go either way.
  double McNemarP() const {
    const uint64_t m = lost + gained, k = std::min(lost, gained);
    if (m == 0) return 1.0;
    double tail = 0.0;  // P(X <= k), X ~ Binomial(m, 1/2), summed in log space (m can be large)
    for (uint64_t i = 0; i <= k; ++i) {
      tail += std::exp(std::lgamma(double(m) + 1) - std::lgamma(double(i) + 1) - std::lgamma(double(m - i) + 1) - double(m) * std::log(2.0));
    }
    return std::min(1.0, 2.0 * tail);
  }
};

}  // namespace needle::cli
