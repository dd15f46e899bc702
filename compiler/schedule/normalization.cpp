#include "compiler/schedule/normalization.h"

#include <algorithm>
#include <cstdlib>
#include <functional>
#include <numeric>
#include <set>

#include "compiler/analysis/domains.h"
#include "compiler/lower/atom_expr.h"
#include "ir/error.h"

namespace loom::schedule {

using lower::ENode;
using lower::EPtr;
using lower::Leaf;

int64_t NormKernel::rows() const {
  return std::accumulate(outer_shape.begin(), outer_shape.end(), int64_t{1}, std::multiplies<>());
}
int64_t NormKernel::rowElems() const {
  return std::accumulate(red_shape.begin(), red_shape.end(), int64_t{1}, std::multiplies<>());
}

namespace {

int nextPow2(int64_t v) {
  int p = 1;
  while (p < v && p < (1 << 20)) p *= 2;
  return p;
}

// Strides over the kernel's axes with the innermost row axis moved last: the axis the
// row-vector tier's lanes run along.
std::vector<int64_t> rowsLast(std::vector<int64_t> s, size_t nout) {
  std::swap(s[nout - 1], s.back());
  return s;
}

// The row a kernel holds on chip: the loads under a reduction that vary along the row's
// innermost axis (they are read again by the next pass or by the outputs; loads used only by
// the outputs are read once, at the end), with their strides over the kernel's axes (`remap`).
template <typename Remap>
std::set<Leaf> heldLoads(const std::vector<EPtr>& roots, Remap remap) {
  std::set<Leaf> held;
  lower::visitPostOrder(roots, [&](const ENode& n) {
    if (n.kind != ENode::Kind::Reduce) return;
    lower::visitPostOrder({n.args[0]}, [&](const ENode& m) {
      if (m.kind == ENode::Kind::Load && remap(m.leaf.strides).back() != 0)
        held.insert(Leaf{m.leaf.input, m.leaf.offset, remap(m.leaf.strides)});
    });
  });
  return held;
}

int heldBytes(const Leaf& l, const std::vector<TensorDesc>& inputs) {
  return dtypeBytes(inputs[static_cast<size_t>(l.input)].dtype);
}

// The narrowest and widest element of the held loads, in bytes.
std::pair<int, int> heldByteRange(const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs) {
  int min_bytes = 16, max_bytes = 1;
  for (const Leaf& l : held) {
    min_bytes = std::min(min_bytes, heldBytes(l, inputs));
    max_bytes = std::max(max_bytes, heldBytes(l, inputs));
  }
  return {min_bytes, max_bytes};
}

// The fewest rows a block or grid set of the row-vector tiers takes: whole vectors of
// `row_vec` rows, and at least a 32-byte sector of each element's rows.
int minSetRows(const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs, int row_vec) {
  return std::max(row_vec, 32 / heldByteRange(held, inputs).first);
}

// The grid tier's fill buffers: 2 fills the next set's shared memory while the block works on
// the current one, at half the shared memory per set. For tuning sweeps only: on an H100 it
// measured faster for batch_norm f32 64x256x28x28 NHWC (1710 -> 1783 GB/s with two groups) and
// group_norm f16 4x128x128x128 NHWC (1105 -> 1200), slower for group_norm 32x128x256x256 NHWC
// (2069 -> 1817 at best), instance_norm NHWC, and long rows (rms_norm bf16 64 x 2^20 2114 ->
// 1640).
int gridFillBuffers() { return std::getenv("LOOM_TUNE_GRID_PREFETCH") ? 2 : 1; }

// Shared memory of one SM: 228 KiB on sm_90, 164 KiB on sm_80, 100 KiB on sm_86/89.
int64_t smemPerSm(const DeviceInfo& dev) { return int64_t{dev.sm >= 90 ? 228 : dev.sm == 80 ? 164 : 100} * 1024; }

// Opt-in shared memory per block: 227 KiB on sm_90, 163 KiB on sm_80, 99 KiB on sm_86/89;
// 4 KiB stay for the reductions' scratch.
int64_t blockSmemLimit(const DeviceInfo& dev) {
  return int64_t{dev.sm >= 90 ? 227 : dev.sm == 80 ? 163 : 99} * 1024 - 4096;
}

// The grid tier's shape: each set of rows split over `split` blocks, `groups` groups of them
// walking the sets in turn.
struct GridShape {
  int split = 0, groups = 0;
};

// Every SM's block takes a slice of each set (split = the SM count, `groups` groups) unless
// more sets fit at once: then each set goes over the fewest blocks that hold it (`fits(split)`:
// a block's slice of a set fits, `per_sm` blocks to an SM) and as many sets run at once as
// `per_sm` blocks an SM allow, so that the fixed cost of a set (its barrier, the partials'
// merge, filling and draining the pipeline) is paid for bigger slices and fewer times, and
// more groups overlap. Measured on an H100 (GB/s, channels-last, split over 132
// against this): instance_norm bf16 16x32x128x128 (16 sets of 1 MiB: 16 groups of 16 blocks)
// 593-600 -> 1362-1394; group_norm f16 4x128x128x128 (8 groups of 49) 1120-1128 -> 1613-1618;
// batch_norm bf16 16x96x40x40 (3 groups of 88) 420-422 -> 632-664; with many sets, in turns:
// group_norm f16 64x128x128x128 (128 sets, 12 groups of 33) 1646-1650 -> 2251-2254,
// instance_norm bf16 128x32x128x128 (128 sets, 26 groups of 10) 671 -> 1387-1390; and with
// blocks already over half full, instance_norm f16 8x64x256x256 (3 groups of 88 blocks of
// 106 KiB, two an SM, not 2 of 132 of 71 KiB) 1429-1435 -> 1554-1568.
GridShape gridShape(int64_t sets, int per_sm, int groups, const DeviceInfo& dev, const std::function<bool(int)>& fits) {
  const int P = dev.sm_count;
  if (P < 2 || std::getenv("LOOM_NO_SUBGRID") || std::getenv("LOOM_TUNE_GRID_GROUPS")) return {P, groups};
  // Two blocks a set at least: a set that one block holds alone needs no grid (instance norm
  // bf16 16x128x28x56 channels-last on 108 SMs got 128 sets of one block each, a grid group
  // without ranks, and the emitter crashed).
  int least = 2;
  while (least < P && !fits(least)) ++least;
  const int g = static_cast<int>(std::min<int64_t>(sets, int64_t{per_sm} * P / least));
  const int split = std::min(P, per_sm * P / std::max(1, g));
  if (g <= groups || !fits(split)) return {P, groups};
  return {split, g};
}

// The grid tier's bookkeeping once a block is placed (`k.split` blocks share each set):
// `groups` groups of blocks walking sets of `rows` rows, each group's part of the workspace a
// barrier counter and an exit counter (at bytes 0 and 64 of its own 128), then per reduction
// and iteration parity one (count, mean, M2) slot of 8 bytes each per block and row.
void setGrid(NormKernel& k, int groups, int rows, int reductions) {
  LOOM_ASSERT(k.split >= 2, "the grid tier with {} block{} a set", k.split, k.split == 1 ? "" : "s");
  k.grid_sync = true;
  k.grid_groups = groups;
  k.cluster = 1;  // over an earlier placement's cluster
  k.row_sets = (k.rows() + rows - 1) / rows;  // the last set may be cut short
  k.workspace_bytes = int64_t{groups} * (128 + int64_t{reductions} * 2 * k.split * rows * 24);
}

// The row-vector tier's lanes (see NormKernel::row_vec), or 0 where the tier does not apply:
// every held load has stride 1 along the innermost row axis and is not contiguous along the
// row's own innermost axis. The lanes are 16 bytes of rows, fewer where the rows along that
// axis, the alignment or a cp.async piece of 4, 8 or 16 bytes say so; 1 (a row's element a
// piece) where no vector fits: an odd innermost row axis (LayerNorm2d NCHW over 7 x 7 pixels)
// or rows one element off 16 bytes.
// `why` says why not, where that is 0.
int rowVectorWidth(const std::set<Leaf>& held, size_t nout, const std::vector<TensorDesc>& inputs,
                   const std::vector<int64_t>& outer_shape, const DeviceInfo& dev, std::string* why) {
  if (nout == 0 || held.empty()) return 0;
  int max_bytes = 1;
  if (std::any_of(held.begin(), held.end(), [](const Leaf& l) { return l.strides.back() == 1; })) {
    *why = "some of the loads held on chip are contiguous along the reduction, others strided";
    return 0;
  }
  for (const Leaf& l : held) {
    if (l.strides[nout - 1] != 1) {
      *why = "neighbouring rows are not next to each other in memory";
      return 0;
    }
    max_bytes = std::max(max_bytes, heldBytes(l, inputs));
  }
  if (dev.sm < 80) {
    *why = fmt::format("copying neighbouring rows to shared memory needs sm_80 or later (here sm_{})", dev.sm);
    return 0;
  }
  if (std::getenv("LOOM_NO_ROW_VECTORS") || std::getenv("LOOM_NO_SMEM_ROWS")) {
    *why = "copying neighbouring rows to shared memory is turned off (LOOM_NO_ROW_VECTORS or LOOM_NO_SMEM_ROWS)";
    return 0;
  }
  auto fits = [&](int v) {
    if (outer_shape.back() % v != 0) return false;
    for (const Leaf& l : held) {
      const TensorDesc& d = inputs[static_cast<size_t>(l.input)];
      const int piece = v * dtypeBytes(d.dtype);
      if (piece != 4 && piece != 8 && piece != 16) return false;
      if (chooseAccess(d.dtype, l.offset, rowsLast(l.strides, nout), d.align_bytes, v) != Access::Vector) return false;
    }
    return true;
  };
  int v = std::min(8, 16 / max_bytes);
  while (v > 1 && !fits(v)) v /= 2;
  return v;
}

// The most distinct 4-byte words one bank serves when a warp's lanes (row l / T, element
// l % T) read `bytes`-wide elements at `pitch` elements per element index.
int bankWays(int64_t pitch, int T, int bytes) {
  std::map<int, std::set<int64_t>> words;
  for (int l = 0; l < 32; ++l) {
    const int64_t word = ((l % T) * pitch * bytes + (l / T) * bytes) / 4;
    words[static_cast<int>(word % 32)].insert(word);
  }
  size_t ways = 0;
  for (const auto& [bank, w] : words) ways = std::max(ways, w.size());
  return static_cast<int>(ways);
}

// Where the row-vector tier puts a block: `rows` neighbouring rows, `threads` per row, each
// holding `chunks` elements, each element's rows `pitch` elements apart in `bytes` of shared
// memory.
struct RowPlacement {
  int rows = 0, threads = 0;
  int64_t chunks = 0, pitch = 0, bytes = 0;
};

// A pitch (elements between one element's rows and the next's) for R rows of `chunks` * T
// slots, and the bytes it takes: a multiple of 16 bytes for every held load (cp.async
// destinations), padded so that a warp's lanes (32 / T rows, T neighbouring elements of each)
// meet the fewest times on one bank, within `max_total` bytes of shared memory; {0, 0} where
// even the least does not fit.
std::pair<int64_t, int64_t> rowPitch(int R, int T, int64_t chunks, const std::set<Leaf>& held,
                                     const std::vector<TensorDesc>& inputs, int64_t max_total) {
  const auto [min_bytes, max_bytes] = heldByteRange(held, inputs);
  auto bytesAt = [&](int64_t pitch) {
    int64_t b = 0;
    for (const Leaf& l : held) b += (chunks * T * pitch * heldBytes(l, inputs) + 15) / 16 * 16;
    return b;
  };
  const int64_t step = 16 / min_bytes;
  const int64_t least = (R + step - 1) / step * step;
  if (bytesAt(least) > max_total) return {0, 0};
  int64_t pitch = least;
  int best = bankWays(least, T, max_bytes);
  for (int64_t p = least + step; p < least + 32 * step && bytesAt(p) <= max_total; p += step) {
    const int ways = bankWays(p, T, max_bytes);
    if (ways < best) {
      best = ways;
      pitch = p;
    }
  }
  return {pitch, bytesAt(pitch)};
}

// Places the row-vector tier for rows of `n` elements read from the `held` loads: rows per
// block (as many as `max_bytes` of shared memory hold, up to 64, each element's
// rows at least a 32-byte sector, fewer while the blocks would not fill the SMs twice), threads
// per row, and a pitch padded against bank conflicts. Nothing where even the fewest rows do not
// fit.
std::optional<RowPlacement> placeRowVectors(int64_t n, int64_t rows, const std::set<Leaf>& held,
                                            const std::vector<TensorDesc>& inputs, int row_vec, const DeviceInfo& dev,
                                            int64_t max_bytes) {
  const int min_rows = minSetRows(held, inputs, row_vec);
  int R = 64;
  if (const char* r = std::getenv("LOOM_TUNE_ROWS_PER_BLOCK")) R = std::max(min_rows, nextPow2(std::atoi(r)));
  while (R > min_rows && (rows + R - 1) / R < 2 * int64_t{dev.sm_count}) R /= 2;
  for (; R >= min_rows; R /= 2) {
    // Threads per row: a block of 256 (tuning sweeps: LOOM_TUNE_THREADS_PER_ROW), no more
    // than the row has elements.
    int T = std::max(1, 256 / R);
    if (const char* t = std::getenv("LOOM_TUNE_THREADS_PER_ROW")) T = std::min(32, nextPow2(std::atoi(t)));
    while (T > 1 && (T > n || R * T > 1024)) T /= 2;
    const int64_t chunks = (n + T - 1) / T;
    auto [pitch, bytes] = rowPitch(R, T, chunks, held, inputs, max_bytes);
    if (pitch == 0) continue;
    return RowPlacement{R, T, chunks, pitch, bytes};
  }
  return std::nullopt;
}

// Rows too long for that: the row-vector tier split over a cooperative grid (one block of
// each group per SM). Sets of R neighbouring rows (as many as fit, up to 64, dividing the row
// axis; or, not `whole_sets`, the last set cut short), each set's elements dealt to the grid's
// blocks in runs of T (blocks of 512 threads), and up to 2 groups of blocks taking turns by set
// (each group walking two sets or more). Channels-last instance norm and batch norm of large
// images.
std::optional<RowPlacement> placeRowVectorsGrid(int64_t n, int64_t rows, int64_t row_axis, const std::set<Leaf>& held,
                                                const std::vector<TensorDesc>& inputs, int row_vec,
                                                const DeviceInfo& dev, bool whole_sets, int* groups, int* split) {
  // A grid of one SM has no blocks to split a set over.
  if (dev.sm < 80 || dev.sm_count < 2 || std::getenv("LOOM_NO_GRID")) return std::nullopt;
  const int min_rows = minSetRows(held, inputs, row_vec);
  const int64_t P = dev.sm_count;
  // For tuning sweeps only: LOOM_TUNE_ROWS_PER_BLOCK (R), LOOM_TUNE_GRID_GROUPS (G),
  // LOOM_TUNE_THREADS_PER_ROW (T, rows of R * T <= 1024 threads).
  const char* tune_r = std::getenv("LOOM_TUNE_ROWS_PER_BLOCK");
  const char* tune_g = std::getenv("LOOM_TUNE_GRID_GROUPS");
  const char* tune_t = std::getenv("LOOM_TUNE_THREADS_PER_ROW");
  for (int R = 64; R >= min_rows; R /= 2) {
    if ((whole_sets && row_axis % R != 0) || (tune_r && R != std::atoi(tune_r))) continue;
    const int64_t sets = (rows + R - 1) / R;
    int T = 512 / R;
    if (tune_t) T = std::min(1024 / R, nextPow2(std::max(1, std::atoi(tune_t))));
    // A block's chunks of a set split over S blocks.
    auto chunksAt = [&](int64_t S) { return (n + int64_t{T} * S - 1) / (int64_t{T} * S); };
    // Two groups at most: three (40 registers a thread) spilled and measured slower on an H100
    // (instance_norm f16 8x64x256x256 channels-last: 1398 GB/s with 2, 1055 with 3, 1070 with 1).
    // Each block beside the others: 1 KiB the driver reserves and up to 4 KiB of scratch.
    auto budget = [&](int per_sm) { return (smemPerSm(dev) / per_sm - 5 * 1024) / gridFillBuffers(); };
    for (int G = tune_g ? 3 : 2; G >= 1; --G) {
      if (G > 1 && sets < 2 * G) continue;
      if ((tune_g && G != std::atoi(tune_g)) || G * R * T > 2048) continue;
      if (rowPitch(R, T, chunksAt(P), held, inputs, budget(G)).first == 0) continue;
      // More sets at once over fewer blocks each, two blocks an SM, where that fits (see gridShape).
      const GridShape gs = gridShape(sets, 2, G, dev, [&](int S) {
        return rowPitch(R, T, chunksAt(S), held, inputs, budget(2)).first != 0;
      });
      *groups = gs.groups;
      *split = gs.split;
      const int64_t chunks = chunksAt(gs.split);
      auto [pitch, bytes] = rowPitch(R, T, chunks, held, inputs, budget(gs.split == P ? G : 2));
      return RowPlacement{R, T, chunks, pitch, bytes};
    }
  }
  return std::nullopt;
}

// The row-vector tier as placed: the kernel's block, its shared memory, and each access over
// vectors of rows.
void applyRowVectors(NormKernel& k, const RowPlacement& p, int row_vec, const std::vector<TensorDesc>& inputs) {
  const size_t nout = k.outer_shape.size();
  k.row_vec = row_vec;
  k.row_pitch = p.pitch;
  k.rows_per_block = p.rows;
  k.threads_per_row = p.threads;
  k.block = p.rows * p.threads;
  k.chunks = static_cast<int>(p.chunks);
  // Few enough elements per thread: its loads from shared memory are kept in registers for
  // the second pass (a load and a conversion per element instead of two).
  k.registers = p.chunks * static_cast<int64_t>(k.smem_leaves.size()) <= 32;
  k.async_fill = true;
  k.smem_bytes = static_cast<int>(p.bytes);
  for (auto& [l, a] : k.load_access) {
    const TensorDesc& d = inputs[static_cast<size_t>(l.input)];
    k.row_load_access[l] = chooseAccess(d.dtype, l.offset, rowsLast(l.strides, nout), d.align_bytes, row_vec);
  }
  for (auto& st : k.stores) {
    const TensorDesc& d = k.outputs[static_cast<size_t>(st.output)];
    st.row_access = chooseAccess(st.dtype, st.offset, rowsLast(st.strides, nout), d.align_bytes, row_vec);
    if (st.row_access == Access::Splat) st.row_access = Access::Gather;
  }
}

// How the row-vector tier fills shared memory (for the schedule dump): pieces of 4 bytes or
// more with cp.async, smaller ones by loads and stores.
std::string rowFillText(const NormKernel& k, const std::vector<TensorDesc>& inputs) {
  if (k.row_vec > 1) return fmt::format("with cp.async in vectors of {} rows", k.row_vec);
  int small = 0;
  for (const Leaf& l : k.smem_leaves) small += dtypeBytes(inputs[static_cast<size_t>(l.input)].dtype) < 4;
  const int copied = static_cast<int>(k.smem_leaves.size()) - small;
  return fmt::format("a row's element at a time, {} (no vector of rows fits: {}{})",
                     small == 0    ? "with cp.async"
                     : copied == 0 ? "by loads and stores"
                                   : "by loads and stores below 4 bytes, with cp.async from 4",
                     k.outer_shape.back() % 2 != 0
                         ? fmt::format("the innermost row axis has {} rows, an odd number", k.outer_shape.back())
                         : std::string("the rows' alignment or size allows none"),
                     small > 0 ? "; cp.async copies 4 bytes or more" : "");
}

}  // namespace

int64_t NormKernel::rowVectorUnits() const {
  return (split > 1 ? int64_t{chunks} * threads_per_row : rowElems()) * (rows_per_block / row_vec);
}

std::optional<NormKernel> scheduleNormalization(const ir::Fusion& f, const Bindings& sizes,
                                                const std::vector<TensorDesc>& inputs,
                                                const DeviceInfo& dev, std::string* why_not) {
  auto reject = [&](std::string why) -> std::optional<NormKernel> {
    if (why_not) *why_not = std::move(why);
    return std::nullopt;
  };
  analysis::DomainAnalysis da(f);
  if (!da.conflicts().empty()) return reject(da.conflicts()[0]);
  // Every reduction must reduce the same atoms: they then share the rows.
  std::vector<int> red;
  const ir::Op* first = nullptr;
  for (const ir::Op* op : f.ops()) {
    if (!ir::isReduction(op->kind())) continue;
    auto r = da.reducedAtoms(op);
    if (!first) {
      first = op;
      red = r;
    } else if (r != red) {
      return reject(fmt::format("reduction `{}` ({}) over {} and reduction `{}` ({}) over {} "
                                "cannot share one kernel: their iterated atoms differ",
                                first->name(), first->output()->name(), da.atomSetStr(red),
                                op->name(), op->output()->name(), da.atomSetStr(r)));
    }
  }
  if (!first) return reject("it has no reduction");
  lower::AtomExprBuilder eb(f, sizes, inputs, da);
  std::vector<EPtr> roots;
  try {
    for (const auto& o : f.outputs()) roots.push_back(eb.exprOf(o.value));
  } catch (const lower::NotPointwise& np) {
    return reject(np.reason);
  }
  const int natoms = static_cast<int>(da.atoms().size());
  std::vector<int64_t> ext;
  for (int a = 0; a < natoms; ++a) ext.push_back(eb.atomExtent(a));
  std::set<int> red_set(red.begin(), red.end());

  // Atom order: the memory order of the largest input (the one the kernel streams).
  int dominant = -1;
  int64_t best = -1;
  for (size_t i = 0; i < f.inputs().size(); ++i) {
    int64_t n = 1;
    for (auto s : inputs[i].shape) n *= s;
    if (n > best) {
      best = n;
      dominant = static_cast<int>(i);
    }
  }
  std::vector<int> order = da.memoryOrder(f.inputs()[static_cast<size_t>(dominant)],
                                          inputs[static_cast<size_t>(dominant)].strides, sizes);
  for (int a = natoms - 1; a >= 0; --a)  // atoms the dominant input lacks go outermost
    if (std::find(order.begin(), order.end(), a) == order.end()) order.insert(order.begin(), a);
  std::vector<int> outer_order, red_order;
  for (int a : order) (red_set.count(a) ? red_order : outer_order).push_back(a);

  NormKernel k;
  k.num_inputs = static_cast<int>(f.inputs().size());
  k.red_atoms = da.atomSetStr(red_order);
  // Outputs: allocated with their axes in the kernel's atom order (NHWC in, NHWC out), or the
  // aliased input. Their strides over atoms follow from the axis strides.
  std::vector<std::vector<int64_t>> store_atom_strides;
  for (const auto& o : f.outputs()) {
    int alias = -1;
    for (size_t i = 0; i < f.inputs().size(); ++i)
      if (f.inputs()[i] == o.alias) alias = static_cast<int>(i);
    k.output_alias.push_back(alias);
    std::vector<int64_t> shape;
    for (const auto& a : o.value->axes()) shape.push_back(a.broadcast ? 1 : a.extent.evaluate(sizes));
    std::vector<int> axis_order(shape.size());
    std::iota(axis_order.begin(), axis_order.end(), 0);
    auto pos = [&](int axis) {
      const auto& as = da.axisAtoms(o.value, axis);
      if (as.empty()) return -1;
      return static_cast<int>(std::find(order.begin(), order.end(), as[0]) - order.begin());
    };
    std::stable_sort(axis_order.begin(), axis_order.end(), [&](int a, int b) { return pos(a) < pos(b); });
    TensorDesc d{o.value->dtype(), shape, stridesForOrder(shape, axis_order), 16};
    if (alias >= 0) d = inputs[static_cast<size_t>(alias)];
    k.outputs.push_back(d);
    store_atom_strides.push_back(da.atomStrides(o.value, d.strides, sizes));
  }

  // Kernel axes: iterated atoms then reduced atoms, neighbours collapsed where every access
  // walks them as one run.
  std::vector<std::vector<int64_t>> all;
  lower::visitPostOrder(roots, [&](const ENode& n) {
    if (n.kind == ENode::Kind::Load) all.push_back(n.leaf.strides);
  });
  for (const auto& s : store_atom_strides) all.push_back(s);
  auto collapse = [&](const std::vector<int>& atoms) {
    std::vector<std::vector<int>> groups;
    for (int a : atoms) {
      if (ext[static_cast<size_t>(a)] == 1) continue;
      if (!groups.empty()) {
        int o = groups.back().back();
        bool merge = std::all_of(all.begin(), all.end(), [&](const auto& s) {
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
  };
  // An iterated atom that no load and no store moves along (the whole axis of a sliced input,
  // which only the input has) would repeat every row for nothing: layer norm of a [N, D] slice
  // of a [N, 3*D] matrix ran N * 3D rows. Not iterated.
  outer_order.erase(std::remove_if(outer_order.begin(), outer_order.end(), [&](int a) {
    return std::all_of(all.begin(), all.end(), [&](const auto& s) { return s[static_cast<size_t>(a)] == 0; });
  }), outer_order.end());
  k.outer_atoms = da.atomSetStr(outer_order);
  auto outer_groups = collapse(outer_order), red_groups = collapse(red_order);
  // Reducing only size-1 dims: a row of one element (atom -1 stands for "no atom").
  if (red_groups.empty()) red_groups.push_back({-1});
  auto extentOf = [&](const std::vector<int>& g) {
    int64_t e = 1;
    for (int a : g) e *= a < 0 ? 1 : ext[static_cast<size_t>(a)];
    return e;
  };
  for (const auto& g : outer_groups) k.outer_shape.push_back(extentOf(g));
  for (const auto& g : red_groups) k.red_shape.push_back(extentOf(g));
  // Parts of a fusion that share no value (say one output from one input, another from another)
  // would iterate the product of their atoms, each part repeated across the other's: refused,
  // so that the segmenter gives each part its own kernel. (In double: no overflow.)
  double iterated = 1, largest = 1;
  for (int64_t e : k.outer_shape) iterated *= static_cast<double>(e);
  for (int64_t e : k.red_shape) iterated *= static_cast<double>(e);
  for (const ir::Value* v : f.values()) {
    double n = 1;
    for (const auto& a : v->axes()) n *= a.broadcast ? 1.0 : static_cast<double>(a.extent.evaluate(sizes));
    largest = std::max(largest, n);
  }
  if (iterated > largest)
    return reject(fmt::format("its parts share no iteration space: one kernel would iterate {:.0f} elements "
                              "over {} and {}, more than its largest value holds ({:.0f})",
                              iterated, k.outer_atoms.empty() ? "{}" : k.outer_atoms, k.red_atoms, largest));
  std::vector<std::vector<int>> groups = outer_groups;
  groups.insert(groups.end(), red_groups.begin(), red_groups.end());
  auto remap = [&](const std::vector<int64_t>& atom_strides) {
    std::vector<int64_t> s;
    for (const auto& g : groups) s.push_back(g.back() < 0 ? 0 : atom_strides[static_cast<size_t>(g.back())]);
    return s;
  };

  const size_t nout = k.outer_shape.size();
  const std::set<Leaf> held_leaves = heldLoads(roots, remap);
  std::string no_tier;  // why the row-vector tier does not apply
  int row_vec = rowVectorWidth(held_leaves, nout, inputs, k.outer_shape, dev, &no_tier);
  const int row_vec_fits = row_vec;
  std::optional<RowPlacement> row_place;
  int row_groups = 0, row_split = 0;  // the row-vector tier split over the grid: its groups of blocks
  // 40 KiB with the scratch, under the 48 KiB of no opt-in: several blocks an SM.
  if (row_vec > 0) row_place = placeRowVectors(k.rowElems(), k.rows(), held_leaves, inputs, row_vec, dev, 40 * 1024);
  auto blocksOf = [&](const RowPlacement& p) { return (k.rows() + p.rows - 1) / p.rows; };
  std::optional<RowPlacement> too_few;  // refused: too few blocks for the SMs
  // A row's element a piece (no vector of rows fits) where the blocks would leave most SMs idle:
  // a row a block instead, and no tier below (each takes more rows, or the whole GPU).
  // Measured on an H100 (GB/s, NCHW over 7 x 7 pixels, pieces against a row a block):
  // LayerNorm2d bf16 x 768 channels, 25 blocks 71 against 97, 49 blocks 156 against 129, 196
  // blocks 566 against 163; f32 13 blocks 60 against 86, 49 blocks 216 both.
  const bool few_pieces = row_place && row_vec == 1 && blocksOf(*row_place) * 4 < dev.sm_count;
  if (few_pieces) too_few.swap(row_place);
  const bool more_tiers = row_vec > 0 && !few_pieces;
  if (more_tiers && !row_place)
    row_place = placeRowVectorsGrid(k.rowElems(), k.rows(), k.outer_shape.back(), held_leaves, inputs, row_vec, dev,
                                    true, &row_groups, &row_split);
  // Rows the grid tier cannot take (their count is no multiple of a set's): blocks of up to
  // the opt-in limit, one or two an SM, rather than a row a block reading one element of
  // each 32-byte sector; where they are enough to give every SM one.
  if (more_tiers && !row_place) {
    row_place = placeRowVectors(k.rowElems(), k.rows(), held_leaves, inputs, row_vec, dev, blockSmemLimit(dev));
    if (row_place && blocksOf(*row_place) < dev.sm_count) too_few.swap(row_place);
  }
  // Still nothing (rows too long for a block, or too few blocks of them): sets of the grid
  // tier that do not divide the row axis, the last one cut short (its missing rows fill and
  // store nothing), where the rows hold 2048 elements an SM or more. Measured on an H100 (GB/s,
  // against a row a block): channels-last instance_norm f16 40x33x96x96 995 against 174,
  // 8x33x96x96 632 against 155, batch_norm f32 64x255x28x28 1202 against 246, bf16
  // 64x100x28x28 810 against 129, softmax bf16 with D outer 1000 x 4096 788 against 162,
  // 33000 x 16384 958 against 170; small ones level or slower: instance_norm f16 3x40x48x48
  // (276 480 elements) 85 both, batch_norm bf16 4x100x20x20 (160 000) 50 against 65.
  const bool whole_sets_only = std::getenv("LOOM_NO_PARTIAL_SETS") != nullptr;
  const bool partial_sets = more_tiers && !row_place && !whole_sets_only &&
                            k.rows() * k.rowElems() >= int64_t{2048} * dev.sm_count;
  if (partial_sets) {
    row_place = placeRowVectorsGrid(k.rowElems(), k.rows(), k.outer_shape.back(), held_leaves, inputs, row_vec, dev,
                                    false, &row_groups, &row_split);
    if (row_place) too_few.reset();
  }
  if (!row_place) row_vec = 0;
  // Rows strided along their reduction that no row-vector tier takes: each element is a load of
  // its own, and the schedule dump says why (a performance cliff the user may avoid).
  std::string strided_note;
  const auto strided = std::find_if(held_leaves.begin(), held_leaves.end(),
                                    [](const Leaf& l) { return l.strides.back() != 1; });
  if (!row_place && nout > 0 && strided != held_leaves.end()) {
    const int sector_rows = minSetRows(held_leaves, inputs, row_vec_fits);
    const std::string no_division =
        fmt::format("the grid's sets of {} rows or more do not divide {}", sector_rows, k.outer_shape.back());
    const std::string grid_text =
        few_pieces ? std::string("so few rows' pieces are not split over the grid")
        : k.outer_shape.back() % sector_rows == 0 || partial_sets ? std::string("the grid tier does not place them")
        : whole_sets_only ? no_division + " (and LOOM_NO_PARTIAL_SETS is set)"
                          : no_division + ", and so few elements take no sets cut short";
    strided_note = fmt::format(
        "; the rows are strided along their reduction ({} elements apart), so each element is a load of its "
        "own: {}", std::abs(strided->strides.back()),
        row_vec_fits == 0 ? no_tier
        : too_few
            ? fmt::format("blocks of {} rows would be {}, fewer than {} {} SMs, and {}", too_few->rows,
                          blocksOf(*too_few), few_pieces ? "a quarter of the" : "the", dev.sm_count, grid_text)
            : fmt::format("the fewest neighbouring rows that fill a 32-byte sector do not fit a block's shared "
                          "memory, and {}", grid_text));
  }

  // Vector width along the innermost reduced axis: 16 bytes of the rows the reductions read
  // (f16 rows: 8 lanes). Other loads (an f32 per-channel weight beside them) take two vectors
  // or one per lane; loads constant along the axis are splats at any width.
  int max_bytes = 1, row_bytes = 0;
  lower::visitPostOrder(roots, [&](const ENode& n) {
    if (n.kind == ENode::Kind::Load && remap(n.leaf.strides).back() != 0)
      max_bytes = std::max(max_bytes, dtypeBytes(n.dtype));
  });
  for (const Leaf& l : held_leaves) row_bytes = std::max(row_bytes, heldBytes(l, inputs));
  if (row_bytes > 0) max_bytes = row_bytes;
  else for (const auto& d : k.outputs) max_bytes = std::max(max_bytes, dtypeBytes(d.dtype));
  int vec = row_place ? 1 : std::min(8, 16 / max_bytes);
  while (vec > 1 && k.red_shape.back() % vec != 0) vec /= 2;
  k.vec = vec;
  auto accessFor = [&](DType t, int64_t offset, const std::vector<int64_t>& s, int align) {
    return chooseAccess(t, offset, s, align, vec);
  };
  int64_t max_offset = 0;
  auto track = [&](int64_t off, const std::vector<int64_t>& s) {
    int64_t m = off;
    std::vector<int64_t> shape = k.outer_shape;
    shape.insert(shape.end(), k.red_shape.begin(), k.red_shape.end());
    for (size_t i = 0; i < s.size(); ++i) m += (shape[i] - 1) * std::abs(s[i]);
    max_offset = std::max(max_offset, m + vec);
  };
  std::vector<EPtr> remapped;
  for (const auto& r : roots)
    remapped.push_back(lower::mapLeaves(r, [&](const Leaf& l) {
      Leaf n{l.input, l.offset, remap(l.strides)};
      const TensorDesc& d = inputs[static_cast<size_t>(l.input)];
      Access a = accessFor(d.dtype, n.offset, n.strides, d.align_bytes);
      k.load_access[n] = a;
      track(n.offset, n.strides);
      return n;
    }));
  remapped = lower::hashCons(remapped);
  int reductions = 0;
  lower::visitPostOrder(remapped, [&](const ENode& n) { reductions += n.kind == ENode::Kind::Reduce; });
  // The row held on chip (the remapped leaves are the held loads' own: mapLeaves gives each its
  // strides over the kernel's axes, and a held load is never a splat).
  const int live_leaves = static_cast<int>(held_leaves.size());
  k.smem_leaves.assign(held_leaves.begin(), held_leaves.end());
  for (size_t i = 0; i < f.outputs().size(); ++i) {
    NormKernel::Store s;
    s.output = static_cast<int>(i);
    s.strides = remap(store_atom_strides[i]);
    s.dtype = f.outputs()[i].value->dtype();
    s.value = remapped[i];
    s.row_only = std::all_of(s.strides.begin() + static_cast<long>(nout), s.strides.end(), [](int64_t x) { return x == 0; });
    s.access = accessFor(s.dtype, 0, s.strides, k.outputs[i].align_bytes);
    if (s.access == Access::Splat) s.access = Access::Gather;
    track(0, s.strides);
    k.stores.push_back(s);
  }
  k.index64 = max_offset >= (int64_t{1} << 31);

  // Rows side by side in memory but strided along their reduction: the row-vector tier.
  int held = 0, budget = 0;
  const bool row_tier = row_place.has_value();
  if (row_tier) {
    applyRowVectors(k, *row_place, row_vec, inputs);
    if (row_groups > 0) {
      k.split = row_split;
      setGrid(k, row_groups, k.rows_per_block, reductions);
      k.fill_buffers = gridFillBuffers();
      k.smem_bytes *= k.fill_buffers;
    }
  }
  else {
    // Threads per row: enough that each holds at most 8 chunks, a power of two up to 1024; more
    // while the whole grid would not fill the GPU twice over (few, long rows).
    const int64_t row_chunks = k.rowElems() / vec;
    const int kMaxChunks = 8;
    k.threads_per_row = std::min(1024, nextPow2((row_chunks + kMaxChunks - 1) / kMaxChunks));
    // Short rows read as contiguous vectors: a chunk per thread, for occupancy (LayerNorm2d
    // channels-last, 128 f16 channels: 2550 GB/s with 16 threads per row, 2265 with 2, on an
    // H100). Rows strided along their reduction (NCHW LayerNorm2d) keep few threads, whose
    // neighbours then read neighbouring rows: 441 GB/s with 16 threads per row, 2316 with 2.
    const bool contiguous_rows = !k.smem_leaves.empty() && std::all_of(k.smem_leaves.begin(), k.smem_leaves.end(),
        [&](const Leaf& l) { return k.load_access[l] == Access::Vector; });
    if (contiguous_rows && row_chunks <= 16) k.threads_per_row = nextPow2(row_chunks);
    while (k.threads_per_row < 1024 && k.threads_per_row < row_chunks &&
           k.rows() * k.threads_per_row < int64_t{dev.sm_count} * 2048)
      k.threads_per_row *= 2;
    // For tuning sweeps only (part of the cache key, like every override here).
    const char* tune_threads = std::getenv("LOOM_TUNE_THREADS_PER_ROW");
    if (tune_threads) k.threads_per_row = std::max(1, std::atoi(tune_threads));
    k.chunks = static_cast<int>((row_chunks + k.threads_per_row - 1) / k.threads_per_row);
    // Registers per thread for the persistent row: chunks * vec values per streamed input.
    held = k.chunks * vec * std::max(1, live_leaves);
    k.block = std::max(k.threads_per_row, 128);
    k.rows_per_block = k.block / k.threads_per_row;
    // 64K registers per SM: a block of 1024 threads gets 64 each, so the row it may hold
    // shrinks as blocks grow (what is left covers addresses, statistics and the epilogue).
    budget = std::min(128, 65536 / k.block / 2 - 8);
    k.registers = held <= budget && k.chunks <= 16;
    // Next tiers: shared memory, one row per block (or per cluster), within the opt-in limit
    // (with room for the reductions' scratch).
    int64_t row_smem = 0;
    bool async_ok = dev.sm >= 80 && !k.smem_leaves.empty();
    for (const auto& l : k.smem_leaves) {
      const int bytes = dtypeBytes(inputs[static_cast<size_t>(l.input)].dtype);
      row_smem += (k.rowElems() * bytes + 15) / 16 * 16;
      const int piece = vec * bytes;
      if (k.load_access[l] != Access::Vector || (piece != 4 && piece != 8 && piece != 16)) async_ok = false;
    }
    const int64_t smem_limit = blockSmemLimit(dev);
    const bool no_smem = std::getenv("LOOM_NO_SMEM_ROWS") != nullptr;
    // Neighbouring rows side by side in memory (group norm's groups in channels-last: each
    // pixel holds C/G channels of one group, then the next group's): a block takes `rows`
    // of them and fills shared memory with the pieces of all of them at each pixel together,
    // so that its loads cover whole 128-byte lines rather than a group's 8 or 32 bytes.
    const int64_t inner_run = k.red_shape.back();  // elements of a row at one outer position
    const int64_t q = inner_run / vec;             // chunks of them
    int max_rows_together = 1, max_rows_adjacent = 1;
    if (nout > 0 && (q & (q - 1)) == 0 && q <= 32) {
      bool adjacent = true;
      int bytes = 1;
      for (const auto& l : k.smem_leaves) {
        adjacent = adjacent && l.strides[nout - 1] == inner_run && l.strides.back() == 1;
        bytes = std::max(bytes, dtypeBytes(inputs[static_cast<size_t>(l.input)].dtype));
      }
      while (adjacent && max_rows_together < 32 && inner_run * bytes * max_rows_together < 128 &&
             k.outer_shape.back() % (2 * max_rows_together) == 0)
        max_rows_together *= 2;
      max_rows_adjacent = max_rows_together;
      while (adjacent && max_rows_adjacent < 32 && k.outer_shape.back() % (2 * max_rows_adjacent) == 0)
        max_rows_adjacent *= 2;
    }
    // For tuning sweeps only: LOOM_TUNE_ROWS_TOGETHER=R caps the neighbouring rows a block (or
    // a grid set) takes together.
    if (const char* rt = std::getenv("LOOM_TUNE_ROWS_TOGETHER")) {
      const int cap = std::max(1, std::atoi(rt));
      while (max_rows_together > cap) max_rows_together /= 2;
      while (max_rows_adjacent > cap) max_rows_adjacent /= 2;
    }
    // The block's shared memory for `rows` rows of `t` threads, each row split over `split`
    // blocks: placed (the cp.async tiers) if it fits.
    auto chunksAt = [&](int t, int split) {
      return static_cast<int>((row_chunks + int64_t{t} * split - 1) / (int64_t{t} * split));
    };
    auto bytesAt = [&](int rows, int t, int split, int buffers) {
      int64_t bytes = 0;
      for (const auto& l : k.smem_leaves) {
        const int b = dtypeBytes(inputs[static_cast<size_t>(l.input)].dtype);
        bytes += (int64_t{chunksAt(t, split)} * t * rows * vec * b + 15) / 16 * 16;
      }
      return bytes * buffers;
    };
    // `per_sm` blocks sharing an SM: each also takes 1 KiB the driver reserves and up to 4 KiB
    // of the reductions' scratch.
    auto fits = [&](int64_t bytes, int per_sm) {
      return bytes <= smem_limit && (per_sm == 1 || per_sm * (bytes + 5 * 1024) <= smemPerSm(dev));
    };
    auto place = [&](int rows, int t, int split, int per_sm = 1, int buffers = 1) {
      const int chunks = chunksAt(t, split);
      const int64_t bytes = bytesAt(rows, t, split, buffers);
      if (!fits(bytes, per_sm)) return false;
      k.fill_buffers = buffers;
      k.async_fill = true;
      k.split = split;
      k.threads_per_row = t;
      k.rows_per_block = rows;
      k.block = t * rows;
      k.chunks = chunks;
      k.smem_bytes = static_cast<int>(bytes);
      return true;
    };
    // Short rows that fit registers go to shared memory instead (thread fill): each thread
    // copies four chunks of its row with cp.async and reads back only those, so no barrier
    // is needed, and a thread's 64 bytes in flight (f16/bf16) cost no registers: 2048 threads
    // of 32 registers each per SM rather than 1024 of 64. Measured on an H100 (GB/s, L2
    // flushed, three runs each, registers -> thread fill): layer_norm bf16 32768 x 256
    // 1820-1907 -> 2089-2101, rms_norm 1945-2052 -> 2180-2194; 16384 x 512 layer_norm
    // 1806-1840 -> 2097-2123; layer_norm f16 8192 x 1024 1846-1917 -> 2123-2132, 4096 x 1024
    // 1417-1511 -> 1561-1580; f32 32768 x 256 2302-2370 -> 2380-2447. Not where the passes
    // would recompute math of the Unary family on every element (softmax's exp: 1924-1975
    // -> 1777-1853 at 32768 x 256), nor below a quarter of the GPU's thread slots (rms_norm
    // bf16 4096 x 512: 1018-1102 -> 936-1040).
    if (k.registers && async_ok && !no_smem && !k.smem_leaves.empty() && !std::getenv("LOOM_NO_THREAD_FILL")) {
      // Four chunks a thread, and a power of two of threads a row: the rows' threads then sit
      // whole within warps, as the shuffles across them need (384 or 768 f16 values: no).
      int t = row_chunks % 4 == 0 && ((row_chunks / 4) & (row_chunks / 4 - 1)) == 0 ? static_cast<int>(row_chunks / 4) : 0;
      bool cheap_passes = true;
      lower::visitPostOrder(remapped, [&](const ENode& n) {
        if (n.kind != ENode::Kind::Reduce) return;
        lower::visitPostOrder({n.args[0]}, [&](const ENode& m) {
          if (m.kind == ENode::Kind::Op && ir::opFamily(m.op) == ir::OpFamily::Unary) cheap_passes = false;
        });
      });
      if (!cheap_passes || k.rows() * t < int64_t{dev.sm_count} * 512) t = 0;
      // For tuning sweeps only: LOOM_TUNE_THREAD_FILL=T threads per row, LOOM_TUNE_FILL_BLOCK.
      if (const char* tf = std::getenv("LOOM_TUNE_THREAD_FILL")) t = nextPow2(std::max(1, std::atoi(tf)));
      // (Sweeps may take fewer than 8 threads a row: rows of 4 to 7 chunks of 4.)
      if ((t >= 8 || (std::getenv("LOOM_TUNE_THREAD_FILL") && t >= 2)) && t <= 32) {
        int blk = t >= 16 ? 256 : 128;
        if (const char* fb = std::getenv("LOOM_TUNE_FILL_BLOCK")) blk = std::max(t, std::atoi(fb));
        if (place(blk / t, t, 1)) {
          k.thread_fill = true;
          k.registers = false;
        }
      }
    }
    auto onChip = [&](int rows_together) {
      // Split the row over a cluster (at most 8 blocks) only when one block cannot hold it:
      // on an H100, rms_norm 32768 x 65536 bf16 ran at 3011 GB/s with one 1024-thread block of
      // 128 KiB per row and at 2686 GB/s split over two blocks of 64 KiB.
      int64_t block_limit = smem_limit;
      // For tuning sweeps only, like LOOM_TUNE_THREADS_PER_ROW.
      if (const char* kb = std::getenv("LOOM_TUNE_BLOCK_SMEM_KB")) block_limit = int64_t{std::max(1, std::atoi(kb))} * 1024;
      // Once split, blocks of 64 KiB: three per SM keep the SM busy while one waits at a
      // cluster barrier (group norm 32x128x256x256 f16: 2694 GB/s with 8 blocks of 64 KiB,
      // 2239 GB/s with 4 of 128 KiB).
      int cs = 1;
      if (dev.sm >= 90 && !std::getenv("LOOM_NO_CLUSTER")) {
        while (cs < 8 && row_smem * rows_together > block_limit * cs) cs *= 2;
        while (cs > 1 && cs < 8 && row_smem * rows_together > int64_t{64 * 1024} * cs) cs *= 2;
        // For tuning sweeps only: LOOM_TUNE_CLUSTER=C blocks (1 to 8) where a row is split.
        if (const char* tc = std::getenv("LOOM_TUNE_CLUSTER"); tc && cs > 1) cs = std::clamp(nextPow2(std::atoi(tc)), 1, 8);
      }
      const int64_t block_chunks = (row_chunks + cs - 1) / cs;
      int t = std::max(32, std::min(1024 / rows_together, nextPow2((block_chunks + kMaxChunks - 1) / kMaxChunks)));
      if (tune_threads) t = std::max(32, std::atoi(tune_threads) / 32 * 32);
      if (rows_together > 1 && t % q != 0) return false;
      if (!place(rows_together, t, cs)) return false;
      k.cluster = cs;
      return true;
    };
    // The grid tier: every SM's block takes a slice of each set of `rows` neighbouring rows.
    auto onGrid = [&](int rows, int groups) {
      const int P = dev.sm_count;
      if (P < 2) return false;  // one SM: no blocks to split a set over
      int t = 1024 / groups / rows;
      if (groups == 3 && t < 32 && 2048 / groups / rows >= 32) t = 32;  // 16-row sets: 512 threads
      if (t < 32 || t % 32 != 0 || (rows > 1 && t % q != 0)) return false;
      if (groups > 1 && k.rows() / rows < 2 * groups) return false;  // each group walks two sets or more
      // Sets of neighbouring rows: more at once over fewer blocks each where that fits (see
      // gridShape), `groups` blocks an SM. (Sets of one long row keep the rule above.)
      GridShape gs{P, groups};
      if (rows > 1)
        gs = gridShape(k.rows() / rows, groups, groups, dev,
                       [&](int S) { return fits(bytesAt(rows, t, S, gridFillBuffers()), groups); });
      if (!place(rows, t, gs.split, groups, gridFillBuffers())) return false;
      setGrid(k, gs.groups, rows, reductions);
      return true;
    };
    if (!k.registers && async_ok && !no_smem && !k.thread_fill) {
      int placed = 0;
      for (int r = max_rows_together; r >= 1 && !placed; r /= 2)
        if (onChip(r)) placed = r;
      // Rows a cluster cannot hold, or neighbouring rows a cluster cannot take enough of to
      // read whole lines: the grid tier, with as many neighbouring rows per set as fit.
      // Two groups where both fit an SM with whole lines: the memory keeps streaming while a
      // group waits at its barrier (group norm 32x128x256x256 f16 channels-last).
      if ((placed < max_rows_together) && dev.sm >= 80 && !std::getenv("LOOM_NO_GRID")) {
        bool done = false;
        // For tuning sweeps only: LOOM_TUNE_GRID_GROUPS=G (G blocks per SM; sets of any rows).
        if (const char* g = std::getenv("LOOM_TUNE_GRID_GROUPS"))
          for (int r = max_rows_adjacent; r >= 1 && !done; r /= 2) done = onGrid(r, std::max(1, std::atoi(g)));
        // Sets of one long row: more groups while each still walks four sets or more (H100,
        // GB/s with 1, 2, 4, 8 groups: rms_norm 64 x 2^20 bf16 924, 1174, 1634, 2093;
        // layer_norm 16 x (2^20 + 8) f32 1041, 1411, 1621, 1415). Group norm channels-last
        // 32x128x256x256 f16: 1819, 1925, 1729 with 1, 2, 4 groups (sets of 16, 16, 8 rows);
        // with 3 groups of 16-row sets (512-thread blocks of 64 KiB, three per SM) 2070, and
        // f32 8x256x128x128 1541-1552 with 2, 1664 with 3.
        if (!std::getenv("LOOM_NO_GRID_GROUPS"))
          for (int r = max_rows_adjacent; r >= max_rows_together && !done; r /= 2) {
            int groups = 2;
            while (r == 1 && groups < 8 && k.rows() >= 8 * groups) groups *= 2;
            if (r > 1) done = onGrid(r, 3);
            for (; groups >= 2 && !done; groups /= 2) done = onGrid(r, groups);
          }
        for (int r = max_rows_adjacent; r >= 1 && !done; r /= 2) done = onGrid(r, 1);
      }
    }
    if (!k.async_fill) {
      // The first pass keeps what it reads in shared memory (rows of gathered elements).
      if (k.registers || k.rows_per_block != 1 || row_smem > smem_limit || no_smem) k.smem_leaves.clear();
      else k.smem_bytes = static_cast<int>(row_smem);
    }
  }
  // The grid tier's blocks per SM (its groups, or as many as a smaller split packs on one).
  const int grid_per_sm =
      k.grid_sync ? static_cast<int>((int64_t{k.grid_groups} * k.split + dev.sm_count - 1) / dev.sm_count) : 0;
  if (k.grid_sync) k.min_blocks_per_sm = grid_per_sm > 1 ? grid_per_sm : 0;
  // For tuning sweeps only (part of the cache key).
  if (const char* mb = std::getenv("LOOM_TUNE_MIN_BLOCKS"); mb && !k.grid_sync) k.min_blocks_per_sm = std::max(0, std::atoi(mb));
  k.grid = k.grid_sync ? int64_t{k.split} * k.grid_groups : (k.rows() + k.rows_per_block - 1) / k.rows_per_block * k.cluster;
  // Several groups: in turns by set, or (no more sets than groups) all at once.
  auto groupsText = [&] {
    if (k.grid_groups <= 1) return std::string();
    return fmt::format("; {} independent groups of {} blocks, each with its own barrier, {}", k.grid_groups, k.split,
                       k.row_sets > k.grid_groups ? "take turns by set" : "a set each, all at once");
  };
  const std::string prefetch =
      k.fill_buffers > 1 ? "; two fill buffers: the next set's slice is copied while the block works on this one" : "";
  k.reason = fmt::format(
      "{} rows over {} x {} elements over {}; {} threads per row{}, {} chunk{} of {} each, {} "
      "row{} per block of {}, grid {}; {}", k.rows(), k.outer_atoms, k.rowElems(), k.red_atoms,
      k.threads_per_row * k.split, k.split > 1 ? fmt::format(" ({} per block)", k.threads_per_row) : "", k.chunks, k.chunks == 1 ? "" : "s", vec, k.rows_per_block,
      k.rows_per_block == 1 ? "" : "s", k.block, k.grid,
      row_tier
        ? fmt::format("rows side by side in memory, strided along their reduction: the block's rows are "
                      "copied into {} KiB of shared memory {}, each element of them {} elements after the "
                      "last; exact two-pass statistics from there{}, the outputs stored in the same {}{}",
                      (k.smem_bytes + 1023) / 1024, rowFillText(k, inputs), k.row_pitch, k.registers ? " (each thread's elements kept in registers between passes)" : "",
                      k.row_vec > 1 ? "vectors of rows" : "pieces",
                      k.grid_sync ? fmt::format("; {} set{} of {} rows{}, each split over {} blocks of a cooperative grid "
                                                "({} per SM) whose partial statistics meet in a global workspace at "
                                                "a grid-wide barrier (Chan){}", k.row_sets, k.row_sets == 1 ? "" : "s", k.rows_per_block,
                                                k.rows() % k.rows_per_block == 0 ? std::string()
                                                    : fmt::format(" (the last cut short to {})", k.rows() % k.rows_per_block),
                                                k.split, grid_per_sm, groupsText())
                                      + prefetch
                                  : "")
      : k.registers ? fmt::format("the row stays in registers ({} values per thread)", held)
      : k.thread_fill
          ? fmt::format("the row would fit registers, but is held in {} KiB of shared memory per block: "
                        "each thread copies its {} chunks with cp.async and reads back only those (no "
                        "block barrier), so its bytes in flight cost no registers; exact two-pass "
                        "statistics and the outputs from there", (k.smem_bytes + 1023) / 1024, k.chunks)
      : k.async_fill
          ? fmt::format("the row ({} values per thread, register budget {}) is copied into {} "
                        "KiB of shared memory per block with cp.async{}: read once, {} and the outputs "
                        "from shared memory", k.chunks * vec * std::max(1, live_leaves), budget,
                        (k.smem_bytes + 1023) / 1024,
                        k.grid_sync ? fmt::format(", {} sets of {} neighbouring row{} each split over "
                                                  "{} blocks of a cooperative grid ({} per SM) "
                                                  "whose partial reductions meet in a global "
                                                  "workspace at a grid-wide barrier per reduction{}",
                                                  k.row_sets, k.rows_per_block, k.rows_per_block == 1 ? "" : "s", k.split,
                                                  grid_per_sm, groupsText()) + prefetch
                        : k.cluster > 1 ? fmt::format(", split over a cluster of {} blocks whose "
                                                    "partial reductions meet in distributed shared "
                                                    "memory", k.cluster) : "",
                        k.grid_sync ? "statistics merged from exact per-thread ones (Chan)"
                                    : "exact two-pass statistics")
      : k.smem_bytes ? fmt::format("the row ({} values per thread, register budget {}) stays in "
                                   "{} KiB of shared memory: read once, statistics in one "
                                   "Welford pass, normalized from shared memory", held, budget,
                                   (k.smem_bytes + 1023) / 1024)
                     : fmt::format("the row ({} values per thread, budget {}) does not fit in "
                                   "registers or shared memory: statistics in one Welford pass, "
                                   "then a second read (from L2 where it fits) to normalize",
                                   held, budget));
  k.reason += strided_note;
  return k;
}

std::string printNormKernel(const ir::Fusion& f, const NormKernel& k) {
  std::string s = fmt::format("kernel {} (normalization)\n  rows [{}] over {}, reduced [{}] over {}\n  {}\n",
                              k.name, fmt::join(k.outer_shape, ", "), k.outer_atoms,
                              fmt::join(k.red_shape, ", "), k.red_atoms, k.reason);
  std::map<const ENode*, std::string> names;
  int next = 0;
  std::vector<EPtr> roots;
  for (const auto& st : k.stores) roots.push_back(st.value);
  lower::visitPostOrder(roots, [&](const ENode& n) {
    std::string name = fmt::format("v{}", next++);
    names[&n] = name;
    std::vector<std::string> a;
    for (const auto& x : n.args) a.push_back(names[x.get()]);
    switch (n.kind) {
      case ENode::Kind::Load: {
        auto it = k.load_access.find(n.leaf);
        auto rit = k.row_load_access.find(n.leaf);
        s += fmt::format("  {} = load.{} {}[{} + i.[{}]]  ({}{})\n", name, dtypeName(n.dtype),
                         f.inputs()[static_cast<size_t>(n.leaf.input)]->name(), n.leaf.offset,
                         fmt::join(n.leaf.strides, ", "),
                         it == k.load_access.end() ? "?" : accessName(it->second),
                         rit == k.row_load_access.end() ? "" : fmt::format("; over rows {}", accessName(rit->second)));
        break;
      }
      case ENode::Kind::Const:
        s += fmt::format("  {} = const.{} {}\n", name, dtypeName(n.dtype), n.value);
        break;
      case ENode::Kind::Op:
        s += fmt::format("  {} = {}.{}({})\n", name, ir::opName(n.op), dtypeName(n.dtype), fmt::join(a, ", "));
        break;
      case ENode::Kind::Reduce:
        s += fmt::format("  {} = reduce.{}{}.{}({})  over the row\n", name, ir::opName(n.op),
                         n.op == ir::OpKind::VarMean ? (n.out_index ? ".mean" : ".var") : "",
                         dtypeName(n.dtype), fmt::join(a, ", "));
        break;
    }
  });
  for (const auto& st : k.stores)
    s += fmt::format("  store.{} {}[i.[{}]] = {}  ({}{}{})\n", dtypeName(st.dtype),
                     f.outputs()[static_cast<size_t>(st.output)].name, fmt::join(st.strides, ", "),
                     names[st.value.get()], accessName(st.access),
                     k.rowTier() && !st.row_only ? fmt::format("; over rows {}", accessName(st.row_access)) : "",
                     st.row_only ? ", once per row" : "");
  return s;
}

}  // namespace loom::schedule
