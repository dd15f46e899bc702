#pragma once
// Internals of the CPU reference (runtime/reference*.cpp): dense float64 arrays and the
// evaluation of each op family over them.
#include <algorithm>
#include <cstdint>
#include <memory>
#include <utility>
#include <vector>

#include "ir/fusion.h"
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

// Elements per range where the evaluator spreads an op over threads.
constexpr int64_t kParallelRange = int64_t{1} << 16;

// Calls f(out_linear, offsets) for the indices [begin, end) of `shape` in row-major order,
// where offsets[k] is the sum over dims of index * strides[k][dim] (strides of one operand per
// k).
template <typename F>
void forEachIndexIn(const std::vector<int64_t>& shape, const std::vector<std::vector<int64_t>>& strides,
                    int64_t begin, int64_t end, F&& f) {
  if (begin >= end) return;
  const int rank = static_cast<int>(shape.size());
  const size_t nops = strides.size();
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0), off(nops, 0);
  int64_t rest = begin;
  for (int d = rank - 1; d >= 0; --d) {
    const size_t ud = static_cast<size_t>(d);
    idx[ud] = rest % shape[ud];
    rest /= shape[ud];
    for (size_t k = 0; k < nops; ++k) off[k] += idx[ud] * strides[k][ud];
  }
  const int64_t inner = rank ? shape.back() : 1;
  std::vector<int64_t> inner_stride(nops, 0);
  for (size_t k = 0; k < nops; ++k) inner_stride[k] = rank ? strides[k].back() : 0;
  std::vector<int64_t> cur(nops);
  for (int64_t i = begin; i < end;) {
    // The rest of the innermost run from its current index (all of it after the first).
    const int64_t at = rank ? idx.back() : 0;
    const int64_t run = std::min(inner - at, end - i);
    for (int64_t r = 0; r < run; ++r) {
      for (size_t k = 0; k < nops; ++k) cur[k] = off[k] + r * inner_stride[k];
      f(i + r, cur.data());
    }
    i += run;
    if (i >= end) break;
    // Back to the run's start, then advance the outer dims (all but the last) by one.
    for (size_t k = 0; k < nops; ++k) off[k] -= at * inner_stride[k];
    if (rank) idx.back() = 0;
    for (int d = rank - 2; d >= 0; --d) {
      size_t ud = static_cast<size_t>(d);
      ++idx[ud];
      for (size_t k = 0; k < nops; ++k) off[k] += strides[k][ud];
      if (idx[ud] < shape[ud]) break;
      for (size_t k = 0; k < nops; ++k) off[k] -= idx[ud] * strides[k][ud];
      idx[ud] = 0;
    }
  }
}

// forEachIndexIn over every index, in row-major order.
template <typename F>
void forEachIndex(const std::vector<int64_t>& shape, const std::vector<std::vector<int64_t>>& strides, F&& f) {
  forEachIndexIn(shape, strides, 0, numelOf(shape), f);
}

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

// Elementwise families (unary, binary, where, cast); `out_shape` is the output's shape.
Dense evalPointwise(const ir::Op& op, const std::vector<const Dense*>& in,
                    const std::vector<int64_t>& out_shape);
// Reduce and VarMean families: one Dense per op output.
std::vector<Dense> evalReduction(const ir::Op& op, const Dense& in,
                                 const std::vector<int64_t>& out_shape);
// Broadcast, reshape, permute, squeeze, unsqueeze, slice.
Dense evalView(const ir::Op& op, const Dense& in, const std::vector<int64_t>& out_shape,
               const Bindings& b);

}  // namespace loom::reference
