#include "compiler/schedule/normalization/normalization.h"

#include <algorithm>
#include <functional>
#include <numeric>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "compiler/schedule/normalization/columns.h"
#include "compiler/schedule/normalization/explain.h"
#include "compiler/schedule/normalization/row_vector_tier.h"
#include "compiler/schedule/normalization/smem_tiers.h"
#include "compiler/schedule/normalization/threads.h"
#include "compiler/schedule/row_shape.h"

namespace loom::schedule {

using lower::ENode;
using lower::EPtr;
using lower::Leaf;
using namespace norm_detail;

int64_t RowKernel::rows() const {
  return std::accumulate(outer_shape.begin(), outer_shape.end(), int64_t{1}, std::multiplies<>());
}
int64_t RowKernel::rowElems() const {
  return std::accumulate(red_shape.begin(), red_shape.end(), int64_t{1}, std::multiplies<>());
}

std::vector<size_t> RowKernel::keptAxes(const std::vector<int>& sub_atoms) const {
  std::vector<size_t> kept;
  for (size_t i = 0; i < red_shape.size(); ++i) {
    const auto& atoms = red_axis_atoms[i];
    const bool reduced = std::any_of(atoms.begin(), atoms.end(), [&](int a) {
      return std::find(sub_atoms.begin(), sub_atoms.end(), a) != sub_atoms.end();
    });
    if (!reduced && red_shape[i] > 1) kept.push_back(i);
  }
  return kept;
}

int64_t RowKernel::positions(const std::vector<size_t>& kept) const {
  int64_t n = 1;
  for (size_t i : kept) n *= red_shape[i];
  return n;
}

int64_t RowKernel::chunksPerPosition(const std::vector<size_t>& kept) const {
  if (kept.empty()) return 0;
  for (size_t i = 0; i < kept.size(); ++i)
    if (kept[i] != i) return 0;
  int64_t sub = 1;
  for (size_t i = kept.size(); i < red_shape.size(); ++i) sub *= red_shape[i];
  const int64_t run = int64_t{threads_per_row} * split * vec;
  if (rowElems() != int64_t{chunks} * run || sub % run != 0) return 0;
  return sub / run;
}

bool RowKernel::lanesArePositions(const std::vector<size_t>& kept) const {
  return vec > 1 && kept.size() == 1 && kept[0] + 1 == red_shape.size() && red_shape.back() == vec;
}

int64_t RowKernel::rowVectorUnits() const {
  return (split > 1 ? int64_t{chunks} * threads_per_row : rowElems()) * (rows_per_block / row_vec);
}

namespace {

// The tiers of rows that no row-vector tier takes (contiguous along their reduction, or
// gathered), tried in schedule/tiers.def's order: each decision applied to the kernel, and noted.
std::string subRowProblem(const RowKernel& k, const Tuning& tune);

void placeRows(RowKernel& k, const ir::Fusion& f, const std::vector<TensorDesc>& inputs, const CompileOptions& opts,
               int reductions, TierChoice& c) {
  const Decision<BlockLimit> lim = chooseBlockLimit(f, inputs, opts.tuning);
  c.limit = lim.value;
  c.note(lim.why);
  const Decision<Threads> th = chooseThreads(k, lim.value, opts);
  k.threads_per_row = th.value.per_row;
  k.chunks = th.value.chunks;
  k.block = th.value.block;
  k.rows_per_block = th.value.rows_per_block;
  const size_t threads_why_at = c.why.size();  // noted where the tier keeps these threads
  const Decision<RegisterFit> regs = fitRegisters(k, th.value, lim.value);
  k.registers = regs.value.fits;
  c.held = regs.value.held;
  c.budget = regs.value.budget;
  c.note(regs.why);
  const OnChip chip = onChipFacts(k, inputs, opts, lim.value.max_block);
  if (const auto fill = chooseThreadFill(chip, regs.value.fits); fill.value) {
    applyPlacement(k, *fill.value);
    k.thread_fill = true;
    k.registers = false;
    c.tier = NormTier::ThreadFill;
    c.note(fill.why);
    return;
  }
  // Rows the registers hold whose runs at a position are short, side by side and no power of
  // two of chunks (channels-last group norm, 10 to 40 channels a group; what was measured):
  // several a block in shared memory instead, filled by whole pixels rather than loaded a run at
  // a time. Not where the sub-row reductions then have no schedule.
  if (regs.value.fits && chip.async_ok && chip.rows_in_runs && !chip.pow2Runs() && chip.max_rows_together > 1 &&
      !opts.tuning.no_smem_rows && !opts.tuning.no_line_fill) {
    const auto block = chooseOnChip(chip);
    // Not in blocks of under 512 threads (short rows of a few chunks each): those measured
    // slower than a row a block in registers (docs/performance.md#line-fill).
    if (block.value && block.value->rows > 1 && block.value->cluster == 1 &&
        block.value->rows * block.value->threads >= 512) {
      RowKernel placed = k;
      applyPlacement(placed, *block.value);
      placed.registers = false;
      if (!placed.sub_rows || subRowProblem(placed, opts.tuning).empty()) {
        k = std::move(placed);
        c.tier = NormTier::SharedMemory;
        c.note(fmt::format("{}, not a row a block in registers", block.why));
        return;
      }
    }
  }
  if (!regs.value.fits && chip.async_ok && !opts.tuning.no_smem_rows) {
    const auto block = chooseOnChip(chip);
    const auto grid = chooseGrid(chip, block.value ? block.value->rows_fit : 0);
    if (grid.value) {
      applyPlacement(k, grid.value->p);
      setGrid(k, grid.value->groups, grid.value->set_rows, reductions);
      c.tier = NormTier::Grid;
      c.note(grid.why);
      return;
    }
    if (block.value) {
      applyPlacement(k, *block.value);
      c.tier = block.value->cluster > 1 ? NormTier::Cluster : NormTier::SharedMemory;
      c.note(block.why);
      return;
    }
    c.note("no block, cluster or grid holds the row in shared memory");
  } else if (!regs.value.fits) {
    c.note(chip.no_async);
  }
  const Decision<bool> gathered = keepGathered(chip, th.value, regs.value.fits);
  if (gathered.value) k.smem_bytes = static_cast<int>(chip.row_smem);
  else k.smem_leaves.clear();  // the first pass keeps nothing in shared memory
  c.tier = gathered.value ? NormTier::SharedWelford : regs.value.fits ? NormTier::Registers : NormTier::Streamed;
  c.note(gathered.why);
  c.why.insert(c.why.begin() + static_cast<long>(threads_why_at), th.why);
}

// The launch once the tier is placed: the grid tier's blocks per SM (its groups, or as many as
// a smaller split packs on one), the registers' allowance for them, and the grid. Returns the
// grid tier's blocks per SM (0 for the other tiers).
int finishLaunch(RowKernel& k, const CompileOptions& opts) {
  const int sms = opts.device.sm_count;
  const int grid_per_sm = k.grid_sync ? static_cast<int>((int64_t{k.grid_groups} * k.split + sms - 1) / sms) : 0;
  if (k.grid_sync) k.min_blocks_per_sm = grid_per_sm > 1 ? grid_per_sm : 0;
  // For tuning sweeps only (part of the cache key).
  if (opts.tuning.min_blocks && !k.grid_sync) k.min_blocks_per_sm = *opts.tuning.min_blocks;
  k.grid = k.grid_sync ? int64_t{k.split} * k.grid_groups
                       : (k.rows() + k.rows_per_block - 1) / k.rows_per_block * k.cluster;
  return grid_per_sm;
}

// Whether the kernel takes a var_mean (the statistics the reduction scheduler splits as Welford
// triples).
bool welfordStats(const RowKernel& k) {
  bool any = false;
  std::vector<EPtr> roots;
  for (const auto& st : k.stores) roots.push_back(st.value);
  lower::visitPostOrder(roots, [&](const ENode& n) {
    any = any || (n.kind == ENode::Kind::Reduce && n.op == ir::OpKind::VarMean);
  });
  return any;
}

// Vectors of rows over the grid holding several loads, their sets meeting at grid barriers with
// the memory idle between: a kernel of the reductions and a pointwise one measured faster where
// each set takes every SM (one group), three loads or more are held (LSTM and GRU cell
// backward), or groups of blocks take turns on two held loads of 24 MiB or more; not on smaller
// ones. One held load taking a var_mean, the rows one axis inside the reduction (channels-last
// batch norm forward, layer norm of column-major rows; not channels-last instance norm, whose
// images are row axes outside it): from 64 MiB on, since the reduction scheduler splits Welford
// statistics over the grid (docs/performance.md#two-pass). Empty: one kernel.
std::string twoPassFaster(NormTier tier, const RowKernel& k, const std::set<Leaf>& held,
                          const std::vector<TensorDesc>& inputs, const CompileOptions& opts) {
  const bool grid = tier == NormTier::RowVectorsGrid || tier == NormTier::RowGridCutShort;
  if (!grid || opts.tuning.no_two_pass) return {};
  // For tuning sweeps only: LOOM_TUNE_TWO_PASS=1 wherever the grid's vectors of rows are placed.
  if (opts.tuning.two_pass == 1)
    return "vectors of rows over the grid: two kernels of a reduction and a pointwise pass (LOOM_TUNE_TWO_PASS)";
  const int64_t held_bytes = heldRowsBytes(k, held, inputs);
  if (held.size() == 1 && k.outer_shape.size() == 1 && welfordStats(k) && held_bytes >= (int64_t{64} << 20))
    return fmt::format("vectors of rows over the grid holding one load of {} MiB, the rows one axis inside the "
                       "reduction, their sets meeting at grid barriers: two kernels of a reduction and a pointwise "
                       "pass measured faster from 64 MiB on", held_bytes >> 20);
  const bool small_pair = held.size() < 3 && k.grid_groups > 1 && held_bytes < (int64_t{24} << 20);
  if (held.size() < 2 || small_pair) return {};
  return fmt::format("vectors of rows over the grid holding {} loads, {}, their sets meeting at grid barriers: "
                     "two kernels of a reduction and a pointwise pass measured faster", held.size(),
                     k.grid_groups == 1 ? "each set over every SM" : fmt::format("{} groups of blocks", k.grid_groups));
}

// Rows strided along their reduction that no row-vector tier holds are read a load an element
// (a row a block, each load one element of a 32-byte sector, as many blocks as rows): past
// 1 MiB of them, a column reduction and a pointwise pass over whole lines are faster
// (channels-last batch_norm_backward of 64 or 3 channels: bench/results/2026-11-26-h100-two-pass.md).
// Empty: one kernel.
std::string elementLoadsTwoPass(const RowKernel& k, const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs,
                                const CompileOptions& opts) {
  if (opts.tuning.no_two_pass) return {};
  if (heldRowsBytes(k, held, inputs) < (int64_t{1} << 20)) return {};
  return "rows strided along their reduction that no row-vector tier holds are read a load an element: two kernels of "
         "a reduction and a pointwise pass read whole lines";
}

// Why the placed kernel cannot take its sub-row reductions (empty where it can): the tiers whose
// rows are strided along their reduction have none, nor the grid tier maxima or minima (its
// sub-row values share one grid barrier, as batched sums); each keeps at most kMaxSubRowValues
// values per row, and the innermost reduced axis only where a chunk's lanes are its positions.
constexpr int kMaxSelectBlock = 256;

std::string subRowProblem(const RowKernel& k, const Tuning& tune) {
  const std::string what = "its sub-row reductions (over part of the row's reduced atoms)";
  if (tune.no_sub_rows) return what + " share no kernel with the rows' (LOOM_NO_SUB_ROWS)";
  if (k.rowTier()) return what + " beside rows strided along their reduction have no schedule";
  if (k.grid_sync && tune.no_batched_reductions)
    return what + " beside rows split over the whole grid need batched reductions (LOOM_NO_BATCHED_REDUCTIONS)";
  std::string why;
  std::vector<EPtr> roots;
  for (const auto& st : k.stores) roots.push_back(st.value);
  lower::visitPostOrder(roots, [&](const ENode& n) {
    if (n.sub_atoms.empty() || !why.empty()) return;
    const std::vector<size_t> kept = k.keptAxes(n.sub_atoms);
    const int64_t values = k.positions(kept);
    const bool lanes = k.lanesArePositions(kept);
    if (values > RowKernel::kMaxSubRowValues)
      why = fmt::format("{} keep {} values per row, more than {}", what, values, RowKernel::kMaxSubRowValues);
    else if (k.grid_sync && n.op != ir::OpKind::Sum && n.op != ir::OpKind::Mean)
      why = fmt::format("{} beside rows split over the whole grid: a sub-row {} has no schedule", what, ir::opName(n.op));
    else if (!kept.empty() && kept.back() + 1 == k.red_shape.size() && k.vec > 1 && !lanes)
      why = fmt::format("{} keep the innermost reduced axis ({} positions), along which a chunk's {} lanes lie: no "
                        "schedule unless the lanes are the positions", what, k.red_shape.back(), k.vec);
    else if (!lanes && k.chunksPerPosition(kept) == 0 && k.block > kMaxSelectBlock)
      // Each chunk then adds to its position's sum through selects, every position's sum live:
      // blocks of more threads leave too few registers (measured: spills, slower than two kernels).
      why = fmt::format("{} keep positions in which the threads' chunks ({} a thread, {} threads a row, vectors of "
                        "{}) do not lie in whole runs, in blocks of more than {} threads: no schedule", what, k.chunks,
                        int64_t{k.threads_per_row} * k.split, k.vec, kMaxSelectBlock);
  });
  return why;
}

// A kernel with column reductions (schedule/normalization/columns.h): the row in registers, a persistent
// cooperative grid; nullopt with why where that does not fit (the segmenter then splits).
std::optional<RowKernel> placeWithColumns(RowKernel k, const ir::Fusion& f, const std::vector<TensorDesc>& inputs,
                                           const CompileOptions& opts, const RowTierChoice& row_tier, TierChoice& c,
                                           std::string* why_not) {
  auto reject = [&](std::string w) -> std::optional<RowKernel> {
    if (why_not) *why_not = std::move(w);
    return std::nullopt;
  };
  if (opts.tuning.no_columns) return reject("column reductions share no kernel with the rows' (LOOM_NO_COLUMNS)");
  if (std::string why = columnStoresProblem(k); !why.empty()) return reject(why);
  const bool strided = std::any_of(k.load_access.begin(), k.load_access.end(), [](const auto& la) {
    return la.first.strides.back() != 0 && la.first.strides.back() != 1;
  });
  if (row_tier.place || strided)
    return reject("its column reductions beside rows strided along their reduction have no schedule");
  const Decision<BlockLimit> lim = chooseBlockLimit(f, inputs, opts.tuning);
  c.note(lim.why);
  const Decision<ColumnFit> fit = placeColumns(k, lim.value, opts);
  if (!fit.value.fits) return reject(fit.why);
  c.limit = lim.value;
  c.tier = k.tier;
  c.held = k.chunks * k.vec * std::max<int>(1, static_cast<int>(k.smem_leaves.size()));
  c.budget = 65536 / (k.block * fit.value.per_sm);
  c.note(!k.registers  ? (k.chunk_unroll > 0 ? "threads per row: 256, two blocks an SM (below)"
                                             : "threads per row: 512, or more where a thread would take more than 8 chunks")
         : k.col_smem ? "threads per row: as many as keep a thread's chunks in registers, its column partials in "
                        "shared memory"
                      : "threads per row: as many as keep a thread's chunks and their column partials in registers");
  k.smem_leaves.clear();
  k.reason = explainNormKernel(k, c, inputs) + "; " + fit.why;
  return k;
}

// Where a peeled kernel's placement leaves its edge no home: the grid tier, whose sets deal
// rows to blocks, whole-line stores (a thread stores other rows' chunks), or rows of fewer
// threads than its edge's elements (empty: none).
std::string peelProblem(const RowKernel& k) {
  if (!k.peel) return {};
  if (k.grid_sync) return "rows split over the whole grid";
  if (k.async_fill && k.rows_per_block > 1 && !k.thread_fill) return "whole-line stores of several rows a block";
  if (k.threads_per_row < 2 * k.vec) return "fewer threads a row than its edge's elements";
  return {};
}

std::optional<RowKernel> scheduleRows(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs,
                                       const CompileOptions& opts, std::string* why_not, bool peel);

}  // namespace

std::optional<RowKernel> scheduleNormalization(const ir::Fusion& f, const Bindings& sizes,
                                                const std::vector<TensorDesc>& inputs,
                                                const CompileOptions& opts, std::string* why_not) {
  std::optional<RowKernel> k = scheduleRows(f, sizes, inputs, opts, why_not, !opts.tuning.no_peel);
  // (A tier that cannot take the peeled edge: the rows' largest vector dividing them.)
  if (k && !peelProblem(*k).empty()) return scheduleRows(f, sizes, inputs, opts, why_not, false);
  return k;
}

namespace {

std::optional<RowKernel> scheduleRows(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs,
                                       const CompileOptions& opts, std::string* why_not, bool peel) {
  std::optional<NormAxes> ax = normAxes(f, sizes, inputs, why_not);
  if (!ax) return std::nullopt;
  RowKernel& k = ax->k;
  const std::set<Leaf> all_held = heldLoads(*ax);
  // Rows side by side in memory but strided along their reduction: the row-vector tiers. They
  // copy the rows' loads, not those the same for every row (layer_norm_2d_backward's weight
  // over C, under its reductions): those are read from cache at each use, as in the outputs.
  const std::set<Leaf> row_held = withoutRowConstant(all_held, k.outer_shape.size());
  const RowTierChoice row_tier = chooseRowTier(k, row_held, inputs, opts);
  const std::set<Leaf>& held = row_tier.place ? row_held : all_held;
  Decision<int> vec = chooseVectorWidth(*ax, held, inputs, row_tier.place.has_value());
  if (const int full = fullVectorWidth(*ax, held, inputs); peel && !row_tier.place && vec.value < full)
    if (Decision<bool> p = choosePeel(*ax, held, inputs, full); p.value) vec = {full, p.why};
  k.vec = vec.value;
  const int reductions = mapAccesses(*ax, f, held, inputs);
  TierChoice c;
  c.note(row_tier.why);
  c.note(vec.why);
  if (k.columns) {
    auto placed = placeWithColumns(std::move(ax->k), f, inputs, opts, row_tier, c, why_not);
    if (placed && opts.tuning.symbolic) makeNormSymbolic(f, sizes, inputs, *placed);
    return placed;
  }
  if (row_tier.place) {
    applyRowTier(k, row_tier, reductions, inputs, opts);
    c.tier = row_tier.tier;
    k.two_pass_faster = twoPassFaster(row_tier.tier, k, row_held, inputs, opts);
  } else {
    placeRows(k, f, inputs, opts, reductions, c);
    if (row_tier.element_loads) k.two_pass_faster = elementLoadsTwoPass(k, row_held, inputs, opts);
  }
  k.tier = c.tier;
  if (k.sub_rows) {
    if (std::string why = subRowProblem(k, opts.tuning); !why.empty()) {
      if (why_not) *why_not = std::move(why);
      return std::nullopt;
    }
    c.note("sub-row reductions: each thread accumulates its chunks' values per position they keep, each combined "
           "across the row, one thread storing them");
  }
  c.grid_per_sm = finishLaunch(k, opts);
  k.reason = explainNormKernel(k, c, inputs);
  if (opts.tuning.symbolic) makeNormSymbolic(f, sizes, inputs, k);
  return std::move(ax->k);
}

}  // namespace

std::string printRowKernel(const ir::Fusion& f, const RowKernel& k) {
  std::string s = fmt::format("kernel {} (normalization)\n  rows [{}] over {}, reduced [{}] over {}\n  {}\n",
                              k.name, fmt::join(k.outer_shape, ", "), k.outer_atoms,
                              fmt::join(k.red_shape, ", "), k.red_atoms, k.reason);
  std::map<const ENode*, std::string> names;
  int next = 0;
  std::vector<EPtr> roots;
  for (const auto& st : k.stores) roots.push_back(st.value);
  lower::visitPostOrder(roots, [&](const ENode& n) {
    std::string name = fmt::format("v{}", next++);
    names[&n] = name;
    std::vector<std::string> a;
    for (const auto& x : n.args) a.push_back(names[x.get()]);
    switch (n.kind) {
      case ENode::Kind::Load: {
        auto it = k.load_access.find(n.leaf);
        auto rit = k.row_load_access.find(n.leaf);
        s += fmt::format("  {} = load.{} {}[{} + i.[{}]]  ({}{})\n", name, dtypeName(n.dtype),
                         f.inputs()[static_cast<size_t>(n.leaf.input)]->name(), n.leaf.offset,
                         fmt::join(n.leaf.strides, ", "),
                         it == k.load_access.end() ? "?" : accessName(it->second),
                         rit == k.row_load_access.end() ? "" : fmt::format("; over rows {}", accessName(rit->second)));
        break;
      }
      case ENode::Kind::Const:
        s += fmt::format("  {} = const.{} {}\n", name, dtypeName(n.dtype), n.value);
        break;
      case ENode::Kind::Index:
        s += fmt::format("  {} = index {} + i.[{}]\n", name, n.leaf.offset, fmt::join(n.leaf.strides, ", "));
        break;
      case ENode::Kind::Op:
        s += fmt::format("  {} = {}.{}({})\n", name, ir::opName(n.op), dtypeName(n.dtype), fmt::join(a, ", "));
        break;
      case ENode::Kind::Reduce:
        s += fmt::format("  {} = reduce.{}{}.{}({})  over the row\n", name, ir::opName(n.op),
                         n.op == ir::OpKind::VarMean ? (n.out_index ? ".mean" : ".var") : "",
                         dtypeName(n.dtype), fmt::join(a, ", "));
        break;
    }
  });
  for (const auto& st : k.stores)
    s += fmt::format("  store.{} {}[{}i.[{}]] = {}  ({}{}{})\n", dtypeName(st.dtype),
                     f.outputs()[static_cast<size_t>(st.output)].name,
                     st.offset ? fmt::format("{} + ", st.offset) : "", fmt::join(st.strides, ", "),
                     names[st.value.get()], accessName(st.access),
                     k.rowTier() && !st.row_only ? fmt::format("; over rows {}", accessName(st.row_access)) : "",
                     st.row_only ? ", once per row" : "");
  return s;
}

}  // namespace loom::schedule
