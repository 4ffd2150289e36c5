// Exact number bounds for the grammar (internal to grammar/). A number node
// works on the grid of its scale: x is admitted as the integer
// X = x * 10^scale_digits (integers: scale 0; numbers: scale 15, with at most
// 15 integer and 15 fraction digits), and its bounds are inclusive integers in
// the same units (exclusive bounds become inclusive on the grid). A prefix of
// digits stands for a union of ranges of X (every completion), so "can this
// prefix still end inside the bounds, on a multiple of multipleOf" is a few
// 128-bit comparisons, and a viable prefix always has a completion: the
// grammar never dead-ends inside a number.
#pragma once

#include <cstdint>

#include "grammar/tool_grammar.h"  // Node, Int128

namespace needle::grammar {

struct Pow10Table {
  Int128 v[39];
  constexpr Pow10Table() : v() {
    v[0] = 1;
    for (int i = 1; i < 39; ++i) v[i] = v[i - 1] * 10;
  }
};
inline constexpr Pow10Table kPow10{};
// 10^e for 0 <= e <= 38.
inline Int128 Pow10(int e) { return kPow10.v[e]; }

// floor(a / m) for m > 0.
inline Int128 FloorDiv(Int128 a, Int128 m) {
  Int128 q = a / m;
  if (a % m != 0 && a < 0) --q;
  return q;
}

// Does the signed range (magnitudes [a, b], negated when `neg`) meet the
// node's bounds on a multiple of its multipleOf?
inline bool NumberRangeOk(const Node& n, bool neg, Int128 a, Int128 b) {
  Int128 lo = neg ? -b : a, hi = neg ? -a : b;
  if (lo < n.lo) lo = n.lo;
  if (hi > n.hi) hi = n.hi;
  if (lo > hi) return false;
  return n.mult == 0 || FloorDiv(hi, n.mult) * n.mult >= lo;
}

// Integer-part prefix `v` of `digits` digits (no fraction yet): can some
// completion (more digits, a fraction for numbers) be admitted?
inline bool NumberIntPrefixViable(const Node& n, bool neg, uint64_t v, uint32_t digits) {
  if (!n.bounded) return true;
  const Int128 scale = Pow10(n.scale_digits);
  if (v == 0) return NumberRangeOk(n, neg, 0, scale - 1);  // "0" or "0.xxx"
  Int128 p = 1;
  for (uint32_t j = 0; digits + j <= n.max_int_digits; ++j, p *= 10) {
    if (NumberRangeOk(n, neg, Int128(v) * p * scale, (Int128(v) + 1) * p * scale - 1)) return true;
  }
  return false;
}

// After "v." and `k` fraction digits `f` (k = 0: right after the point).
inline bool NumberFracPrefixViable(const Node& n, bool neg, uint64_t v, uint64_t f, uint32_t k) {
  if (!n.bounded) return true;
  const Int128 unit = Pow10(n.scale_digits - int(k));
  const Int128 a = Int128(v) * Pow10(n.scale_digits) + Int128(f) * unit;
  return NumberRangeOk(n, neg, a, a + unit - 1);
}

// May the number end here: "v" (k = 0) or "v.f" with k fraction digits?
inline bool NumberValueOk(const Node& n, bool neg, uint64_t v, uint64_t f, uint32_t k) {
  if (!n.bounded) return true;
  const Int128 x = Int128(v) * Pow10(n.scale_digits) + Int128(f) * Pow10(n.scale_digits - int(k));
  return NumberRangeOk(n, neg, x, x);
}

}  // namespace needle::grammar
