#pragma once
// Shared by the backward composites' tests: the exact derivative of a forward fusion, by central
// finite differences of its float64 CPU reference, to check a backward fusion against.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "reference/reference.h"
#include "runtime/host_tensor.h"

namespace loom::test {

using Vec = std::vector<double>;

// sum over the outputs o of sum_i cot[o][i] * out[o][i]: the scalar whose gradient is the
// vector-Jacobian product with cotangents `cot` (one per output, in output order; an empty
// one leaves its output out).
inline double weightedSum(const ir::Fusion& f, const std::vector<HostTensor>& in, const std::vector<Vec>& cot) {
  auto out = evaluateReference(f, in);
  REQUIRE(out.size() == cot.size());
  double s = 0;
  for (size_t o = 0; o < out.size(); ++o) {
    if (cot[o].empty()) continue;
    REQUIRE(out[o].numel() == static_cast<int64_t>(cot[o].size()));
    for (int64_t i = 0; i < out[o].numel(); ++i) s += cot[o][static_cast<size_t>(i)] * out[o].getLinear(i);
  }
  return s;
}

// d weightedSum / d in[k], element by element (row-major), by central differences with step h.
// The forward must be an f64 fusion: its reference is then exact to a few ulps, and the
// differences' error is O(h^2) plus rounding of O(1e-16 / h).
inline Vec finiteDiffGrad(const ir::Fusion& f, std::vector<HostTensor> in, const std::vector<Vec>& cot,
                          size_t k, double h = 1e-5) {
  Vec g;
  HostTensor& t = in[k];
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double v = t.getLinear(i);
    t.setLinear(i, v + h);
    const double up = weightedSum(f, in, cot);
    t.setLinear(i, v - h);
    const double down = weightedSum(f, in, cot);
    t.setLinear(i, v);
    g.push_back((up - down) / (2 * h));
  }
  return g;
}

// `got` (any dtype, any strides) against `want` within `rtol` of want's largest magnitude
// (at least 1): finite differences are accurate to the scale of the gradient, not of each element.
inline void checkGrad(const HostTensor& got, const Vec& want, const std::string& what, double rtol = 1e-7) {
  REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
  double scale = 1;
  for (double w : want) scale = std::max(scale, std::fabs(w));
  int64_t bad = 0;
  double worst = 0;
  std::string first;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.getLinear(i), w = want[static_cast<size_t>(i)];
    double err = std::fabs(g - w);
    worst = std::max(worst, err);
    if (!(err <= rtol * scale) && bad++ == 0)
      first = fmt::format("element {}: got {:.12g}, finite differences give {:.12g}", i, g, w);
  }
  INFO(what << ": " << bad << " of " << got.numel() << " off by more than " << rtol * scale
            << " (largest error " << worst << "); first " << first);
  CHECK(bad == 0);
}

inline Vec values(const HostTensor& t) { return t.toVector(); }

}  // namespace loom::test
