#include "compiler/schedule/normalization/threads.h"

#include <algorithm>

#include <fmt/format.h>

namespace loom::schedule::norm_detail {

Decision<BlockLimit> chooseBlockLimit(const ir::Fusion& f, const std::vector<TensorDesc>& inputs, const Tuning& tune) {
  // Blocks of 512 threads hold 128 registers a thread; blocks of 1024, at 64, spilled at sm_90.
  // For tuning sweeps only: LOOM_TUNE_WIDE_BLOCK=T (0: scheduled as f32 math).
  // Measurements: bench/results/2026-11-25-h100-scheduler-rules.md#f64-block-limit
  const std::optional<int>& tune_wide = tune.wide_block;
  const bool f64 =
      std::any_of(inputs.begin(), inputs.end(), [](const TensorDesc& d) { return d.dtype == DType::F64; }) ||
      std::any_of(f.outputs().begin(), f.outputs().end(), [](const auto& o) { return o.value->dtype() == DType::F64; });
  BlockLimit lim;
  lim.wide = (!tune_wide || *tune_wide > 0) && f64;
  if (!lim.wide) return {lim, f64 ? "f64 math scheduled as f32 math (LOOM_TUNE_WIDE_BLOCK=0)" : ""};
  lim.max_block = tune_wide ? std::clamp(nextPow2(*tune_wide), 128, 1024) : 512;
  lim.value_regs = 2;
  return {lim, fmt::format("f64 math: blocks of at most {} threads, two registers a held value", lim.max_block)};
}

Decision<Threads> chooseThreads(const RowKernel& k, const BlockLimit& lim, const CompileOptions& opts) {
  const DeviceInfo& dev = opts.device;
  // Enough threads that each holds at most 8 chunks, a power of two up to the block limit.
  const int64_t row_chunks = k.rowElems() / k.vec;
  Threads t;
  t.per_row = std::min(lim.max_block, nextPow2((row_chunks + kMaxChunks - 1) / kMaxChunks));
  std::string why = t.per_row == lim.max_block && row_chunks > int64_t{kMaxChunks} * t.per_row
                        ? fmt::format("threads per row: as many as a block takes ({})", t.per_row)
                        : std::string("threads per row: at most 8 chunks each");
  // Short rows read as contiguous vectors: a chunk per thread, for occupancy. Rows strided
  // along their reduction (NCHW LayerNorm2d) keep few threads, whose neighbours then read
  // neighbouring rows (many threads a row measured far slower there).
  // Measurements: bench/results/2026-11-25-h100-scheduler-rules.md#threads-per-row-short-rows
  const bool contiguous_rows = !k.smem_leaves.empty() && std::all_of(k.smem_leaves.begin(), k.smem_leaves.end(),
      [&](const Leaf& l) { return k.load_access.at(l) == Access::Vector; });
  if (contiguous_rows && row_chunks <= 16) {
    t.per_row = nextPow2(row_chunks);
    why = "threads per row: a chunk each, for short contiguous rows";
  }
  // More while the whole grid would not fill the GPU twice over (few, long rows).
  if (t.per_row < lim.max_block && t.per_row < row_chunks && k.rows() * t.per_row < int64_t{dev.sm_count} * 2048)
    why = fmt::format("threads per row: more, while {} rows would not fill the {} SMs twice over", k.rows(),
                      dev.sm_count);
  while (t.per_row < lim.max_block && t.per_row < row_chunks && k.rows() * t.per_row < int64_t{dev.sm_count} * 2048)
    t.per_row *= 2;
  // For tuning sweeps only (part of the cache key, like every override here).
  if (opts.tuning.threads_per_row) {
    t.per_row = static_cast<int>(floorPow2(*opts.tuning.threads_per_row));  // (a row's threads combine by halves)
    why = "threads per row from LOOM_TUNE_THREADS_PER_ROW";
  }
  t.chunks = static_cast<int>((row_chunks + t.per_row - 1) / t.per_row);
  t.block = std::max(t.per_row, 128);
  t.rows_per_block = t.block / t.per_row;
  return {t, why};
}

Decision<RegisterFit> fitRegisters(const RowKernel& k, const Threads& t, const BlockLimit& lim) {
  RegisterFit r;
  // Registers per thread for the persistent row: chunks * vec values per held load.
  r.held = t.chunks * k.vec * std::max(1, static_cast<int>(k.smem_leaves.size()));
  // 64K registers per SM: a block of 1024 threads gets 64 each, so the row it may hold
  // shrinks as blocks grow (what is left covers addresses, statistics and the epilogue).
  r.budget = std::min(128, 65536 / t.block / 2 - 8);
  r.fits = r.held * lim.value_regs <= r.budget && t.chunks <= 16;
  if (r.fits) return {r, fmt::format("register budget {} a thread", r.budget)};
  return {r, fmt::format("the row ({}, register budget {}) does not fit in registers{}", heldText(r.held, lim),
                         r.budget, t.chunks > 16 ? fmt::format(" ({} chunks a thread, more than 16)", t.chunks) : "")};
}

std::string heldText(int values, const BlockLimit& lim) {
  return lim.wide ? fmt::format("{} f64 values per thread, {} registers", values, values * lim.value_regs)
                  : fmt::format("{} values per thread", values);
}

}  // namespace loom::schedule::norm_detail
