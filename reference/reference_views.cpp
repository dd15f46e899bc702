// The CPU reference's views. On a dense row-major array, broadcast, reshape, squeeze and
// unsqueeze only insert, remove, split or merge dims: the data is unchanged. Permute and slice
// copy.
#include <algorithm>

#include "ir/error.h"
#include "reference/reference_internal.h"
#include "runtime/bind_sizes.h"

namespace loom::reference {

Dense evalConcat(const ir::Op& op, const std::vector<const Dense*>& in, const std::vector<int64_t>& out_shape) {
  const auto dim = static_cast<size_t>(op.attr<ir::DimsAttrs>().dims.at(0));
  Dense out{out_shape, Values(static_cast<size_t>(numelOf(out_shape)))};
  // Row-major: `outer` runs of each piece's `dim` x inner elements, one after another.
  int64_t outer = 1, inner = 1;
  for (size_t d = 0; d < dim; ++d) outer *= out_shape[d];
  for (size_t d = dim + 1; d < out_shape.size(); ++d) inner *= out_shape[d];
  int64_t at = 0;  // the piece's first element along `dim`
  for (const Dense* p : in) {
    const int64_t run = p->shape[dim] * inner;
    for (int64_t o = 0; o < outer; ++o)
      std::copy_n(p->data.begin() + o * run, run, out.data.begin() + (o * out_shape[dim] + at) * inner);
    at += p->shape[dim];
  }
  LOOM_ASSERT(at == out_shape[dim], "concat `{}`: pieces of {} along dim {}, the output {}", op.output()->name(), at,
              dim, out_shape[dim]);
  return out;
}

Dense evalView(const ir::Op& op, const Dense& in, const std::vector<int64_t>& out_shape,
               const Bindings& b) {
  switch (op.family()) {
    case ir::OpFamily::Broadcast:
    case ir::OpFamily::Reshape:
    case ir::OpFamily::Squeeze:
    case ir::OpFamily::Unsqueeze:
      LOOM_ASSERT(numelOf(out_shape) == numelOf(in.shape), "`{}` changes the element count",
                  op.name());
      return Dense{out_shape, in.data};
    case ir::OpFamily::Permute: {
      const auto& p = op.attr<ir::DimsAttrs>().dims;
      auto src = broadcastStrides(in.shape, in.shape);  // row-major strides of the input
      std::vector<int64_t> strides;
      for (int d : p) strides.push_back(src[static_cast<size_t>(d)]);
      Dense out{out_shape, Values(static_cast<size_t>(numelOf(out_shape)))};
      parallelForEachIndex(out_shape, {strides}, [&](int64_t i, const int64_t* off) {
        out.data[static_cast<size_t>(i)] = in.data[static_cast<size_t>(off[0])];
      });
      return out;
    }
    case ir::OpFamily::Slice: {
      const auto& a = op.attr<ir::SliceAttrs>();
      auto strides = broadcastStrides(in.shape, in.shape);
      int64_t base = 0;
      for (size_t d = 0; d < in.shape.size(); ++d) {
        int64_t start = a.starts[d].evaluate(b), stop = a.stops[d].evaluate(b);
        LOOM_USER_CHECK(0 <= start && start <= stop && stop <= in.shape[d],
                        "`slice` producing `{}`: bounds [{}, {}) = [{}, {}) of dim {} are not "
                        "within its size {}", op.output()->name(), a.starts[d].str(),
                        a.stops[d].str(), start, stop, d, in.shape[d]);
        LOOM_ASSERT(stop - start == out_shape[d], "slice length {} but output dim {} is {}",
                    stop - start, d, out_shape[d]);
        base += start * strides[d];
      }
      Dense out{out_shape, Values(static_cast<size_t>(numelOf(out_shape)))};
      parallelForEachIndex(out_shape, {strides}, [&](int64_t i, const int64_t* off) {
        out.data[static_cast<size_t>(i)] = in.data[static_cast<size_t>(base + off[0])];
      });
      return out;
    }
    default: break;
  }
  LOOM_ASSERT(false, "`{}` is not a view", op.name());
}

}  // namespace loom::reference
