#include "compiler/schedule/reduction/reduction.h"

#include <algorithm>

#include <fmt/format.h>

#include "compiler/schedule/reduction/accumulators.h"
#include "compiler/schedule/row_common.h"
#include "compiler/schedule/row_shape.h"

namespace loom::schedule {

using lower::ENode;
using lower::EPtr;
using lower::Leaf;
using namespace norm_detail;

namespace {

// Threads an SM keeps busy with the loads of a streamed reduction.
constexpr int kThreadsPerSm = 2048;

// Whether stored value `root` (of output `out`, strides `s` over the kernel's axes) may be
// written as its elements are read (an element store): a pointwise function of the inputs (no
// reduction under it), not written over an input, and each element one element of the kernel's
// iteration (no stride 0 along an axis of more than one element: threads would write it twice).
std::string notElementStore(const NormAxes& ax, const lower::EPtr& root, int out, const std::vector<int64_t>& s) {
  bool reduced = false;
  lower::visitPostOrder({root}, [&](const ENode& n) { reduced = reduced || n.kind == ENode::Kind::Reduce; });
  const std::string which = fmt::format("output {} varies along the reduced atoms {}", out + 1, ax.k.red_atoms);
  if (reduced) return which + " and reads a reduction: rows are read again to write it, the normalization scheduler's";
  if (ax.k.output_alias[static_cast<size_t>(out)] >= 0)
    return which + " and is written over an input that other elements may still read";
  std::vector<int64_t> shape = ax.k.outer_shape;
  shape.insert(shape.end(), ax.k.red_shape.begin(), ax.k.red_shape.end());
  for (size_t d = 0; d < s.size(); ++d)
    if (s[d] == 0 && shape[d] > 1)
      return which + " but not along every axis: its elements would be written by several threads";
  return "";
}

// Why the fusion is not one pass of reductions whose outputs are values of the row or elements
// of the pass (notElementStore); empty where it is. Sets `main` to the reduced load of the
// largest input.
std::string notReductionOnly(const NormAxes& ax, const std::vector<TensorDesc>& inputs, Leaf* main) {
  const size_t nout = ax.k.outer_shape.size();
  for (size_t i = 0; i < ax.store_atom_strides.size(); ++i) {
    const auto s = ax.axisStrides(ax.store_atom_strides[i]);
    if (rowOnly(s, nout)) continue;
    if (std::string why = notElementStore(ax, ax.roots[i], ax.root_output[i], s); !why.empty()) return why;
  }
  std::string why;
  int reductions = 0;
  int64_t best = -1;
  lower::visitPostOrder(ax.roots, [&](const ENode& n) {
    if (n.kind != ENode::Kind::Reduce || !why.empty()) return;
    ++reductions;
    lower::visitPostOrder({n.args[0]}, [&](const ENode& m) {
      if (m.kind == ENode::Kind::Reduce)
        why = "a reduction reads another one (a second pass over the row), the normalization scheduler's";
      if (m.kind != ENode::Kind::Load) return;
      const TensorDesc& d = inputs[static_cast<size_t>(m.leaf.input)];
      const int64_t bytes = d.numel() * dtypeBytes(d.dtype);
      if (bytes > best) {
        best = bytes;
        *main = Leaf{m.leaf.input, m.leaf.offset, ax.axisStrides(m.leaf.strides)};
      }
    });
  });
  if (reductions == 0) return "no reduction";
  return why;
}

// Lanes along the innermost row axis (outer layout): 16 bytes of the widest load the pass reads
// (under a reduction or an element store; not the row's own values its stores read once, such
// as batch norm's running statistics), fewer where the rows or a load's alignment do not allow
// them.
int outerVectorWidth(const NormAxes& ax, const std::vector<TensorDesc>& inputs) {
  const RowKernel& k = ax.k;
  const size_t nout = k.outer_shape.size();
  std::vector<std::pair<Leaf, TensorDesc>> loads;
  int max_bytes = 1;
  std::vector<EPtr> streamed;
  lower::visitPostOrder(ax.roots, [&](const ENode& n) {
    if (n.kind == ENode::Kind::Reduce) streamed.push_back(n.args[0]);
  });
  for (size_t i = 0; i < ax.store_atom_strides.size(); ++i)
    if (!rowOnly(ax.axisStrides(ax.store_atom_strides[i]), nout)) streamed.push_back(ax.roots[i]);
  lower::visitPostOrder(streamed, [&](const ENode& n) {
    if (n.kind != ENode::Kind::Load) return;
    Leaf l{n.leaf.input, n.leaf.offset, ax.axisStrides(n.leaf.strides)};
    if (l.strides[nout - 1] == 0) return;
    const TensorDesc& d = inputs[static_cast<size_t>(l.input)];
    max_bytes = std::max(max_bytes, dtypeBytes(d.dtype));
    loads.push_back({l, d});
  });
  // Element stores (notElementStore) take the same vectors.
  for (size_t i = 0; i < ax.store_atom_strides.size(); ++i) {
    Leaf l{-1, ax.root_offset[i], ax.axisStrides(ax.store_atom_strides[i])};
    if (l.strides[nout - 1] == 0 || rowOnly(l.strides, nout)) continue;
    const TensorDesc& d = k.outputs[static_cast<size_t>(ax.root_output[i])];
    max_bytes = std::max(max_bytes, dtypeBytes(d.dtype));
    loads.push_back({l, d});
  }
  int vec = std::min(8, 16 / max_bytes);
  auto ok = [&](int v) {
    if (k.outer_shape.back() % v != 0) return false;
    return std::all_of(loads.begin(), loads.end(), [&](const auto& ld) {
      return chooseAccess(ld.second.dtype, ld.first.offset, rowsLast(ld.first.strides, nout), ld.second.align_bytes,
                          v) == Access::Vector;
    });
  };
  while (vec > 1 && !ok(vec)) vec /= 2;
  return vec;
}

// Vectors a row from which one block a row (512 threads) is this scheduler's even unsplit.
constexpr int64_t kLongRowUnits = 1024;

// Loads in flight a thread: no more than the units the busiest thread has (`units` walked `step`
// apart; for a symbolic kernel, at the least count of its class), so that a trip holds no unit
// past every thread's share. (ptxas folded most such units of kernels that know their count; a
// symbolic kernel held them all: LSTM cell backward's 5 element stores a unit took 226 registers
// at 4 units, against 80.)
int classUnroll(const ReductionKernel& r, int64_t units, int64_t step) {
  return static_cast<int>(std::clamp<int64_t>((units + step - 1) / step, 1, r.unroll));
}

// `by_class`: the shape is chosen from the power of two of the reduced count, which a symbolic
// kernel's every count shares (reducedSizeCandidate).
// `only_as_class`: where the rows are this scheduler's only as a class of counts, why not
// otherwise (the caller refuses them for that where the kernel cannot take its count at run time).
std::string innerShape(ReductionKernel& r, const CompileOptions& opts, bool by_class, std::string* only_as_class) {
  const RowKernel& k = r.k;
  const int64_t units = by_class ? floorPow2(r.rowUnits()) : r.rowUnits();
  r.block = units >= 2048 ? 512 : std::clamp(nextPow2(units / 4), 32, 512);
  if (opts.tuning.red_block) r.block = nextPow2(*opts.tuning.red_block);
  const int64_t target = int64_t{opts.device.sm_count} * (kThreadsPerSm / r.block);
  const int64_t most = std::max<int64_t>(1, units / (int64_t{r.block} * r.unroll));
  r.split = std::clamp<int64_t>(target / k.rows(), 1, most);
  if (opts.tuning.red_split) r.split = std::min<int64_t>(r.split, *opts.tuning.red_split);
  // Rows that fill the GPU one block a row: long ones (1024 vectors or more) read in vectors
  // are still this scheduler's, one block a row folding in registers (the normalization
  // scheduler would hold such a row on chip for a second pass that one-pass reductions do not
  // make, and would take shared memory for it: docs/performance.md#reduction-mid-rows); short
  // ones, or ones read an element at a time, are its, many to a block.
  // A kernel serving a class of counts keeps them where a warp a row has two units a thread (one
  // block a row, looping to the count): the normalization scheduler would hold the row, so its
  // length, and every count its own kernel.
  if (r.split < 2 && (units < kLongRowUnits || k.vec < 2)) {
    std::string why = fmt::format("{} rows of {} elements fill the GPU one block a row (or are too short to split): "
                                  "the normalization scheduler's", k.rows(), k.rowElems());
    if (!by_class || units < 64) return why;
    *only_as_class = std::move(why);
    // Those short rows take a thread a unit of the class's least count, so that the loads of a
    // row are in flight at once (docs/performance.md#class-short-rows).
    if (units < kLongRowUnits && !opts.tuning.red_block) r.block = std::clamp(nextPow2(units), 32, 512);
  }
  r.grid = k.rows() * r.split;
  if (!opts.tuning.red_unroll) r.unroll = classUnroll(r, units, int64_t{r.block} * r.split);
  return "";
}

// Tiles of 32 threads across the rows (a 512-byte line of f16 rows a warp) where there are
// enough tiles to fill the GPU; fewer threads across (down to 8, and for long reductions no
// fewer than read whole 128-byte lines of the narrowest input) where there are not, so that
// each tile is split over fewer blocks and its last block has fewer partials to combine
// (docs/performance.md#threads-across).
constexpr int64_t kLongColumns = 65536;
// `partial_bytes`: a thread's partials, a value of each reduction's accumulator; `elem_bytes`:
// the narrowest loaded element. The block's columns of threads meet in static shared memory, at
// most 48 KiB a block, and every row of a tile needs a thread of its own to finish it
// (by >= vec). Empty, or why it cannot.
std::string outerShape(ReductionKernel& r, const CompileOptions& opts, int64_t partial_bytes, int elem_bytes,
                       bool welford, bool by_class) {
  const RowKernel& k = r.k;
  const int64_t elems = by_class ? floorPow2(k.rowElems()) : k.rowElems();
  const int64_t cols = k.rows() / k.vec;  // vectors of neighbouring rows
  const int64_t target = int64_t{opts.device.sm_count} * (kThreadsPerSm / 256);
  r.bx = static_cast<int>(std::min<int64_t>(32, cols));
  const int whole_lines = elems >= kLongColumns ? std::max(8, 128 / std::max(1, k.vec * elem_bytes)) : 8;
  while (r.bx > whole_lines && (cols + r.bx - 1) / r.bx < target / 2) r.bx /= 2;
  if (opts.tuning.red_bx) r.bx = static_cast<int>(std::min<int64_t>(*opts.tuning.red_bx, cols));
  const int block = opts.tuning.red_block ? *opts.tuning.red_block : 256;
  r.by = 1;  // a power of two: the block's columns of threads meet 8 rows at a time
  while (r.by * 2 <= std::min(block, 1024) / r.bx) r.by *= 2;
  r.by = std::max(r.by, k.vec);
  constexpr int64_t kStaticSmem = 48 * 1024 - 64;  // the last block's flag beside them
  auto bytes = [&] { return int64_t{r.by} * r.bx * k.vec * partial_bytes; };
  while (r.by > k.vec && bytes() > kStaticSmem) r.by /= 2;
  while (r.bx > 1 && bytes() > kStaticSmem) r.bx /= 2;
  if (bytes() > kStaticSmem)
    return fmt::format("the partials of its reductions ({} bytes a thread) for even one vector of {} rows take {} "
                       "bytes of shared memory, past the 48 KiB a block has", partial_bytes, k.vec, bytes());
  r.block = r.bx * r.by;
  r.tiles = (k.rows() + r.rowsPerBlock() - 1) / r.rowsPerBlock();
  // Blocks a tile: as many as fill the GPU (`fill`), but no more than leave each thread down the
  // tile `outer_trips` trips of `unroll` loads (fewer blocks, each publishing its partial after
  // more loads); a short reduction (LSTM cell backward's bias gradient, 256 rows over 16 tiles:
  // latency, not bytes) still takes a quarter of `fill`, down to one load a thread.
  // Half the SM's threads, not all: a tile's last block then combines half the partials, and
  // the loads in flight still cover the memory's latency (docs/performance.md#tile-splits).
  // Welford statistics a quarter, each thread twice the trips: a trip's merge by Chan's formula
  // costs a division, and fewer, longer blocks keep the memory busier (docs/performance.md#welford-splits).
  const int64_t outer_trips = welford ? 8 : 4;
  const int64_t share = welford ? 4 : 2;
  const int64_t fill = int64_t{opts.device.sm_count} * (kThreadsPerSm / r.block) / r.tiles;
  const int64_t half = int64_t{opts.device.sm_count} * (kThreadsPerSm / r.block / share) / r.tiles;
  const int64_t deep = elems / (int64_t{r.by} * outer_trips * r.unroll);
  const int64_t most = std::max<int64_t>({1, deep, std::min<int64_t>(elems / r.by, fill / 4)});
  r.split = std::clamp<int64_t>(half, 1, most);
  if (opts.tuning.red_split) r.split = std::min<int64_t>(r.split, *opts.tuning.red_split);
  r.grid = r.tiles * r.split;
  if (!opts.tuning.red_unroll) r.unroll = classUnroll(r, elems, int64_t{r.by} * r.split);
  return "";
}

}  // namespace

std::optional<ReductionKernel> scheduleReduction(const ir::Fusion& f, const Bindings& sizes,
                                                 const std::vector<TensorDesc>& inputs,
                                                 const CompileOptions& opts, std::string* why_not) {
  std::optional<NormAxes> ax = normAxes(f, sizes, inputs, why_not);
  if (!ax) return std::nullopt;
  auto reject = [&](std::string why) -> std::optional<ReductionKernel> {
    *why_not = std::move(why);
    return std::nullopt;
  };
  Leaf main;
  if (ax->k.columns)
    return reject(fmt::format("its reductions over {} and over {} are rows' and columns' at once, the normalization "
                              "scheduler's", ax->k.red_atoms, ax->k.outer_atoms.empty() ? "{}" : ax->k.outer_atoms));
  if (std::string why = notReductionOnly(*ax, inputs, &main); !why.empty()) return reject(why);
  ReductionKernel r;
  RowKernel& k = ax->k;
  const size_t nout = k.outer_shape.size();
  const bool outer = main.input >= 0 && main.strides.back() != 1 && nout > 0 && main.strides[nout - 1] == 1;
  r.layout = outer ? ReductionKernel::Layout::Outer : ReductionKernel::Layout::Inner;
  if (opts.tuning.red_unroll) r.unroll = *opts.tuning.red_unroll;
  std::string vec_why;
  if (outer) {
    k.vec = outerVectorWidth(*ax, inputs);
  } else {
    const Decision<int> vec = chooseVectorWidth(*ax, heldLoads(*ax), inputs, false);
    k.vec = vec.value;
    vec_why = vec.why;
  }
  mapAccesses(*ax, f, {}, inputs);
  k.smem_leaves.clear();
  if (outer) {  // lanes across neighbouring rows: each load's and store's access along the innermost row axis
    for (auto& [leaf, access] : k.load_access) {
      const TensorDesc& d = inputs[static_cast<size_t>(leaf.input)];
      access = chooseAccess(d.dtype, leaf.offset, rowsLast(leaf.strides, nout), d.align_bytes, k.vec);
    }
    for (auto& st : k.stores) {
      st.access = chooseAccess(st.dtype, st.offset, rowsLast(st.strides, nout),
                               k.outputs[static_cast<size_t>(st.output)].align_bytes, k.vec);
      if (st.access == Access::Splat) st.access = Access::Gather;
    }
  }
  r.k = std::move(k);
  std::vector<EPtr> roots;
  for (const auto& st : r.k.stores) roots.push_back(st.value);
  const red_detail::Accumulators accs = red_detail::accumulatorsOf(roots);
  const int64_t partial_bytes = accs.partialBytes();
  // Column sums keep one checked loop: split in two they measured slower
  // (docs/performance.md#unchecked-trips).
  r.unchecked_trips = !opts.tuning.no_unchecked_trips && (!outer || accs.anyWelford());
  int elem_bytes = 8;
  for (const auto& [leaf, access] : r.k.load_access)
    elem_bytes = std::min(elem_bytes, dtypeBytes(inputs[static_cast<size_t>(leaf.input)].dtype));
  std::string no_class;
  const bool by_class = opts.tuning.symbolic && !reducedSizeCandidate(f, sizes, inputs, r, &no_class).empty();
  r.partial_unroll = r.unroll;
  std::string only_as_class;
  if (std::string why = outer ? outerShape(r, opts, partial_bytes, elem_bytes, accs.anyWelford(), by_class)
                              : innerShape(r, opts, by_class, &only_as_class);
      !why.empty())
    return reject(why);
  if (r.grid >= (int64_t{1} << 31))
    return reject(fmt::format("{} blocks are past the GPU's launch limit of 2^31 - 1", r.grid));
  if (r.split > 1) {
    const int64_t counters = outer ? r.tiles : r.k.rows();  // one a row or tile
    r.counter_bytes = (4 * counters + 127) / 128 * 128;
    r.workspace_bytes = r.counter_bytes + int64_t{accs.values} * r.split * r.k.rows() * 8;
  }
  const int64_t element_stores = std::count_if(r.k.stores.begin(), r.k.stores.end(), [](const auto& st) { return !st.row_only; });
  const std::string elements =
      element_stores ? fmt::format("; {} stores of elements written as they are read", element_stores) : "";
  const std::string split_why =
      r.split > 1 ? fmt::format("each {} split over {} blocks whose partials meet in a global workspace, combined in "
                                "block order by the last block to finish (deterministic)",
                                outer ? "tile" : "row", r.split)
                  : "one block each";
  const std::string stats = accs.anyWelford() ? "; var_mean as Welford statistics (count, mean, M2), each trip's "
                                                "exact, merged by Chan's formula in a fixed order"
                                              : "";
  if (outer)
    r.reason = fmt::format("{} rows over {} x {} elements over {}; outer layout: tiles of {} neighbouring "
                           "rows ({} threads across them, vectors of {}, {} threads down the reduction), {} tiles, {}{}{}; "
                           "grid {} of {} threads",
                           r.k.rows(), r.k.outer_atoms, r.k.rowElems(), r.k.red_atoms, r.rowsPerBlock(), r.bx,
                           r.k.vec, r.by, r.tiles, split_why, stats, elements, r.grid, r.block);
  else
    r.reason = fmt::format("{} rows over {} x {} elements over {}; inner layout: {} threads a row, vectors "
                           "of {}{}, {}{}{}; grid {}",
                           r.k.rows(), r.k.outer_atoms, r.k.rowElems(), r.k.red_atoms, r.block, r.k.vec,
                           vec_why.empty() ? "" : " (" + vec_why + ")", split_why, stats, elements, r.grid);
  if (outer) r.reason += "; elements walked from the last (what a kernel after it reads first stays in L2)";
  if (opts.tuning.symbolic) makeReductionSymbolic(f, sizes, inputs, r);
  // (Its count known after all, past the index range a class allows: the scheduler it was before,
  // as an exact compile of the same segment will find.)
  if (!only_as_class.empty() && !r.symbolic()) return reject(only_as_class);
  return r;
}

}  // namespace loom::schedule
