#pragma once
// The running values of a reduction kernel: one a reduction (a sum, a maximum, a minimum; a mean
// as its sum), and one Welford triple (count, mean, M2) for the variance and mean of each
// var_mean. How each starts, folds a trip of elements, merges another's partial (Chan's formula
// for the triples, in the order given: deterministic), and gives its reductions' results.
//
// A triple's count is one value for all its lanes (every lane of a unit is valid or none is),
// its mean and M2 a value a lane.
#include <map>
#include <vector>

#include "compiler/kir/builder.h"
#include "compiler/lower/strided_expr.h"

namespace loom::schedule::red_detail {

struct Accumulator {
  const lower::ENode* r = nullptr;  // the reduction (var_mean: the first of its two results met)
  bool welford = false;
  int slot = 0;  // its first value in the kernel's flat list of values
  int width() const { return welford ? 3 : 1; }
  DType acc() const;
};

struct Accumulators {
  std::vector<Accumulator> list;
  std::vector<const lower::ENode*> reductions;  // every reduction, in post order
  std::map<const lower::ENode*, size_t> of;  // each reduction's accumulator
  int values = 0;                            // the flat list's length
  bool anyWelford() const;
  int64_t partialBytes() const;  // a value of each, as a thread keeps it
};

// The reductions under `roots`, in post order, var_mean's two results (same op, same operand)
// sharing one triple.
Accumulators accumulatorsOf(const std::vector<lower::EPtr>& roots);

// Its values before anything is folded, `lanes` lanes each (a triple's count: one).
std::vector<kir::ExprP> identityOf(const Accumulator& a, int lanes);

// A trip's units folded into a triple's `state`: `units[u]` the operand's value (of the
// accumulator's dtype) at unit u, where `valid[u]` (a predicate) holds. With `fold_lanes` a
// unit's lanes are elements of one row (folded into one value), else each lane is its own row's.
std::vector<kir::ExprP> foldTripStats(kir::Builder& b, const Accumulator& a, std::vector<kir::ExprP> state,
                                 const std::vector<kir::ExprP>& units, const std::vector<kir::ExprP>& valid,
                                 bool fold_lanes);

// `part` (another thread's or block's values) merged into `state`.
std::vector<kir::ExprP> mergeInto(kir::Builder& b, const Accumulator& a, const std::vector<kir::ExprP>& state,
                                  const std::vector<kir::ExprP>& part);

// Reduction `r`'s result from its accumulator's final values (one lane), `count` the row's
// elements (of the accumulator's dtype), in `r`'s dtype.
kir::ExprP resultOf(kir::Builder& b, const lower::ENode& r, const Accumulator& a, const std::vector<kir::ExprP>& values,
                    const kir::ExprP& count);

}  // namespace loom::schedule::red_detail
