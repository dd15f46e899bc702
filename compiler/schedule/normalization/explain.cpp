#include "compiler/schedule/normalization/explain.h"

#include <algorithm>

#include <fmt/format.h>

#include "ir/error.h"

namespace loom::schedule::norm_detail {

namespace {

// The grid tier's groups, where there are several: in turns by set, or (no more sets than
// groups) all at once.
std::string groupsText(const RowKernel& k) {
  if (k.grid_groups <= 1) return {};
  return fmt::format("; {} independent groups of {} blocks, each with its own barrier, {}", k.grid_groups, k.split,
                     k.row_sets > k.grid_groups ? "take turns by set" : "a set each, all at once");
}

std::string prefetchText(const RowKernel& k) {
  return k.fill_buffers > 1 ? "; two fill buffers: the next set's slice is copied while the block works on this one"
                            : "";
}

// How the row-vector tiers fill shared memory: pieces of 4 bytes or more with cp.async,
// smaller ones by loads and stores.
std::string rowFillText(const RowKernel& k, const std::vector<TensorDesc>& inputs) {
  if (k.row_vec > 1) return fmt::format("with cp.async in vectors of {} rows", k.row_vec);
  int small = 0;
  for (const Leaf& l : k.smem_leaves) small += k.fillPieceBytes(inputs[static_cast<size_t>(l.input)].dtype) < 4;
  const int copied = static_cast<int>(k.smem_leaves.size()) - small;
  return fmt::format("a row's element at a time, {} (no vector of rows fits: {}{})",
                     small == 0    ? "with cp.async"
                     : copied == 0 ? "by loads and stores"
                                   : "by loads and stores below 4 bytes, with cp.async from 4",
                     k.outer_shape.back() % 2 != 0
                         ? fmt::format("the innermost row axis has {} rows, an odd number", k.outer_shape.back())
                         : std::string("the rows' alignment or size allows none"),
                     small > 0 ? "; cp.async copies 4 bytes or more" : "");
}

// The row-vector tiers: the block's rows in shared memory, and over the grid its sets.
std::string rowVectorsText(const RowKernel& k, const TierChoice& c, const std::vector<TensorDesc>& inputs) {
  std::string grid;
  if (k.grid_sync)
    grid = fmt::format("; {} set{} of {} rows{}, each split over {} blocks of a cooperative grid ({} per SM) whose "
                       "partial statistics meet in a global workspace at a grid-wide barrier (Chan){}{}",
                       k.row_sets, k.row_sets == 1 ? "" : "s", k.rows_per_block,
                       k.rows() % k.rows_per_block == 0
                           ? std::string()
                           : fmt::format(" (the last cut short to {})", k.rows() % k.rows_per_block),
                       k.split, c.grid_per_sm, groupsText(k), prefetchText(k));
  return fmt::format("rows side by side in memory, strided along their reduction: the block's rows are copied into "
                     "{} KiB of shared memory {}, each element of them {} elements after the last; exact two-pass "
                     "statistics from there{}, the outputs stored in the same {}{}",
                     kib(k.smem_bytes), rowFillText(k, inputs), k.row_pitch,
                     k.registers ? " (each thread's elements kept in registers between passes)" : "",
                     k.row_vec > 1 ? "vectors of rows" : "pieces", grid);
}

// The cp.async tiers of contiguous rows: a block's, a cluster's or the grid's shared memory.
std::string copiedText(const RowKernel& k, const TierChoice& c) {
  const int held = k.chunks * k.vec * std::max(1, static_cast<int>(k.smem_leaves.size()));
  const std::string spread =
      k.grid_sync ? fmt::format(", {} sets of {} neighbouring row{} each split over {} blocks of a cooperative grid "
                                "({} per SM) whose partial reductions meet in a global workspace at grid-wide "
                                "barriers (one a batch of sums and means, one a variance, max or min){}{}",
                                k.row_sets, k.rows_per_block, k.rows_per_block == 1 ? "" : "s", k.split,
                                c.grid_per_sm, groupsText(k), prefetchText(k))
      : k.cluster > 1 ? fmt::format(", split over a cluster of {} blocks whose partial reductions meet in distributed "
                                    "shared memory", k.cluster)
                      : std::string();
  return fmt::format("the row ({}) is copied into {} KiB of shared memory per block with cp.async{}: read once, {} "
                     "and the outputs from shared memory", heldText(held, c.limit), kib(k.smem_bytes), spread,
                     k.grid_sync ? "statistics merged from exact per-thread ones (Chan)" : "exact two-pass statistics");
}

// How the tier holds the row.
std::string tierText(const RowKernel& k, const TierChoice& c, const std::vector<TensorDesc>& inputs) {
  switch (k.tier) {
    case NormTier::Registers: return fmt::format("the row stays in registers ({})", heldText(c.held, c.limit));
    case NormTier::ThreadFill:
      return fmt::format("the row would fit registers, but is held in {} KiB of shared memory per block: each thread "
                         "copies its {} chunks with cp.async and reads back only those (no block barrier), so its "
                         "bytes in flight cost no registers; exact two-pass statistics and the outputs from there",
                         kib(k.smem_bytes), k.chunks);
    case NormTier::SharedMemory:
    case NormTier::Cluster:
    case NormTier::Grid: return copiedText(k, c);
    case NormTier::RowVectors:
    case NormTier::RowPieces:
    case NormTier::RowVectorsLargeBlock:
    case NormTier::RowVectorsGrid:
    case NormTier::RowGridCutShort: return rowVectorsText(k, c, inputs);
    case NormTier::SharedWelford:
      return fmt::format("the row ({}) stays in {} KiB of shared memory: read once, statistics in one Welford pass, "
                         "normalized from shared memory", heldText(c.held, c.limit), kib(k.smem_bytes));
    case NormTier::Streamed:
      return k.columns ? "each pass reads the row again (from L2 where it fits)"
                       : "statistics in one Welford pass, then a second read (from L2 where it fits) to normalize";
  }
  LOOM_ASSERT(false, "a normalization tier without text");
  return {};
}

}  // namespace

std::string explainNormKernel(const RowKernel& k, const TierChoice& c, const std::vector<TensorDesc>& inputs) {
  std::string s = fmt::format(
      "{} rows over {} x {} elements over {}; {} threads per row{}, {} chunk{} of {} each, {} row{} per block of {}, "
      "grid {}; tier {}: {}",
      k.rows(), k.outer_atoms, k.rowElems(), k.red_atoms, k.threads_per_row * k.split,
      k.split > 1 ? fmt::format(" ({} per block)", k.threads_per_row) : "", k.chunks, k.chunks == 1 ? "" : "s",
      k.vec, k.rows_per_block, k.rows_per_block == 1 ? "" : "s", k.block, k.grid, normTierName(k.tier),
      tierText(k, c, inputs));
  for (const std::string& w : c.why) s += "; " + w;
  return s;
}

}  // namespace loom::schedule::norm_detail
