#pragma once
// The normalization scheduler's kernels with column reductions (NormKernel::columns): their
// threads, their persistent cooperative grid, and the combine of their partials.
#include "compiler/schedule/norm_common.h"
#include "compiler/schedule/norm_threads.h"
#include "compiler/schedule/norm_tier.h"

namespace loom::schedule::norm_detail {

// Whether every store that reads a column reduction is constant along the rows (written once,
// after the combine), and every column reduction's value one the kernel can keep (sums, means,
// maxima, minima); why not otherwise.
std::string columnStoresProblem(const NormKernel& k);

// The threads, grid and combine of a kernel with column reductions: the row in registers, as
// few chunks a thread as a block allows (each chunk also holds one partial per column
// reduction), blocks that all fit the GPU at once. Empty `why` where it fits; else why not
// (the segmenter then gives the column reductions their own kernel).
struct ColumnFit {
  bool fits = false;
  int per_sm = 1;
};
Decision<ColumnFit> placeColumns(NormKernel& k, const BlockLimit& lim, const CompileOptions& opts);

}  // namespace loom::schedule::norm_detail
