#pragma once
// Pass `norm-rows`: the normalization schedule as kernel IR, every tier: each thread's chunks of
// its row (in registers, or copied to shared memory by cp.async, by its own threads, by whole
// lines, or by vectors of rows), every reduction a fold of the thread's lanes and chunks and
// then a combine across the row's threads (and a cluster's or the grid's blocks), the outputs
// stored from where the row is held.
#include <optional>
#include <string>

#include "compiler/kir/kir.h"
#include "compiler/tuning.h"
#include "compiler/schedule/normalization.h"

namespace loom::schedule {

kir::Kernel lowerNormalization(const ir::Fusion& f, const NormKernel& k,
                                              const std::vector<TensorDesc>& inputs, const Tuning& tune);

}  // namespace loom::schedule
