#pragma once
// The normalization scheduler's first decisions for rows contiguous along their reduction: the
// largest block, threads per row and block size, and whether the row fits registers.
#include "compiler/schedule/row_common.h"
#include "compiler/schedule/tiers.h"

namespace loom::schedule::norm_detail {

// The largest block and the registers a held value takes: f64 math (`wide`) holds a value in
// two registers and divides and takes square roots in long sequences, so its blocks stop at
// 512 threads.
struct BlockLimit {
  bool wide = false;
  int max_block = 1024, value_regs = 1;
};
Decision<BlockLimit> chooseBlockLimit(const ir::Fusion& f, const std::vector<TensorDesc>& inputs, const Tuning& tune);

// Chunks a thread holds at most where the row decides its threads (the shared-memory tiers too).
constexpr int kMaxChunks = 8;

// Threads per row, each holding `chunks` chunks of `k.vec` elements, `rows_per_block` rows per
// block of `block` threads.
struct Threads {
  int per_row = 32, chunks = 1, block = 128, rows_per_block = 1;
};
Decision<Threads> chooseThreads(const RowKernel& k, const BlockLimit& lim, const CompileOptions& opts);

// Whether the row fits registers: `held` values a thread against its `budget`.
struct RegisterFit {
  int held = 0, budget = 0;
  bool fits = false;
};
Decision<RegisterFit> fitRegisters(const RowKernel& k, const Threads& t, const BlockLimit& lim);

// The values `values` a thread holds, as the schedule dump says them (f64: and their registers).
std::string heldText(int values, const BlockLimit& lim);

}  // namespace loom::schedule::norm_detail
