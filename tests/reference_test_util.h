#pragma once
// Shared by the CPU reference's tests: the value a tensor of a dtype stores, its ulp, and an
// element-by-element comparison with values computed here, independently of the library.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ir/dtype.h"
#include "reference/reference.h"
#include "runtime/host_tensor.h"

namespace loom::test {

inline const double kNaN = std::numeric_limits<double>::quiet_NaN();
inline const double kInf = std::numeric_limits<double>::infinity();

// Rounds to a binary float format with `mant` fraction bits, smallest normal exponent `emin`
// and largest finite value `max`, to nearest even (written independently of ir/half.h).
inline double roundFormat(double x, int mant, int emin, double max) {
  if (!std::isfinite(x) || x == 0) return x;
  int e = std::max(std::ilogb(x), emin);
  double ulp = std::ldexp(1.0, e - mant);
  double r = std::nearbyint(x / ulp) * ulp;  // the default rounding mode: half to even
  return std::fabs(r) > max ? std::copysign(kInf, x) : r;
}

// What a value stored in a tensor of dtype `t` is (the output tensors of the reference are of
// the output's dtype).
inline double stored(DType t, double x) {
  switch (t) {
    case DType::F16: return roundFormat(x, 10, -14, 65504.0);
    case DType::BF16: return roundFormat(x, 7, -126, 3.3895313892515355e38);
    case DType::F32: return std::isnan(x) ? x : static_cast<double>(static_cast<float>(x));
    case DType::F64: return x;
    case DType::Bool: return x != 0 ? 1 : 0;
    default: return x;  // ints: the formulas give whole numbers in range
  }
}

inline double ulpOf(DType t, double x) {
  int mant = 52, emin = -1022;
  if (t == DType::F32) mant = 23, emin = -126;
  if (t == DType::F16) mant = 10, emin = -14;
  if (t == DType::BF16) mant = 7, emin = -126;
  int e = x == 0 || !std::isfinite(x) ? emin : std::max(std::ilogb(x), emin);
  return std::ldexp(1.0, e - mant);
}

// Compares every element with the formula's value stored in `t`, allowing `ulps` units in the
// last place (f64 also allows a relative 1e-12: the formulas here are not the library's).
inline void checkValues(const HostTensor& got, const std::vector<double>& want, DType t,
                        const std::string& what, double ulps = 1) {
  REQUIRE(got.dtype() == t);
  REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
  REQUIRE(got.isContiguous());
  int64_t bad = 0;
  std::string first;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.getLinear(i), w = stored(t, want[static_cast<size_t>(i)]);
    bool ok;
    if (std::isnan(w) || std::isnan(g)) ok = std::isnan(w) && std::isnan(g);
    else if (std::isinf(w) || std::isinf(g)) ok = g == w;
    else if (!isFloat(t)) ok = g == w;
    else {
      double tol = ulps * ulpOf(t, w);
      if (t == DType::F64) tol = std::max(tol, 1e-12 * std::fabs(w) + 1e-300);
      ok = std::fabs(g - w) <= tol;
    }
    if (!ok && bad++ == 0) first = fmt::format("element {}: got {:.17g}, want {:.17g}", i, g, w);
  }
  INFO(what << ": " << bad << " mismatches of " << got.numel() << "; first " << first);
  CHECK(bad == 0);
}

inline std::vector<HostTensor> run(const ir::Fusion& f, const std::vector<HostTensor>& in,
                                   const Bindings& b = {}) {
  return evaluateReference(f, in, b);
}

}  // namespace loom::test
