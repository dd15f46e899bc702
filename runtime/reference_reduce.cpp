// The CPU reference's reductions: sum, amax, amin, mean and var_mean over any set of dims, in
// double. Sums are compensated (Neumaier); var_mean is two-pass: the mean, then the sum of
// squared deviations from it, so it has no cancellation whatever the data's offset.
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

}  // namespace

std::vector<Dense> evalReduction(const ir::Op& op, const Dense& in,
                                 const std::vector<int64_t>& out_shape) {
  const auto& a = op.attr<ir::ReduceAttrs>();
  const int rank = static_cast<int>(in.shape.size());
  // Stride of each input dim in the output: 0 for reduced dims, else the kept dim's stride.
  std::vector<bool> reduced(static_cast<size_t>(rank), false);
  for (int d : a.dims) reduced[static_cast<size_t>(d)] = true;
  std::vector<int64_t> kept_shape;
  for (int d = 0; d < rank; ++d)
    if (!reduced[static_cast<size_t>(d)]) kept_shape.push_back(in.shape[static_cast<size_t>(d)]);
  const int64_t n_out = numelOf(kept_shape);
  LOOM_ASSERT(n_out == numelOf(out_shape), "`{}` output has {} elements, expected {}", op.name(),
              numelOf(out_shape), n_out);
  std::vector<int64_t> out_strides(static_cast<size_t>(rank), 0);
  int64_t stride = 1;
  for (int d = rank - 1; d >= 0; --d) {
    if (reduced[static_cast<size_t>(d)]) continue;
    out_strides[static_cast<size_t>(d)] = stride;
    stride *= in.shape[static_cast<size_t>(d)];
  }
  int64_t n = 1;
  for (int d : a.dims) n *= in.shape[static_cast<size_t>(d)];
  const std::vector<std::vector<int64_t>> strides = {out_strides};
  const double* x = in.data.data();
  const DType t = op.input(0)->dtype();
  const double nan = std::numeric_limits<double>::quiet_NaN();
  auto result = [&]() { return Dense{out_shape, std::vector<double>(static_cast<size_t>(n_out))}; };

  switch (op.kind()) {
    case ir::OpKind::Sum:
    case ir::OpKind::Mean: {
      std::vector<Acc> acc(static_cast<size_t>(n_out));
      forEachIndex(in.shape, strides, [&](int64_t i, const int64_t* off) { acc[static_cast<size_t>(off[0])].add(x[i]); });
      Dense r = result();
      for (int64_t j = 0; j < n_out; ++j) {
        double s = acc[static_cast<size_t>(j)].value();
        if (op.kind() == ir::OpKind::Mean) s = n ? s / static_cast<double>(n) : nan;
        else if (isInt(t)) s = ir::evalCast(s, DType::I64, t);  // wraps like the GPU's adds
        r.data[static_cast<size_t>(j)] = s;
      }
      return {r};
    }
    case ir::OpKind::ReduceMax:
    case ir::OpKind::ReduceMin: {
      LOOM_USER_CHECK(n > 0, "`{}` of `{}` reduces over zero elements, which has no {}; the "
                      "reduced dims must not be empty", op.name(), op.input(0)->name(),
                      op.kind() == ir::OpKind::ReduceMax ? "maximum" : "minimum");
      Dense r = result();
      const bool is_max = op.kind() == ir::OpKind::ReduceMax;
      std::vector<bool> seen(static_cast<size_t>(n_out), false);
      forEachIndex(in.shape, strides, [&](int64_t i, const int64_t* off) {
        size_t j = static_cast<size_t>(off[0]);
        double& m = r.data[j];
        if (!seen[j]) {
          m = x[i];
          seen[j] = true;
        } else {  // NaN propagates, as torch.amax
          m = ir::evalBinary(is_max ? ir::OpKind::Max : ir::OpKind::Min, m, x[i], t);
        }
      });
      return {r};
    }
    case ir::OpKind::VarMean: {
      std::vector<Acc> acc(static_cast<size_t>(n_out));
      forEachIndex(in.shape, strides, [&](int64_t i, const int64_t* off) { acc[static_cast<size_t>(off[0])].add(x[i]); });
      Dense mean = result();
      for (int64_t j = 0; j < n_out; ++j)
        mean.data[static_cast<size_t>(j)] = n ? acc[static_cast<size_t>(j)].value() / static_cast<double>(n) : nan;
      std::vector<Acc> m2(static_cast<size_t>(n_out));
      forEachIndex(in.shape, strides, [&](int64_t i, const int64_t* off) {
        double dev = x[i] - mean.data[static_cast<size_t>(off[0])];
        m2[static_cast<size_t>(off[0])].add(dev * dev);
      });
      // torch: var = M2 / max(n - correction, 0), so n <= correction gives inf (or NaN when
      // M2 is 0, e.g. a single element with correction 1).
      const double divisor = static_cast<double>(n) > a.correction ? static_cast<double>(n) - a.correction : 0.0;
      Dense var = result(), count = result();
      for (int64_t j = 0; j < n_out; ++j) {
        var.data[static_cast<size_t>(j)] = m2[static_cast<size_t>(j)].value() / divisor;
        count.data[static_cast<size_t>(j)] = static_cast<double>(n);
      }
      return {var, mean, count};
    }
    default: break;
  }
  LOOM_ASSERT(false, "`{}` is not a reduction", op.name());
}

}  // namespace loom::reference
