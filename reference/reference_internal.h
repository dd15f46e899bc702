#pragma once
// Internals of the CPU reference (reference/reference*.cpp): dense float64 arrays and the
// evaluation of each op family over them.
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "ir/fusion.h"
#include "runtime/index_walk.h"
#include "runtime/parallel.h"

namespace loom::reference {

// An allocator whose value-less construction leaves the element uninitialized: the evaluator
// writes every element of a result, and zeroing (and faulting in) hundreds of megabytes on one
// thread first cost more than the ops themselves.
template <typename T>
struct NoInitAllocator : std::allocator<T> {
  template <typename U>
  struct rebind {
    using other = NoInitAllocator<U>;
  };
  NoInitAllocator() = default;
  template <typename U>
  NoInitAllocator(const NoInitAllocator<U>&) noexcept {}
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    if constexpr (sizeof...(Args) == 0) ::new (static_cast<void*>(p)) U;
    else ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }
};
using Values = std::vector<double, NoInitAllocator<double>>;

// A dense row-major array of doubles over a logical shape.
struct Dense {
  std::vector<int64_t> shape;
  Values data;
};

int64_t numelOf(const std::vector<int64_t>& shape);

// A value of `shape` holding zeros (the error bound of an exact value).
inline Dense zeros(const std::vector<int64_t>& shape) {
  return Dense{shape, Values(static_cast<size_t>(numelOf(shape)), 0.0)};
}

// Elements per range where the evaluator spreads an op over threads.
constexpr int64_t kParallelRange = int64_t{1} << 16;

using runtime::forEachIndex;
using runtime::forEachIndexIn;

// forEachIndexIn over ranges of the indices on several threads: for f that only writes what
// belongs to index i (an element-wise result), so the results do not depend on the order.
template <typename F>
void parallelForEachIndex(const std::vector<int64_t>& shape, const std::vector<std::vector<int64_t>>& strides, F&& f) {
  runtime::parallelForRanges(numelOf(shape), kParallelRange, [&](int64_t, int64_t begin, int64_t end) {
    forEachIndexIn(shape, strides, begin, end, f);
  });
}

// Row-major strides over `shape`, with 0 for dims of size 1 that `out` stretches (a broadcast
// operand); a rank-0 operand stretches to every dim of `out`.
std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& shape,
                                      const std::vector<int64_t>& out);

// Rounds every element to `t` where `t` is f16, bf16, an int or bool; f32/f64 stay in double.
void roundResult(Dense& d, DType t);

// Which of its input's `rank` dims a Reduce or VarMean op reduces.
inline std::vector<bool> reducedDims(const ir::Op& op, size_t rank) {
  std::vector<bool> reduced(rank, false);
  for (int d : op.attr<ir::ReduceAttrs>().dims) reduced[static_cast<size_t>(d)] = true;
  return reduced;
}

// Each output's inputs, in row-major order of the reduced dims: the order in which a row-major
// walk of the whole input meets them, so that every sum adds in that order whatever the
// threads. `per_output(j, visit)` runs for every output j (row-major over the kept dims), on
// several threads by ranges of outputs; visit(g) calls g(k) for the flat index k into `in`
// of each of output j's inputs.
template <typename PerOutput>
void forEachOutput(const Dense& in, const std::vector<bool>& reduced, PerOutput per_output) {
  const std::vector<int64_t> strides = broadcastStrides(in.shape, in.shape);  // row-major
  std::vector<int64_t> kept_shape, kept_strides, red_shape, red_strides;
  for (size_t d = 0; d < in.shape.size(); ++d) {
    (reduced[d] ? red_shape : kept_shape).push_back(in.shape[d]);
    (reduced[d] ? red_strides : kept_strides).push_back(strides[d]);
  }
  const std::vector<std::vector<int64_t>> kept = {kept_strides}, red = {red_strides};
  // Fewer outputs per range where each reduces many elements.
  const int64_t per_range = std::max<int64_t>(1, kParallelRange / std::max<int64_t>(1, numelOf(red_shape)));
  runtime::parallelForRanges(numelOf(kept_shape), per_range, [&](int64_t, int64_t begin, int64_t end) {
    forEachIndexIn(kept_shape, kept, begin, end, [&](int64_t j, const int64_t* base) {
      const int64_t b = base[0];
      per_output(j, [&](auto g) {
        forEachIndex(red_shape, red, [&](int64_t, const int64_t* off) { g(b + off[0]); });
      });
    });
  });
}

// Elementwise families (unary, binary, where, cast); `out_shape` is the output's shape.
Dense evalPointwise(const ir::Op& op, const std::vector<const Dense*>& in,
                    const std::vector<int64_t>& out_shape);
// Reduce and VarMean families: one Dense per op output.
std::vector<Dense> evalReduction(const ir::Op& op, const Dense& in,
                                 const std::vector<int64_t>& out_shape);
// Concat: the pieces joined along the op's dim (also their error bounds).
Dense evalConcat(const ir::Op& op, const std::vector<const Dense*>& in, const std::vector<int64_t>& out_shape);
// gather and index_select (reference_gather.cpp); where `bound` is given, also the result's
// error bounds: the picked element's, unbounded where the index itself is uncertain.
Dense evalGather(const ir::Op& op, const Dense& x, const Dense& index, const std::vector<int64_t>& out_shape,
                 const Dense* x_bound, const Dense* index_bound, Dense* bound);
// Iota and random numbers (reference_random.cpp); a random op's bound is the GPU's rounding.
Dense createIota(const ir::Op& op, const std::vector<int64_t>& shape);
Dense createRandom(const ir::Op& op, const Dense& seed, const Dense& offset, const std::vector<int64_t>& shape);
Dense boundRandom(const ir::Op& op, const Dense& result);
// Broadcast, reshape, permute, squeeze, unsqueeze, slice.
Dense evalView(const ir::Op& op, const Dense& in, const std::vector<int64_t>& out_shape,
               const Bindings& b);

// Error bounds (reference_bounds.cpp): for each element of a value, how far a correct GPU
// evaluation in loom's precisions (f32 inside, results rounded to their dtypes, reductions in
// any order) may land from the float64 reference, to first order. `in_bound` are the operands'
// bounds (same shapes as `in`), `out` the op's reference results.
Dense boundPointwise(const ir::Op& op, const std::vector<const Dense*>& in,
                     const std::vector<const Dense*>& in_bound, const Dense& out);
std::vector<Dense> boundReduction(const ir::Op& op, const Dense& in, const Dense& in_bound,
                                  const std::vector<Dense>& out);

}  // namespace loom::reference
