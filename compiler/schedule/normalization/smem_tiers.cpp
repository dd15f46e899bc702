#include "compiler/schedule/normalization/smem_tiers.h"

#include <algorithm>

#include <fmt/format.h>

namespace loom::schedule::norm_detail {

using lower::ENode;

int OnChip::chunksAt(int t, int split) const {
  return static_cast<int>((row_chunks + int64_t{t} * split - 1) / (int64_t{t} * split));
}

int64_t OnChip::bytesAt(int rows, int t, int split, int buffers) const {
  int64_t bytes = 0;
  for (const auto& l : k.smem_leaves) {
    const int b = heldBytes(l, inputs);
    bytes += (int64_t{chunksAt(t, split)} * t * rows * k.vec * b + 15) / 16 * 16;
  }
  return bytes * buffers;
}

// Each of `per_sm` blocks sharing an SM takes its kBlockSmemExtra.
bool OnChip::fits(int64_t bytes, int per_sm) const {
  return bytes <= smem_limit && (per_sm == 1 || smemBlocksPerSm(opts.device, bytes) >= per_sm);
}

std::optional<SmemPlacement> OnChip::place(int rows, int t, int split, int per_sm, int buffers) const {
  const int64_t bytes = bytesAt(rows, t, split, buffers);
  if (!fits(bytes, per_sm)) return std::nullopt;
  return SmemPlacement{rows, t, split, chunksAt(t, split), buffers, 1, bytes};
}

namespace {

// Whether a held load's row lies in runs apart in memory (its reduced axes not one dense run).
bool rowsInRuns(const RowKernel& k) {
  const size_t nout = k.outer_shape.size();
  for (const auto& l : k.smem_leaves)
    for (size_t i = 0; i + 1 < k.red_shape.size(); ++i)
      if (l.strides[nout + i] != l.strides[nout + i + 1] * k.red_shape[i + 1]) return true;
  return false;
}

}  // namespace

OnChip onChipFacts(const RowKernel& k, const std::vector<TensorDesc>& inputs, const CompileOptions& opts,
                   int max_block) {
  const DeviceInfo& dev = opts.device;
  OnChip c{k, inputs, opts, max_block};
  c.row_chunks = k.rowElems() / k.vec;
  // Shared memory, one row per block (or per cluster), within the opt-in limit (with room for
  // the reductions' scratch); copied with cp.async where every held load is a contiguous vector
  // of 4, 8 or 16 bytes.
  c.async_ok = dev.sm >= 80 && !k.smem_leaves.empty();
  if (dev.sm < 80) c.no_async = fmt::format("cp.async copies need sm_80 or later (here sm_{})", dev.sm);
  for (const auto& l : k.smem_leaves) {
    const int bytes = heldBytes(l, inputs);
    c.row_smem += (k.rowElems() * bytes + 15) / 16 * 16;
    const int piece = k.vec * bytes;
    if (!c.async_ok) continue;
    if (k.load_access.at(l) != Access::Vector) c.no_async = "a held load is not read in contiguous vectors";
    else if (piece != 4 && piece != 8 && piece != 16)
      c.no_async = fmt::format("a held load's pieces are {} bytes, and cp.async copies 4, 8 or 16", piece);
    c.async_ok = c.no_async.empty();
  }
  c.smem_limit = blockSmemLimit(dev);
  c.rows_in_runs = rowsInRuns(k);
  // Neighbouring rows side by side in memory (group norm's groups in channels-last: each
  // pixel holds C/G channels of one group, then the next group's): a block takes `rows`
  // of them and fills shared memory with the pieces of all of them at each pixel together,
  // so that its loads cover whole 128-byte lines rather than a group's 8 or 32 bytes.
  // Runs of chunks no power of two (10 channels a group in vectors of 2) go several rows to a
  // block too, but not to a split row, whose blocks take runs of a power of two of chunks.
  const int64_t inner_run = k.red_shape.back();  // elements of a row at one outer position
  c.q = inner_run / k.vec;                       // chunks of them
  const size_t nout = k.outer_shape.size();
  if (nout > 0 && c.q <= 32) {
    bool adjacent = true;
    int bytes = 1;
    for (const auto& l : k.smem_leaves) {
      adjacent = adjacent && l.strides[nout - 1] == inner_run && l.strides.back() == 1;
      bytes = std::max(bytes, heldBytes(l, inputs));
    }
    while (adjacent && c.max_rows_together < 32 && inner_run * bytes * c.max_rows_together < 128 &&
           k.outer_shape.back() % (2 * c.max_rows_together) == 0)
      c.max_rows_together *= 2;
    if (adjacent) c.run_bytes = inner_run * bytes;
    c.max_rows_adjacent = c.max_rows_together;
    while (adjacent && c.max_rows_adjacent < 32 && k.outer_shape.back() % (2 * c.max_rows_adjacent) == 0)
      c.max_rows_adjacent *= 2;
  }
  // For tuning sweeps only: LOOM_TUNE_ROWS_TOGETHER=R caps the neighbouring rows a block (or
  // a grid set) takes together.
  if (const auto& cap = opts.tuning.rows_together) {
    while (c.max_rows_together > *cap) c.max_rows_together /= 2;
    while (c.max_rows_adjacent > *cap) c.max_rows_adjacent /= 2;
  }
  return c;
}

Decision<std::optional<SmemPlacement>> chooseThreadFill(const OnChip& c, bool registers) {
  // Short rows that fit registers go to shared memory instead: each thread copies four chunks
  // of its row with cp.async and reads back only those, so no barrier is needed, and a thread's
  // 64 bytes in flight (f16/bf16) cost no registers: 2048 threads of 32 registers each per SM
  // rather than 1024 of 64. Not where the passes would recompute math of the Unary family on
  // every element (softmax's exp), nor below a quarter of the GPU's thread slots: both
  // measured slower.
  // Measurements: bench/results/2026-11-25-h100-scheduler-rules.md#thread-fill
  const Tuning& tune = c.opts.tuning;
  const RowKernel& k = c.k;
  if (!registers || !c.async_ok || tune.no_smem_rows || k.smem_leaves.empty() || tune.no_thread_fill) return {};
  // Four chunks a thread, and a power of two of threads a row: the rows' threads then sit
  // whole within warps, as the shuffles across them need (384 or 768 f16 values: no).
  const int64_t rc = c.row_chunks;
  int t = rc % 4 == 0 && ((rc / 4) & (rc / 4 - 1)) == 0 ? static_cast<int>(rc / 4) : 0;
  bool cheap_passes = true;
  for (const auto& st : k.stores)
    lower::visitPostOrder({st.value}, [&](const ENode& n) {
      if (n.kind != ENode::Kind::Reduce) return;
      lower::visitPostOrder({n.args[0]}, [&](const ENode& m) {
        if (m.kind == ENode::Kind::Op && ir::opFamily(m.op) == ir::OpFamily::Unary) cheap_passes = false;
      });
    });
  if (!cheap_passes || k.rows() * t < int64_t{c.opts.device.sm_count} * 512) t = 0;
  // For tuning sweeps only: LOOM_TUNE_THREAD_FILL=T threads per row, LOOM_TUNE_FILL_BLOCK.
  if (tune.thread_fill) t = nextPow2(*tune.thread_fill);
  // (Sweeps may take fewer than 8 threads a row: rows of 4 to 7 chunks of 4.)
  if (!((t >= 8 || (tune.thread_fill && t >= 2)) && t <= 32)) return {};
  int blk = t >= 16 ? 256 : 128;
  if (tune.fill_block) blk = std::max(t, *tune.fill_block);
  std::optional<SmemPlacement> p = c.place(blk / t, t, 1);
  if (!p) return {};
  if (tune.thread_fill) return {p, fmt::format("{} threads a row from LOOM_TUNE_THREAD_FILL", t)};
  return {p, fmt::format("rows of {} chunks, four for each of {} threads: {} rows fill at least a quarter of the "
                         "GPU's thread slots, and no math of the Unary family is recomputed by each pass",
                         rc, t, k.rows())};
}

namespace {

// `rows_together` neighbouring rows a block, each split over a cluster (at most 8 blocks, the
// portable size) only where one block cannot hold it: one block of a whole row measured faster
// than two of half of it. Once split, blocks of 64 KiB: three per SM keep the SM busy while one
// waits at a cluster barrier (measured faster than blocks of 128 KiB).
// Clusters of 16 (sm_90's non-portable size, LOOM_TUNE_CLUSTER=16), which keep rows of 1 MiB in
// blocks of 64 KiB, measured faster on one sm_90 part and slower on another
// (docs/performance.md#cluster-split).
constexpr int kMaxCluster = 16;

// Threads a row of `rows_together` neighbouring rows a block, each split over `cs` blocks.
int threadsAt(const OnChip& c, int rows_together, int cs) {
  const Tuning& tune = c.opts.tuning;
  const int64_t block_chunks = (c.row_chunks + cs - 1) / cs;
  // Rows split over a cluster that hold two loads or more and are runs apart in memory (batch
  // norm backward over NCHW: x and dy, runs of H*W), or beside sub-row reductions (group norm
  // backward's channel sums: fewer warps to total them over): up to 16 chunks a thread, in
  // blocks half as large. bench/results/2026-11-26-h200-cluster-chunks.md,
  // 2026-11-27-h100-split-sums.md
  int64_t most_chunks =
      cs > 1 && c.k.smem_leaves.size() >= 2 && (c.rows_in_runs || c.k.sub_rows) ? 2 * kMaxChunks : kMaxChunks;
  if (cs > 1 && tune.cluster_chunks) most_chunks = *tune.cluster_chunks;
  int t = std::max(32, std::min(c.max_block / rows_together, nextPow2((block_chunks + most_chunks - 1) / most_chunks)));
  if (tune.threads_per_row) t = static_cast<int>(std::max<int64_t>(32, floorPow2(*tune.threads_per_row)));
  return t;
}

std::optional<SmemPlacement> placeAt(const OnChip& c, int rows_together, int cs) {
  const int t = threadsAt(c, rows_together, cs);
  if (rows_together > 1 && cs > 1 && t % c.q != 0) return std::nullopt;
  std::optional<SmemPlacement> p = c.place(rows_together, t, cs);
  if (p) p->cluster = cs;
  return p;
}

std::optional<SmemPlacement> onChipAt(const OnChip& c, int rows_together) {
  const Tuning& tune = c.opts.tuning;
  // For tuning sweeps only, like LOOM_TUNE_THREADS_PER_ROW.
  const int64_t block_limit = tune.block_smem_kb ? int64_t{*tune.block_smem_kb} * 1024 : c.smem_limit;
  const bool clusters = c.opts.device.sm >= 90 && !tune.no_cluster;
  // Once split, blocks of 64 KiB (see above).
  auto split64 = [&](int cs) {
    while (cs > 1 && cs < 8 && c.row_smem * rows_together > int64_t{64 * 1024} * cs) cs *= 2;
    return cs;
  };
  int cs = 1;
  if (clusters) {
    while (cs < 8 && c.row_smem * rows_together > block_limit * cs) cs *= 2;
    cs = split64(cs);
    // For tuning sweeps only: LOOM_TUNE_CLUSTER=C blocks (1 to 16) where a row is split.
    if (tune.cluster && cs > 1) cs = std::clamp(nextPow2(*tune.cluster), 1, kMaxCluster);
  }
  std::optional<SmemPlacement> p = placeAt(c, rows_together, cs);
  // A row within a block's shared memory until its chunks are padded to the block's threads
  // (batch norm backward over NCHW, f16 64x512x28x28: 196 KiB, 224 padded): split over a
  // cluster, not left to the grid tier's barriers (docs/performance.md#padded-rows).
  if (!p && cs == 1 && clusters && !tune.cluster && !tune.block_smem_kb) p = placeAt(c, rows_together, split64(2));
  return p;
}

}  // namespace

Decision<std::optional<SmemPlacement>> chooseOnChip(const OnChip& c) {
  const int64_t sms = c.opts.device.sm_count;
  auto blocks = [&](int r, int cluster) { return (c.k.rows() + r - 1) / r * cluster; };
  int fit = 0, fit_cluster = 1;
  for (int r = c.max_rows_together; r >= 1; r /= 2) {
    std::optional<SmemPlacement> p = onChipAt(c, r);
    if (!p) continue;
    if (r > fit) fit = r, fit_cluster = p->cluster;
    // Neighbouring rows a block only while the blocks still leave at most a quarter of the SMs
    // idle: whole lines do not make up for SMs with nothing to read.
    if (r > 1 && !c.opts.tuning.rows_together && 4 * blocks(r, p->cluster) < 3 * sms) continue;
    p->rows_fit = fit;
    std::string why;
    if (p->cluster > 1 && c.row_smem * r > c.smem_limit)
      why = fmt::format("{} row{} of {} KiB {} more than one block's shared memory holds", r, r == 1 ? "" : "s",
                        kib(c.row_smem), r == 1 ? "is" : "are");
    else if (p->cluster > 1)
      why = fmt::format("{} row{} of {} KiB, {} KiB as one block's threads take {}, {} more than its shared memory "
                        "holds", r, r == 1 ? "" : "s", kib(c.row_smem), kib(c.bytesAt(r, threadsAt(c, r, 1), 1, 1)),
                        r == 1 ? "it" : "them", r == 1 ? "is" : "are");
    if (r > 1)
      why += fmt::format("{}{} neighbouring rows a block, so that its loads cover whole 128-byte lines",
                         why.empty() ? "" : "; ", r);
    if (fit > r)
      why += fmt::format("{}not {} neighbouring rows a block: {} blocks would leave more than a quarter of the {} "
                         "SMs idle", why.empty() ? "" : "; ", fit, blocks(fit, fit_cluster), sms);
    return {p, why};
  }
  return {};
}

namespace {

// The grid tier with sets of `rows` neighbouring rows and `groups` groups of blocks, every SM's
// block taking a slice of each set (or, for sets of several rows, more sets at once over fewer
// blocks each where that fits: see gridShape).
std::optional<GridChoice> gridAt(const OnChip& c, int rows, int groups) {
  const RowKernel& k = c.k;
  const int P = c.opts.device.sm_count;
  if (P < 2) return std::nullopt;  // one SM: no blocks to split a set over
  int t = c.max_block / groups / rows;
  if (groups == 3 && t < 32 && 2 * c.max_block / groups / rows >= 32) t = 32;  // 16-row sets: 512 threads
  if (t < 32 || t % 32 != 0 || (rows > 1 && t % c.q != 0)) return std::nullopt;
  if (groups > 1 && k.rows() / rows < 2 * groups) return std::nullopt;  // each group walks two sets or more
  const int buffers = gridFillBuffers(c.opts.tuning);
  GridShape gs{P, groups};
  if (rows > 1)
    gs = gridShape(k.rows() / rows, groups, groups, c.opts,
                   [&](int S) { return c.fits(c.bytesAt(rows, t, S, buffers), groups); });
  const std::optional<SmemPlacement> p = c.place(rows, t, gs.split, groups, buffers);
  if (!p) return std::nullopt;
  return GridChoice{*p, gs.groups, rows};
}

}  // namespace

Decision<std::optional<GridChoice>> chooseGrid(const OnChip& c, int placed_rows) {
  const Tuning& tune = c.opts.tuning;
  // Rows a cluster cannot hold, or neighbouring rows a cluster cannot take enough of to read
  // whole lines: the grid tier, with as many neighbouring rows per set as fit. Two groups where
  // both fit an SM with whole lines: the memory keeps streaming while a group waits at its
  // barrier (group norm 32x128x256x256 f16 channels-last).
  // (Runs of chunks no power of two: the grid's sets take one row, as where no rows lie side by side.)
  const int together = c.pow2Runs() ? c.max_rows_together : 1, adjacent = c.pow2Runs() ? c.max_rows_adjacent : 1;
  if (placed_rows >= together || c.opts.device.sm < 80 || tune.no_grid) return {};
  std::optional<GridChoice> g;
  // For tuning sweeps only: LOOM_TUNE_GRID_GROUPS=G (G blocks per SM; sets of any rows).
  // Sets of one long row: more groups (up to 8) while each still walks four sets or more. Sets
  // of several rows: three groups first (512-thread blocks of 64 KiB, three per SM), then two.
  // Measurements: bench/results/2026-11-25-h100-scheduler-rules.md#grid-groups
  if (tune.grid_groups)
    for (int r = adjacent; r >= 1 && !g; r /= 2) g = gridAt(c, r, *tune.grid_groups);
  if (!tune.no_grid_groups)
    for (int r = adjacent; r >= together && !g; r /= 2) {
      int groups = 2;
      while (r == 1 && groups < 8 && c.k.rows() >= 8 * groups) groups *= 2;
      if (r > 1) g = gridAt(c, r, 3);
      for (; groups >= 2 && !g; groups /= 2) g = gridAt(c, r, groups);
    }
  // Rows of two held loads or more: half as many neighbouring rows (64-byte lines, two sectors)
  // in two groups rather than whole lines in one (docs/performance.md#grid-groups).
  if (!tune.no_grid_groups && !tune.grid_groups && !g && c.k.smem_leaves.size() >= 2 && together >= 2 &&
      c.run_bytes * (together / 2) >= 64)
    g = gridAt(c, together / 2, 2);
  for (int r = adjacent; r >= 1 && !g; r /= 2) g = gridAt(c, r, 1);
  if (!g) return {};
  const char* holder = c.opts.device.sm >= 90 && !tune.no_cluster ? "block or cluster" : "block";
  return {g, placed_rows == 0
                 ? fmt::format("no {} holds the row in shared memory", holder)
                 : fmt::format("a {} holds {} neighbouring row{}, too few to read whole 128-byte lines", holder,
                               placed_rows, placed_rows == 1 ? "" : "s")};
}

Decision<bool> keepGathered(const OnChip& c, const Threads& t, bool registers) {
  if (registers) return {false, ""};
  if (c.opts.tuning.no_smem_rows) return {false, "the shared-memory tiers are off (LOOM_NO_SMEM_ROWS)"};
  if (t.rows_per_block != 1)
    return {false, fmt::format("not kept in shared memory: {} rows a block", t.rows_per_block)};
  if (c.row_smem > c.smem_limit)
    return {false, fmt::format("nor in shared memory: the row takes {} KiB, a block holds at most {} KiB",
                               kib(c.row_smem), c.smem_limit / 1024)};
  return {true, ""};
}

void applyPlacement(RowKernel& k, const SmemPlacement& p) {
  k.fill_buffers = p.buffers;
  k.async_fill = true;
  k.split = p.split;
  k.threads_per_row = p.threads;
  k.rows_per_block = p.rows;
  k.block = p.threads * p.rows;
  k.chunks = p.chunks;
  k.smem_bytes = static_cast<int>(p.bytes);
  k.cluster = p.cluster;
}

}  // namespace loom::schedule::norm_detail
