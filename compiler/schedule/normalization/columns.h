#pragma once
// The normalization scheduler's kernels with column reductions (RowKernel::columns): their
// threads, their persistent cooperative grid, and the combine of their partials.
#include "compiler/schedule/normalization/threads.h"
#include "compiler/schedule/row_common.h"
#include "compiler/schedule/tiers.h"

namespace loom::schedule::norm_detail {

// Whether every store that reads a column reduction is constant along the rows (written once,
// after the combine), and every column reduction's value one the kernel can keep (sums, means,
// maxima, minima); why not otherwise.
std::string columnStoresProblem(const RowKernel& k);

// The loads of a row's data (along the rows and along the row: x and dy, not a per-column
// weight or a per-row statistic), which a column kernel with rows in registers, `chunks` chunks
// a thread, may load one row set ahead, so that the next row's loads are in flight while this
// row's reductions wait at block barriers; empty where it does not. By default only for 16-bit
// rows where a thread holds at most 80 values with them (the row's loads twice, and the column
// partials where they are in registers): past that the registers spill, and f32 rows, packed
// two a register no more, lose (docs/performance.md#row-prefetch).
// LOOM_TUNE_ROW_PREFETCH=0 or 1: never or always.
std::vector<std::pair<Leaf, DType>> loadsAhead(const RowKernel& k, int chunks, bool partials_in_registers,
                                               const Tuning& tune);

// The threads, grid and combine of a kernel with column reductions: the row in registers, as
// few chunks a thread as a block allows (each chunk also holds one partial per column
// reduction), blocks that all fit the GPU at once. Empty `why` where it fits; else why not
// (the segmenter then gives the column reductions their own kernel).
struct ColumnFit {
  bool fits = false;
  int per_sm = 1;
};
Decision<ColumnFit> placeColumns(RowKernel& k, const BlockLimit& lim, const CompileOptions& opts);

}  // namespace loom::schedule::norm_detail
