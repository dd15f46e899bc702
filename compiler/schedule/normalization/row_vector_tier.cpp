#include "compiler/schedule/normalization/row_vector_tier.h"

#include <algorithm>
#include <cstdlib>
#include <limits>
#include <map>

#include <fmt/format.h>

#include "ir/error.h"

namespace loom::schedule::norm_detail {

namespace {

// The row-vector tier's lanes (see RowKernel::row_vec), or 0 where the tier does not apply:
// every held load has stride 1 along the innermost row axis and is not contiguous along the
// row's own innermost axis. The lanes are 16 bytes of rows, fewer where the rows along that
// axis, the alignment or a cp.async piece of 4, 8 or 16 bytes say so; 1 (a row's element a
// piece) where no vector fits: an odd innermost row axis (LayerNorm2d NCHW over 7 x 7 pixels)
// or rows one element off 16 bytes.
// `why` says why not, where that is 0.
int rowVectorWidth(const std::set<Leaf>& held, size_t nout, const std::vector<TensorDesc>& inputs,
                   const std::vector<int64_t>& outer_shape, const CompileOptions& opts, std::string* why) {
  if (nout == 0 || held.empty()) return 0;
  const DeviceInfo& dev = opts.device;
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
  if (opts.tuning.no_row_vectors || opts.tuning.no_smem_rows) {
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

// The fewest times rowPitch's pitch for R rows of T threads a row meets a bank, with room for any
// padding (the pitch it picks then does not depend on the chunks).
int fewestBankWays(int R, int T, const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs) {
  const auto best = rowPitch(R, T, 1, held, inputs, std::numeric_limits<int64_t>::max() / 4);
  return bankWays(best.first, T, heldByteRange(held, inputs).second);
}

// rowPitch's pitch where it meets no bank more often than `fewest` (fewestBankWays) times ({0, 0}
// where it does).
std::pair<int64_t, int64_t> paddedPitch(int R, int T, int64_t chunks, const std::set<Leaf>& held,
                                        const std::vector<TensorDesc>& inputs, int64_t max_total, int fewest) {
  const auto here = rowPitch(R, T, chunks, held, inputs, max_total);
  if (here.first == 0 || bankWays(here.first, T, heldByteRange(held, inputs).second) > fewest) return {0, 0};
  return here;
}

// Places the row-vector tier for rows of `n` elements read from the `held` loads: rows per
// block (as many as `max_bytes` of shared memory hold, up to 64, each element's
// rows at least a 32-byte sector, fewer while the blocks would not fill the SMs twice), threads
// per row, and a pitch padded against bank conflicts. Nothing where even the fewest rows do not
// fit.
std::optional<RowPlacement> placeRowVectors(int64_t n, int64_t rows, const std::set<Leaf>& held,
                                            const std::vector<TensorDesc>& inputs, int row_vec, const CompileOptions& opts,
                                            int64_t max_bytes) {
  const DeviceInfo& dev = opts.device;
  const int min_rows = minSetRows(held, inputs, row_vec);
  // For tuning sweeps only: LOOM_TUNE_ROWS_PER_BLOCK, LOOM_TUNE_THREADS_PER_ROW.
  const std::optional<int>& tune_t = opts.tuning.threads_per_row;
  int R = 64;
  if (const auto& r = opts.tuning.rows_per_block) R = std::max(min_rows, nextPow2(*r));
  while (R > min_rows && (rows + R - 1) / R < 2 * int64_t{dev.sm_count}) R /= 2;
  for (; R >= min_rows; R /= 2) {
    // Threads per row: a block of 256, no more than the row has elements.
    int T = std::max(1, 256 / R);
    if (tune_t) T = std::min(32, nextPow2(*tune_t));
    while (T > 1 && (T > n || R * T > 1024)) T /= 2;
    int64_t chunks = (n + T - 1) / T;
    auto [pitch, bytes] = rowPitch(R, T, chunks, held, inputs, max_bytes);
    if (pitch == 0) continue;
    // Pieces of rows whose blocks leave the SMs under 640 threads each on average (few blocks,
    // or one an SM for its shared memory): up to 32 threads a row, in larger blocks (32
    // against 16 measured faster there, slower at 760 threads an SM); rows read in vectors of
    // several rows too (layer_norm_2d_backward NCHW's dx +13%, column-major softmax and layer
    // norm +11-14%; one channels-last instance norm -3%).
    // Measurements: bench/results/2026-11-25-h100-scheduler-rules.md#place-row-vectors-threads,
    // bench/results/2026-11-26-h100-clusters-of-16.md
    const double blocks_per_sm = static_cast<double>((rows + R - 1) / R) / dev.sm_count;
    auto threadsPerSm = [&](int t, int64_t b) {
      return std::min(blocks_per_sm, static_cast<double>(smemBlocksPerSm(dev, b))) * R * t;
    };
    while (!tune_t && T < 32 && R * T * 2 <= 1024 &&
           T * 2 <= n && threadsPerSm(T, bytes) < 640) {
      const int64_t wider = (n + 2 * T - 1) / (2 * T);
      const auto [p, b] = rowPitch(R, 2 * T, wider, held, inputs, max_bytes);
      if (p == 0) break;
      T *= 2;
      chunks = wider;
      pitch = p;
      bytes = b;
    }
    return RowPlacement{R, T, chunks, pitch, bytes};
  }
  return std::nullopt;
}

// Rows too long for that: the row-vector tier split over a cooperative grid (one block of
// each group per SM). Sets of R neighbouring rows (as many as fit, up to 64, dividing the row
// axis; or, not `whole_sets`, the last set cut short), each set's elements dealt to the grid's
// blocks in runs of T (blocks of 512 threads), and up to 2 groups of blocks taking turns by set
// (each group walking two sets or more). Channels-last instance norm and batch norm of large
// images. `plain_split`, where given: the split of the fewest blocks that hold a set at its
// unpadded pitch.
std::optional<RowPlacement> placeRowVectorsGrid(int64_t n, int64_t rows, int64_t row_axis, const std::set<Leaf>& held,
                                                const std::vector<TensorDesc>& inputs, int row_vec,
                                                const CompileOptions& opts, bool whole_sets, int* groups, int* split,
                                                int* plain_split = nullptr) {
  const DeviceInfo& dev = opts.device;
  const Tuning& tune = opts.tuning;
  // A grid of one SM has no blocks to split a set over.
  if (dev.sm < 80 || dev.sm_count < 2 || tune.no_grid) return std::nullopt;
  const int min_rows = minSetRows(held, inputs, row_vec);
  const int64_t P = dev.sm_count;
  // For tuning sweeps only: LOOM_TUNE_ROWS_PER_BLOCK (R), LOOM_TUNE_GRID_GROUPS (G),
  // LOOM_TUNE_THREADS_PER_ROW (T, rows of R * T <= 1024 threads).
  const std::optional<int>& tune_r = tune.rows_per_block;
  const std::optional<int>& tune_g = tune.grid_groups;
  const std::optional<int>& tune_t = tune.threads_per_row;
  for (int R = 64; R >= min_rows; R /= 2) {
    if ((whole_sets && row_axis % R != 0) || (tune_r && R != *tune_r)) continue;
    const int64_t sets = (rows + R - 1) / R;
    int T = 512 / R;
    if (tune_t) T = std::min(1024 / R, nextPow2(*tune_t));
    // A block's chunks of a set split over S blocks.
    auto chunksAt = [&](int64_t S) { return (n + int64_t{T} * S - 1) / (int64_t{T} * S); };
    // Two groups at most: three (40 registers a thread) spilled and measured slower.
    // Measurements: bench/results/2026-11-25-h100-scheduler-rules.md#place-row-vectors-grid-groups
    // Each block beside the others takes kBlockSmemExtra.
    auto budget = [&](int per_sm) { return (smemPerSm(dev) / per_sm - kBlockSmemExtra) / gridFillBuffers(tune); };
    for (int G = tune_g ? 3 : 2; G >= 1; --G) {
      if (G > 1 && sets < 2 * G) continue;
      if ((tune_g && G != *tune_g) || G * R * T > 2048) continue;
      if (rowPitch(R, T, chunksAt(P), held, inputs, budget(G)).first == 0) continue;
      // More sets at once over fewer blocks each, two blocks an SM, where that fits (see gridShape):
      // with the pitch padded against bank conflicts (a pitch of 64 f16 rows put a warp's 8
      // elements of each row on one bank: 8 ways) where some split up to the SMs' allows it and
      // its fewer groups take under 1.5 times the turns at the sets (more turns lost), else as the
      // fewest blocks fit (docs/performance.md#padded-sets).
      const GridShape plain = gridShape(sets, 2, G, opts, [&](int S) {
        return rowPitch(R, T, chunksAt(S), held, inputs, budget(2)).first != 0;
      });
      GridShape gs = plain;
      const int fewest = fewestBankWays(R, T, held, inputs);
      if (!tune.no_padded_sets && paddedPitch(R, T, chunksAt(P), held, inputs, budget(2), fewest).first != 0) {
        const GridShape pad = gridShape(sets, 2, G, opts, [&](int S) {
          return paddedPitch(R, T, chunksAt(S), held, inputs, budget(2), fewest).first != 0;
        });
        auto turns = [&](const GridShape& g) { return (sets + g.groups - 1) / g.groups; };
        if (turns(pad) * 2 < turns(plain) * 3) gs = pad;
      }
      *groups = gs.groups;
      *split = gs.split;
      if (plain_split) *plain_split = plain.split;
      const int64_t chunks = chunksAt(gs.split);
      auto [pitch, bytes] = rowPitch(R, T, chunks, held, inputs, budget(gs.split == P ? gs.groups : 2));
      return RowPlacement{R, T, chunks, pitch, bytes};
    }
  }
  return std::nullopt;
}

// How chooseRowTier came to its choice, for its reason: the lanes of a vector of rows (0: the
// tier does not apply, `no_tier` says why), the fewest rows that fill a 32-byte sector, blocks
// refused as too few for the SMs, and which of the later tiers were tried.
struct RowTierPath {
  int row_vec = 0, sector_rows = 0;
  std::string no_tier;
  std::optional<RowPlacement> too_few;
  bool few_pieces = false, partial_sets = false;
  bool grid_pairs = false;  // the grid's sets would each be split over just two blocks
};

// Why rows strided along their reduction take no row-vector tier, so that each element is a
// load of its own (a performance cliff the user may avoid): `no_tier` where the tier does not
// apply, else blocks refused as `too_few` for the SMs, or the fewest rows fitting no block.
std::string stridedWhy(const RowKernel& k, const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs,
                       const CompileOptions& opts, const RowTierPath& path) {
  const DeviceInfo& dev = opts.device;
  const auto strided = std::find_if(held.begin(), held.end(), [](const Leaf& l) { return l.strides.back() != 1; });
  const int sector_rows = minSetRows(held, inputs, path.row_vec);
  const std::string no_division =
      fmt::format("the grid's sets of {} rows or more do not divide {}", sector_rows, k.outer_shape.back());
  const std::string grid_text =
      path.few_pieces ? std::string("so few rows' pieces are not split over the grid")
      : k.outer_shape.back() % sector_rows == 0 || path.partial_sets ? std::string("the grid tier does not place them")
      : opts.tuning.no_partial_sets ? no_division + " (and LOOM_NO_PARTIAL_SETS is set)"
                                    : no_division + ", and so few elements take no sets cut short";
  const int64_t blocks = path.too_few ? (k.rows() + path.too_few->rows - 1) / path.too_few->rows : 0;
  return fmt::format(
      "the rows are strided along their reduction ({} elements apart), so each element is a load of its own: {}",
      std::abs(strided->strides.back()),
      path.row_vec == 0 ? path.no_tier
      : path.too_few ? fmt::format("blocks of {} rows would be {}, fewer than {} {} SMs, and {}", path.too_few->rows, blocks,
                                   path.few_pieces ? "a quarter of the" : "the", dev.sm_count, grid_text)
                     : fmt::format("the fewest neighbouring rows that fill a 32-byte sector do not fit a block's shared "
                                   "memory, and {}", grid_text));
}

// Why the row-vector tier `tier` placed the rows (`path`: how the choice got there).
std::string placedWhy(const RowKernel& k, NormTier tier, const RowTierPath& path, const CompileOptions& opts) {
  const int sms = opts.device.sm_count;
  const std::string no_block =
      fmt::format("the fewest neighbouring rows that fill a 32-byte sector ({}) do not fit 40 KiB of shared memory",
                  path.sector_rows);
  const std::string too_few =
      path.too_few ? fmt::format("blocks of {} rows past 40 KiB would be {}, fewer than the {} SMs", path.too_few->rows,
                                 (k.rows() + path.too_few->rows - 1) / path.too_few->rows, sms)
                   : no_block + ", nor a block's opt-in limit";
  switch (tier) {
    case NormTier::RowVectors:
    case NormTier::RowPieces:
      return fmt::format("blocks of up to 40 KiB of shared memory (several an SM){}",
                         tier == NormTier::RowPieces ? fmt::format(", at least a quarter of the {} SMs", sms) : "");
    case NormTier::RowVectorsGrid: return no_block;
    case NormTier::RowVectorsLargeBlock:
      return no_block + (path.grid_pairs ? std::string(", and the grid's sets would each take just two blocks (a "
                                                       "barrier a set for two: slower than a set a block)")
                                         : std::string(", and the grid's whole sets do not take them")) +
             fmt::format("; the blocks are at least the {} SMs", sms);
    case NormTier::RowGridCutShort:
      return fmt::format("{}, and no grid set of rows dividing the {} of the innermost row axis fits; the rows hold {} "
                         "elements, 2048 an SM or more", too_few, k.outer_shape.back(), k.rows() * k.rowElems());
    default: break;
  }
  LOOM_ASSERT(false, "{} is no row-vector tier", normTierName(tier));
  return {};
}

// The row-vector tier as placed: the kernel's block, its shared memory, and each access over
// vectors of rows.
void applyRowVectors(RowKernel& k, const RowPlacement& p, int row_vec, const std::vector<TensorDesc>& inputs) {
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

}  // namespace

RowTierChoice chooseRowTier(const RowKernel& k, const std::set<Leaf>& held_leaves,
                            const std::vector<TensorDesc>& inputs, const CompileOptions& opts) {
  const DeviceInfo& dev = opts.device;
  RowTierChoice out;
  RowTierPath path;
  path.row_vec = rowVectorWidth(held_leaves, k.outer_shape.size(), inputs, k.outer_shape, opts, &path.no_tier);
  if (path.row_vec > 0) path.sector_rows = minSetRows(held_leaves, inputs, path.row_vec);
  std::optional<RowPlacement>& row_place = out.place;
  auto blocksOf = [&](const RowPlacement& p) { return (k.rows() + p.rows - 1) / p.rows; };
  // 40 KiB with the scratch, under the 48 KiB of no opt-in: several blocks an SM.
  if (path.row_vec > 0) {
    row_place = placeRowVectors(k.rowElems(), k.rows(), held_leaves, inputs, path.row_vec, opts, 40 * 1024);
    out.tier = path.row_vec == 1 ? NormTier::RowPieces : NormTier::RowVectors;
  }
  // A row's element a piece (no vector of rows fits) where the blocks would leave most SMs idle:
  // a row a block instead, and no tier below (each takes more rows, or the whole GPU).
  // Measurements: bench/results/2026-11-25-h100-scheduler-rules.md#choose-row-tier-few-pieces
  path.few_pieces = row_place && path.row_vec == 1 && blocksOf(*row_place) * 4 < dev.sm_count;
  if (path.few_pieces) path.too_few.swap(row_place);
  const bool more_tiers = path.row_vec > 0 && !path.few_pieces;
  if (more_tiers && !row_place) {
    int pairs = 0;  // (two blocks as the fewest that hold a set with its pitch unpadded)
    row_place = placeRowVectorsGrid(k.rowElems(), k.rows(), k.outer_shape.back(), held_leaves, inputs, path.row_vec,
                                    opts, true, &out.groups, &out.split, &pairs);
    out.tier = NormTier::RowVectorsGrid;
    // Sets split over just two blocks: blocks up to the opt-in limit, a set (or part of one) a
    // block, where they are enough for every SM; sets over 4 blocks or more were mixed
    // (docs/performance.md#two-block-sets).
    if (row_place && pairs == 2) {
      std::optional<RowPlacement> block =
          placeRowVectors(k.rowElems(), k.rows(), held_leaves, inputs, path.row_vec, opts, blockSmemLimit(dev));
      if (block && blocksOf(*block) >= dev.sm_count) {
        row_place = block;
        out.groups = out.split = 0;
        out.tier = NormTier::RowVectorsLargeBlock;
        path.grid_pairs = true;
      }
    }
  }
  // Rows the grid tier cannot take (their count is no multiple of a set's): blocks of up to
  // the opt-in limit, one or two an SM, rather than a row a block reading one element of
  // each 32-byte sector; where they are enough to give every SM one.
  if (more_tiers && !row_place) {
    row_place = placeRowVectors(k.rowElems(), k.rows(), held_leaves, inputs, path.row_vec, opts, blockSmemLimit(dev));
    if (row_place && blocksOf(*row_place) < dev.sm_count) path.too_few.swap(row_place);
    out.tier = NormTier::RowVectorsLargeBlock;
  }
  // Still nothing (rows too long for a block, or too few blocks of them): sets of the grid
  // tier that do not divide the row axis, the last one cut short (its missing rows fill and
  // store nothing), where the rows hold 2048 elements an SM or more (far faster than a row a
  // block there; smaller ones measured level or slower).
  // Measurements: bench/results/2026-11-25-h100-scheduler-rules.md#choose-row-tier-partial-sets
  path.partial_sets = more_tiers && !row_place && !opts.tuning.no_partial_sets &&
                      k.rows() * k.rowElems() >= int64_t{2048} * dev.sm_count;
  if (path.partial_sets) {
    row_place = placeRowVectorsGrid(k.rowElems(), k.rows(), k.outer_shape.back(), held_leaves, inputs, path.row_vec,
                                    opts, false, &out.groups, &out.split);
    out.tier = NormTier::RowGridCutShort;
  }
  out.row_vec = row_place ? path.row_vec : 0;
  if (row_place) {
    out.why = placedWhy(k, out.tier, path, opts);
  } else if (k.outer_shape.size() > 0 &&
             std::any_of(held_leaves.begin(), held_leaves.end(), [](const Leaf& l) { return l.strides.back() != 1; })) {
    out.why = stridedWhy(k, held_leaves, inputs, opts, path);
    out.element_loads = true;
  }
  return out;
}

void applyRowTier(RowKernel& k, const RowTierChoice& c, int reductions, const std::vector<TensorDesc>& inputs,
                  const CompileOptions& opts) {
  LOOM_ASSERT(c.place, "applying no row-vector tier");
  applyRowVectors(k, *c.place, c.row_vec, inputs);
  k.tier = c.tier;
  if (c.groups == 0) return;
  k.split = c.split;
  setGrid(k, c.groups, k.rows_per_block, reductions);
  k.fill_buffers = gridFillBuffers(opts.tuning);
  k.smem_bytes *= k.fill_buffers;
}

}  // namespace loom::schedule::norm_detail
