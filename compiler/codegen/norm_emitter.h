#pragma once
// The normalization kernel emitter (see llvm_norm.h): its state and passes, defined by what they
// emit in llvm_norm.cpp (the kernel's structure, indexing, fills, loads, stores and loops),
// norm_reduce.cpp (reductions and statistics across a row's threads, warps and cluster) and
// norm_grid.cpp (the grid tier: partials in a global workspace, grid-wide barriers).
#include <llvm/IR/IRBuilder.h>

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <utility>
#include <vector>

#include "compiler/codegen/kernel_module.h"
#include "compiler/codegen/lane_access.h"
#include "compiler/schedule/normalization.h"

namespace loom::codegen::norm_detail {

using lower::ENode;
using lower::EPtr;
using lower::Leaf;
using schedule::Access;


// Where one chunk of a row lives: its coordinates, and whether it is inside the row.
struct Chunk {
  std::vector<llvm::Value*> idx;  // outer coords ++ reduced coords (innermost * vec)
  llvm::Value* valid = nullptr;   // i1
  llvm::Value* ci = nullptr;      // the chunk's index in its row (clamped into the row)
  llvm::Value* slot = nullptr;    // its place in the block's shared-memory copy of the row
  bool global = false;            // read from global memory even where the row is on chip
  llvm::Value* r_sub = nullptr;   // another row of the block (coalesced stores): i32
  bool row_lanes = false;         // lanes are `row_vec` neighbouring rows from r_sub on
  std::map<const ENode*, Lanes> memo;
};

// What the passes take from their callers: a chunk's values (its lanes), one step of a pass
// over the thread's chunks (folding a chunk into the carried values), and a loop's body.
using ValuesFn = std::function<Lanes(Chunk&)>;
using StepFn = std::function<std::vector<llvm::Value*>(Chunk&, const std::vector<llvm::Value*>&)>;
using LoopBody = std::function<std::vector<llvm::Value*>(llvm::Value*, const std::vector<llvm::Value*>&)>;

class NormEmitter {
 public:
  NormEmitter(const ir::Fusion& f, const schedule::NormKernel& k, const Tuning& tune, KernelModule& km)
      : f_(f), k_(k), tune_(tune), km_(km), b_(km.builder()) {
    idx_ty_ = k.index64 ? b_.getInt64Ty() : b_.getInt32Ty();
  }

  void emit();

  // Everything for the block's rows from `first_row` on: fill, reductions, stores.
  void rowsAt(llvm::Value* first_row);

 private:
  llvm::Value* c(int64_t v) { return llvm::ConstantInt::get(idx_ty_, static_cast<uint64_t>(v), true); }

  std::vector<llvm::Value*> unravel(llvm::Value* i, const std::vector<int64_t>& shape, int vec);

  // Chunk k of the row's thread `t` of this block: chunk rank * T + t + k * T * split of the
  // row (the row's blocks take turns by runs of T), clamped into the row, at outer coords
  // `outer`.
  Chunk chunkOf(std::vector<llvm::Value*> outer, llvm::Value* t, llvm::Value* k);

  Chunk chunkAt(llvm::Value* k);

  // For values constant along the row: reduced coords are 0.
  Chunk rowChunk();

  llvm::Value* offset(int64_t base, const std::vector<int64_t>& strides, const std::vector<llvm::Value*>& idx);

  // The row's copy of a load in shared memory: chunk `slot` of the row's part of the leaf's
  // region (a block's rows one after another).
  llvm::Value* smemAddr(const Leaf& l, DType t, const Chunk& ch);
  llvm::Value* smemAddr(const Leaf& l, DType t, llvm::Value* slot, llvm::Value* row_in_block);

  // The grid tier's two fill buffers (see emit()): the next set is copied ahead.
  bool prefetch() const { return k_.fill_buffers == 2; }

  // A byte offset into the fill buffer in use (the grid tier's two buffers: see emit()).
  llvm::Value* withBuffer(llvm::Value* byte);

  // Copies the block's chunks of every held load into shared memory, all in flight at once,
  // and waits for them. With one row per block each thread copies the chunks it later reads
  // (no barrier needed). With several neighbouring rows, consecutive threads copy the
  // neighbouring pieces of all rows at one position (whole lines), then a barrier.
  void asyncFill();

  // The cp.async copies of the block's chunks of the rows from `first_row` on (pieces below 4
  // bytes: copyFill's loads and stores). Whether any cp.async was issued.
  bool issueFill(llvm::Value* first_row);

