#pragma once
// Internals of the CPU reference (runtime/reference*.cpp): dense float64 arrays and the
// evaluation of each op family over them.
#include <cstdint>
#include <vector>

#include "ir/fusion.h"

namespace loom::reference {

// A dense row-major array of doubles over a logical shape.
struct Dense {
  std::vector<int64_t> shape;
  std::vector<double> data;
};

int64_t numelOf(const std::vector<int64_t>& shape);

// Calls f(out_linear, offsets) for every index of `shape` in row-major order, where offsets[k]
// is the sum over dims of index * strides[k][dim] (strides of one operand per k).
template <typename F>
void forEachIndex(const std::vector<int64_t>& shape,
                  const std::vector<std::vector<int64_t>>& strides, F&& f) {
  const int rank = static_cast<int>(shape.size());
  const size_t nops = strides.size();
  const int64_t n = numelOf(shape);
  if (n == 0) return;
  std::vector<int64_t> idx(static_cast<size_t>(rank), 0), off(nops, 0);
  const int64_t inner = rank ? shape.back() : 1;
  std::vector<int64_t> inner_stride(nops, 0);
  for (size_t k = 0; k < nops; ++k) inner_stride[k] = rank ? strides[k].back() : 0;
  std::vector<int64_t> cur(nops);
  for (int64_t base = 0; base < n; base += inner) {
    for (int64_t i = 0; i < inner; ++i) {
      for (size_t k = 0; k < nops; ++k) cur[k] = off[k] + i * inner_stride[k];
      f(base + i, cur.data());
    }
    // Advance the outer dims (all but the last) by one.
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
