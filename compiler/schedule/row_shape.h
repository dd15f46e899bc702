#pragma once
// The normalization kernel's shape, before any tier is chosen: which atoms are its rows and
// which its reduced elements, in what order, collapsed into the kernel's axes; its outputs; the
// loads it holds on chip; its vector width; and each load's and store's access.
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "compiler/analysis/domains.h"
#include "compiler/schedule/row_common.h"
#include "compiler/schedule/tiers.h"

namespace loom::schedule::norm_detail {

// A kernel's axes: `k` with its row and reduced shapes and atoms, outputs and aliases set; each
// store's expression over the atoms (`roots`), its strides over them, its output and first
// element there (an output a store, or a concat output one store per piece); the atoms each
// kernel axis collapses (rows, then reduced; {-1}: a row of one element).
struct NormAxes {
  RowKernel k;
  std::vector<lower::EPtr> roots;
  std::vector<std::vector<int64_t>> store_atom_strides;
  std::vector<int> root_output;
  std::vector<int64_t> root_offset;
  std::vector<std::vector<int>> groups;
  // Strides over the atoms as strides over the kernel's axes.
  std::vector<int64_t> axisStrides(const std::vector<int64_t>& atom_strides) const;
};

// The atoms the rows reduce, those its column reductions reduce (none: empty), and the strict
// parts of the rows' that its sub-row reductions reduce (ENode::sub_atoms), or nullopt with why
// not: reductions over sets of atoms that are neither one of these.
struct ReducedSets {
  std::vector<int> row, col;
  std::vector<std::vector<int>> sub;
};
std::optional<ReducedSets> reducedSets(const ir::Fusion& f, const analysis::DomainAnalysis& da, std::string* why_not);

// The fusion's axes as one normalization kernel, or nullopt with why not (`why_not`): reductions
// over different atoms, what the atom expressions cannot express, parts that share no value.
std::optional<NormAxes> normAxes(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs,
                                 std::string* why_not);

// The row a kernel holds on chip: the loads under a reduction that vary along the row's
// innermost axis and along every other reduced axis (they are read again by the next pass or by
// the outputs; loads used only by the outputs are read once, at the end), with their strides
// over the kernel's axes.
std::set<Leaf> heldLoads(const NormAxes& ax);
// `held` without the loads that are the same for every row (stride 0 along each of the
// `nout` row axes).
std::set<Leaf> withoutRowConstant(const std::set<Leaf>& held, size_t nout);

// Lanes of a vector along the innermost reduced axis: 16 bytes of the held rows (1 where the
// row-vector tier holds them).
Decision<int> chooseVectorWidth(const NormAxes& ax, const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs,
                                bool row_tier);

// The lanes of a whole 16-byte vector of the held rows (of the outputs where none is held).
int fullVectorWidth(const NormAxes& ax, const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs);

// Whole vectors of `full` lanes (fullVectorWidth) for rows whose length they do not divide
// (RowKernel::peel): sets `ax.k`'s peel fields where a held load read along the row and varying
// along the rows is the rows' alignment reference and the rows are long enough; true with the reason.
Decision<bool> choosePeel(NormAxes& ax, const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs, int full);

// Sets `ax.k`'s loads' and stores' accesses at its vector width, its stores, its held loads
// (`smem_leaves`) and its index width; returns the grid tier's workspace regions it may need.
int mapAccesses(NormAxes& ax, const ir::Fusion& f, const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs);

}  // namespace loom::schedule::norm_detail
