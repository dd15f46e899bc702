#pragma once
// Chan et al.'s merge of two (count, mean, M2) partial statistics, as kernel IR: what a thread
// folds its chunks with and what the row's threads combine with (pass lower-combines).
#include "compiler/kir/builder.h"

namespace loom::kir {

struct Stats {
  ExprP n, mean, m2;
};

// Whether `v` (of float dtype `acc`) is finite: |v| < inf, false for NaN.
ExprP isFinite(Builder& b, DType acc, const ExprP& v);

// b's share of the merged count is one division (div.approx in f32: a weight, not a result).
// Means and M2s of several lanes (a row a lane) merge beside counts of one.
Stats chanMerge(Builder& b, DType acc, const Stats& x, const Stats& y);

// Elements of a row that block `rank` holds, as `acc`: a row of `row_chunks` chunks of `vec`
// dealt to `blocks` blocks in runs of `threads` chunks, `chunks` runs a block.
ExprP blockCount(Builder& b, const ExprP& rank, int64_t threads, int64_t blocks, int chunks, int64_t row_chunks,
                 int vec, DType acc);

}  // namespace loom::kir
