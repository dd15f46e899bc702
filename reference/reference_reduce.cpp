// The CPU reference's reductions: sum, amax, amin, mean and var_mean over any set of dims, in
// double, and argmax and argmin along one. Sums are compensated (Neumaier); var_mean is
// two-pass: the mean, then the sum of squared deviations from it, so it has no cancellation
// whatever the data's offset.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/error.h"
#include "ir/op_math.h"
#include "reference/reference_internal.h"

namespace loom::reference {

namespace {

// Neumaier's compensated sum.
struct Acc {
  double sum = 0, comp = 0;
  void add(double x) {
    double t = sum + x;
    if (std::fabs(sum) >= std::fabs(x)) comp += (sum - t) + x;
    else comp += (x - t) + sum;
    sum = t;
  }
  // A non-finite total (inf, NaN) has no meaningful compensation.
  double value() const { return std::isfinite(sum) ? sum + comp : sum; }
};

}  // namespace

std::vector<Dense> evalReduction(const ir::Op& op, const Dense& in,
                                 const std::vector<int64_t>& out_shape) {
  const auto& a = op.attr<ir::ReduceAttrs>();
  const int rank = static_cast<int>(in.shape.size());
  const std::vector<bool> reduced = reducedDims(op, static_cast<size_t>(rank));
  int64_t n_out = 1, n = 1;
  for (int d = 0; d < rank; ++d) (reduced[static_cast<size_t>(d)] ? n : n_out) *= in.shape[static_cast<size_t>(d)];
  LOOM_ASSERT(n_out == numelOf(out_shape), "`{}` output has {} elements, expected {}", op.name(),
              numelOf(out_shape), n_out);
  const DType t = op.input(0)->dtype();
  const double* x = in.data.data();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto result = [&]() { return Dense{out_shape, Values(static_cast<size_t>(n_out))}; };

  switch (op.kind()) {
    case ir::OpKind::Sum:
    case ir::OpKind::Mean: {
      Dense r = result();
      forEachOutput(in, reduced, [&](int64_t j, auto visit) {
        Acc acc;
        visit([&](int64_t k) { acc.add(x[k]); });
        double s = acc.value();
        if (op.kind() == ir::OpKind::Mean) s = n ? s / static_cast<double>(n) : nan;
        else if (isInt(t)) s = ir::evalCast(s, DType::I64, t);  // wraps like the GPU's adds
        r.data[static_cast<size_t>(j)] = s;
      });
      return {r};
    }
    case ir::OpKind::ReduceMax:
    case ir::OpKind::ReduceMin: {
      LOOM_USER_CHECK(n > 0, "`{}` of `{}` reduces over zero elements, which has no {}; the "
                      "reduced dims must not be empty", op.name(), op.input(0)->name(),
                      op.kind() == ir::OpKind::ReduceMax ? "maximum" : "minimum");
      Dense r = result();
      const ir::OpKind pick = op.kind() == ir::OpKind::ReduceMax ? ir::OpKind::Max : ir::OpKind::Min;
      forEachOutput(in, reduced, [&](int64_t j, auto visit) {
        bool seen = false;
        double m = 0;
        visit([&](int64_t k) {
          const double v = x[k];
          m = seen ? ir::evalBinary(pick, m, v, t) : v;  // NaN propagates, as torch.amax
          seen = true;
        });
        r.data[static_cast<size_t>(j)] = m;
      });
      return {r};
    }
    case ir::OpKind::ArgMax:
    case ir::OpKind::ArgMin: {
      LOOM_USER_CHECK(n > 0, "`{}` of `{}` reduces over zero elements, which have no {}; the reduced "
                      "dim must not be empty", op.name(), op.input(0)->name(),
                      op.kind() == ir::OpKind::ArgMax ? "largest" : "smallest");
      Dense r = result();
      const bool largest = op.kind() == ir::OpKind::ArgMax;
      forEachOutput(in, reduced, [&](int64_t j, auto visit) {
        // The first extreme along the dim, a NaN being more extreme than any number (torch.argmax).
        int64_t at = 0, best = -1;
        double m = 0;
        visit([&](int64_t k) {
          const double v = x[k];
          const bool better = best < 0 || (!std::isnan(m) && (std::isnan(v) || (largest ? v > m : v < m)));
          if (better) {
            m = v;
            best = at;
          }
          ++at;
        });
        r.data[static_cast<size_t>(j)] = static_cast<double>(best);
      });
      return {r};
    }
    case ir::OpKind::VarMean: {
      // torch: var = M2 / max(n - correction, 0), so n <= correction gives inf (or NaN when
      // M2 is 0, e.g. a single element with correction 1).
      const double divisor = static_cast<double>(n) > a.correction ? static_cast<double>(n) - a.correction : 0.0;
      Dense var = result(), mean = result(), count = result();
      forEachOutput(in, reduced, [&](int64_t j, auto visit) {
        Acc acc;
        visit([&](int64_t k) { acc.add(x[k]); });
        const double mu = n ? acc.value() / static_cast<double>(n) : nan;
        Acc m2;
        visit([&](int64_t k) { m2.add((x[k] - mu) * (x[k] - mu)); });
        var.data[static_cast<size_t>(j)] = m2.value() / divisor;
        mean.data[static_cast<size_t>(j)] = mu;
        count.data[static_cast<size_t>(j)] = static_cast<double>(n);
      });
      return {var, mean, count};
    }
    default: break;
  }
  LOOM_ASSERT(false, "`{}` is not a reduction", op.name());
}

}  // namespace loom::reference
