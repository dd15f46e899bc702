#include "compiler/schedule/pointwise/pointwise.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <numeric>
#include <map>
#include <set>

#include "ir/error.h"

namespace loom::schedule {

Access chooseAccess(DType t, int64_t offset, const std::vector<int64_t>& strides, int align_bytes,
                    int vec) {
  if (strides.back() == 0) return Access::Splat;
  if (vec == 1 || strides.back() != 1) return Access::Gather;
  int64_t bytes = static_cast<int64_t>(vec) * dtypeBytes(t);
  bool ok = align_bytes >= std::min<int64_t>(bytes, 16) && (offset * dtypeBytes(t)) % bytes == 0;
  for (size_t i = 0; i + 1 < strides.size(); ++i) ok = ok && (strides[i] * dtypeBytes(t)) % bytes == 0;
  return ok ? Access::Vector : Access::Gather;
}

namespace {

using lower::EPtr;
using lower::Leaf;

// Permutes then collapses strides of one access into the kernel's iteration axes.
struct AxisPlan {
  std::vector<int> order;                   // logical dims, outer to inner
  std::vector<std::vector<int>> collapsed;  // groups of positions in `order`
};

std::vector<int64_t> planStrides(const AxisPlan& p, const std::vector<int64_t>& logical) {
  std::vector<int64_t> out;
  for (const auto& g : p.collapsed) out.push_back(logical[static_cast<size_t>(p.order[static_cast<size_t>(g.back())])]);
  return out;
}


// Iteration order: the memory order of the largest input read over the full output shape
// (so an NHWC input makes NHWC outputs, and both stream contiguously).
std::vector<int> iterationOrder(const std::vector<EPtr>& roots, const std::vector<int64_t>& shape) {
  const int rank = static_cast<int>(shape.size());
  std::vector<int> order(static_cast<size_t>(rank));
  std::iota(order.begin(), order.end(), 0);
  const Leaf* dominant = nullptr;
  int64_t best = -1;
  lower::visitPostOrder(roots, [&](const lower::ENode& n) {
    if (n.kind != lower::ENode::Kind::Load) return;
    int64_t span = 1;
    for (int d = 0; d < rank; ++d)
      if (n.leaf.strides[static_cast<size_t>(d)] != 0) span *= shape[static_cast<size_t>(d)];
    if (span > best) {
      best = span;
      dominant = &n.leaf;
    }
  });
  if (dominant) {
    std::vector<int64_t> s = dominant->strides;
    std::stable_sort(order.begin(), order.end(), [&](int a, int b) {
      return std::abs(s[static_cast<size_t>(a)]) > std::abs(s[static_cast<size_t>(b)]);
    });
  }
  return order;
}

// What the kernel stores: an output's expression, or one piece of a concat output, `at`
// elements along the joined dim `dim`.
struct StoreRoot {
  int output = 0;
  EPtr value;
  int dim = -1;
  int64_t at = 0;
};

// Outputs (of their own shapes: a concat's is its pieces' joined): allocated contiguous in
// iteration order, or written into their aliased input.
// The input an output is written into, or -1.
int aliasIndex(const ir::Fusion& f, const ir::Output& o) { return f.inputIndex(o.alias); }

void placeOutputs(const ir::Fusion& f, const std::vector<TensorDesc>& inputs,
                  const std::vector<std::vector<int64_t>>& shapes, PointwiseKernel& k) {
  for (size_t i = 0; i < f.outputs().size(); ++i) {
    const auto& o = f.outputs()[i];
    const std::vector<int64_t>& shape = shapes[i];
    const int alias = aliasIndex(f, o);
    k.output_alias.push_back(alias);
    TensorDesc d{o.value->dtype(), shape, stridesForOrder(shape, k.order), 16};
    if (alias >= 0) d = inputs[static_cast<size_t>(alias)];
    k.outputs.push_back(d);
  }
}

// Each output's value under its reshapes; none where no output is a reshape or one's value is an
// input (the caller checks that the values have one shape).
std::vector<const ir::Value*> reshapedCores(const ir::Fusion& f) {
  std::vector<const ir::Value*> cores;
  bool any = false;
  for (const auto& o : f.outputs()) {
    const ir::Value* v = o.value;
    while (!v->isInput() && v->definition()->family() == ir::OpFamily::Reshape) {
      v = v->definition()->input(0);
      any = true;
    }
    cores.push_back(v);
  }
  for (const ir::Value* c : cores)
    if (c->isInput()) return {};
  return any ? cores : std::vector<const ir::Value*>{};
}

// Outputs written through their reshapes: allocated dense in the iteration order over the
// cores' shape, merged back into each output's own shape (or the aliased input, split into the
// cores' shape); `out_strides` over the cores' shape. Empty, or why not.
std::string placeReshapedOutputs(const ir::Fusion& f, const std::vector<TensorDesc>& inputs,
                                 const std::vector<std::vector<int64_t>>& shapes, const std::vector<int64_t>& core,
                                 PointwiseKernel& k, std::vector<std::vector<int64_t>>& out_strides) {
  for (size_t i = 0; i < f.outputs().size(); ++i) {
    const auto& o = f.outputs()[i];
    const ir::Op* op = o.value->isInput() ? nullptr : o.value->definition();
    const int alias = aliasIndex(f, o);
    k.output_alias.push_back(alias);
    try {
      if (alias >= 0) {
        const TensorDesc& d = inputs[static_cast<size_t>(alias)];
        out_strides.push_back(lower::reshapeStrides(d.strides, shapes[i], core, op));
        k.outputs.push_back(d);
      } else {
        const std::vector<int64_t> dense = stridesForOrder(core, k.order);
        k.outputs.push_back(TensorDesc{o.value->dtype(), shapes[i], lower::reshapeStrides(dense, core, shapes[i], op), 16});
        out_strides.push_back(dense);
      }
    } catch (const lower::NotPointwise& np) {
      return "writing output `" + o.name + "` through its reshape: " + np.reason;
    }
  }
  return "";
}

// Collapses neighbouring axes that every access walks as one run and drops size-1 axes: the
// kernel's iteration shape, and how logical strides map onto it.
AxisPlan collapseAxes(const std::vector<EPtr>& roots, const std::vector<int64_t>& shape,
                      const std::vector<std::vector<int64_t>>& out_strides, PointwiseKernel& k) {
  const int rank = static_cast<int>(shape.size());
  const std::vector<int>& order = k.order;
  std::vector<int64_t> ordered_shape;
  for (int d : order) ordered_shape.push_back(shape[static_cast<size_t>(d)]);
  std::vector<std::vector<int64_t>> all_strides;
  lower::visitPostOrder(roots, [&](const lower::ENode& n) {
    if (n.kind == lower::ENode::Kind::Load || n.kind == lower::ENode::Kind::Index) all_strides.push_back(n.leaf.strides);
  });
  for (const auto& s : out_strides) all_strides.push_back(s);
  AxisPlan plan{order, {}};
  for (int p = 0; p < rank; ++p) {
    if (ordered_shape[static_cast<size_t>(p)] == 1) continue;
    if (!plan.collapsed.empty()) {
      int outer = order[static_cast<size_t>(plan.collapsed.back().back())], inner = order[static_cast<size_t>(p)];
      bool merge = std::all_of(all_strides.begin(), all_strides.end(), [&](const auto& s) {
        return s[static_cast<size_t>(outer)] == s[static_cast<size_t>(inner)] * shape[static_cast<size_t>(inner)];
      });
      if (merge) {
        plan.collapsed.back().push_back(p);
        continue;
      }
    }
    plan.collapsed.push_back({p});
  }
  for (const auto& g : plan.collapsed) {
    int64_t e = 1;
    for (int p : g) e *= ordered_shape[static_cast<size_t>(p)];
    k.iter_shape.push_back(e);
  }
  if (k.iter_shape.empty()) {  // a single element
    k.iter_shape.push_back(1);
    plan.collapsed.push_back({});
  }
  return plan;
}

// Vector width: 16 bytes of the widest element type a thread streams, dividing the innermost
// extent. A thread holds `vec` values of every stream it loads: fusions that read many streams
// per element (gate matrices read as slices: lstm_cell loads 17, gru_cell 13) take narrower
// vectors, down to 2 lanes, while that is more than 96 bytes a thread, and so more threads
// (`*narrowed`). Two streams keep 8 lanes: at 2 lanes they measured slower.
// A load broadcast to at least 8 times its elements (batch norm's per-channel statistics and
// weight beside its f16 images) is read from cache: its wider type does not narrow the streams'
// vectors (LLVM splits its lanes past 16 bytes), though its registers count at its own width.
// Measurements: bench/results/2026-11-25-h100-scheduler-rules.md#pointwise-narrow-vectors,
// docs/performance.md#broadcast-loads
int vectorWidth(const std::vector<EPtr>& roots, const std::vector<int64_t>& shape, PointwiseKernel& k,
                const Tuning& tune, bool* narrowed) {
  auto cached = [&](const lower::Leaf& l) {
    int64_t elems = 1;
    for (size_t d = 0; d < l.strides.size() && d < shape.size(); ++d)
      if (l.strides[d] != 0) elems *= shape[d];
    return !tune.no_cached_broadcasts && elems * 8 <= k.numel();
  };
  std::map<lower::Leaf, int> cached_loads;  // each with its element bytes
  std::set<lower::Leaf> streams;
  int stream_bytes = 1, all_bytes = 1;
  for (const auto& d : k.outputs) stream_bytes = std::max(stream_bytes, dtypeBytes(d.dtype));
  lower::visitPostOrder(roots, [&](const lower::ENode& n) {
    if (n.kind != lower::ENode::Kind::Load) return;
    all_bytes = std::max(all_bytes, dtypeBytes(n.dtype));
    if (cached(n.leaf)) {
      cached_loads[n.leaf] = dtypeBytes(n.dtype);
    } else {
      streams.insert(n.leaf);
      stream_bytes = std::max(stream_bytes, dtypeBytes(n.dtype));
    }
  });
  all_bytes = std::max(all_bytes, stream_bytes);
  // The type that sets the vector: the streams' (outputs included), or the loads' where all are cached.
  const int lane_bytes = streams.empty() && k.outputs.empty() ? all_bytes : stream_bytes;
  int64_t thread_bytes = static_cast<int64_t>(streams.size()) * lane_bytes;  // a lane's registers over every load
  for (const auto& [leaf, bytes] : cached_loads) thread_bytes += bytes;
  int vec = std::min(8, 16 / lane_bytes);
  while (vec > 2 && thread_bytes * vec > 96) vec /= 2;
  // The blocks' size follows the rule over every load at the widest type, as measured.
  const int widest = std::min(8, 16 / all_bytes);
  const auto loads = static_cast<int64_t>(streams.size() + cached_loads.size());
  *narrowed = widest > 2 && loads * widest * all_bytes > 96;
  // For tuning sweeps only (part of the cache key): LOOM_TUNE_PW_VEC caps the vector width.
  if (tune.pw_vec) vec = std::min(vec, *tune.pw_vec);
  while (vec > 1 && (vec & (vec - 1)) != 0) --vec;
  // One axis of many vectors: whole vectors and a tail (add of 1000001 elements).
  constexpr int64_t kMinTailVectors = 32;
  if (!tune.no_peel && k.iter_shape.size() == 1 && k.iter_shape[0] >= kMinTailVectors * vec) {
    k.tail = k.iter_shape[0] % vec != 0;
    return vec;
  }
  while (vec > 1 && k.iter_shape.back() % vec != 0) vec /= 2;
  return vec;
}

// Every load and store over the collapsed axes, with its access; whether the kernel needs
// 64-bit indices for the offsets it reaches.
void placeAccesses(const ir::Fusion& f, const std::vector<TensorDesc>& inputs, const std::vector<StoreRoot>& stores,
                   const AxisPlan& plan, const std::vector<std::vector<int64_t>>& out_strides, PointwiseKernel& k) {
  std::vector<EPtr> roots;
  for (const auto& r : stores) roots.push_back(r.value);
  const int vec = k.vec;
  auto remap = [&](const std::vector<int64_t>& logical) {
    if (plan.collapsed.back().empty()) return std::vector<int64_t>{0};
    return planStrides(plan, logical);
  };
  auto accessFor = [&](DType t, int64_t offset, const std::vector<int64_t>& strides, int align) {
    return chooseAccess(t, offset, strides, align, vec);
  };
  int64_t max_offset = 0;
  auto track = [&](int64_t offset, const std::vector<int64_t>& strides) {
    int64_t m = offset;
    for (size_t i = 0; i < strides.size(); ++i) m += (k.iter_shape[i] - 1) * std::abs(strides[i]);
    max_offset = std::max(max_offset, m + vec);
  };
  const std::vector<EPtr> remapped = lower::hashCons(lower::mapLeaves(roots, [&](const Leaf& l) {
    Leaf n{l.input, l.offset, remap(l.strides)};
    if (l.input < 0) return n;  // an index value: no memory to access
    const TensorDesc& d = inputs[static_cast<size_t>(l.input)];
    k.load_access[n] = accessFor(d.dtype, n.offset, n.strides, d.align_bytes);
    track(n.offset, n.strides);
    return n;
  }));
  for (size_t j = 0; j < stores.size(); ++j) {
    const size_t i = static_cast<size_t>(stores[j].output);
    PointwiseKernel::Store s;
    s.output = static_cast<int>(i);
    s.strides = remap(out_strides[i]);
    if (stores[j].dim >= 0) s.offset = stores[j].at * out_strides[i][static_cast<size_t>(stores[j].dim)];
    s.dtype = f.outputs()[i].value->dtype();
    s.value = remapped[j];
    s.access = accessFor(s.dtype, s.offset, s.strides, k.outputs[i].align_bytes);
    if (s.access == Access::Splat) s.access = Access::Gather;
    track(s.offset, s.strides);
    k.stores.push_back(s);
  }
  k.index64 = max_offset >= (int64_t{1} << 31) || k.numel() >= (int64_t{1} << 31);

}

// Threads a block, blocks, and chunks a thread: one chunk per thread and as many blocks as that
// takes (a grid-stride loop only past the grid's limit or under a tuning override); the reason.
void placeGrid(PointwiseKernel& k, bool narrowed, const CompileOptions& opts) {
  const Tuning& tune = opts.tuning;
  const int vec = k.vec;
  const int64_t chunks = (k.numel() + vec - 1) / vec;
  k.block = chunks >= 4096 && !narrowed ? 256 : 128;
  // For tuning sweeps only (part of the cache key): LOOM_TUNE_PW_BLOCK threads a block.
  if (tune.pw_block) k.block = std::clamp(*tune.pw_block / 32 * 32, 32, 1024);
  // One chunk per thread and as many blocks as that takes: the block scheduler hands each SM
  // a fresh block as one finishes, so the memory stays busy to the end (measured faster than a
  // grid-stride loop over 16 blocks per SM, and than 2 or 4 chunks a thread).
  // Measurements: bench/results/2026-11-25-h100-scheduler-rules.md#pointwise-grid
  k.unroll = 1;
  // For tuning sweeps only (part of the cache key): LOOM_TUNE_PW_UNROLL (chunks a thread per
  // trip), LOOM_TUNE_PW_BLOCKS_PER_SM (a grid-stride loop over that many blocks per SM:
  // pointwiseGrid).
  if (tune.pw_unroll && !k.tail) k.unroll = *tune.pw_unroll;
  const int64_t per_block = int64_t{k.block} * k.unroll;
  k.grid = pointwiseGrid(k, chunks, opts);  // past the launch limit: grid-stride
  // The loop's chunk index passes the last chunk by up to a trip of the whole grid before its
  // test fails: that too must fit the index type.
  if (chunks + k.grid * per_block >= (int64_t{1} << 31)) k.index64 = true;
  k.reason = fmt::format("{} elements as {} chunks of {}{} ({}-bit indexing); {} threads x {} "
                         "chunk{} per trip, grid {} ({})", k.numel(), k.numel() / vec, vec,
                         k.tail ? fmt::format(" and a tail of {} one at a time", k.numel() % vec) : "",
                         k.index64 ? 64 : 32, k.block, k.unroll, k.unroll == 1 ? "" : "s", k.grid,
                         k.grid * per_block >= chunks ? "one trip" : "grid-stride");
}

}  // namespace

std::optional<PointwiseKernel> schedulePointwise(const ir::Fusion& f, const Bindings& sizes,
                                                 const std::vector<TensorDesc>& inputs,
                                                 const CompileOptions& opts, std::string* why_not) {
  auto reject = [&](std::string why) -> std::optional<PointwiseKernel> {
    if (why_not) *why_not = std::move(why);
    return std::nullopt;
  };
  for (const ir::Op* op : f.ops())
    if (ir::isReduction(op->kind()))
      return reject(fmt::format("`{}` ({}) is a reduction; the pointwise scheduler handles only "
                                "elementwise ops and views", op->name(), op->output()->name()));
  lower::StridedExprBuilder eb(f, sizes, inputs);
  PointwiseKernel k;
  k.num_inputs = static_cast<int>(f.inputs().size());
  const auto& outs = f.outputs();
  // The iteration shape: every output's; a concat output's pieces', cut into runs of the
  // largest extent that divides them all along the joined dim, each run a store at its place
  // (LSTM gate gradients written into one [B, 4H] matrix: four stores of [B, H]).
  std::vector<int64_t> shape;
  std::vector<std::vector<int64_t>> out_shapes;
  std::vector<StoreRoot> stores;
  std::string first;
  // Outputs that are reshapes of values of one shape (group norm backward's dx, computed over
  // [N, G, C/G, H, W] and written as [N, C, H, W]): the kernel iterates over that shape and
  // stores through the reshape, where reading through it would merge unevenly spaced runs.
  std::vector<const ir::Value*> cores;
  try {
    for (size_t i = 0; i < outs.size(); ++i) {
      const ir::Value* v = outs[i].value;
      out_shapes.push_back(eb.shapeOf(v));
      const bool joined = !v->isInput() && v->definition()->family() == ir::OpFamily::Concat;
      const std::vector<const ir::Value*> pieces = joined ? v->definition()->inputs() : std::vector<const ir::Value*>{v};
      const size_t dim = joined ? static_cast<size_t>(v->definition()->attr<ir::DimsAttrs>().dims.at(0)) : 0;
      int64_t run = 0;
      for (const ir::Value* piece : pieces) run = joined ? std::gcd(run, eb.shapeOf(piece)[dim]) : 1;
      int64_t at = 0;
      for (const ir::Value* piece : pieces) {
        std::vector<int64_t> s = eb.shapeOf(piece);
        const int64_t runs = joined ? s[dim] / run : 1;
        if (joined) s[dim] = run;
        if (runs > 64)
          return reject(fmt::format("concat `{}` joins pieces in {} runs or more of {} along dim {}: loom writes at "
                                    "most 64 a kernel", outs[i].name, runs, run, dim));
        const std::string what = joined ? fmt::format("piece `{}` of `{}`{}", piece->name(), outs[i].name,
                                                      runs > 1 ? fmt::format(" in runs of {}", run) : "")
                                         : fmt::format("`{}`", outs[i].name);
        if (first.empty()) {
          shape = s;
          first = what;
        } else if (s != shape) {
          return reject(fmt::format("{} [{}] and {} [{}] differ in shape; one pointwise kernel covers one shape",
                                    first, fmt::join(shape, ", "), what, fmt::join(s, ", ")));
        }
        const EPtr e = eb.exprOf(piece);
        for (int64_t r = 0; r < runs; ++r) {
          // Run r of the piece: its elements from r * run on along the joined dim.
          EPtr shifted = r == 0 ? e : lower::mapLeaves(e, [&](const Leaf& l) {
            Leaf m = l;
            m.offset += r * run * l.strides[dim];
            return m;
          });
          stores.push_back({static_cast<int>(i), shifted, joined ? static_cast<int>(dim) : -1, at});
          at += run;
        }
      }
    }
  } catch (const lower::NotPointwise& np) {
    cores = reshapedCores(f);
    if (cores.empty()) return reject(np.reason);
    try {
      stores.clear();
      out_shapes.clear();
      for (size_t i = 0; i < outs.size(); ++i) {
        out_shapes.push_back(eb.shapeOf(outs[i].value));
        stores.push_back({static_cast<int>(i), eb.exprOf(cores[i]), -1, 0});
      }
      shape = eb.shapeOf(cores[0]);
      for (const ir::Value* c : cores)
        if (eb.shapeOf(c) != shape) return reject(np.reason);
    } catch (const lower::NotPointwise& np2) {
      return reject(np2.reason);
    }
  }
  std::vector<EPtr> roots;
  for (const auto& r : stores) roots.push_back(r.value);
  k.order = iterationOrder(roots, shape);
  std::vector<std::vector<int64_t>> out_strides;
  if (cores.empty()) {
    placeOutputs(f, inputs, out_shapes, k);
    for (const auto& d : k.outputs) out_strides.push_back(d.strides);
  } else if (std::string why = placeReshapedOutputs(f, inputs, out_shapes, shape, k, out_strides); !why.empty()) {
    return reject(why);
  }
  const AxisPlan plan = collapseAxes(roots, shape, out_strides, k);
  bool narrowed = false;
  k.vec = vectorWidth(roots, shape, k, opts.tuning, &narrowed);
  placeAccesses(f, inputs, stores, plan, out_strides, k);
  placeGrid(k, narrowed, opts);
  if (opts.tuning.symbolic) makeSymbolic(f, sizes, inputs, k, opts, cores.empty() ? *f.outputs()[0].value : *cores[0]);
  return k;
}

std::string printKernel(const ir::Fusion& f, const PointwiseKernel& k) {
  std::string s = fmt::format("kernel {} (pointwise)\n  iteration [{}]  order [{}]\n  {}\n",
                              k.name, fmt::join(k.iter_shape, ", "), fmt::join(k.order, ", "),
                              k.reason);
  std::map<const lower::ENode*, std::string> names;
  int next = 0;
  std::vector<EPtr> roots;
  for (const auto& st : k.stores) roots.push_back(st.value);
  lower::visitPostOrder(roots, [&](const lower::ENode& n) {
    std::string name = fmt::format("v{}", next++);
    names[&n] = name;
    switch (n.kind) {
      case lower::ENode::Kind::Load: {
        auto it = k.load_access.find(n.leaf);
        s += fmt::format("  {} = load.{} {}[{} + i.[{}]]  ({})\n", name, dtypeName(n.dtype),
                         f.inputs()[static_cast<size_t>(n.leaf.input)]->name(), n.leaf.offset,
                         fmt::join(n.leaf.strides, ", "),
                         it == k.load_access.end() ? "?" : accessName(it->second));
        break;
      }
      case lower::ENode::Kind::Const:
        s += fmt::format("  {} = const.{} {}\n", name, dtypeName(n.dtype), n.value);
        break;
      case lower::ENode::Kind::Index:
        s += fmt::format("  {} = index {} + i.[{}]\n", name, n.leaf.offset, fmt::join(n.leaf.strides, ", "));
        break;
      case lower::ENode::Kind::Op: {
        std::vector<std::string> a;
        for (const auto& x : n.args) a.push_back(names[x.get()]);
        s += fmt::format("  {} = {}.{}({})\n", name, ir::opName(n.op), dtypeName(n.dtype),
                         fmt::join(a, ", "));
        break;
      }
      case lower::ENode::Kind::Reduce:
        LOOM_ASSERT(false, "a reduction in pointwise kernel {}", k.name);
        break;
    }
  });
  for (const auto& st : k.stores)
    s += fmt::format("  store.{} {}[{}i.[{}]] = {}  ({})\n", dtypeName(st.dtype),
                     f.outputs()[static_cast<size_t>(st.output)].name,
                     st.offset ? fmt::format("{} + ", st.offset) : "", fmt::join(st.strides, ", "),
                     names[st.value.get()], accessName(st.access));
  return s;
}

}  // namespace loom::schedule
