#pragma once
// Pass `pointwise-loop`: the pointwise schedule as kernel IR. One grid-stride loop over the
// chunks of `vec` neighbouring elements (unrolled `unroll` times: kir/unroll.h writes the
// copies out); in its body the chunk's coordinates along the collapsed axes, each distinct load
// once, the math of every distinct node once, and the stores.
#include "compiler/kir/kir.h"
#include "compiler/schedule/pointwise/pointwise.h"

namespace loom::schedule {

kir::Kernel lowerPointwise(const ir::Fusion& f, const PointwiseKernel& k,
                           const std::vector<TensorDesc>& inputs);

}  // namespace loom::schedule
