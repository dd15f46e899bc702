#pragma once
// Chan et al.'s merge of two (count, mean, M2) partial statistics, as kernel IR: what a thread
// folds its chunks with and what the row's threads combine with (pass lower-combines).
#include "compiler/kir/builder.h"

namespace loom::kir {

struct Stats {
  ExprP n, mean, m2;
};

// b's share of the merged count is one division (div.approx in f32: a weight, not a result).
Stats chanMerge(Builder& b, DType acc, const Stats& x, const Stats& y);

}  // namespace loom::kir
