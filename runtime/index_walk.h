#pragma once
// Walking the indices of a shape in row-major order with the offsets of one or more strided
// operands kept by an odometer (no division per element): the CPU reference's elementwise
// ops and reductions, and HostTensor's reads and writes through its strides.
#include <algorithm>
#include <cstdint>
#include <vector>

namespace loom::runtime {

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
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  forEachIndexIn(shape, strides, 0, n, f);
}

}  // namespace loom::runtime
