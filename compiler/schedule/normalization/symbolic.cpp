// LOOM_TUNE_SYMBOLIC for the normalization scheduler: the row count becomes a kernel parameter
// (RowKernel::size_symbol) where the outermost iterated atom is a size symbol that every tensor
// names as a whole dim, outermost in memory: in every tier (the persistent ones, column kernels
// and the grid tier, walk their row sets up to it). As for pointwise kernels, the key of such a kernel is its
// kernel IR (its fingerprint: compile.cpp symbolicClass): any other use of the size splits the class.
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "compiler/schedule/normalization/normalization.h"
#include "compiler/schedule/row_kernel.h"
#include "compiler/schedule/symbolic.h"

namespace loom::schedule {

namespace {

using Wide = __int128;

// The furthest element a kernel of `n` (its first row axis `size_factor` n) reaches.
Wide maxOffset(const RowKernel& k, int64_t n) {
  std::vector<int64_t> shape = k.outer_shape;
  shape[0] = n * k.size_factor;
  shape.insert(shape.end(), k.red_shape.begin(), k.red_shape.end());
  return furthestReach(shape, k.vec, k.load_access, k.stores);
}

// Where the outermost reduced atom is a size (batch statistics over {N, H, W}): why that size,
// too, is compiled in.
std::string heldSize(const ir::Fusion& f, const Bindings& sizes, const RowKernel& k) {
  const std::string r = firstAtom(k.red_atoms);
  if (r.empty() || !sizes.count(r) || !symbolOnlyWhole(f, r)) return "";
  return fmt::format("; {} is reduced, each row holding all of it: the row's length is compiled in", r);
}

}  // namespace

void makeNormSymbolic(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs, RowKernel& k) {
  const std::string s = firstAtom(k.outer_atoms);
  auto it = sizes.find(s);
  if (s.empty() || it == sizes.end() || !symbolOnlyWhole(f, s) || k.outer_shape.empty() ||
      it->second < 1 || k.outer_shape[0] % it->second != 0) {
    k.reason += "; every size known (the outermost row atom is no size symbol every tensor names whole" +
                heldSize(f, sizes, k) + ")";
    return;
  }
  // One row set (a size of 1) is indexed as if the size were not there (a group norm of one
  // image addresses its weights by the row itself): that kernel serves that size alone.
  if (it->second == 1) {
    k.reason += fmt::format("; every size known ({} = 1)", s);
    return;
  }
  if (const std::string why = sizeBlocker(f, inputs, k.outputs, k.load_access, s); !why.empty()) {
    k.reason += "; every size known (" + why + heldSize(f, sizes, k) + ")";
    return;
  }
  const int64_t n = it->second;
  const int64_t factor = k.rows() / n;
  const int64_t rpb = k.rows_per_block;
  // Half the index range: the lowering's row arithmetic (a block's first row, a walked set past
  // the last, the clamp) stays within twice the rows and offsets it reaches.
  const Wide lim = k.index64 ? (Wide{1} << 61) : (Wide{1} << 30);
  k.size_factor = k.outer_shape[0] / n;
  // The grid tier counts its grid barriers in 32 bits: (set * barriers a set + barrier) times the
  // blocks of a row; a set's barriers are at most one per reduction of the row.
  int reductions = 0;
  std::vector<lower::EPtr> roots;
  for (const auto& st : k.stores) roots.push_back(st.value);
  lower::visitPostOrder(roots, [&](const lower::ENode& e) { reductions += e.kind == lower::ENode::Kind::Reduce; });
  auto fits = [&](int64_t m) {
    const Wide rows = Wide{m} * factor;
    if (k.grid_sync) {
      const Wide sets = (rows + rpb - 1) / rpb;
      const Wide trips = (sets + k.grid_groups - 1) / k.grid_groups;
      if ((trips + 1) * (reductions + 1) * k.split >= (Wide{1} << 31)) return false;
    }
    const Wide grid = (rows + rpb - 1) / rpb;
    // The last trip's sets past the rows (persistent grids), a cluster's blocks.
    const Wide walked = k.columns ? Wide{k.grid} * rpb : k.grid_sync ? Wide{k.grid_groups} * rpb : 0;
    return rows + rpb + walked < lim && grid * k.cluster <= std::numeric_limits<int32_t>::max() &&
           maxOffset(k, m) < lim;
  };
  if (!fits(n)) {
    k.reason += fmt::format("; every size known ({} = {} reaches past half the index range, or past 32 bits "
                            "of the grid's barrier counts)", s, n);
    return;
  }
  k.size_symbol = s;
  k.size_value = n;
  k.rows_factor = factor;
  k.size_max = largestFitting(n, fits);
  // Persistent grids (column reductions, the grid tier) walk the row sets; clusters take a
  // block per cluster rank.
  k.grid_max = k.columns || k.grid_sync ? k.grid : (k.size_max * factor + rpb - 1) / rpb * k.cluster;
  k.reason += fmt::format("; {} = {} a kernel parameter (symbolic): this kernel serves {} from 1 to {}", s, n, s,
                          k.size_max);
}

RowKernel sizeBlanked(const ir::Fusion& f, const RowKernel& k) {
  RowKernel b = k;
  if (!b.outer_shape.empty()) b.outer_shape[0] = 0;  // (the lowering reads `size_max` rows and the parameter)
  b.size_value = 0;
  b.row_sets = 0;
  if (!k.columns && !k.grid_sync) b.grid = 0;  // (launched at `grid_max` blocks; persistent grids keep theirs)
  b.reason.clear();
  b.two_pass_faster.clear();
  b.outputs = descsForAnySize(outputValues(f), k.outputs, k.size_symbol);
  return b;
}

}  // namespace loom::schedule
