#pragma once
// The kernel the normalization and reduction schedulers both build: rows (combinations of the
// iterated atoms) each reduced along its reduced atoms, collapsed into `outer_shape` and
// `red_shape`; where each row lives (its tier, norm's tiers.def) and that tier's parameters; its
// stores and loads. The normalization scheduler (normalization/normalization.h) makes it one
// persistent kernel that normalizes what it reduced; the reduction scheduler
// (reduction/reduction.h) one that writes the reductions alone.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/lower/strided_expr.h"
#include "compiler/schedule/pointwise/pointwise.h"
#include "compiler/schedule/tiers.h"

namespace loom::schedule {

// Whether strides over a kernel's axes (`nout` row axes, then the reduced ones) stay put along
// every reduced axis: a value of the row (a store written once per row, a per-row statistic).
inline bool rowOnly(const std::vector<int64_t>& strides, size_t nout) {
  return std::all_of(strides.begin() + static_cast<long>(nout), strides.end(), [](int64_t x) { return x == 0; });
}

struct RowKernel {
  std::string name = "loom_norm";
  std::vector<int64_t> outer_shape;  // collapsed iterated axes (rows), outer to inner
  std::vector<int64_t> red_shape;    // collapsed reduced axes, outer to inner
  std::string outer_atoms, red_atoms;  // for dumps: `{N, 32}` and `{C/32, H, W}`
  int vec = 1, threads_per_row = 32, rows_per_block = 1, block = 128, chunks = 1;
  int64_t grid = 1;
  bool index64 = false;
  // Where the rows live (schedule/tiers.def); the fields below are its parameters, read by the
  // lowering and the emitter.
  NormTier tier = NormTier::Registers;
  bool registers = true;  // the row stays in registers; else each pass re-reads it
  // When the row does not fit in registers but fits in shared memory: the first pass keeps
  // each of these loads' values there (per row, `row elements` values each), later passes
  // read them back instead of re-reading global memory.
  std::vector<lower::Leaf> smem_leaves;
  int smem_bytes = 0;
  // The on-chip tier: every held load is a contiguous vector, so the kernel first copies its
  // part of the row into shared memory with cp.async (all of it in flight at once), then
  // takes exact two-pass statistics and normalizes from there. `cluster` > 1 (sm_90) splits
  // each row over that many blocks of a thread-block cluster, each holding its slice, their
  // partial reductions combined through distributed shared memory.
  bool async_fill = false;
  // With `async_fill` and several rows per block: each thread copies exactly the chunks it
  // later reads (no block barrier, no whole-line stores), for short contiguous rows held in
  // shared memory instead of registers so that more of them are in flight per SM.
  bool thread_fill = false;
  int cluster = 1;
  // Blocks sharing each row: the cluster's, or (grid tier) every block of the grid.
  int split = 1;
  // The grid tier, for row sets one cluster cannot hold: a cooperative launch of `grid`
  // blocks (one per SM) that walks `row_sets` sets of `rows_per_block` neighbouring rows (the
  // last cut short where they do not divide the rows: its missing rows fill and store nothing); each
  // block keeps its slice of the set in shared memory, publishes its partial reductions in a
  // global workspace (`workspace_bytes`, zero when first allocated, its barrier counters left
  // at zero by every launch), meets the others at a grid-wide barrier and combines every
  // block's partials in block order.
  bool grid_sync = false;
  int64_t row_sets = 1;
  // The grid tier in `grid_groups` independent groups of `split` blocks (one block of each per
  // SM), group g walking sets g, g + G, ...: while one group waits at its barrier, the
  // other's loads and stores keep the memory busy.
  int grid_groups = 1;
  // The grid tier's shared memory holds this many sets' slices (`smem_bytes` in all): with 2,
  // each block copies the next set's slice with cp.async while it works on the current one.
  int fill_buffers = 1;
  // Blocks per SM the register allocation must allow (0: the backend's choice).
  int min_blocks_per_sm = 0;
  // The row-vector tier (`row_pitch` > 0, with `vec` 1): rows strided along their reduction
  // but side by side in memory (LayerNorm2d over C of NCHW: a row is one pixel's channels,
  // H*W apart; the next pixel's row starts one element further). A block takes
  // `rows_per_block` neighbouring rows and copies them into shared memory in vectors of
  // `row_vec` rows (element e of those rows: one contiguous piece; cp.async where a piece is
  // 4, 8 or 16 bytes, a load and a store where it is one element of 2 bytes or 1), each element of the
  // rows `row_pitch` elements after the previous one (padded against bank conflicts);
  // `threads_per_row` threads per row reduce from there, and the outputs are written in the
  // same vectors of rows. `row_access`: each load's and store's access over those lanes.
  int row_vec = 1;
  int64_t row_pitch = 0;
  bool rowTier() const { return row_pitch > 0; }
  // Bytes of one piece of a held load of dtype `t` copied to shared memory: `vec` elements of
  // a row, or `row_vec` rows of an element; cp.async copies 4, 8 or 16, fewer are loaded and
  // stored.
  int fillPieceBytes(DType t) const { return std::max(vec, row_vec) * dtypeBytes(t); }
  std::map<lower::Leaf, Access> row_load_access;
  int64_t rowVectorUnits() const;  // per block: pieces of `row_vec` rows of one element
  int64_t workspace_bytes = 0;
  // Column reductions beside the rows' own (nvFuser's inner-outer persistent kernels: layer
  // norm backward's dw and db beside dx): a cooperative grid of `grid` blocks walks the row
  // sets, each thread adding its chunks' values of every column reduction over the rows it
  // takes, in registers. Each block's partials (its rows' added first) go to the workspace,
  // `col_partials` of them; after a grid-wide barrier the blocks combine `col_tiles` tiles of `col_bx`
  // chunks of columns, `col_by` threads down the partials of each, in a fixed order.
  bool columns = false;
  // Sub-row reductions beside the rows' own (ENode::sub_atoms: group norm backward's sums over H
  // and W of each channel within a row of a group): each thread accumulates its chunks' values
  // per combination of the reduced axes they keep, each combined across the row as the row's
  // own are, and one thread of the row stores them. `red_axis_atoms`: the atoms each reduced
  // axis collapses, which tell the axes a sub-row reduction keeps.
  bool sub_rows = false;
  std::vector<std::vector<int>> red_axis_atoms;
  // The reduced axes (of more than one element) a reduction over `sub_atoms` keeps.
  std::vector<size_t> keptAxes(const std::vector<int>& sub_atoms) const;
  // A thread's chunks in each position that keeps `kept` (leading reduced axes), where its
  // chunks (chunk j at t + j * T of the row, T the row's threads) cover the row exactly in runs
  // of T chunks each within one position: its j-th chunk then lies in position j / (this).
  // 0 where they do not.
  int64_t chunksPerPosition(const std::vector<size_t>& kept) const;
  // Whether `kept` is the innermost reduced axis alone, as long as a vector: lane l of every
  // chunk then lies in position l.
  bool lanesArePositions(const std::vector<size_t>& kept) const;
  // The positions `kept` spans: the product of their extents (1 for none).
  int64_t positions(const std::vector<size_t>& kept) const;
  static constexpr int64_t kMaxSubRowValues = 4;  // per sub-row reduction and row
  // Rows too long for their partials beside them in registers (one row a block): each thread
  // keeps its partials in slots of its own in shared memory (`smem_bytes`), no barrier between.
  bool col_smem = false;
  int chunk_unroll = 0;  // the chunk loops' unroll count (0: the lowering's choice)
  // Rows whose length is no multiple of `vec` (softmax over GPT-2's 50257 words): a row's
  // vectors start at its first element whose offset `peel_offset` + the row's coordinates .
  // `peel_strides` (over outer_shape) is a multiple of `vec`; the elements before it and after
  // its last whole vector (its edge, fewer than 2 * vec) are one a thread of its first ones.
  // Every load and store whose rows start at that offset modulo `vec` is an aligned vector.
  bool peel = false;
  int64_t peel_offset = 0;
  std::vector<int64_t> peel_strides;
  int64_t col_partials = 0, col_tiles = 0;
  int col_bx = 1, col_by = 1;
  static constexpr int64_t kColumnCounterBytes = 128;  // the grid barrier's and exits' counters
  int num_inputs = 0;
  struct Store {
    int output;
    int64_t offset = 0;
    std::vector<int64_t> strides;  // over outer_shape ++ red_shape
    DType dtype;
    Access access = Access::Gather;
    bool row_only = false;  // no reduced axis: written once per row
    bool column = false;    // a value of column reductions: written once, after they are combined
    bool sub_row = false;   // a value of a sub-row reduction: written once per row and kept position
    Access row_access = Access::Gather;  // over `row_vec` neighbouring rows
    lower::ExprRef value;
    bool operator==(const Store&) const = default;
  };
  std::vector<Store> stores;
  std::vector<TensorDesc> outputs;
  std::vector<int> output_alias;
  std::map<lower::Leaf, Access> load_access;
  std::string reason;  // the schedule dump's English: the tier, its parameters and why
  std::string two_pass_faster;  // scheduler.h, Planned::two_pass_faster
  // A symbolic row count (LOOM_TUNE_SYMBOLIC, schedule/normalization/symbolic.cpp): the kernel takes
  // `size_symbol` at run time, the rows being `rows_factor` times it (the first row axis
  // `size_factor` times it), for every value from 1 to `size_max` (`grid_max` blocks there).
  // Empty: every size is known.
  std::string size_symbol;
  int64_t size_value = 0, size_factor = 1, rows_factor = 1, size_max = 0, grid_max = 0;

  int64_t rows() const;
  bool symbolic() const { return !size_symbol.empty(); }
  int64_t rowElems() const;
  bool operator==(const RowKernel&) const = default;
};

// `k` with the parameters its symbolic size sets cleared (same_lowering.h).
RowKernel sizeBlanked(const ir::Fusion& f, const RowKernel& k);

// The kernel as the schedule dump prints it.
std::string printRowKernel(const ir::Fusion& f, const RowKernel& k);

}  // namespace loom::schedule
