#include "compiler/schedule/normalization/columns.h"

#include <algorithm>
#include <functional>
#include <set>

#include <fmt/format.h>

namespace loom::schedule::norm_detail {

using lower::ENode;

namespace {

std::vector<lower::EPtr> storeRoots(const RowKernel& k) {
  std::vector<lower::EPtr> roots;
  for (const auto& s : k.stores) roots.push_back(s.value);
  return roots;
}

// The column reductions the stores read, in the order the lowering gives them workspace.
std::vector<const ENode*> columnReductions(const RowKernel& k) {
  std::vector<const ENode*> out;
  lower::visitPostOrder(storeRoots(k), [&](const ENode& n) {
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

std::vector<std::pair<Leaf, DType>> loadsAhead(const RowKernel& k, int chunks, bool partials_in_registers,
                                               const Tuning& tune) {
  constexpr int64_t kAheadValues = 80;
  std::vector<std::pair<Leaf, DType>> out;
  if (tune.row_prefetch && *tune.row_prefetch == 0) return out;
  const size_t nout = k.outer_shape.size();
  lower::visitPostOrder(storeRoots(k), [&](const ENode& n) {
    if (n.kind != ENode::Kind::Load) return;
    const auto& s = n.leaf.strides;
    const bool rows = std::any_of(s.begin(), s.begin() + static_cast<long>(nout), [](int64_t x) { return x != 0; });
    const std::pair<Leaf, DType> l{n.leaf, n.dtype};
    if (rows && !rowOnly(s, nout) && std::find(out.begin(), out.end(), l) == out.end()) out.push_back(l);
  });
  const std::vector<const ENode*> cols = columnReductions(k);
  const int64_t partials = partials_in_registers ? static_cast<int64_t>(cols.size()) : 0;
  const int64_t held = int64_t{chunks} * k.vec * (2 * static_cast<int64_t>(out.size()) + partials);
  const bool narrow = std::all_of(out.begin(), out.end(), [](const auto& l) { return dtypeBytes(l.second) == 2; });
  const bool narrow_partials = std::all_of(cols.begin(), cols.end(), [](const ENode* r) {
    return dtypeBytes(computeDType(r->dtype)) <= 4;
  });
  if (!tune.row_prefetch && (held > kAheadValues || !narrow || !narrow_partials)) out.clear();
  return out;
}

std::string columnStoresProblem(const RowKernel& k) {
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

namespace {

// Static shared memory a column kernel may take beside its reductions' scratch (48 KiB a block).
constexpr int64_t kColumnStaticSmem = 40 * 1024;

// Where a column kernel keeps the row and each thread's column partials.
enum class ColumnPlace {
  Registers,     // both in registers
  SmemPartials,  // the row in registers, the partials in slots of their own in shared memory
  Streamed,      // the row streamed (each pass reads it again, from L2 where it fits), the partials in shared memory
};

// Threads a row, the chunks each holds and blocks an SM for `place`; `fits` false where they do
// not fit.
struct ColumnShape {
  int T = 32, chunks = 1, block = 256, per_sm = 0;
  int64_t smem = 0;
  bool fits = false;
  int held = 0, partials = 0;
  ColumnPlace place = ColumnPlace::Registers;
};

ColumnShape shapeColumns(const RowKernel& k, const BlockLimit& lim, const CompileOptions& opts,
                         const std::vector<const ENode*>& cols, ColumnPlace place, int threads = 0) {
  const bool in_smem = place == ColumnPlace::Streamed;
  const bool smem_partials = place != ColumnPlace::Registers;
  const int64_t row_chunks = k.rowElems() / k.vec;
  ColumnShape s;
  s.place = place;
  // Each chunk a thread holds carries one partial per column reduction beside the row's
  // values: up to 256 threads a row (a warp at least; several rows a block where the row is
  // short), more where a thread would hold more than 4 chunks. Fewer threads a row meet less
  // often at the rows' block barriers (docs/performance.md#column-threads).
  // A streamed row holds nothing between passes: 512 threads, up to kMaxChunks chunks each.
  int T = in_smem ? std::min(512, lim.max_block) : std::clamp(nextPow2(row_chunks), 32, std::min(256, lim.max_block));
  while ((row_chunks + T - 1) / T > (in_smem ? kMaxChunks : 4) && T < lim.max_block) T *= 2;
  if (threads) T = threads;
  if (opts.tuning.threads_per_row) T = static_cast<int>(floorPow2(*opts.tuning.threads_per_row));  // (as chooseThreads)
  s.T = T;
  s.chunks = static_cast<int>((row_chunks + T - 1) / T);
  s.block = std::max(T, 256);
  s.held = s.chunks * k.vec * std::max<int>(1, static_cast<int>(k.smem_leaves.size()));
  s.partials = s.chunks * k.vec * static_cast<int>(cols.size());
  // Registers: the held row and the partials (two a value in f64), and 32 for the rest; a
  // streamed row holds neither (its passes' loads in flight and their math: about 96).
  const int regs = in_smem          ? 96 * lim.value_regs
                   : smem_partials ? s.held * lim.value_regs + 32
                                   : (s.held + s.partials) * lim.value_regs + 32;
  int per_sm = std::min({2048 / s.block, 65536 / (s.block * ((regs + 7) / 8 * 8)), 32});
  if (opts.tuning.min_blocks && *opts.tuning.min_blocks > 0) per_sm = *opts.tuning.min_blocks;
  // Static shared memory beside: the combine's slots (at most a block's threads' worth of `vec`
  // lanes of every column reduction) and, with several rows a block, the rows' partials.
  int64_t acc_bytes = 0, widest = 4;
  for (const ENode* r : cols) {
    acc_bytes += dtypeBytes(computeDType(r->dtype));
    widest = std::max<int64_t>(widest, dtypeBytes(computeDType(r->dtype)));
  }
  const int64_t rows_per_block = s.block / T;
  const int64_t static_bytes = int64_t{s.block} * k.vec * acc_bytes +
                               (rows_per_block > 1 ? rows_per_block * row_chunks * k.vec * widest : 0);
  bool smem_ok = static_bytes <= kColumnStaticSmem;
  if (smem_partials) {
    // One row a block; a thread's slots: its chunks of every column reduction.
    s.smem = int64_t{s.chunks} * T * k.vec * acc_bytes;
    smem_ok = smem_ok && s.block == T && s.smem + static_bytes <= blockSmemLimit(opts.device) &&
              smemBlocksPerSm(opts.device, s.smem + static_bytes) >= 1;
    if (smem_ok) per_sm = static_cast<int>(std::min<int64_t>(per_sm, smemBlocksPerSm(opts.device, s.smem + static_bytes)));
  }
  s.per_sm = per_sm;
  s.fits = s.block <= lim.max_block && int64_t{T} * s.chunks >= row_chunks && s.chunks <= kMaxChunks &&
           regs <= 255 && per_sm >= 1 && smem_ok;
  return s;
}

// Blocks an SM, one fewer than the registers allow where that shortens the tail: each block
// walks ceil(sets / grid) row sets, and the blocks of an SM share its bandwidth, so the rows
// take about ceil(sets / (per_sm SMs)) x per_sm set-times. One block fewer is taken where that
// is at least 10% less and leaves two an SM or more; at equal trips fewer blocks lost, so the
// model is not trusted further down (docs/performance.md#column-tail).
// Not for a kernel that serves many row counts (symbolic sizes), nor under LOOM_TUNE_MIN_BLOCKS.
int fewerBlocksForTail(const RowKernel& k, const ColumnShape& s, const CompileOptions& opts) {
  const int p = s.per_sm - 1;
  if (opts.tuning.symbolic || (opts.tuning.min_blocks && *opts.tuning.min_blocks > 0) || p < 2) return s.per_sm;
  const int64_t sets = (k.rows() + s.block / s.T - 1) / (s.block / s.T);
  // (Where the sets do not fill p blocks an SM, p would change the registers, not the tail.)
  if (sets <= int64_t{p} * opts.device.sm_count) return s.per_sm;
  auto cost = [&](int q) {
    const int64_t grid = int64_t{q} * opts.device.sm_count;
    return (sets + grid - 1) / grid * q;
  };
  return cost(p) * 10 <= cost(s.per_sm) * 9 ? p : s.per_sm;
}

// `n` rounded up to a multiple of a quarter of its power of two (5 of 32 -> 5, 129 -> 160).
int64_t quarterOctave(int64_t n) {
  const int64_t step = std::max<int64_t>(1, floorPow2(n) / 4);
  return (n + step - 1) / step * step;
}

// The column kernel's shape: the partials in registers beside the row, in shared memory beside
// it, or streamed with the row (and there two blocks an SM of half the threads:
// `*two_streamed`).
ColumnShape chooseColumnShape(const RowKernel& k, const BlockLimit& lim, const CompileOptions& opts,
                              const std::vector<const ENode*>& cols, bool* two_streamed) {
  ColumnShape s = shapeColumns(k, lim, opts, cols, ColumnPlace::Registers);
  // The partials in shared memory beside the row in registers where that lets the next row's
  // loads in (loadsAhead), as many blocks an SM as before: the registers they free hold those
  // loads; more blocks an SM instead spill (docs/performance.md#column-smem-partials).
  // LOOM_TUNE_COLUMN_SMEM=1 or 0: always (blocks an SM as the registers allow) or never.
  const std::optional<int>& knob = opts.tuning.column_smem;
  auto aheadWith = [&](const ColumnShape& c, bool in_registers) {
    return !loadsAhead(k, c.chunks, in_registers, opts.tuning).empty();
  };
  const bool beside = knob ? *knob == 1
                           : s.fits && s.block == s.T && !aheadWith(s, true) && aheadWith(s, false);
  // (By default only where the slots leave the SM as many threads: with 100 KiB of shared
  // memory an SM, sm_86's, they would halve its blocks.)
  auto threadsPerSm = [](const ColumnShape& c) { return c.per_sm * c.block; };
  if (beside) {
    ColumnShape b = shapeColumns(k, lim, opts, cols, ColumnPlace::SmemPartials);
    if (!knob) b.per_sm = std::min(b.per_sm, s.per_sm);
    if (b.fits && (knob || b.per_sm == s.per_sm)) s = b;
  } else if (!knob && !opts.tuning.threads_per_row && s.fits && s.block == s.T && !aheadWith(s, false) &&
             2 * s.T <= std::min(512, lim.max_block)) {
    // Nor without the partials (4 chunks a thread): twice the threads a row, half the chunks
    // each, which the loads ahead then fit; at 2 chunks a thread it loses
    // (docs/performance.md#column-smem-partials).
    const ColumnShape b = shapeColumns(k, lim, opts, cols, ColumnPlace::SmemPartials, 2 * s.T);
    if (b.fits && aheadWith(b, false) && threadsPerSm(b) >= threadsPerSm(s)) s = b;
  }
  // A row too long for its partials beside it in registers: the partials in shared memory.
  if (!s.fits) {
    const ColumnShape in_smem = shapeColumns(k, lim, opts, cols, ColumnPlace::Streamed);
    if (in_smem.fits) s = in_smem;
    // Two blocks an SM of half the threads, where their partials' shared memory lets two in:
    // while one waits at a row's barrier the other's loads stream (their chunk loops unrolled
    // by 4, as many loads in flight a thread as before; fully unrolled, 8 chunks, it spilled and
    // ran at a third). Twice the blocks write and combine twice the partials, which each block
    // repays only over enough rows: taken where each block walks 6 rows or more
    // (docs/performance.md#column-two-streamed). Layer
    // norm's two reductions (128 KiB) let one block of 256 in, and stay as they were; so does a
    // kernel serving many row counts.
    if (in_smem.fits && !opts.tuning.threads_per_row && !opts.tuning.symbolic && in_smem.T >= 512) {
      const ColumnShape half = shapeColumns(k, lim, opts, cols, ColumnPlace::Streamed, in_smem.T / 2);
      const int64_t blocks = int64_t{half.per_sm} * opts.device.sm_count;
      if (half.fits && half.per_sm >= 2 * in_smem.per_sm && k.rows() >= 6 * blocks) {
        s = half;
        *two_streamed = true;
      }
    }
  }
  return s;
}

}  // namespace

Decision<ColumnFit> placeColumns(RowKernel& k, const BlockLimit& lim, const CompileOptions& opts) {
  const std::vector<const ENode*> cols = columnReductions(k);
  const int64_t row_chunks = k.rowElems() / k.vec;
  bool two_streamed = false;
  const ColumnShape s = chooseColumnShape(k, lim, opts, cols, &two_streamed);
  ColumnFit fit;
  if (!s.fits)
    return {fit, fmt::format("the row and its column partials ({} values a thread, {} chunks of {}) do not fit the "
                             "registers of blocks of {} threads, nor the partials shared memory",
                             s.held + s.partials, s.chunks, k.vec, s.block)};
  const int T = s.T, block = s.block, per_sm = fewerBlocksForTail(k, s, opts);
  fit.fits = true;
  fit.per_sm = per_sm;
  k.threads_per_row = T;
  k.chunks = s.chunks;
  k.block = block;
  k.rows_per_block = block / T;
  k.col_smem = s.place != ColumnPlace::Registers;
  k.registers = s.place != ColumnPlace::Streamed;
  k.tier = k.registers ? NormTier::Registers : NormTier::Streamed;
  k.smem_bytes = static_cast<int>(s.smem);
  if (two_streamed) k.chunk_unroll = std::min(4, s.chunks);
  const int64_t sets = (k.rows() + k.rows_per_block - 1) / k.rows_per_block;
  // A kernel serving many row counts (symbolic sizes) rounds the sets up to a quarter of their
  // power of two (129 -> 160), so that the counts below a full grid share four grids an octave,
  // not one each (its blocks past the last set walk none): the grid is in its kernel IR (barrier
  // counts, the combine's partials), and each idle block costs the barrier and the combine time
  // (docs/performance.md#column-class-grid).
  k.grid = std::min<int64_t>(opts.tuning.symbolic ? quarterOctave(sets) : sets, int64_t{per_sm} * opts.device.sm_count);
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
  int64_t bytes = RowKernel::kColumnCounterBytes;
  for (const ENode* r : cols) bytes += k.col_partials * k.rowElems() * dtypeBytes(computeDType(r->dtype));
  k.workspace_bytes = bytes;
  if (bytes >= (int64_t{1} << 31)) k.index64 = true;
  const std::string where =
      s.place == ColumnPlace::Streamed
          ? fmt::format("in slots of its own in shared memory ({} KiB a block: beside the row in registers they do "
                        "not fit{})", kib(s.smem),
                        two_streamed ? fmt::format("; half the threads a row, two blocks an SM, chunk loops unrolled by {}",
                                                   k.chunk_unroll)
                                     : "")
      : s.place == ColumnPlace::SmemPartials
          ? fmt::format("in slots of its own in shared memory ({} KiB a block), the row in registers", kib(s.smem))
          : "in registers";
  const std::string fewer =
      per_sm < s.per_sm ? std::string(", one fewer than the registers allow: the sets' last trip fuller") : "";
  return {fit, fmt::format("{} column reduction{} over {} beside the rows': a cooperative grid of {} blocks ({} per SM{}) "
                           "walks the {} sets of {} row{}, each thread adding its chunks' values {}; the {} "
                           "blocks' partials{} meet in a global workspace ({} KiB) and, after a grid-wide barrier, are "
                           "combined in a fixed order ({} tiles of {} chunks of columns, {} threads down the partials)",
                           cols.size(), cols.size() == 1 ? "" : "s", k.outer_atoms, k.grid, per_sm, fewer, sets,
                           k.rows_per_block, k.rows_per_block == 1 ? "" : "s", where, k.col_partials,
                           k.rows_per_block == 1 ? "" : " (its rows' added in shared memory first)", kib(bytes),
                           k.col_tiles, k.col_bx, k.col_by)};
}

}  // namespace loom::schedule::norm_detail
