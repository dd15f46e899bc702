#include "runtime/compare.h"

#include <cmath>

#include "ir/error.h"

namespace loom {

double toleranceFor(DType t) {
  switch (t) {
    case DType::F16: return 2e-3;
    case DType::BF16: return 1.6e-2;
    case DType::F32: return 2e-5;
    case DType::F64: return 1e-12;
    default: return 0.0;  // integers and bool: exact
  }
}

std::string Comparison::str() const {
  return fmt::format("rel err {:.3g} (tol {:.3g}), max abs err {:.3g}{} -> {}", rel_l2, tolerance,
                     max_abs, bad_nonfinite ? fmt::format(", {} misplaced NaN/inf", bad_nonfinite) : "",
                     ok ? "OK" : "MISMATCH");
}

Comparison compareToReference(const HostTensor& got, const HostTensor& ref) {
  LOOM_USER_CHECK(got.shape() == ref.shape() && got.dtype() == ref.dtype(),
                  "comparing {} with reference {}", got.describe(), ref.describe());
  Comparison c;
  c.tolerance = toleranceFor(ref.dtype());
  double num = 0, den = 0;
  for (int64_t i = 0; i < ref.numel(); ++i) {
    double g = got.getLinear(i), r = ref.getLinear(i);
    bool gf = std::isfinite(g), rf = std::isfinite(r);
    if (!gf || !rf) {
      bool same = (std::isnan(g) && std::isnan(r)) || g == r;
      if (!same) ++c.bad_nonfinite;
      continue;
    }
    num += (g - r) * (g - r);
    den += r * r;
    c.max_abs = std::max(c.max_abs, std::abs(g - r));
  }
  c.rel_l2 = std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
  if (den == 0) c.rel_l2 = std::sqrt(num);
  c.ok = c.bad_nonfinite == 0 && c.rel_l2 <= c.tolerance;
  return c;
}

}  // namespace loom
