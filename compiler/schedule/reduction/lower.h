#pragma once
// Pass `reduction-blocks`: the reduction schedule (schedule/reduction/reduction.h) as kernel IR. Each
// thread folds its share of the row (or of its tile's rows) into registers, `unroll` loads in
// flight; the block combines its threads (a combine across the row's threads, or columns of
// threads through shared memory); split rows publish each block's partial in the workspace and
// the last block to arrive combines all of them in block order and writes the outputs.
#include <vector>

#include "compiler/kir/kir.h"
#include "compiler/schedule/reduction/reduction.h"

namespace loom::schedule {

kir::Kernel lowerReduction(const ir::Fusion& f, const ReductionKernel& r, const std::vector<TensorDesc>& inputs);

}  // namespace loom::schedule
