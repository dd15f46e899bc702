#include "compiler/schedule/norm_columns.h"

#include <algorithm>
#include <functional>
#include <set>

#include <fmt/format.h>

namespace loom::schedule::norm_detail {

using lower::ENode;

namespace {

// The column reductions the stores read, in the order the lowering gives them workspace.
std::vector<const ENode*> columnReductions(const NormKernel& k) {
  std::vector<lower::EPtr> roots;
  for (const auto& s : k.stores) roots.push_back(s.value);
  std::vector<const ENode*> out;
  lower::visitPostOrder(roots, [&](const ENode& n) {
    if (n.kind == ENode::Kind::Reduce && n.over_rows) out.push_back(&n);
  });
  return out;
}

// Whether `n` reads a reduction of the rows outside every column reduction.
bool readsRowReduction(const ENode& n) {
  if (n.kind == ENode::Kind::Reduce) return !n.over_rows;
  return std::any_of(n.args.begin(), n.args.end(), [](const lower::EPtr& a) { return readsRowReduction(*a); });
}

}  // namespace

std::string columnStoresProblem(const NormKernel& k) {
  const size_t nout = k.outer_shape.size();
  for (const auto& s : k.stores) {
    if (!s.column) continue;
    const bool along_rows = std::any_of(s.strides.begin(), s.strides.begin() + static_cast<long>(nout),
                                        [](int64_t x) { return x != 0; });
    if (along_rows || readsRowReduction(*s.value))
      return fmt::format("output {} reads a column reduction but varies along the rows {}", s.output, k.outer_atoms);
  }
  return {};
}

Decision<ColumnFit> placeColumns(NormKernel& k, const BlockLimit& lim, const CompileOptions& opts) {
  const std::vector<const ENode*> cols = columnReductions(k);
  const int64_t row_chunks = k.rowElems() / k.vec;
  // Each chunk a thread holds carries one partial per column reduction beside the row's
  // values: up to 256 threads a row (a warp at least; several rows a block where the row is
  // short), more where a thread would hold more than 4 chunks. Fewer threads a row meet less
  // often at the rows' block barriers: on the H100, layer_norm_backward f16 32768 x 4096 ran at
  // 2622 GB/s with 256 threads a row (2 chunks) against 1939 with 512 (1 chunk).
  int T = std::clamp(nextPow2(row_chunks), 32, std::min(256, lim.max_block));
  while ((row_chunks + T - 1) / T > 4 && T < lim.max_block) T *= 2;
  if (opts.tuning.threads_per_row) T = *opts.tuning.threads_per_row;
  const int chunks = static_cast<int>((row_chunks + T - 1) / T);
  const int block = std::max(T, 256);
  const int held = chunks * k.vec * std::max<int>(1, static_cast<int>(k.smem_leaves.size()));
  const int partials = chunks * k.vec * static_cast<int>(cols.size());
  // Registers: the held row and the partials (two a value in f64), and 32 for the rest.
  const int regs = (held + partials) * lim.value_regs + 32;
  int per_sm = std::min({2048 / block, 65536 / (block * ((regs + 7) / 8 * 8)), 32});
  if (opts.tuning.min_blocks && *opts.tuning.min_blocks > 0) per_sm = *opts.tuning.min_blocks;
  ColumnFit fit;
  if (block > lim.max_block || T * chunks < row_chunks || chunks > kMaxChunks || regs > 255 || per_sm < 1)
    return {fit, fmt::format("the row and its column partials ({} values a thread, {} chunks of {}) do not fit the "
                             "registers of blocks of {} threads",
                             held + partials, chunks, k.vec, block)};
  fit.fits = true;
  fit.per_sm = per_sm;
  k.threads_per_row = T;
  k.chunks = chunks;
  k.block = block;
  k.rows_per_block = block / T;
  k.registers = true;
  k.tier = NormTier::Registers;
  const int64_t sets = (k.rows() + k.rows_per_block - 1) / k.rows_per_block;
  k.grid = std::min<int64_t>(sets, int64_t{per_sm} * opts.device.sm_count);
  k.min_blocks_per_sm = per_sm;
  k.col_partials = k.grid;  // several rows a block: added in the block first
  // The combine: each block a tile of `bx` chunks of columns, `by` threads down the partials
  // (about 4 partials a thread), a power of two each.
  k.col_by = std::min(block, nextPow2((k.col_partials + 3) / 4));
  k.col_bx = block / k.col_by;
  if (k.col_bx > row_chunks) {
    k.col_bx = nextPow2(row_chunks);
    k.col_by = block / k.col_bx;
  }
  k.col_tiles = (row_chunks + k.col_bx - 1) / k.col_bx;
  int64_t bytes = NormKernel::kColumnCounterBytes;
  for (const ENode* r : cols) bytes += k.col_partials * k.rowElems() * dtypeBytes(computeDType(r->dtype));
  k.workspace_bytes = bytes;
  if (bytes >= (int64_t{1} << 31)) k.index64 = true;
  return {fit, fmt::format("{} column reduction{} over {} beside the rows': a cooperative grid of {} blocks ({} per SM) "
                           "walks the {} sets of {} row{}, each thread adding its chunks' values in registers; the {} "
                           "blocks' partials{} meet in a global workspace ({} KiB) and, after a grid-wide barrier, are "
                           "combined in a fixed order ({} tiles of {} chunks of columns, {} threads down the partials)",
                           cols.size(), cols.size() == 1 ? "" : "s", k.outer_atoms, k.grid, per_sm, sets,
                           k.rows_per_block, k.rows_per_block == 1 ? "" : "s", k.col_partials,
                           k.rows_per_block == 1 ? "" : " (its rows' added in shared memory first)", kib(bytes),
                           k.col_tiles, k.col_bx, k.col_by)};
}

}  // namespace loom::schedule::norm_detail
