#pragma once
// The builder API (public: include/loom/builder.h) and what loom's own code adds to it:
// constants, fills and iotas in a fusion being built, and dim normalization.
#include <loom/builder.h>

#include "ir/fusion.h"

namespace loom {

Tensor constant(ir::Fusion* f, double value, DType dtype);
Tensor full(ir::Fusion* f, std::vector<Dim> shape, double value, DType dtype);
Tensor iota(ir::Fusion* f, std::vector<Dim> shape, int dim, DType dtype);

// Normalizes a possibly negative dim for a tensor of `rank` (rank_plus allows one past the end).
int normalizeDim(int dim, int rank, int rank_plus = 0);

}  // namespace loom
