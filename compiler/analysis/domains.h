#pragma once
// Domain analysis: which iteration domains of a fusion are the same, through pointwise ops,
// broadcasts, permutes, squeezes and reshapes (a union-find over every tensor axis, with the
// splits and merges of reshapes recorded), and their common refinement, the atoms.
//
// Group norm reshapes [N, C, H, W] -> [N, 32, C/32, H, W], reduces (C/32, H, W) and reshapes
// back: C is split into the atoms (32, C/32), so every tensor of the fusion is indexed by the
// atoms N, 32, C/32, H, W, and the reduced atoms are {C/32, H, W} for the whole fusion.
//
// Parts of a fusion that share no value are aligned onto the same atoms where they line up
// (inputs of one type; reductions of one shape and dims, as the second steps of two split column
// sums), so they can share a kernel.
#include <string>
#include <vector>

#include "ir/fusion.h"

namespace loom::analysis {

struct Atom {
  Extent extent;
  std::string name;  // the extent as text, made unique (`H`, `W`, `32`, `C/32`, `64#2`)
};

class DomainAnalysis {
 public:
  explicit DomainAnalysis(const ir::Fusion& f);

  const std::vector<Atom>& atoms() const { return atoms_; }
  // The atoms an axis is made of, outer to inner; empty for a broadcast axis.
  const std::vector<int>& axisAtoms(const ir::Value* v, int axis) const;
  // Every atom a value spans, in its axis order.
  std::vector<int> valueAtoms(const ir::Value* v) const;
  // The atoms a reduction op reduces (of its input's reduced axes), sorted.
  std::vector<int> reducedAtoms(const ir::Op* op) const;
  // Reasons the fusion has no single atom refinement (incompatible splits, reshapes that both
  // split and merge); empty when every tensor maps onto the atoms.
  const std::vector<std::string>& conflicts() const { return conflicts_; }
  // `{C/32, H, W}`
  std::string atomSetStr(const std::vector<int>& atoms) const;
  // The dump: atoms, each tensor's atoms per axis, each reduction's reduced atoms.
  std::string str(const ir::Fusion& f) const;
  // A value's stride for every atom (0 for atoms it does not span), given its axis strides:
  // an axis made of atoms (a, b) has stride s for b and s * extent(b) for a.
  std::vector<int64_t> atomStrides(const ir::Value* v, const std::vector<int64_t>& strides,
                                   const Bindings& sizes) const;
  // A value's memory order over its atoms (outer to inner) from its strides.
  std::vector<int> memoryOrder(const ir::Value* v, const std::vector<int64_t>& strides,
                               const Bindings& sizes) const;

 private:
  bool build(const ir::Fusion& f, bool align);  // whether independent parts were aligned

  std::vector<Atom> atoms_;
  std::vector<std::vector<std::vector<int>>> axis_atoms_;  // [value id][axis] -> atoms
  std::vector<std::vector<int>> reduced_;                  // [op id] -> atoms
  std::vector<std::string> conflicts_;
};

// Each value's part of `f`: values an op joins (its operands and outputs) are one part; the
// number is the smallest value id of the part.
std::vector<int> valueParts(const ir::Fusion& f);

// The domain analysis of `f`, kept with a finished fusion (ir::Fusion::derived): each schedule
// of a segment at another size reads the one made first.
std::shared_ptr<const DomainAnalysis> domainsOf(const ir::Fusion& f);

}  // namespace loom::analysis
