// The CPU reference's reductions: sum, amax, amin, mean and var_mean over any set of dims, in
// double. Sums are compensated (Neumaier); var_mean is two-pass: the mean, then the sum of
// squared deviations from it, so it has no cancellation whatever the data's offset.
#include <algorithm>
#include <cmath>
#include <limits>

#include "ir/error.h"
#include "ir/op_math.h"
#include "runtime/reference_internal.h"

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

// Each output's inputs, in row-major order of the reduced dims: the order in which a row-major
// walk of the whole input meets them, so that every sum adds in that order whatever the
// threads. `per_output(j, visit)` runs for every output j (row-major over the kept dims), on
// several threads by ranges of outputs; visit(g) calls g(x) for each of output j's inputs.
template <typename PerOutput>
void forEachOutput(const Dense& in, const std::vector<bool>& reduced, PerOutput per_output) {
  const std::vector<int64_t> strides = broadcastStrides(in.shape, in.shape);  // row-major
  std::vector<int64_t> kept_shape, kept_strides, red_shape, red_strides;
  for (size_t d = 0; d < in.shape.size(); ++d) {
    (reduced[d] ? red_shape : kept_shape).push_back(in.shape[d]);
    (reduced[d] ? red_strides : kept_strides).push_back(strides[d]);
  }
  const double* x = in.data.data();
  const std::vector<std::vector<int64_t>> kept = {kept_strides}, red = {red_strides};
  // Fewer outputs per range where each reduces many elements.
  const int64_t per_range = std::max<int64_t>(1, kParallelRange / std::max<int64_t>(1, numelOf(red_shape)));
  runtime::parallelForRanges(numelOf(kept_shape), per_range, [&](int64_t, int64_t begin, int64_t end) {
    forEachIndexIn(kept_shape, kept, begin, end, [&](int64_t j, const int64_t* base) {
      const int64_t b = base[0];
      per_output(j, [&](auto g) {
        forEachIndex(red_shape, red, [&](int64_t, const int64_t* off) { g(x[b + off[0]]); });
      });
    });
  });
}

}  // namespace

std::vector<Dense> evalReduction(const ir::Op& op, const Dense& in,
                                 const std::vector<int64_t>& out_shape) {
  const auto& a = op.attr<ir::ReduceAttrs>();
  const int rank = static_cast<int>(in.shape.size());
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int d : a.dims) reduced[static_cast<size_t>(d)] = true;
  int64_t n_out = 1, n = 1;
  for (int d = 0; d < rank; ++d) (reduced[static_cast<size_t>(d)] ? n : n_out) *= in.shape[static_cast<size_t>(d)];
  LOOM_ASSERT(n_out == numelOf(out_shape), "`{}` output has {} elements, expected {}", op.name(),
              numelOf(out_shape), n_out);
  const DType t = op.input(0)->dtype();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto result = [&]() { return Dense{out_shape, Values(static_cast<size_t>(n_out))}; };

  switch (op.kind()) {
    case ir::OpKind::Sum:
    case ir::OpKind::Mean: {
      Dense r = result();
      forEachOutput(in, reduced, [&](int64_t j, auto visit) {
        Acc acc;
        visit([&](double v) { acc.add(v); });
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
        visit([&](double v) {
          m = seen ? ir::evalBinary(pick, m, v, t) : v;  // NaN propagates, as torch.amax
          seen = true;
        });
        r.data[static_cast<size_t>(j)] = m;
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
        visit([&](double v) { acc.add(v); });
        const double mu = n ? acc.value() / static_cast<double>(n) : nan;
        Acc m2;
        visit([&](double v) { m2.add((v - mu) * (v - mu)); });
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
