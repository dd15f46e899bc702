#pragma once
// The normalization scheduler's row-vector tier: rows strided along their reduction but side
// by side in memory (LayerNorm2d over C of NCHW, channels-last instance norm and batch norm,
// softmax over an outer dim), held in shared memory in vectors of neighbouring rows (or a
// row's element a piece), in a block, a large block, or split over a cooperative grid.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/schedule/row_common.h"

namespace loom::schedule::norm_detail {

// Where the row-vector tier puts a block: `rows` neighbouring rows, `threads` per row, each
// holding `chunks` elements, each element's rows `pitch` elements apart in `bytes` of shared
// memory.
struct RowPlacement {
  int rows = 0, threads = 0;
  int64_t chunks = 0, pitch = 0, bytes = 0;
};

// The row-vector tier's choice for a kernel's rows (its shapes set) and the loads held on chip
// (`held`): the tier (meaningful where `place` is set), the lanes of a vector of rows (0: no
// tier), the placement, the grid's groups and split where it goes over the grid (else 0), and
// why: why that tier, or, where rows strided along their reduction take none, why each element
// is a load of its own (empty where the rows are contiguous along their reduction).
struct RowTierChoice {
  NormTier tier = NormTier::RowVectors;
  int row_vec = 0;
  std::optional<RowPlacement> place;
  int groups = 0, split = 0;
  std::string why;
  bool element_loads = false;  // strided along their reduction, no tier placed: a load an element
};
RowTierChoice chooseRowTier(const RowKernel& k, const std::set<Leaf>& held_leaves,
                            const std::vector<TensorDesc>& inputs, const CompileOptions& opts);

// The chosen row-vector tier applied to the kernel (`c.place` set): its block, shared memory
// and accesses over vectors of rows, the tier, and over the grid its sets (of `reductions`
// reductions), groups and fill buffers.
void applyRowTier(RowKernel& k, const RowTierChoice& c, int reductions, const std::vector<TensorDesc>& inputs,
                  const CompileOptions& opts);

}  // namespace loom::schedule::norm_detail
