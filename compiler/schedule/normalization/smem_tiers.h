#pragma once
// The normalization scheduler's shared-memory tiers for rows contiguous along their reduction:
// thread fill, a block's or a cluster's shared memory filled with cp.async, the cooperative
// grid, and gathered rows kept in shared memory by their Welford pass. Each decision returns
// its placement (or none) and why; applyPlacement writes one into the kernel.
#include <optional>
#include <string>

#include "compiler/schedule/normalization/threads.h"
#include "compiler/schedule/row_common.h"
#include "compiler/schedule/tiers.h"

namespace loom::schedule::norm_detail {

// A cp.async placement: `rows` rows of `threads` threads each, every row split over `split`
// blocks (a cluster's, or the grid's), `chunks` chunks a thread, `bytes` of shared memory a
// block holding `buffers` sets (the grid tier's fill buffers), `cluster` blocks a cluster;
// `rows_fit` neighbouring rows would fit (more than `rows` where fewer fill the SMs).
struct SmemPlacement {
  int rows = 1, threads = 32, split = 1, chunks = 1, buffers = 1, cluster = 1;
  int64_t bytes = 0;
  int rows_fit = 1;
};

// What the shared-memory tiers share: the kernel (its threads chosen), the row's chunks and
// bytes of shared memory, whether every held load can be copied with cp.async (`no_async`: why
// not), a block's limit, and the neighbouring rows a block (`max_rows_together`) or a grid set
// (`max_rows_adjacent`) may take, `q` chunks of each at one outer position.
struct OnChip {
  const RowKernel& k;
  const std::vector<TensorDesc>& inputs;
  const CompileOptions& opts;
  int max_block = 1024;
  int64_t row_chunks = 0, row_smem = 0, smem_limit = 0, q = 0;
  int64_t run_bytes = 0;  // bytes of a row at one outer position (neighbouring rows: 0 where not side by side)
  bool async_ok = false;
  bool rows_in_runs = false;  // a held load's row lies in runs apart (its reduced axes not one dense run)
  std::string no_async{};
  int max_rows_together = 1, max_rows_adjacent = 1;
  // Whether the chunks of a row at one outer position are a power of two (what split rows need).
  bool pow2Runs() const { return (q & (q - 1)) == 0; }

  // A block's chunks a thread and bytes for `rows` rows of `t` threads, each row split over
  // `split` blocks; whether `bytes` fit a block (`per_sm` blocks sharing an SM); the placement
  // where they fit.
  int chunksAt(int t, int split) const;
  int64_t bytesAt(int rows, int t, int split, int buffers) const;
  bool fits(int64_t bytes, int per_sm) const;
  std::optional<SmemPlacement> place(int rows, int t, int split, int per_sm = 1, int buffers = 1) const;
};
OnChip onChipFacts(const RowKernel& k, const std::vector<TensorDesc>& inputs, const CompileOptions& opts,
                   int max_block);

// Thread fill: short contiguous rows that fit registers held in shared memory by their own
// threads instead (`registers`: the row fits them).
Decision<std::optional<SmemPlacement>> chooseThreadFill(const OnChip& c, bool registers);

// A block's (or, on sm_90, a cluster's) shared memory, with as many neighbouring rows together
// as fit.
Decision<std::optional<SmemPlacement>> chooseOnChip(const OnChip& c);

// The grid tier, where no block or cluster took `placed_rows` >= max_rows_together rows: the
// placement, its groups and the rows of a set.
struct GridChoice {
  SmemPlacement p;
  int groups = 1, set_rows = 1;
};
Decision<std::optional<GridChoice>> chooseGrid(const OnChip& c, int placed_rows);

// Rows that no cp.async tier placed: kept in shared memory by the first (Welford) pass where
// they fit (not with `registers`, nor several rows a block), else read again by each pass.
Decision<bool> keepGathered(const OnChip& c, const Threads& t, bool registers);

// Writes the placement into the kernel: the cp.async tiers' fill and its shape.
void applyPlacement(RowKernel& k, const SmemPlacement& p);

}  // namespace loom::schedule::norm_detail
