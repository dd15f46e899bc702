// gather and index_select: each element of the result is x's element at the index's value
// along the op's dim. An index outside the dim is the user's error, named with its position.
#include <atomic>
#include <cmath>
#include <limits>

#include "ir/error.h"
#include "reference/reference_internal.h"

namespace loom::reference {

Dense evalGather(const ir::Op& op, const Dense& x, const Dense& index, const std::vector<int64_t>& out_shape,
                 const Dense* x_bound, const Dense* index_bound, Dense* bound) {
  const auto dim = static_cast<size_t>(op.attr<ir::DimsAttrs>().dims.at(0));
  const int64_t extent = x.shape[dim];
  // x's offsets over the result's coordinates but `dim` (its index's value gives that one).
  std::vector<int64_t> xs = broadcastStrides(x.shape, x.shape);  // row-major
  const int64_t along = xs[dim];
  for (size_t d = 0; d < xs.size(); ++d)
    if (d == dim || (x.shape[d] == 1 && out_shape[d] != 1)) xs[d] = 0;
  std::vector<int64_t> is(out_shape.size(), 0);
  if (op.kind() == ir::OpKind::IndexSelect) is[dim] = index.shape[0] == 1 ? 0 : 1;
  else is = broadcastStrides(index.shape, out_shape);
  Dense out{out_shape, Values(static_cast<size_t>(numelOf(out_shape)))};
  if (bound) *bound = zeros(out_shape);
  std::atomic<int64_t> bad{std::numeric_limits<int64_t>::max()};
  parallelForEachIndex(out_shape, {xs, is}, [&](int64_t i, const int64_t* off) {
    const double v = index.data[static_cast<size_t>(off[1])];
    if (!(v >= 0 && v < static_cast<double>(extent))) {
      int64_t seen = bad.load();
      while (i < seen && !bad.compare_exchange_weak(seen, i)) {
      }
      return;
    }
    const auto at = static_cast<size_t>(off[0] + static_cast<int64_t>(v) * along);
    out.data[static_cast<size_t>(i)] = x.data[at];
    if (bound) {
      const bool exact_index = !index_bound || index_bound->data[static_cast<size_t>(off[1])] == 0;
      bound->data[static_cast<size_t>(i)] =
          exact_index ? (x_bound ? x_bound->data[at] : 0.0) : std::numeric_limits<double>::infinity();
    }
  });
  if (const int64_t i = bad.load(); i != std::numeric_limits<int64_t>::max()) {
    // The first such element in row-major order, its coordinates and its index's place.
    std::vector<int64_t> c(out_shape.size());
    int64_t r = i, ioff = 0;
    for (size_t d = out_shape.size(); d-- > 0;) {
      c[d] = r % out_shape[d];
      r /= out_shape[d];
      ioff += c[d] * is[d];
    }
    LOOM_USER_CHECK(false, "`{}` of `{}`: the index `{}` holds {} for the result's element [{}], outside dim {} of "
                    "extent {}; indices must be in [0, {})", op.name(), op.input(0)->name(), op.input(1)->name(),
                    index.data[static_cast<size_t>(ioff)], fmt::join(c, ", "), dim, extent, extent);
  }
  return out;
}

}  // namespace loom::reference