  // The row-vector tier's fill of `l` where a piece (one row's 2- or 1-byte element) is below
  // cp.async's 4 bytes: loads into registers, stores into shared memory.
  void copyFill(const Leaf& l, DType t, llvm::Value* first_row);
  // Bytes of one piece of `l`'s fill: cp.async where 4, 8 or 16, copyFill where fewer.
  int fillPieceBytes(const Leaf& l) const;

  // The m-th of the thread's units of the block's part of its rows, for whole-line accesses:
  // unit u = tid + m * block is chunk c_in of row r_sub at position `rest`, whose slot in that
  // row is rest * q + c_in (q: a row's chunks at one outer position), which is chunk k of the
  // row's thread tr. With one row per block this is the thread's own chunk m.
  Chunk unitChunk(llvm::Value* m, llvm::Value* first_row = nullptr);

  // The row-vector tier's units: piece p = tid + m * block is element e = p / V of rows
  // r_sub .. r_sub + row_vec - 1 (r_sub = (p % V) * row_vec), V pieces per element. The block
  // is a multiple of V: a thread's units share their rows.
  // Split over `split` blocks (the grid tier), slot s of the block's rows holds element
  // (s % T) + rank * T + (s / T) * T * split: the thread's chunks (see chunkOf).
  Chunk rowUnitChunk(llvm::Value* m, llvm::Value* first_row = nullptr);

  // Piece p of the block's rows (see rowUnitChunk): element p / V of the p % V-th vector of rows.
  Chunk rowPiece(llvm::Value* p, llvm::Value* first_row = nullptr);

  // Trips of the fill's and the whole-line stores' loop over the thread's units.
  int64_t unitTrips() const;

  int lanesOf(const Chunk& ch) const { return ch.row_lanes ? k_.row_vec : k_.vec; }

  // Several rows per block storing by whole lines: each thread writes chunks of other rows,
  // so every row's reductions go to shared memory for the block.
  bool coalescedStores() const { return k_.async_fill && k_.rows_per_block > 1 && !k_.thread_fill; }

  void publishReductions(const std::vector<const ENode*>& reductions);

  llvm::Value* reducedSlot(const ENode* r, llvm::Value* row_in_block);

  Lanes load(const Leaf& l, DType t, const Chunk& ch);

  Lanes loadGlobal(const Leaf& l, DType t, const Chunk& ch);

  const Lanes& eval(const ENode& n, Chunk& ch);

  // Whether `n` has one value per row: built from reductions and constants only.
  static bool perRow(const ENode& n);

  // Every output is stored in 16 bits (f16, bf16): f32 math inside then needs no more than
  // the outputs keep.
  bool halfOutputs() const;

  // exp(x) as 2^(x log2 e) with the hardware's ex2.approx: two instructions where libdevice's
  // expf takes about twelve, for kernels whose outputs are f16 or bf16. Its error (a few
  // 1e-6 relative at |x| near 88, from rounding x log2 e; 2^-22 from ex2 itself; results
  // below 2^-126 flushed to 0) is far below their half-ulp (2^-11, 2^-8). With expf, long
  // softmax rows were bound by instruction issue.
  // Measurements: bench/results/2026-11-25-code-comment-measurements.md#fast-exp
  llvm::Value* fastExp(llvm::Value* x);

  // --- reductions ---
  enum class Combine { Sum, Max, Min };
  struct Stats {  // (count, mean, M2) of part of a row
    llvm::Value *n, *mean, *m2;
  };

  llvm::Value* identity(Combine cb, DType acc);

  llvm::Value* combine(Combine cb, DType acc, llvm::Value* a, llvm::Value* b);

  // A full-warp shuffle `id` (butterfly, index) of a 32- or 64-bit value with lane argument
  // `lane_arg`: 64-bit values travel as two 32-bit halves.
  llvm::Value* shuffle(llvm::Intrinsic::ID id, llvm::Value* v, llvm::Value* lane_arg);

  llvm::Value* shuffleXor(llvm::Value* v, int offset);

  // Every thread of the row ends with the row's total.
  llvm::Value* blockReduce(Combine cb, DType acc, llvm::Value* v);

  llvm::Value* acrossBlocks(Combine cb, DType acc, llvm::Value* v);

  // --- the grid tier: partials through the global workspace ---
  // Slot `field` (of 3: count, mean, M2; 8 bytes each) of block `rank`'s partial for the
  // block's row `r`, in the group's part of the workspace: the region of the kernel's
  // `region`-th grid reduction and this iteration's parity. Blocks innermost: a warp reading 32 blocks' partials reads 256
  // contiguous bytes (row-innermost entries cost a sector per lane: measured on an H100, the
  // L2 then carried more partials than tensor data).
  llvm::Value* wsSlot(int region, llvm::Value* rank, llvm::Value* r, int field);

  void checkRegion(int region);

