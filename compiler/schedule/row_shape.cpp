#include "compiler/schedule/row_shape.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <numeric>

#include <fmt/format.h>

#include "compiler/analysis/domains.h"
#include "compiler/lower/atom_expr.h"

namespace loom::schedule::norm_detail {

using lower::ENode;
using lower::EPtr;

namespace {

// Whether no reduction over `row` reads a reduction over `col`, each reduction over `col` is a
// sum, mean, max or min, and none reads another: then the reductions over `col` can be column
// reductions of a kernel whose rows reduce `row`.
bool columnsOf(const ir::Fusion& f, const analysis::DomainAnalysis& da, const std::vector<int>& row,
               const std::vector<int>& col) {
  if (col.empty()) return false;  // a reduction over broadcast dims only: no column reduction either
  for (int a : col)
    if (std::find(row.begin(), row.end(), a) != row.end()) return false;
  std::map<const ir::Value*, bool> reads;  // whether a value reads a reduction over `col`
  for (const ir::Op* op : f.ops()) {
    bool in = false;
    for (const ir::Value* v : op->inputs()) in = in || reads[v];
    const bool over_col = ir::isReduction(op->kind()) && da.reducedAtoms(op) == col;
    if (ir::isReduction(op->kind()) && in) return false;
    if (over_col && op->family() != ir::OpFamily::Reduce) return false;  // VarMean: no column statistics
    for (const ir::Value* v : op->outputs()) reads[v] = in || over_col;
  }
  return true;
}

// Whether every reduction over a set of `subs` (each a strict part of `row`) can be a sub-row
// reduction of a kernel whose rows reduce `row`: a sum, mean, max or min whose value nothing
// reads but casts of it (stored as they are: no other value of the kernel depends on them).
bool subRowsOf(const ir::Fusion& f, const analysis::DomainAnalysis& da, const std::vector<int>& row,
               const std::vector<std::vector<int>>& subs) {
  for (const auto& s : subs) {
    // (A reduction over broadcast dims only reduces no atom: not one of the row's.)
    if (s.empty() || s.size() >= row.size()) return false;
    for (int a : s)
      if (std::find(row.begin(), row.end(), a) == row.end()) return false;
  }
  std::map<const ir::Value*, bool> sub_valued;
  for (const ir::Op* op : f.ops()) {
    bool reads = false;
    for (const ir::Value* v : op->inputs()) reads = reads || sub_valued[v];
    const bool over_sub = ir::isReduction(op->kind()) &&
                          std::find(subs.begin(), subs.end(), da.reducedAtoms(op)) != subs.end();
    if (reads && !(op->kind() == ir::OpKind::Cast && op->inputs().size() == 1)) return false;
    if (over_sub && (reads || op->family() != ir::OpFamily::Reduce)) return false;
    for (const ir::Value* v : op->outputs()) sub_valued[v] = reads || over_sub;
  }
  return true;
}

}  // namespace

std::optional<ReducedSets> reducedSets(const ir::Fusion& f, const analysis::DomainAnalysis& da, std::string* why_not) {
  std::vector<std::pair<std::vector<int>, const ir::Op*>> sets;
  for (const ir::Op* op : f.ops()) {
    if (!ir::isReduction(op->kind())) continue;
    auto r = da.reducedAtoms(op);
    if (std::none_of(sets.begin(), sets.end(), [&](const auto& s) { return s.first == r; })) sets.push_back({r, op});
  }
  if (sets.empty()) {
    *why_not = "it has no reduction";
    return std::nullopt;
  }
  if (sets.size() == 1) return ReducedSets{sets[0].first, {}, {}};
  // Two sets: the rows reduce the first where the other's reductions can be column ones.
  if (sets.size() == 2) {
    for (int i = 0; i < 2; ++i)
      if (columnsOf(f, da, sets[static_cast<size_t>(i)].first, sets[static_cast<size_t>(1 - i)].first))
        return ReducedSets{sets[static_cast<size_t>(i)].first, sets[static_cast<size_t>(1 - i)].first, {}};
  }
  // One set holding every other: the others' reductions can be sub-row ones (group norm
  // backward's sums over H and W of each channel of the group beside the group's own).
  for (size_t i = 0; i < sets.size(); ++i) {
    std::vector<std::vector<int>> subs;
    for (size_t j = 0; j < sets.size(); ++j)
      if (j != i) subs.push_back(sets[j].first);
    if (subRowsOf(f, da, sets[i].first, subs)) return ReducedSets{sets[i].first, {}, subs};
  }
  const ir::Op* first = sets[0].second;
  const ir::Op* op = sets[1].second;
  *why_not = fmt::format("reduction `{}` ({}) over {} and reduction `{}` ({}) over {} "
                         "cannot share one kernel: their iterated atoms differ{}",
                         first->name(), first->output()->name(), da.atomSetStr(sets[0].first), op->name(),
                         op->output()->name(), da.atomSetStr(sets[1].first),
                         sets.size() == 2 ? ", and neither can be the other's column reductions (a sum, mean, max or "
                                            "min over the rows that no other reduction reads) or sub-row ones (a "
                                            "sum, mean, max or min over part of the other's atoms, only stored)"
                                          : fmt::format(" ({} sets of reduced atoms)", sets.size()));
  return std::nullopt;
}

namespace {

// Atom order: the memory order of the largest input (the one the kernel streams), the atoms it
// lacks outermost. Where the input is read through slices (an LSTM cell's gate matrix, a layer
// norm of a [N, D] piece of a [N, 3D] matrix), the atoms its reads move along are not its own
// axes' atoms: then the order is that of a read's strides (the largest stride outermost), the
// atoms it does not move along outermost. (Else a row's atom would be put outermost, and its
// outputs allocated transposed.)
std::vector<int> atomOrder(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs,
                           const analysis::DomainAnalysis& da, const std::vector<EPtr>& roots) {
  int dominant = -1;
  int64_t best = -1;
  for (size_t i = 0; i < f.inputs().size(); ++i) {
    const int64_t n = inputs[i].numel();
    if (n > best) {
      best = n;
      dominant = static_cast<int>(i);
    }
  }
  std::vector<int> order;  // (a segment reading no input, a fill's reductions: the atoms as numbered)
  if (dominant >= 0)
    order = da.memoryOrder(f.inputs()[static_cast<size_t>(dominant)], inputs[static_cast<size_t>(dominant)].strides,
                           sizes);
  const Leaf* read = nullptr;
  lower::visitPostOrder(roots, [&](const ENode& n) {
    if (!read && n.kind == ENode::Kind::Load && n.leaf.input == dominant) read = &n.leaf;
  });
  const int atoms = static_cast<int>(da.atoms().size());
  auto ownAtom = [&](int a) { return std::find(order.begin(), order.end(), a) != order.end(); };
  bool through_slices = false;
  for (int a = 0; read && a < atoms; ++a)
    through_slices = through_slices || (read->strides[static_cast<size_t>(a)] != 0 && !ownAtom(a));
  if (through_slices) {
    std::vector<int> still, moved;
    for (int a = 0; a < atoms; ++a) (read->strides[static_cast<size_t>(a)] == 0 ? still : moved).push_back(a);
    std::stable_sort(moved.begin(), moved.end(), [&](int a, int b) {
      return std::abs(read->strides[static_cast<size_t>(a)]) > std::abs(read->strides[static_cast<size_t>(b)]);
    });
    still.insert(still.end(), moved.begin(), moved.end());
    return still;
  }
  for (int a = atoms - 1; a >= 0; --a)
    if (!ownAtom(a)) order.insert(order.begin(), a);
  return order;
}

// Parts of the fusion that share no value iterate one space only where the domain analysis
// aligned them (two independent column sums): where their largest inputs lay the shared atoms out
// in different orders, one kernel would read one part across its layout. Why not, or "".
std::string independentLayouts(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs,
                               const analysis::DomainAnalysis& da) {
  const std::vector<int> part = analysis::valueParts(f);
  std::map<int, size_t> largest;  // part -> its input of most elements
  for (size_t i = 0; i < f.inputs().size(); ++i) {
    auto [it, fresh] = largest.emplace(part[static_cast<size_t>(f.inputs()[i]->id())], i);
    if (!fresh && inputs[i].numel() > inputs[it->second].numel()) it->second = i;
  }
  std::vector<std::vector<int>> orders;
  for (const auto& [p, i] : largest) orders.push_back(da.memoryOrder(f.inputs()[i], inputs[i].strides, sizes));
  for (size_t a = 1; a < orders.size(); ++a) {
    std::vector<int> common_a, common_0;
    for (int x : orders[a])
      if (std::find(orders[0].begin(), orders[0].end(), x) != orders[0].end()) common_a.push_back(x);
    for (int x : orders[0])
      if (std::find(orders[a].begin(), orders[a].end(), x) != orders[a].end()) common_0.push_back(x);
    if (common_a != common_0)
      return fmt::format("parts of it that share no value lay out their dims in different orders ({} against {}): "
                         "a kernel each reads its own in order", da.atomSetStr(common_0), da.atomSetStr(common_a));
  }
  return "";
}

// The values an output stores: itself, or a concat's pieces.
std::vector<const ir::Value*> storedPieces(const ir::Value* v) {
  if (!v->isInput() && v->definition()->family() == ir::OpFamily::Concat) return v->definition()->inputs();
  return {v};
}

// Outputs: allocated with their axes in the kernel's atom order (NHWC in, NHWC out; a concat's
// joined dim where its pieces' is), or the aliased input. Their strides over atoms follow from
// the axis strides; a concat's pieces are stores of their own, each at its place.
void planOutputs(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs,
                 const analysis::DomainAnalysis& da, const std::vector<int>& order, NormAxes& ax) {
  RowKernel& k = ax.k;
  for (size_t i = 0; i < f.outputs().size(); ++i) {
    const auto& o = f.outputs()[i];
    const std::vector<const ir::Value*> pieces = storedPieces(o.value);
    const int alias = f.inputIndex(o.alias);
    k.output_alias.push_back(alias);
    std::vector<int64_t> shape;
    for (const auto& a : o.value->axes()) shape.push_back(a.broadcast ? 1 : a.extent.evaluate(sizes));
    std::vector<int> axis_order(shape.size());
    std::iota(axis_order.begin(), axis_order.end(), 0);
    auto pos = [&](int axis) {
      const auto& as = da.axisAtoms(pieces[0], axis);
      if (as.empty()) return -1;
      return static_cast<int>(std::find(order.begin(), order.end(), as[0]) - order.begin());
    };
    std::stable_sort(axis_order.begin(), axis_order.end(), [&](int a, int b) { return pos(a) < pos(b); });
    TensorDesc d{o.value->dtype(), shape, stridesForOrder(shape, axis_order), 16};
    if (alias >= 0) d = inputs[static_cast<size_t>(alias)];
    k.outputs.push_back(d);
    const bool joined = pieces[0] != o.value;
    const auto dim = joined ? static_cast<size_t>(o.value->definition()->attr<ir::DimsAttrs>().dims[0]) : 0;
    int64_t at = 0;  // a concat piece's first element along the joined dim
    for (const ir::Value* p : pieces) {
      ax.store_atom_strides.push_back(da.atomStrides(p, d.strides, sizes));
      ax.root_output.push_back(static_cast<int>(i));
      ax.root_offset.push_back(joined ? at * d.strides[dim] : 0);
      if (joined) at += p->axis(dim).extent.evaluate(sizes);
    }
  }
}

// Why a concat output's pieces cannot be stores of one kernel (empty where they can): each
// piece's joined dim must be the same atoms as the first's, so that every store walks the
// kernel's axes alike.
std::string concatProblem(const ir::Fusion& f, const analysis::DomainAnalysis& da) {
  for (const auto& o : f.outputs()) {
    const std::vector<const ir::Value*> pieces = storedPieces(o.value);
    if (pieces.size() == 1 && pieces[0] == o.value) continue;
    const int dim = o.value->definition()->attr<ir::DimsAttrs>().dims[0];
    for (const ir::Value* p : pieces)
      if (da.axisAtoms(p, dim) != da.axisAtoms(pieces[0], dim))
        return fmt::format("concat `{}`: pieces `{}` and `{}` are not the same positions along dim {} (pieces of "
                           "unequal extents, or unrelated ones, go to the pointwise scheduler)",
                           o.name, pieces[0]->name(), p->name(), dim);
  }
  return {};
}

// Neighbouring atoms collapsed into one axis where every access (`all`: strides over atoms)
// walks them as one run; size-1 atoms dropped.
std::vector<std::vector<int>> collapseAtoms(const std::vector<int>& atoms, const std::vector<int64_t>& ext,
                                            const std::vector<std::vector<int64_t>>& all) {
  std::vector<std::vector<int>> groups;
  for (int a : atoms) {
    if (ext[static_cast<size_t>(a)] == 1) continue;
    if (!groups.empty()) {
      const int o = groups.back().back();
      const bool merge = std::all_of(all.begin(), all.end(), [&](const auto& s) {
        return s[static_cast<size_t>(o)] == s[static_cast<size_t>(a)] * ext[static_cast<size_t>(a)];
      });
      if (merge) {
        groups.back().push_back(a);
        continue;
      }
    }
    groups.push_back({a});
  }
  return groups;
}

// Parts of a fusion that share no value (say one output from one input, another from another)
// would iterate the product of their atoms, each part repeated across the other's: refused, so
// that the segmenter gives each part its own kernel. (In double: no overflow.) Empty: shared.
std::string unsharedParts(const ir::Fusion& f, const Bindings& sizes, const RowKernel& k) {
  double iterated = 1, largest = 1;
  for (int64_t e : k.outer_shape) iterated *= static_cast<double>(e);
  for (int64_t e : k.red_shape) iterated *= static_cast<double>(e);
  for (const ir::Value* v : f.values()) {
    double n = 1;
    for (const auto& a : v->axes()) n *= a.broadcast ? 1.0 : static_cast<double>(a.extent.evaluate(sizes));
    largest = std::max(largest, n);
  }
  if (iterated <= largest) return {};
  return fmt::format("its parts share no iteration space: one kernel would iterate {:.0f} elements "
                     "over {} and {}, more than its largest value holds ({:.0f})",
                     iterated, k.outer_atoms.empty() ? "{}" : k.outer_atoms, k.red_atoms, largest);
}

}  // namespace

std::vector<int64_t> NormAxes::axisStrides(const std::vector<int64_t>& atom_strides) const {
  std::vector<int64_t> s;
  for (const auto& g : groups) s.push_back(g.back() < 0 ? 0 : atom_strides[static_cast<size_t>(g.back())]);
  return s;
}

std::optional<NormAxes> normAxes(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs,
                                 std::string* why_not) {
  std::string why;
  auto reject = [&](std::string w) -> std::optional<NormAxes> {
    if (why_not) *why_not = std::move(w);
    return std::nullopt;
  };
  const std::shared_ptr<const analysis::DomainAnalysis> kept = analysis::domainsOf(f);
  const analysis::DomainAnalysis& da = *kept;
  if (!da.conflicts().empty()) return reject(da.conflicts()[0]);
  if (std::string w = independentLayouts(f, sizes, inputs, da); !w.empty()) return reject(w);
  const std::optional<ReducedSets> sets = reducedSets(f, da, &why);
  if (!sets) return reject(why);
  const std::vector<int>* red = &sets->row;
  NormAxes ax;
  RowKernel& k = ax.k;
  k.columns = !sets->col.empty();
  k.sub_rows = !sets->sub.empty();
  lower::AtomExprBuilder eb(f, sizes, inputs, da);
  if (k.columns || k.sub_rows) eb.setRowAtoms(sets->row);
  if (std::string w = concatProblem(f, da); !w.empty()) return reject(w);
  try {
    for (const auto& o : f.outputs())
      for (const ir::Value* p : storedPieces(o.value)) ax.roots.push_back(eb.exprOf(p));
  } catch (const lower::NotPointwise& np) {
    return reject(np.reason);
  }
  std::vector<int64_t> ext;
  for (int a = 0; a < static_cast<int>(da.atoms().size()); ++a) ext.push_back(eb.atomExtent(a));
  const std::set<int> red_set(red->begin(), red->end());
  const std::vector<int> order = atomOrder(f, sizes, inputs, da, ax.roots);
  std::vector<int> outer_order, red_order;
  for (int a : order) (red_set.count(a) ? red_order : outer_order).push_back(a);
  k.num_inputs = static_cast<int>(f.inputs().size());
  k.red_atoms = da.atomSetStr(red_order);
  planOutputs(f, sizes, inputs, da, order, ax);
  // Kernel axes: iterated atoms then reduced atoms, neighbours collapsed where every access
  // walks them as one run.
  std::vector<std::vector<int64_t>> all;
  lower::visitPostOrder(ax.roots, [&](const ENode& n) {
    if (n.kind == ENode::Kind::Load) all.push_back(n.leaf.strides);
  });
  for (const auto& s : ax.store_atom_strides) all.push_back(s);
  // An iterated atom that no load and no store moves along (the whole axis of a sliced input,
  // which only the input has) would repeat every row for nothing: layer norm of a [N, D] slice
  // of a [N, 3*D] matrix ran N * 3D rows. Not iterated.
  outer_order.erase(std::remove_if(outer_order.begin(), outer_order.end(), [&](int a) {
    return std::all_of(all.begin(), all.end(), [&](const auto& s) { return s[static_cast<size_t>(a)] == 0; });
  }), outer_order.end());
  k.outer_atoms = da.atomSetStr(outer_order);
  // Column reductions reduce exactly the rows: every iterated atom, and none the kernel skips.
  for (int a : sets->col)
    if (ext[static_cast<size_t>(a)] > 1 && std::find(outer_order.begin(), outer_order.end(), a) == outer_order.end())
      return reject(fmt::format("its column reductions over {} reduce {}, which no load or store walks",
                                da.atomSetStr(sets->col), da.atomSetStr({a})));
  for (int a : outer_order)
    if (k.columns && std::find(sets->col.begin(), sets->col.end(), a) == sets->col.end())
      return reject(fmt::format("its column reductions over {} leave {} of the rows {} unreduced",
                                da.atomSetStr(sets->col), da.atomSetStr({a}), k.outer_atoms));
  auto outer_groups = collapseAtoms(outer_order, ext, all), red_groups = collapseAtoms(red_order, ext, all);
  // Reducing only size-1 dims: a row of one element (atom -1 stands for "no atom").
  if (red_groups.empty()) red_groups.push_back({-1});
  auto extentOf = [&](const std::vector<int>& g) {
    int64_t e = 1;
    for (int a : g) e *= a < 0 ? 1 : ext[static_cast<size_t>(a)];
    return e;
  };
  for (const auto& g : outer_groups) k.outer_shape.push_back(extentOf(g));
  for (const auto& g : red_groups) k.red_shape.push_back(extentOf(g));
  // A sub-row reduction keeps or reduces each reduced axis whole.
  for (const auto& s : sets->sub)
    for (const auto& g : red_groups) {
      const auto in = std::count_if(g.begin(), g.end(), [&](int a) { return std::find(s.begin(), s.end(), a) != s.end(); });
      if (in > 0 && in < static_cast<long>(g.size()))
        return reject(fmt::format("its reductions over {} reduce part of the kernel's reduced axis {}",
                                  da.atomSetStr(s), da.atomSetStr(g)));
    }
  k.red_axis_atoms = red_groups;
  why = unsharedParts(f, sizes, k);
  if (!why.empty()) return reject(why);
  ax.groups = outer_groups;
  ax.groups.insert(ax.groups.end(), red_groups.begin(), red_groups.end());
  return ax;
}

std::set<Leaf> heldLoads(const NormAxes& ax) {
  std::set<Leaf> held;
  const size_t nout = ax.k.outer_shape.size();
  lower::visitPostOrder(ax.roots, [&](const ENode& n) {
    if (n.kind != ENode::Kind::Reduce) return;
    lower::visitPostOrder({n.args[0]}, [&](const ENode& m) {
      if (m.kind != ENode::Kind::Load) return;
      const std::vector<int64_t> s = ax.axisStrides(m.leaf.strides);
      if (s.back() == 0) return;
      // Constant along another reduced axis (group norm's per-channel weight in channels-last,
      // the same C/G values at every pixel): a few values read again from cache, not a row.
      for (size_t i = nout; i < s.size(); ++i)
        if (s[i] == 0 && ax.k.red_shape[i - nout] > 1) return;
      held.insert(Leaf{m.leaf.input, m.leaf.offset, s});
    });
  });
  return held;
}

std::set<Leaf> withoutRowConstant(const std::set<Leaf>& held, size_t nout) {
  std::set<Leaf> out;
  for (const Leaf& l : held)
    if (std::any_of(l.strides.begin(), l.strides.begin() + static_cast<std::ptrdiff_t>(nout),
                    [](int64_t s) { return s != 0; }))
      out.insert(l);
  return out;
}

namespace {

// The access of `vec` lanes along a peeled kernel's rows: a vector where the innermost stride is
// 1 and every row starts at the reference's offset modulo `vec` (its vectors then start where
// the reference's do); else as chooseAccess.
Access peeledAccess(const RowKernel& k, DType t, int64_t offset, const std::vector<int64_t>& strides, int align_bytes,
                    int vec) {
  if (strides.back() == 0) return Access::Splat;
  if (vec == 1 || strides.back() != 1) return Access::Gather;
  const int64_t bytes = int64_t{vec} * dtypeBytes(t);
  bool ok = align_bytes >= std::min<int64_t>(bytes, 16) && (offset - k.peel_offset) % vec == 0;
  for (size_t i = 0; i < k.peel_strides.size(); ++i) ok = ok && (strides[i] - k.peel_strides[i]) % vec == 0;
  return ok ? Access::Vector : Access::Gather;
}

}  // namespace

Decision<bool> choosePeel(NormAxes& ax, const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs, int full) {
  RowKernel& k = ax.k;
  const size_t nout = k.outer_shape.size();
  // Worth its edge only where whole vectors are most of the row.
  constexpr int64_t kMinVectors = 32;
  if (full < 2 || k.columns || k.sub_rows || k.red_shape.size() != 1 || k.red_shape[0] % full == 0 ||
      k.red_shape[0] < kMinVectors * full)
    return {false, ""};
  // The reference: of the held rows that may be one, the alignment most bytes of an element of
  // the held rows and the stores share (each a vector where it starts alike; the first such row
  // on a tie).
  const Leaf* ref = nullptr;
  int64_t best = 0;
  auto congruent = [&](const Leaf& a, const Leaf& b) {
    bool same = (a.offset - b.offset) % full == 0;
    for (size_t i = 0; i < nout; ++i) same = same && (a.strides[i] - b.strides[i]) % full == 0;
    return same;
  };
  for (const Leaf& l : held) {
    const TensorDesc& d = inputs[static_cast<size_t>(l.input)];
    if (l.strides.back() != 1 || d.align_bytes < std::min(16, full * dtypeBytes(d.dtype))) continue;
    // (Not a load the same for every row, a weight, unless there is one row.)
    if (k.rows() > 1 &&
        std::all_of(l.strides.begin(), l.strides.begin() + static_cast<long>(nout), [](int64_t x) { return x == 0; }))
      continue;
    int64_t bytes = 0;
    for (const Leaf& m : held)
      if (m.strides.back() == 1 && congruent(l, m)) bytes += heldBytes(m, inputs);
    for (size_t j = 0; j < ax.roots.size(); ++j) {
      const Leaf st{-1, ax.root_offset[j], ax.axisStrides(ax.store_atom_strides[j])};
      if (st.strides.back() == 1 && congruent(l, st))
        bytes += dtypeBytes(k.outputs[static_cast<size_t>(ax.root_output[j])].dtype);
    }
    if (bytes > best) best = bytes, ref = &l;
  }
  if (!ref) return {false, ""};
  k.peel = true;
  k.peel_offset = ref->offset;
  k.peel_strides.assign(ref->strides.begin(), ref->strides.begin() + static_cast<long>(nout));
  return {true, fmt::format("vectors of {} from each row's first aligned element (rows of {} elements are no "
                            "whole number of vectors); the few elements before it and past its last vector one "
                            "a thread",
                            full, k.red_shape[0])};
}

int fullVectorWidth(const NormAxes& ax, const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs) {
  // 16 bytes of the rows the reductions read (f16 rows: 8 lanes). Other loads (an f32
  // per-channel weight beside them) take two vectors or one per lane; loads constant along the
  // axis are splats at any width.
  int max_bytes = 1, row_bytes = 0;
  lower::visitPostOrder(ax.roots, [&](const ENode& n) {
    if (n.kind == ENode::Kind::Load && ax.axisStrides(n.leaf.strides).back() != 0)
      max_bytes = std::max(max_bytes, dtypeBytes(n.dtype));
  });
  for (const Leaf& l : held) row_bytes = std::max(row_bytes, heldBytes(l, inputs));
  if (row_bytes > 0) max_bytes = row_bytes;
  else for (const auto& d : ax.k.outputs) max_bytes = std::max(max_bytes, dtypeBytes(d.dtype));
  return std::min(8, 16 / max_bytes);
}

Decision<int> chooseVectorWidth(const NormAxes& ax, const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs,
                                bool row_tier) {
  if (row_tier) return {1, ""};  // the row-vector tiers' lanes run along the rows
  const int full = fullVectorWidth(ax, held, inputs);
  int vec = full;
  while (vec > 1 && ax.k.red_shape.back() % vec != 0) vec /= 2;
  if (vec == full) return {vec, ""};
  return {vec, fmt::format("{}, not vectors of {}: the innermost reduced axis has {} elements",
                           vec == 1 ? std::string("one element a chunk") : fmt::format("vectors of {}", vec), full,
                           ax.k.red_shape.back())};
}

int mapAccesses(NormAxes& ax, const ir::Fusion& f, const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs) {
  RowKernel& k = ax.k;
  const int vec = k.vec;
  std::vector<int64_t> shape = k.outer_shape;
  shape.insert(shape.end(), k.red_shape.begin(), k.red_shape.end());
  int64_t max_offset = 0;
  auto track = [&](int64_t off, const std::vector<int64_t>& s) {
    int64_t m = off;
    for (size_t i = 0; i < s.size(); ++i) m += (shape[i] - 1) * std::abs(s[i]);
    max_offset = std::max(max_offset, m + vec);
  };
  std::vector<EPtr> remapped = lower::hashCons(lower::mapLeaves(ax.roots, [&](const Leaf& l) {
    Leaf n{l.input, l.offset, ax.axisStrides(l.strides)};
    if (l.input < 0) return n;  // an index value: no memory to access
    const TensorDesc& d = inputs[static_cast<size_t>(l.input)];
    k.load_access[n] = k.peel ? peeledAccess(k, d.dtype, n.offset, n.strides, d.align_bytes, vec)
                              : chooseAccess(d.dtype, n.offset, n.strides, d.align_bytes, vec);
    track(n.offset, n.strides);
    return n;
  }));
  // The grid tier's workspace regions: one a reduction, up to kMaxSubRowValues a sub-row one.
  int reductions = 0;
  lower::visitPostOrder(remapped, [&](const ENode& n) {
    if (n.kind == ENode::Kind::Reduce) reductions += n.sub_atoms.empty() ? 1 : static_cast<int>(RowKernel::kMaxSubRowValues);
  });
  // The row held on chip (the remapped leaves are the held loads' own: mapLeaves gives each its
  // strides over the kernel's axes, and a held load is never a splat).
  k.smem_leaves.assign(held.begin(), held.end());
  const size_t nout = k.outer_shape.size();
  for (size_t j = 0; j < ax.roots.size(); ++j) {
    const auto i = static_cast<size_t>(ax.root_output[j]);
    RowKernel::Store s;
    s.output = static_cast<int>(i);
    s.offset = ax.root_offset[j];
    s.strides = ax.axisStrides(ax.store_atom_strides[j]);
    s.dtype = f.outputs()[i].value->dtype();
    s.value = remapped[j];
    s.row_only = rowOnly(s.strides, nout);
    lower::visitPostOrder({s.value}, [&](const ENode& n) {
      s.column = s.column || n.over_rows;
      s.sub_row = s.sub_row || !n.sub_atoms.empty();
    });
    s.access = k.peel ? peeledAccess(k, s.dtype, s.offset, s.strides, k.outputs[i].align_bytes, vec)
                      : chooseAccess(s.dtype, s.offset, s.strides, k.outputs[i].align_bytes, vec);
    if (s.access == Access::Splat || s.sub_row) s.access = Access::Gather;  // (sub-row values: one at a time)
    track(s.offset, s.strides);
    k.stores.push_back(s);
  }
  k.index64 = max_offset >= (int64_t{1} << 31);
  return reductions;
}

}  // namespace loom::schedule::norm_detail
