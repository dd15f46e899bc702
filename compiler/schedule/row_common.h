#pragma once
// What the normalization scheduler's decisions share (norm_threads, norm_smem_tiers,
// norm_row_tier, norm_explain): the held loads' bytes, the GPU's shared memory, and the grid
// tier's shape and bookkeeping.
#include <cstdint>
#include <functional>
#include <set>
#include <utility>
#include <vector>

#include "compiler/schedule/row_kernel.h"

namespace loom::schedule::norm_detail {

using lower::Leaf;

// The least power of two at least v (at most 2^20).
inline int nextPow2(int64_t v) {
  int p = 1;
  while (p < v && p < (1 << 20)) p *= 2;
  return p;
}

// The greatest power of two at most v (v >= 1).
inline int64_t floorPow2(int64_t v) {
  int64_t p = 1;
  while (p <= v / 2) p *= 2;
  return p;
}

// Bytes as whole KiB, rounded up (for the schedule dump).
inline int64_t kib(int64_t bytes) { return (bytes + 1023) / 1024; }

// Strides over the kernel's axes with the innermost row axis moved last: the axis the
// row-vector tier's lanes run along.
std::vector<int64_t> rowsLast(std::vector<int64_t> s, size_t nout);

// Bytes of one element of the held load `l`.
int heldBytes(const Leaf& l, const std::vector<TensorDesc>& inputs);
// The bytes of every row of the held loads `held`.
int64_t heldRowsBytes(const RowKernel& k, const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs);

// The narrowest and widest element of the held loads, in bytes.
std::pair<int, int> heldByteRange(const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs);

// The fewest rows a block or grid set of the row-vector tiers takes: whole vectors of
// `row_vec` rows, and at least a 32-byte sector of each element's rows.
int minSetRows(const std::set<Leaf>& held, const std::vector<TensorDesc>& inputs, int row_vec);

// The grid tier's fill buffers: 2 fills the next set's shared memory while the block works on
// the current one, at half the shared memory per set. For tuning sweeps only: it measured
// faster for some channels-last shapes, slower for others and for long rows
// (docs/performance.md#grid-fill-buffers).
int gridFillBuffers(const Tuning& tune);

// Shared memory of one SM: 228 KiB on sm_90, 164 KiB on sm_80, 100 KiB on sm_86/89.
int64_t smemPerSm(const DeviceInfo& dev);

// Shared memory each block of several on an SM takes beyond its own: 1 KiB the driver
// reserves and up to 4 KiB of the reductions' scratch.
constexpr int64_t kBlockSmemExtra = 5 * 1024;

// Blocks of `bytes` of shared memory each that one SM holds.
inline int64_t smemBlocksPerSm(const DeviceInfo& dev, int64_t bytes) { return smemPerSm(dev) / (bytes + kBlockSmemExtra); }

// Opt-in shared memory per block: 227 KiB on sm_90, 163 KiB on sm_80, 99 KiB on sm_86/89;
// 4 KiB stay for the reductions' scratch.
int64_t blockSmemLimit(const DeviceInfo& dev);

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
// more groups overlap.
// Measurements: bench/results/2026-11-25-h100-scheduler-rules.md#grid-shape
GridShape gridShape(int64_t sets, int per_sm, int groups, const CompileOptions& opts,
                    const std::function<bool(int)>& fits);

// The grid tier's bookkeeping once a block is placed (`k.split` blocks share each set):
// `groups` groups of blocks walking sets of `rows` rows, each group's part of the workspace a
// barrier counter and an exit counter (at bytes 0 and 64 of its own 128), then per reduction
// and iteration parity one (count, mean, M2) slot of 8 bytes each per block and row.
void setGrid(RowKernel& k, int groups, int rows, int reductions);

}  // namespace loom::schedule::norm_detail