  // Partials are written plainly (the barrier's release, after a block barrier, publishes
  // them) and read with ld.relaxed.gpu: from the L2, never a stale L1 line or the read-only
  // path, and at GPU scope (volatile loads are system-scope; on an H100 the two measured
  // the same).
  void storeWs(llvm::Value* v, llvm::Value* addr) { b_.CreateAlignedStore(v, addr, llvm::Align(8)); }
  llvm::Value* loadWs(llvm::Type* ty, llvm::Value* addr);

  // Every block of the group arrives, then waits until all have: a counter in the group's part
  // of the workspace (zero when the launch starts) that only grows, so the group's e-th barrier
  // (from 1) waits for e * blocks arrivals. The leader arrives with a release, polls relaxed,
  // and acquires with one fence once the count is reached (an acquiring poll would invalidate
  // the SM's L1 on every iteration).
  void gridBarrier();

  // Past its group's last barrier, each block's leader counts itself out (at byte 64 of the
  // group's counter region); the last one out zeroes both counters, as every other block has
  // stopped polling by then. The next launch, after this one in stream order, so finds them as
  // the first found them (zeroed once, when the workspace is allocated): no memset per launch.
  void leaveCountersZero();

  // The thread's row's total over every block: each block's leader publishes its partial;
  // after the barrier the row's first warp reads them, lane l every 32nd block's from l, and
  // combines them in a butterfly (sums and extrema commute exactly, so every block gets the
  // same bits).
  llvm::Value* acrossGrid(Combine cb, DType acc, llvm::Value* v);

  // The lanes that read a row's partials: its first warp's 32, or its T < 32 threads (rows
  // of fewer threads share a warp, T dividing 32).
  int laneBlockWidth() const { return std::min(k_.threads_per_row, 32); }

  // Lane l of the row's W = laneBlockWidth() visits blocks l, l + W, ... in order: fn(block,
  // in range) with the block clamped to 0 past the last one.
  void forEachLaneBlock(const std::function<void(llvm::Value*, llvm::Value*)>& fn);

  // Chan's combination of every block's (count, mean, M2) for the thread's row.
  Stats acrossGridStats(DType acc, const Stats& st);

  // compute() by the first warp of each row only (its lanes reading the L2 or shared memory
  // for the whole row), and its lane 0's results for every thread of the row: one thread's
  // bits, so that every thread normalizes with the same statistics. `n` values of type `ty`.
  std::vector<llvm::Value*> byFirstWarp(llvm::Type* ty, int n, const std::function<std::vector<llvm::Value*>()>& compute);

  // The value of the row's first thread (rows of at most 32 threads, whole within a warp).
  llvm::Value* shuffleFromRowStart(llvm::Value* v);

  // Elements of a row that block `rank` holds: vec per chunk ci = rank * T + t + k * T * P
  // inside the row, over t < T and k < chunks.
  llvm::Value* blockCount(llvm::Value* rank, DType acc);

  // Every block of the row's cluster holds its total: thread 0 publishes it in its shared
  // memory, and after a cluster barrier every thread combines all blocks' totals in rank
  // order (so every block gets the same bits). Each reduction has its own slot, so no slot is
  // rewritten while another block may still read it.
  llvm::Value* acrossCluster(Combine cb, DType acc, llvm::Value* v);

  void barrier() { b_.CreateIntrinsic(llvm::Intrinsic::nvvm_barrier0, {}, {}); }

  // if (cond) body(); the publishes by one thread of a warp, row or block, and the stores.
  void ifThen(llvm::Value* cond, const char* name, const std::function<void()>& body);

  // Without the row in registers, each pass evaluates its chunks afresh (loads from shared
  // memory once a pass has filled it, else from global memory).
  void beginPass();

  // Loads a streaming pass copied to shared memory are read from there from now on (each
  // thread reads back only the chunks it wrote, so no barrier is needed).
  void endPass();

  // Sums (or maxes...) f(x) over the row: every valid lane of every chunk, then the block.
  llvm::Value* rowReduce(Combine cb, DType acc, const ValuesFn& f);

  // The mean of a row summed around its first element, so that 1e4 + U(0,1) data keeps
  // its digits: mean = x0 + sum(x - x0) / n.
  llvm::Value* shiftedMean(const ENode& x, DType acc, const ValuesFn& values, double n);

  // Chan et al.'s combination of two (count, mean, M2) partial statistics.
  Stats chan(DType acc, const Stats& a, const Stats& b);

  // The row's (mean, M2) in one reduction across its threads (and blocks): each thread's
  // statistics, then Chan's merge. Streamed rows: one pass, per chunk an exact two-pass over
  // its lanes merged into the thread's running statistics.
  std::pair<llvm::Value*, llvm::Value*> welford(DType acc, const ValuesFn& values);

