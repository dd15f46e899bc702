#include "compiler/schedule/normalization.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <set>

#include "compiler/schedule/norm_common.h"
#include "compiler/schedule/norm_row_tier.h"
#include "compiler/schedule/norm_shape.h"
#include "ir/error.h"

namespace loom::schedule {

using lower::ENode;
using lower::EPtr;
using lower::Leaf;
using namespace norm_detail;

int64_t NormKernel::rows() const {
  return std::accumulate(outer_shape.begin(), outer_shape.end(), int64_t{1}, std::multiplies<>());
}
int64_t NormKernel::rowElems() const {
  return std::accumulate(red_shape.begin(), red_shape.end(), int64_t{1}, std::multiplies<>());
}

int64_t NormKernel::rowVectorUnits() const {
  return (split > 1 ? int64_t{chunks} * threads_per_row : rowElems()) * (rows_per_block / row_vec);
}

std::optional<NormKernel> scheduleNormalization(const ir::Fusion& f, const Bindings& sizes,
                                                const std::vector<TensorDesc>& inputs,
                                                const CompileOptions& opts, std::string* why_not) {
  const DeviceInfo& dev = opts.device;
  const Tuning& tune = opts.tuning;
  std::optional<NormAxes> ax = normAxes(f, sizes, inputs, why_not);
  if (!ax) return std::nullopt;
  NormKernel& k = ax->k;
  const size_t nout = k.outer_shape.size();
  const std::set<Leaf> held_leaves = heldLoads(*ax);
  const RowTierChoice row_choice = chooseRowTier(k, held_leaves, inputs, opts);
  const std::optional<RowPlacement>& row_place = row_choice.place;
  k.vec = chooseVectorWidth(*ax, held_leaves, inputs, row_place.has_value()).value;
  const int vec = k.vec;
  const int reductions = mapAccesses(*ax, f, held_leaves, inputs);
  const int live_leaves = static_cast<int>(held_leaves.size());
  std::vector<EPtr> remapped;
  for (const auto& st : k.stores) remapped.push_back(st.value);

  // f64 math holds a value in two registers and divides and takes square roots in long
  // sequences: its blocks stop at 512 threads, whose 128 registers a thread hold them (blocks
  // of 1024, at 64 registers, spilled at sm_90). For tuning sweeps only:
  // LOOM_TUNE_WIDE_BLOCK=T (0: scheduled as f32 math).
  // Measurements: bench/results/2026-11-25-code-comment-measurements.md#f64-block-limit
  const std::optional<int>& tune_wide = tune.wide_block;
  const bool wide = (!tune_wide || *tune_wide > 0) &&
                    (std::any_of(inputs.begin(), inputs.end(), [](const TensorDesc& d) { return d.dtype == DType::F64; }) ||
                     std::any_of(f.outputs().begin(), f.outputs().end(), [](const auto& o) { return o.value->dtype() == DType::F64; }));
  int max_block = wide ? 512 : 1024;
  if (tune_wide && wide) max_block = std::clamp(nextPow2(*tune_wide), 128, 1024);
  const int value_regs = wide ? 2 : 1;
  // Rows side by side in memory but strided along their reduction: the row-vector tier.
  int held = 0, budget = 0;
  const bool row_tier = row_place.has_value();
  if (row_tier) {
    applyRowTier(k, row_choice, reductions, inputs, opts);
  }
  else {
    // Threads per row: enough that each holds at most 8 chunks, a power of two up to 1024; more
    // while the whole grid would not fill the GPU twice over (few, long rows).
    const int64_t row_chunks = k.rowElems() / vec;
    const int kMaxChunks = 8;
    k.threads_per_row = std::min(max_block, nextPow2((row_chunks + kMaxChunks - 1) / kMaxChunks));
    // Short rows read as contiguous vectors: a chunk per thread, for occupancy. Rows strided
    // along their reduction (NCHW LayerNorm2d) keep few threads, whose neighbours then read
    // neighbouring rows (many threads a row measured far slower there).
    // Measurements: bench/results/2026-11-25-code-comment-measurements.md#threads-per-row-short-rows
    const bool contiguous_rows = !k.smem_leaves.empty() && std::all_of(k.smem_leaves.begin(), k.smem_leaves.end(),
        [&](const Leaf& l) { return k.load_access[l] == Access::Vector; });
    if (contiguous_rows && row_chunks <= 16) k.threads_per_row = nextPow2(row_chunks);
    while (k.threads_per_row < max_block && k.threads_per_row < row_chunks &&
           k.rows() * k.threads_per_row < int64_t{dev.sm_count} * 2048)
      k.threads_per_row *= 2;
    // For tuning sweeps only (part of the cache key, like every override here).
    const std::optional<int>& tune_threads = tune.threads_per_row;
    if (tune_threads) k.threads_per_row = *tune_threads;
    k.chunks = static_cast<int>((row_chunks + k.threads_per_row - 1) / k.threads_per_row);
    // Registers per thread for the persistent row: chunks * vec values per streamed input.
    held = k.chunks * vec * std::max(1, live_leaves);
    k.block = std::max(k.threads_per_row, 128);
    k.rows_per_block = k.block / k.threads_per_row;
    // 64K registers per SM: a block of 1024 threads gets 64 each, so the row it may hold
    // shrinks as blocks grow (what is left covers addresses, statistics and the epilogue).
    budget = std::min(128, 65536 / k.block / 2 - 8);
    k.registers = held * value_regs <= budget && k.chunks <= 16;
    // Next tiers: shared memory, one row per block (or per cluster), within the opt-in limit
    // (with room for the reductions' scratch).
    int64_t row_smem = 0;
    bool async_ok = dev.sm >= 80 && !k.smem_leaves.empty();
    for (const auto& l : k.smem_leaves) {
      const int bytes = dtypeBytes(inputs[static_cast<size_t>(l.input)].dtype);
      row_smem += (k.rowElems() * bytes + 15) / 16 * 16;
      const int piece = vec * bytes;
      if (k.load_access[l] != Access::Vector || (piece != 4 && piece != 8 && piece != 16)) async_ok = false;
    }
    const int64_t smem_limit = blockSmemLimit(dev);
    const bool no_smem = tune.no_smem_rows;
    // Neighbouring rows side by side in memory (group norm's groups in channels-last: each
    // pixel holds C/G channels of one group, then the next group's): a block takes `rows`
    // of them and fills shared memory with the pieces of all of them at each pixel together,
    // so that its loads cover whole 128-byte lines rather than a group's 8 or 32 bytes.
    const int64_t inner_run = k.red_shape.back();  // elements of a row at one outer position
    const int64_t q = inner_run / vec;             // chunks of them
    int max_rows_together = 1, max_rows_adjacent = 1;
    if (nout > 0 && (q & (q - 1)) == 0 && q <= 32) {
      bool adjacent = true;
      int bytes = 1;
      for (const auto& l : k.smem_leaves) {
        adjacent = adjacent && l.strides[nout - 1] == inner_run && l.strides.back() == 1;
        bytes = std::max(bytes, dtypeBytes(inputs[static_cast<size_t>(l.input)].dtype));
      }
      while (adjacent && max_rows_together < 32 && inner_run * bytes * max_rows_together < 128 &&
             k.outer_shape.back() % (2 * max_rows_together) == 0)
        max_rows_together *= 2;
      max_rows_adjacent = max_rows_together;
      while (adjacent && max_rows_adjacent < 32 && k.outer_shape.back() % (2 * max_rows_adjacent) == 0)
        max_rows_adjacent *= 2;
    }
    // For tuning sweeps only: LOOM_TUNE_ROWS_TOGETHER=R caps the neighbouring rows a block (or
    // a grid set) takes together.
    if (tune.rows_together) {
      const int cap = *tune.rows_together;
      while (max_rows_together > cap) max_rows_together /= 2;
      while (max_rows_adjacent > cap) max_rows_adjacent /= 2;
    }
    // The block's shared memory for `rows` rows of `t` threads, each row split over `split`
    // blocks: placed (the cp.async tiers) if it fits.
    auto chunksAt = [&](int t, int split) {
      return static_cast<int>((row_chunks + int64_t{t} * split - 1) / (int64_t{t} * split));
    };
    auto bytesAt = [&](int rows, int t, int split, int buffers) {
      int64_t bytes = 0;
      for (const auto& l : k.smem_leaves) {
        const int b = dtypeBytes(inputs[static_cast<size_t>(l.input)].dtype);
        bytes += (int64_t{chunksAt(t, split)} * t * rows * vec * b + 15) / 16 * 16;
      }
      return bytes * buffers;
    };
    // `per_sm` blocks sharing an SM (each with its kBlockSmemExtra).
    auto fits = [&](int64_t bytes, int per_sm) {
      return bytes <= smem_limit && (per_sm == 1 || smemBlocksPerSm(dev, bytes) >= per_sm);
    };
    auto place = [&](int rows, int t, int split, int per_sm = 1, int buffers = 1) {
      const int chunks = chunksAt(t, split);
      const int64_t bytes = bytesAt(rows, t, split, buffers);
      if (!fits(bytes, per_sm)) return false;
      k.fill_buffers = buffers;
      k.async_fill = true;
      k.split = split;
      k.threads_per_row = t;
      k.rows_per_block = rows;
      k.block = t * rows;
      k.chunks = chunks;
      k.smem_bytes = static_cast<int>(bytes);
      return true;
    };
    // Short rows that fit registers go to shared memory instead (thread fill): each thread
    // copies four chunks of its row with cp.async and reads back only those, so no barrier
    // is needed, and a thread's 64 bytes in flight (f16/bf16) cost no registers: 2048 threads
    // of 32 registers each per SM rather than 1024 of 64. Not where the passes would recompute
    // math of the Unary family on every element (softmax's exp), nor below a quarter of the
    // GPU's thread slots: both measured slower.
    // Measurements: bench/results/2026-11-25-code-comment-measurements.md#thread-fill
    if (k.registers && async_ok && !no_smem && !k.smem_leaves.empty() && !tune.no_thread_fill) {
      // Four chunks a thread, and a power of two of threads a row: the rows' threads then sit
      // whole within warps, as the shuffles across them need (384 or 768 f16 values: no).
      int t = row_chunks % 4 == 0 && ((row_chunks / 4) & (row_chunks / 4 - 1)) == 0 ? static_cast<int>(row_chunks / 4) : 0;
      bool cheap_passes = true;
      lower::visitPostOrder(remapped, [&](const ENode& n) {
        if (n.kind != ENode::Kind::Reduce) return;
        lower::visitPostOrder({n.args[0]}, [&](const ENode& m) {
          if (m.kind == ENode::Kind::Op && ir::opFamily(m.op) == ir::OpFamily::Unary) cheap_passes = false;
        });
      });
      if (!cheap_passes || k.rows() * t < int64_t{dev.sm_count} * 512) t = 0;
      // For tuning sweeps only: LOOM_TUNE_THREAD_FILL=T threads per row, LOOM_TUNE_FILL_BLOCK.
      if (tune.thread_fill) t = nextPow2(*tune.thread_fill);
      // (Sweeps may take fewer than 8 threads a row: rows of 4 to 7 chunks of 4.)
      if ((t >= 8 || (tune.thread_fill && t >= 2)) && t <= 32) {
        int blk = t >= 16 ? 256 : 128;
        if (tune.fill_block) blk = std::max(t, *tune.fill_block);
        if (place(blk / t, t, 1)) {
          k.thread_fill = true;
          k.registers = false;
        }
      }
    }
    auto onChip = [&](int rows_together) {
      // Split the row over a cluster (at most 8 blocks) only when one block cannot hold it:
      // one block of a whole row measured faster than two of half of it.
      // Measurements: bench/results/2026-11-25-code-comment-measurements.md#cluster-split
      int64_t block_limit = smem_limit;
      // For tuning sweeps only, like LOOM_TUNE_THREADS_PER_ROW.
      if (tune.block_smem_kb) block_limit = int64_t{*tune.block_smem_kb} * 1024;
      // Once split, blocks of 64 KiB: three per SM keep the SM busy while one waits at a
      // cluster barrier (measured faster than blocks of 128 KiB).
      // Measurements: bench/results/2026-11-25-code-comment-measurements.md#cluster-split
      int cs = 1;
      if (dev.sm >= 90 && !tune.no_cluster) {
        while (cs < 8 && row_smem * rows_together > block_limit * cs) cs *= 2;
        while (cs > 1 && cs < 8 && row_smem * rows_together > int64_t{64 * 1024} * cs) cs *= 2;
        // For tuning sweeps only: LOOM_TUNE_CLUSTER=C blocks (1 to 8) where a row is split.
        if (tune.cluster && cs > 1) cs = std::clamp(nextPow2(*tune.cluster), 1, 8);
      }
      const int64_t block_chunks = (row_chunks + cs - 1) / cs;
      int t = std::max(32, std::min(max_block / rows_together, nextPow2((block_chunks + kMaxChunks - 1) / kMaxChunks)));
      if (tune_threads) t = std::max(32, *tune_threads / 32 * 32);
      if (rows_together > 1 && t % q != 0) return false;
      if (!place(rows_together, t, cs)) return false;
      k.cluster = cs;
      return true;
    };
    // The grid tier: every SM's block takes a slice of each set of `rows` neighbouring rows.
    auto onGrid = [&](int rows, int groups) {
      const int P = dev.sm_count;
      if (P < 2) return false;  // one SM: no blocks to split a set over
      int t = max_block / groups / rows;
      if (groups == 3 && t < 32 && 2 * max_block / groups / rows >= 32) t = 32;  // 16-row sets: 512 threads
      if (t < 32 || t % 32 != 0 || (rows > 1 && t % q != 0)) return false;
      if (groups > 1 && k.rows() / rows < 2 * groups) return false;  // each group walks two sets or more
      // Sets of neighbouring rows: more at once over fewer blocks each where that fits (see
      // gridShape), `groups` blocks an SM. (Sets of one long row keep the rule above.)
      GridShape gs{P, groups};
      if (rows > 1)
        gs = gridShape(k.rows() / rows, groups, groups, opts,
                       [&](int S) { return fits(bytesAt(rows, t, S, gridFillBuffers(tune)), groups); });
      if (!place(rows, t, gs.split, groups, gridFillBuffers(tune))) return false;
      setGrid(k, gs.groups, rows, reductions);
      return true;
    };
    if (!k.registers && async_ok && !no_smem && !k.thread_fill) {
      int placed = 0;
      for (int r = max_rows_together; r >= 1 && !placed; r /= 2)
        if (onChip(r)) placed = r;
      // Rows a cluster cannot hold, or neighbouring rows a cluster cannot take enough of to
      // read whole lines: the grid tier, with as many neighbouring rows per set as fit.
      // Two groups where both fit an SM with whole lines: the memory keeps streaming while a
      // group waits at its barrier (group norm 32x128x256x256 f16 channels-last).
      if ((placed < max_rows_together) && dev.sm >= 80 && !tune.no_grid) {
        bool done = false;
        // For tuning sweeps only: LOOM_TUNE_GRID_GROUPS=G (G blocks per SM; sets of any rows).
        // Sets of one long row: more groups (up to 8) while each still walks four sets or
        // more. Sets of several rows: three groups first (512-thread blocks of 64 KiB, three
        // per SM), then two.
        // Measurements: bench/results/2026-11-25-code-comment-measurements.md#grid-groups
        if (tune.grid_groups)
          for (int r = max_rows_adjacent; r >= 1 && !done; r /= 2) done = onGrid(r, *tune.grid_groups);
        if (!tune.no_grid_groups)
          for (int r = max_rows_adjacent; r >= max_rows_together && !done; r /= 2) {
            int groups = 2;
            while (r == 1 && groups < 8 && k.rows() >= 8 * groups) groups *= 2;
            if (r > 1) done = onGrid(r, 3);
            for (; groups >= 2 && !done; groups /= 2) done = onGrid(r, groups);
          }
        for (int r = max_rows_adjacent; r >= 1 && !done; r /= 2) done = onGrid(r, 1);
      }
    }
    if (!k.async_fill) {
      // The first pass keeps what it reads in shared memory (rows of gathered elements).
      if (k.registers || k.rows_per_block != 1 || row_smem > smem_limit || no_smem) k.smem_leaves.clear();
      else k.smem_bytes = static_cast<int>(row_smem);
    }
  }
  // The grid tier's blocks per SM (its groups, or as many as a smaller split packs on one).
  const int grid_per_sm =
      k.grid_sync ? static_cast<int>((int64_t{k.grid_groups} * k.split + dev.sm_count - 1) / dev.sm_count) : 0;
  if (k.grid_sync) k.min_blocks_per_sm = grid_per_sm > 1 ? grid_per_sm : 0;
  // For tuning sweeps only (part of the cache key).
  if (tune.min_blocks && !k.grid_sync) k.min_blocks_per_sm = *tune.min_blocks;
  k.grid = k.grid_sync ? int64_t{k.split} * k.grid_groups : (k.rows() + k.rows_per_block - 1) / k.rows_per_block * k.cluster;
  // Several groups: in turns by set, or (no more sets than groups) all at once.
  auto groupsText = [&] {
    if (k.grid_groups <= 1) return std::string();
    return fmt::format("; {} independent groups of {} blocks, each with its own barrier, {}", k.grid_groups, k.split,
                       k.row_sets > k.grid_groups ? "take turns by set" : "a set each, all at once");
  };
  auto heldText = [&](int values) {
    return wide ? fmt::format("{} f64 values per thread, {} registers", values, values * value_regs)
                : fmt::format("{} values per thread", values);
  };
  const std::string prefetch =
      k.fill_buffers > 1 ? "; two fill buffers: the next set's slice is copied while the block works on this one" : "";
  k.reason = fmt::format(
      "{} rows over {} x {} elements over {}; {} threads per row{}, {} chunk{} of {} each, {} "
      "row{} per block of {}, grid {}; {}", k.rows(), k.outer_atoms, k.rowElems(), k.red_atoms,
      k.threads_per_row * k.split, k.split > 1 ? fmt::format(" ({} per block)", k.threads_per_row) : "", k.chunks, k.chunks == 1 ? "" : "s", vec, k.rows_per_block,
      k.rows_per_block == 1 ? "" : "s", k.block, k.grid,
      row_tier
        ? fmt::format("rows side by side in memory, strided along their reduction: the block's rows are "
                      "copied into {} KiB of shared memory {}, each element of them {} elements after the "
                      "last; exact two-pass statistics from there{}, the outputs stored in the same {}{}",
                      (k.smem_bytes + 1023) / 1024, rowFillText(k, inputs), k.row_pitch, k.registers ? " (each thread's elements kept in registers between passes)" : "",
                      k.row_vec > 1 ? "vectors of rows" : "pieces",
                      k.grid_sync ? fmt::format("; {} set{} of {} rows{}, each split over {} blocks of a cooperative grid "
                                                "({} per SM) whose partial statistics meet in a global workspace at "
                                                "a grid-wide barrier (Chan){}", k.row_sets, k.row_sets == 1 ? "" : "s", k.rows_per_block,
                                                k.rows() % k.rows_per_block == 0 ? std::string()
                                                    : fmt::format(" (the last cut short to {})", k.rows() % k.rows_per_block),
                                                k.split, grid_per_sm, groupsText())
                                      + prefetch
                                  : "")
      : k.registers ? fmt::format("the row stays in registers ({})", heldText(held))
      : k.thread_fill
          ? fmt::format("the row would fit registers, but is held in {} KiB of shared memory per block: "
                        "each thread copies its {} chunks with cp.async and reads back only those (no "
                        "block barrier), so its bytes in flight cost no registers; exact two-pass "
                        "statistics and the outputs from there", (k.smem_bytes + 1023) / 1024, k.chunks)
      : k.async_fill
          ? fmt::format("the row ({}, register budget {}) is copied into {} "
                        "KiB of shared memory per block with cp.async{}: read once, {} and the outputs "
                        "from shared memory", heldText(k.chunks * vec * std::max(1, live_leaves)), budget,
                        (k.smem_bytes + 1023) / 1024,
                        k.grid_sync ? fmt::format(", {} sets of {} neighbouring row{} each split over "
                                                  "{} blocks of a cooperative grid ({} per SM) "
                                                  "whose partial reductions meet in a global "
                                                  "workspace at a grid-wide barrier per reduction{}",
                                                  k.row_sets, k.rows_per_block, k.rows_per_block == 1 ? "" : "s", k.split,
                                                  grid_per_sm, groupsText()) + prefetch
                        : k.cluster > 1 ? fmt::format(", split over a cluster of {} blocks whose "
                                                    "partial reductions meet in distributed shared "
                                                    "memory", k.cluster) : "",
                        k.grid_sync ? "statistics merged from exact per-thread ones (Chan)"
                                    : "exact two-pass statistics")
      : k.smem_bytes ? fmt::format("the row ({}, register budget {}) stays in "
                                   "{} KiB of shared memory: read once, statistics in one "
                                   "Welford pass, normalized from shared memory", heldText(held), budget,
                                   (k.smem_bytes + 1023) / 1024)
                     : fmt::format("the row ({}, budget {}) does not fit in "
                                   "registers or shared memory: statistics in one Welford pass, "
                                   "then a second read (from L2 where it fits) to normalize",
                                   heldText(held), budget));
  if (!row_tier && !row_choice.why.empty()) k.reason += "; " + row_choice.why;
  return std::move(ax->k);
}

std::string printNormKernel(const ir::Fusion& f, const NormKernel& k) {
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
    s += fmt::format("  store.{} {}[i.[{}]] = {}  ({}{}{})\n", dtypeName(st.dtype),
                     f.outputs()[static_cast<size_t>(st.output)].name, fmt::join(st.strides, ", "),
                     names[st.value.get()], accessName(st.access),
                     k.rowTier() && !st.row_only ? fmt::format("; over rows {}", accessName(st.row_access)) : "",
                     st.row_only ? ", once per row" : "");
  return s;
}

}  // namespace loom::schedule
