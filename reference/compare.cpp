#include "reference/compare.h"

#include <algorithm>
#include <cmath>
#include <new>
#include <vector>

#include "ir/error.h"
#include "ir/fusion.h"
#include "reference/reference.h"
#include "runtime/parallel.h"

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
  const std::string at = worst_index >= 0 ? fmt::format("at {}, ", worst_index) : "";
  // With bounds, rel err and worst element count only error beyond the bounds.
  return fmt::format("{}rel err {:.3g} (tol {:.3g}), max abs err {:.3g}, worst element {:.3g} tol ({}limit {:g}){} -> {}",
                     bounded ? fmt::format("with error bounds, counting error beyond {:g}x each element's: ", kBoundFactor) : "",
                     rel_l2, tolerance, max_abs, worst, at, kElementFactor,
                     bad_nonfinite ? fmt::format(", {} misplaced NaN/inf", bad_nonfinite) : "", ok ? "OK" : "MISMATCH");
}

double elementTolerance(const ir::Fusion& f, DType out) {
  double tol = toleranceFor(out);
  for (const ir::Value* v : f.values())
    if (!v->isInput() && isFloat(v->dtype())) tol = std::max(tol, toleranceFor(v->dtype()));
  return tol;
}

// What rounding to `t` costs at the bottom of its range: one step between its subnormals.
static double subnormalStep(DType t) {
  switch (t) {
    case DType::F16: return std::ldexp(1.0, -24);
    case DType::BF16: return std::ldexp(1.0, -133);
    case DType::F32: return std::ldexp(1.0, -149);
    default: return 0.0;
  }
}

Comparison compareToReference(const HostTensor& got, const HostTensor& ref, double element_tolerance,
                              const HostTensor* bound) {
  LOOM_USER_CHECK(got.shape() == ref.shape() && got.dtype() == ref.dtype(),
                  "comparing {} with reference {}", got.describe(), ref.describe());
  LOOM_ASSERT(!bound || (bound->shape() == ref.shape() && bound->dtype() == DType::F64),
              "error bounds {} for reference {}", bound ? bound->describe() : "", ref.describe());
  Comparison c;
  c.bounded = bound != nullptr;
  c.tolerance = toleranceFor(ref.dtype());
  // Ranges of elements on several threads, each range's partial results kept apart and
  // combined in range order: the same answer on any number of threads.
  constexpr int64_t kRange = int64_t{1} << 18;
  const int64_t n = ref.numel();
  const size_t ranges = static_cast<size_t>((n + kRange - 1) / kRange);
  struct Part {
    double num = 0, den = 0, max_abs = 0, worst = 0;
    int64_t finite = 0, bad_nonfinite = 0, worst_index = -1;
  };
  std::vector<Part> parts(ranges);
  // fn(part of the element's range, element index, got, reference, the slack its bound gives)
  // for every element.
  auto forEachElement = [&](auto fn) {
    runtime::parallelForRanges(n, kRange, [&](int64_t ri, int64_t begin, int64_t end) {
      std::vector<double> gv(static_cast<size_t>(end - begin)), rv(gv.size()), bv(gv.size(), 0.0);
      got.readLinear(begin, end, gv.data());
      ref.readLinear(begin, end, rv.data());
      if (bound) bound->readLinear(begin, end, bv.data());
      Part p = parts[static_cast<size_t>(ri)];  // a local copy: no stores to a line other threads share
      for (size_t k = 0; k < gv.size(); ++k) fn(p, begin + static_cast<int64_t>(k), gv[k], rv[k], kBoundFactor * bv[k]);
      parts[static_cast<size_t>(ri)] = p;
    });
  };
  forEachElement([](Part& p, int64_t, double g, double r, double slack) {
    if (!std::isfinite(g) || !std::isfinite(r)) {
      // An unbounded element (a pole within its operands' error) may land anywhere.
      bool same = (std::isnan(g) && std::isnan(r)) || g == r || std::isinf(slack);
      if (!same) ++p.bad_nonfinite;
      return;
    }
    const double beyond = std::max(0.0, std::abs(g - r) - slack);
    p.num += beyond * beyond;
    p.den += r * r;
    ++p.finite;
    p.max_abs = std::max(p.max_abs, std::abs(g - r));
  });
  double num = 0, den = 0;
  int64_t finite = 0;
  for (const Part& p : parts) {
    num += p.num;
    den += p.den;
    finite += p.finite;
    c.bad_nonfinite += p.bad_nonfinite;
    c.max_abs = std::max(c.max_abs, p.max_abs);
  }
  c.rel_l2 = std::sqrt(num) / std::max(std::sqrt(den), 1e-30);
  if (den == 0) c.rel_l2 = std::sqrt(num);
  // Second pass, element by element, against the reference's RMS (known only now).
  const double rms = finite ? std::sqrt(den / static_cast<double>(finite)) : 0.0;
  const bool exact = c.tolerance == 0;
  const double etol = std::max(element_tolerance, c.tolerance);
  const double step = subnormalStep(ref.dtype());
  forEachElement([&](Part& p, int64_t i, double g, double r, double slack) {
    if (!std::isfinite(g) || !std::isfinite(r)) return;
    const double err = std::max(0.0, std::abs(g - r) - step - slack);
    const double scale = rms + std::abs(r);  // 0 only where the whole reference is: then absolute
    const double w = exact ? err : err / (etol * (scale > 0 ? scale : 1.0));
    if (w > p.worst) {
      p.worst = w;
      p.worst_index = i;
    }
  });
  for (const Part& p : parts)  // the first element of the largest weight, as one pass finds
    if (p.worst > c.worst) {
      c.worst = p.worst;
      c.worst_index = p.worst_index;
    }
  c.ok = c.bad_nonfinite == 0 && c.rel_l2 <= c.tolerance && (exact ? c.worst == 0 : c.worst <= kElementFactor);
  return c;
}

std::vector<Comparison> compareOutputs(const ir::Fusion& f, const std::vector<HostTensor>& inputs,
                                       const Bindings& sizes, const std::vector<HostTensor>& got,
                                       const std::vector<HostTensor>& ref) {
  LOOM_ASSERT(got.size() == f.outputs().size() && ref.size() == got.size(),
              "{} results and {} references for the {} outputs of `{}`", got.size(), ref.size(),
              f.outputs().size(), f.name());
  std::vector<Comparison> cs;
  for (size_t i = 0; i < got.size(); ++i)
    cs.push_back(compareToReference(got[i], ref[i], elementTolerance(f, ref[i].dtype())));
  if (std::all_of(cs.begin(), cs.end(), [](const Comparison& c) { return c.ok; })) return cs;
  ReferenceWithBounds rb;
  try {
    rb = evaluateReferenceBounds(f, inputs, sizes);
  } catch (const Error&) {  // the bounds do not fit in memory: the plain comparisons stand
    return cs;
  } catch (const std::bad_alloc&) {
    return cs;
  }
  for (size_t i = 0; i < got.size(); ++i)
    if (!cs[i].ok) cs[i] = compareToReference(got[i], rb.values[i], elementTolerance(f, ref[i].dtype()), &rb.bounds[i]);
  return cs;
}

}  // namespace loom
