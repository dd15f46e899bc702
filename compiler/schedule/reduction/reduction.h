#pragma once
// The reduction scheduler: fusions whose every output is a value of the row (a sum, a mean, a
// maximum, or a pointwise function of those) or a pointwise function of the inputs over the
// whole iteration (an element store, written as its elements are read: an LSTM cell's gate
// gradients beside their bias gradient), reductions read in one pass. Nothing is held on
// chip: each thread streams its share of the elements and folds them into registers, the
// block combines its threads, and where too few rows would leave the GPU idle each row is split
// over `split` blocks whose partials go to a global workspace. The last block of a row to
// finish (an acquire-release counter per row, left at zero for the next launch) combines every
// block's partial in block order, so the result is bitwise the same from run to run whichever
// block finishes last. No cooperative launch, no float atomics. var_mean's variance and mean
// are one Welford triple (count, mean, M2) of partials, merged by Chan's formula in the same
// fixed orders (schedule/reduction/accumulators.h).
//
// Two layouts, by which axis the reduced loads run along in memory:
// - inner: the innermost reduced axis is contiguous (a full sum, batch statistics of NCHW):
//   `block` threads per row, vectors along the row;
// - outer: the innermost row axis is contiguous (column sums, batch statistics of NHWC):
//   `bx` threads across a tile of `bx * vec` neighbouring rows (vectors across the rows),
//   `by` threads down the reduction.
#include <optional>
#include <string>
#include <vector>

#include "compiler/schedule/row_kernel.h"

namespace loom::schedule {

struct ReductionKernel {
  enum class Layout { Inner, Outer };
  // The kernel's axes, loads, stores and their accesses, as the normalization scheduler reads
  // them (`k.vec` lanes along the innermost reduced axis for the inner layout, along the
  // innermost row axis for the outer one; `k.load_access` at that vector).
  RowKernel k;
  Layout layout = Layout::Inner;
  int block = 256;
  int bx = 1, by = 1;      // outer layout: threads across rows, threads down the reduction
  int64_t split = 1;       // blocks sharing each row (inner) or each tile of rows (outer)
  int64_t tiles = 1;       // outer layout: tiles of `bx * vec` rows
  int64_t grid = 1;
  int unroll = 4;          // loads in flight per thread before they are folded
  int partial_unroll = 4;  // outer layout: the last block's loads of the partials in flight
  bool unchecked_trips = true;  // trips whose loads all lie inside the count test none of them (not column sums)
  int64_t counter_bytes = 0;  // workspace: one u32 counter per row (inner) or tile (outer)
  int64_t workspace_bytes = 0;
  std::string reason;
  // A reduced count taken at run time (LOOM_TUNE_SYMBOLIC, schedule/reduction/symbolic.cpp): the
  // outermost reduced atom `size_symbol`, the first reduced axis `size_factor` times it, for
  // every value from 1 to `size_max`; the grid is the same for all of them.
  std::string size_symbol;
  int64_t size_value = 0, size_factor = 1, size_max = 0;
  bool symbolic() const { return !size_symbol.empty(); }
  // The elements a row reduces where the size is `m` (symbolic kernels).
  int64_t reducedCount(int64_t m) const { return m * size_factor * reducedInner(); }
  // The elements of the reduced axes inside the first one.
  int64_t reducedInner() const;

  int64_t rowsPerBlock() const { return layout == Layout::Outer ? int64_t{bx} * k.vec : 1; }
  // Elements (inner: vectors) of a row each block's threads walk: the row's, over `split`.
  int64_t rowUnits() const { return layout == Layout::Outer ? k.rowElems() : k.rowElems() / k.vec; }
  bool operator==(const ReductionKernel&) const = default;
};

// The symbol a symbolic kernel (LOOM_TUNE_SYMBOLIC) would take at run time: the outermost
// reduced atom where it is a size symbol of at least 2 that every tensor names as a whole dim,
// outermost in memory (and, for the inner layout, whose one value is whole vectors); "" where
// there is none, with why. Where there is one, the kernel's shape is chosen from the power of two
// of its reduced count, not the count (so that the counts of a class share the kernel).
std::string reducedSizeCandidate(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs,
                                 const ReductionKernel& r, std::string* why_not);
// Makes `r` take its reduced count at run time where nothing stands in the way (or says why in
// its reason).
void makeReductionSymbolic(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs,
                           ReductionKernel& r);

// `r` with the parameters its symbolic count sets cleared (same_lowering.h).
ReductionKernel sizeBlanked(const ir::Fusion& f, const ReductionKernel& r);

std::optional<ReductionKernel> scheduleReduction(const ir::Fusion& f, const Bindings& sizes,
                                                 const std::vector<TensorDesc>& inputs,
                                                 const CompileOptions& opts, std::string* why_not);

}  // namespace loom::schedule
