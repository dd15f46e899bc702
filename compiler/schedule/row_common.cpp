#include "compiler/schedule/row_common.h"

#include <algorithm>

#include "ir/error.h"

namespace loom::schedule::norm_detail {

std::vector<int64_t> rowsLast(std::vector<int64_t> s, size_t nout) {
  std::swap(s[nout - 1], s.back());
  return s;
}

int heldBytes(const Leaf& l, const std::vector<TensorDesc>& inputs) {
  return dtypeBytes(inputs[static_cast<size_t>(l.input)].dtype);
}

int64_t heldRowsBytes(const RowKernel& k, const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs) {
  int64_t bytes = 0;
  for (const Leaf& l : held) bytes += k.rows() * k.rowElems() * heldBytes(l, inputs);
  return bytes;
}

std::pair<int, int> heldByteRange(const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs) {
  int min_bytes = 16, max_bytes = 1;
  for (const Leaf& l : held) {
    min_bytes = std::min(min_bytes, heldBytes(l, inputs));
    max_bytes = std::max(max_bytes, heldBytes(l, inputs));
  }
  return {min_bytes, max_bytes};
}

int minSetRows(const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs, int row_vec) {
  return std::max(row_vec, 32 / heldByteRange(held, inputs).first);
}

int gridFillBuffers(const Tuning& tune) { return tune.grid_prefetch ? 2 : 1; }

int64_t smemPerSm(const DeviceInfo& dev) { return int64_t{dev.sm >= 90 ? 228 : dev.sm == 80 ? 164 : 100} * 1024; }

int64_t blockSmemLimit(const DeviceInfo& dev) {
  return int64_t{dev.sm >= 90 ? 227 : dev.sm == 80 ? 163 : 99} * 1024 - 4096;
}

GridShape gridShape(int64_t sets, int per_sm, int groups, const CompileOptions& opts,
                    const std::function<bool(int)>& fits) {
  const int P = opts.device.sm_count;
  if (P < 2 || opts.tuning.no_subgrid || opts.tuning.grid_groups) return {P, groups};
  // Two blocks a set at least: a set that one block holds alone needs no grid (instance norm
  // bf16 16x128x28x56 channels-last on 108 SMs got 128 sets of one block each, a grid group
  // without ranks, and the emitter crashed).
  int least = 2;
  while (least < P && !fits(least)) ++least;
  const int g = static_cast<int>(std::min<int64_t>(sets, int64_t{per_sm} * P / least));
  const int split = std::min(P, per_sm * P / std::max(1, g));
  if (g <= groups || !fits(split)) return {P, groups};
  return {split, g};
}

void setGrid(RowKernel& k, int groups, int rows, int reductions) {
  LOOM_ASSERT(k.split >= 2, "the grid tier with {} block{} a set", k.split, k.split == 1 ? "" : "s");
  k.grid_sync = true;
  k.grid_groups = groups;
  k.cluster = 1;  // over an earlier placement's cluster
  k.row_sets = (k.rows() + rows - 1) / rows;  // the last set may be cut short
  k.workspace_bytes = int64_t{groups} * (128 + int64_t{reductions} * 2 * k.split * rows * 24);
}

}  // namespace loom::schedule::norm_detail
