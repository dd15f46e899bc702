#pragma once
// Normalization lowering's kernel IR: every value of a fusion as an expression over the atoms
// of the domain analysis (compiler/analysis/domains.h). Leaves are strided loads with one
// stride per atom, so views (broadcast, permute, squeeze, reshape) are free: they only rename
// which axes the atoms are grouped into. Reductions become Reduce nodes, constant along the
// reduced atoms.
#include <map>

#include "compiler/analysis/domains.h"
#include "compiler/lower/strided_expr.h"

namespace loom::lower {

class AtomExprBuilder {
 public:
  AtomExprBuilder(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs,
                  const analysis::DomainAnalysis& da);
  // Throws NotPointwise (with a reason) for what this lowering cannot express.
  EPtr exprOf(const ir::Value* v);
  int64_t atomExtent(int atom) const { return extents_[static_cast<size_t>(atom)]; }
  // The atoms the kernel's rows reduce: a reduction over a strict part of them becomes a sub-row
  // reduction (ENode::sub_atoms), one over any other atoms a column reduction (ENode::over_rows).
  // Set before the first exprOf.
  void setRowAtoms(std::vector<int> atoms) { row_atoms_ = std::move(atoms); }

 private:
  EPtr build(const ir::Value* v);
  const ir::Fusion& f_;
  const Bindings& sizes_;
  const std::vector<TensorDesc>& inputs_;
  const analysis::DomainAnalysis& da_;
  std::vector<int64_t> extents_;
  std::vector<int> row_atoms_;
  std::map<const ir::Value*, EPtr> memo_;
};

}  // namespace loom::lower