  // The row-vector tier over the grid reads its statistics by whole vectors of rows, the
  // 16-byte pieces the fill copied, where a thread of a row alone reads one element at a time
  // (a load and a conversion each): measured faster, channels-last. Where the rows' exchange
  // stays small: W = T * row_vec threads per vector of rows, at most 32 loads of the warps'
  // totals, 2 KiB of shared memory.
  // Measurements: bench/results/2026-11-25-code-comment-measurements.md#stats-by-row-vectors
  // LOOM_TUNE_ROWVEC_STATS=0 keeps the thread-per-row passes (for measurements).
  bool statsByRowVectors() const;

  // A block's (count, mean, M2) for each of its rows, read by vectors of rows. The W threads
  // of the rows r .. r + row_vec - 1 (those rows' threads) take the vector's slots q, q + W,
  // ... (q: the thread among them), each summing row_vec lanes. A warp then reduce-scatters:
  // at each bit of the row index that stays within the warp, a lane keeps half its rows and
  // adds its partner's; a butterfly over the row's threads follows. Each warp's totals go to
  // shared memory, where every thread of the vector reads all its rows' totals, warps in
  // order. Two exact passes: the sums, then squared deviations from the block's own means.
  // Every thread of a row ends with the same bits.
  Stats rowVectorStats(DType acc, const ValuesFn& values);

  void reduce(const ENode& r);

  // --- stores ---
  void storeChunk(const schedule::NormKernel::Store& s, const Lanes& lanes, const Chunk& ch, llvm::Value* pred);

  void storeAll();

  // Evaluates in `ch` the parts of `n` that are the same for every unit of the thread
  // (see unitChunk): constants, reductions, and loads that vary along no reduced axis but the
  // innermost. Returns whether `n` itself is such a part.
  bool hoistInvariant(const ENode& n, Chunk& ch);

  // One pass over the thread's chunks of its row: unrolled over the chunks held in registers,
  // else a loop that derives each chunk afresh. `step` folds a chunk into the carried values
  // (accumulators); returns their final values.
  std::vector<llvm::Value*> forEachChunk(std::vector<llvm::Value*> carried, const StepFn& step);

  // for (k = 0; k < n; ++k) carried = body(k, carried); at least one trip.
  std::vector<llvm::Value*> loop(int64_t n, std::vector<llvm::Value*> carried, const LoopBody& body, int unroll = 0);

  const ir::Fusion& f_;
  const schedule::NormKernel& k_;
  const Tuning& tune_;  // the emitter's knobs (compiler/tuning.def)
  KernelModule& km_;
  llvm::IRBuilder<>& b_;
  llvm::Type* idx_ty_;
  llvm::Value *t_in_row_ = nullptr, *row_in_block_ = nullptr, *lane_ = nullptr, *row_valid_ = nullptr;
  llvm::Value *tid_ = nullptr, *vt_ = nullptr;  // thread in block; thread's place in its row
  llvm::Value *rank_ = nullptr, *first_row_ = nullptr;  // block among the row's blocks; its first row
  llvm::Value *workspace_ = nullptr, *set_ = nullptr, *parity_ = nullptr;  // the grid tier
  llvm::Value *group_ = nullptr, *group_ws_ = nullptr;  // the grid group; its part of the workspace
  int next_region_ = 0, barriers_per_set_ = 0, barriers_done_ = 0;
  llvm::GlobalVariable* reduced_smem_ = nullptr;  // every row's reductions (coalesced stores)
  std::map<const ENode*, int64_t> reduced_index_;
  std::vector<const ENode*> reductions_;  // the kernel's, in evaluation order
  std::vector<llvm::Value*> outer_idx_;
  int64_t row_chunks_ = 0;
  bool registers_ = true;
  bool unrolled_ = true;
  int chunk_unroll_ = 1;  // where not unrolled_: the chunk loops' unroll count
  std::vector<Chunk> chunks_;
  std::map<const ENode*, llvm::Value*> reduced_;
  std::map<std::pair<const ENode*, double>, std::pair<llvm::Value*, llvm::Value*>> stats_;
  llvm::GlobalVariable* row_smem_ = nullptr;
  int64_t buffer_bytes_ = 0;          // one fill buffer's bytes
  llvm::Value* buf_base_ = nullptr;   // byte offset of the buffer smemAddr addresses
  std::map<Leaf, int64_t> smem_offset_;
  std::set<Leaf> filled_, pass_loaded_;
  std::map<const ENode*, bool> invariant_;
};

}  // namespace loom::codegen::norm_detail
