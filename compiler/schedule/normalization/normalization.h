#pragma once
// The normalization scheduler: a fusion whose reductions all reduce the same atoms becomes ONE
// persistent kernel (a RowKernel, row_kernel.h). Each row (one combination of the iterated atoms:
// a layer-norm row, a group, a channel) is handled by `threads_per_row` threads that load the
// row once into registers (`vec`-wide chunks along the innermost reduced axis, `chunks` per
// thread), or into shared memory, or over a cluster or the grid (the tiers), reduce it as many
// times as the fusion needs (max then sum for softmax, mean then variance for two-pass
// statistics), and write the normalized outputs from where the row is held.
#include <optional>
#include <string>

#include "compiler/schedule/row_kernel.h"

namespace loom::schedule {

std::optional<RowKernel> scheduleNormalization(const ir::Fusion& f, const Bindings& sizes,
                                               const std::vector<TensorDesc>& inputs,
                                               const CompileOptions& opts, std::string* why_not);

// LOOM_TUNE_SYMBOLIC (schedule/normalization/symbolic.cpp): makes the row count of `k` a kernel
// parameter where its tier and its tensors allow, and says so (or why not) in its reason.
void makeNormSymbolic(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs, RowKernel& k);

}  // namespace loom::schedule
