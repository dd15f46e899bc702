#pragma once
// The normalization lowering's state and steps (pass `norm-rows`, schedule/normalization/lower.h): its kernel
// structure, chunks, fills and stores in schedule/normalization/lower.cpp, its reductions and statistics in
// norm_lower_reduce.cpp. Each step writes kernel IR the way the normalization emitter of
// compiler/codegen writes LLVM IR for the same schedule, so that both give the same kernel.
#include <cstdlib>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/kir/builder.h"
#include "compiler/kir/welford.h"
#include "compiler/schedule/row_kernel.h"
#include "compiler/tuning.h"

namespace loom::schedule {

// Pass `norm-rows`: the normalization schedule as kernel IR, every tier: each thread's chunks of
// its row (in registers, or copied to shared memory by cp.async, by its own threads, by whole
// lines, or by vectors of rows), every reduction a fold of the thread's lanes and chunks and
// then a combine across the row's threads (and a cluster's or the grid's blocks), the outputs
// stored from where the row is held.
kir::Kernel lowerNormalization(const ir::Fusion& f, const RowKernel& k, const std::vector<TensorDesc>& inputs,
                               const Tuning& tune);

}  // namespace loom::schedule

namespace loom::schedule::norm_lower_detail {

using kir::ExprP;
using kir::Type;
using lower::ENode;
using lower::Leaf;

inline ExprP c(int64_t v) { return kir::intConst(v); }

// One chunk of `vec` neighbouring elements of a row: its coordinates, whether it is inside
// the row, and the values of the expression's nodes evaluated there.
struct Chunk {
  std::vector<ExprP> idx;  // outer coords ++ reduced coords (innermost * vec)
  ExprP valid;             // a predicate
  ExprP slot;              // its place in the row's copy in shared memory
  bool global = false;     // read from global memory even where the row is on chip
  ExprP r_sub;             // another row of the block (whole-line fills and stores): i32
  bool row_lanes = false;  // lanes are `row_vec` neighbouring rows from r_sub on
  int lanes = 0;           // 1: one element of a peeled row's edge (0: the kernel's lanes)
  std::map<const ENode*, ExprP> memo;
};

using StepFn = std::function<std::vector<ExprP>(Chunk&, const std::vector<ExprP>&)>;

class NormLowering {
 public:
  NormLowering(const ir::Fusion& f, const RowKernel& k, const Tuning& tune, kir::Kernel& out)
      : f_(f), k_(k), tune_(tune), out_(out) {}

  void run();

 private:
  // The row count, and the last row: constants, or of the kernel's size parameter.
  ExprP rows() const;
  ExprP lastRow(int64_t back = 1) const;
  // What every thread of a block does: its place in its row, then its block's rows.
  void threads(const ExprP& tid);

  // What every block does with its rows.
  void blocks(const ExprP& blk);
  void gridSets(const ExprP& group);
  kir::GridLevel gridLevel(int values = 1);
  void rowsAt(const ExprP& first_row, const std::vector<ExprP>& ahead = {});

  // Kernels with column reductions (schedule/normalization/lower_columns.cpp): the block's row sets, each thread
  // adding its chunks' values of every column reduction; the partials to the workspace; a grid
  // barrier; the combine of a tile of columns and its stores.
  void columnRows(const ExprP& blk);
  // The row data a column kernel's next row set reads (loads along the rows and the row), and
  // their chunks' values loaded for the row set at `first_row` (chunk-major, then these loads),
  // which rowsAt's `ahead` takes in place of its own loads.
  std::vector<std::pair<Leaf, DType>> prefetchedLoads() const;
  std::vector<ExprP> loadRowSet(const ExprP& first_row);
  ExprP columnSlot(size_t col, const ExprP& partial, const ExprP& chunk);
  void publishColumns(const ExprP& blk, const std::vector<ExprP>& parts);
  ExprP smemPartialByte(size_t col, const ExprP& ci, int piece);
  ExprP loadSmemPartial(size_t col, const ExprP& ci);
  void storeSmemPartial(size_t col, const ExprP& ci, const ExprP& v);
  void foldSmemColumns(Chunk& ch);
  void columnCombine(const ExprP& tile);
  DType accOf(const ENode* r) const { return computeDType(r->dtype); }
  ExprP identityOf(const ENode* r, int lanes) const {
    return kir::combineIdentity(kir::combineOf(r->op), accOf(r), lanes);
  }
  // `a` and `b` combined by column reduction `r`'s combine, lane by lane.
  ExprP foldColumn(const ENode* r, const ExprP& a, const ExprP& b, int lanes);
  // The widest accumulator of the column reductions: their shared-memory slots' element.
  DType widestColumnAcc() const;
  // Past the last grid barrier on the counter at `counter` (its exit counter 64 bytes on), each
  // block's leader counts itself out of `blocks`; the last one zeroes both counters.
  void exitGrid(const ExprP& counter, int64_t blocks);

  // Chunk k of thread t's row at outer coordinates `outer`: chunk t + k * T of the row, clamped
  // into it.
  Chunk chunkOf(std::vector<ExprP> outer, const ExprP& t, const ExprP& k);

  // The thread's chunk k of its row; filled by cp.async, the block's copy holds it at slot
  // t + k * T.
  Chunk chunkAt(const ExprP& k);

  // The m-th of the thread's units of the block's rows for whole-line accesses: unit
  // u = tid + m * block is chunk c_in of row r_sub at position `rest` (thread fill: the thread's
  // own chunk m).
  Chunk unitChunk(const ExprP& m, const ExprP& first_row);
  int64_t unitTrips() const;
  // Several rows a block whose chunks at a position (q) do not divide a row's threads: each
  // trip takes T / q whole positions of each row, the threads past them idle.
  bool raggedUnits() const;
  int lanesOf(const Chunk& ch) const { return ch.lanes ? ch.lanes : ch.row_lanes ? k_.row_vec : k_.vec; }
  // Elements between neighbouring lanes of `strides` in `ch`: across rows or along the row.
  int64_t laneStride(const std::vector<int64_t>& strides, const Chunk& ch) const {
    return ch.row_lanes ? strides[k_.outer_shape.size() - 1] : strides.back();
  }
  // A peeled row (RowKernel::peel) at outer coordinates `outer`: the elements before its first
  // aligned one (its head).
  ExprP peelHead(const std::vector<ExprP>& outer);
  // The thread's element of its peeled row's edge: the row's head and the elements past its
  // last whole vector, one a thread of the row's first ones; read from global memory each pass.
  Chunk edgeChunk();
  // The row-vector tiers (schedule/normalization/lower_rows.cpp): units of the block's rows, their fill where a
  // piece is below cp.async's 4 bytes, and statistics read by vectors of rows.
  Chunk rowUnitChunk(const ExprP& m, const ExprP& first_row);
  Chunk rowPiece(const ExprP& p, const ExprP& first_row);
  void copyFill(const Leaf& l, DType t, const ExprP& first_row);
  bool statsByRowVectors() const;
  kir::Stats rowVectorStats(const ENode& x, DType acc);

  // For values constant along the row: its reduced coordinates 0.
  Chunk rowChunk();
  kir::Cache cache() const;
  static bool perRow(const ENode& n);
  bool halfOutputs() const;
  ExprP eval(const ENode& n, Chunk& ch);
  ExprP loadGlobal(const Leaf& l, DType t, const Chunk& ch);

  // Byte of the chunk's piece of `l`'s copy of the row in shared memory (rows one after
  // another in the block).
  ExprP smemByte(const Leaf& l, DType t, const Chunk& ch);

  // Copies the block's chunks of every held load into shared memory with cp.async, all in
  // flight at once, and waits for them; several rows a block: whole lines, then a barrier.

  void asyncFill();
  bool issueFill(const ExprP& first_row);  // whether it issued any cp.async
  bool prefetch() const { return k_.fill_buffers == 2; }

  // Several rows a block storing by whole lines: each thread writes chunks of other rows, so
  // every row's reductions go to shared memory for the block.
  bool coalescedStores() const;
  ExprP reducedSlot(const ENode* r, const ExprP& rib);
  void publishReductions();

  // A held load: the first pass reads global memory and keeps what it read in shared memory
  // (each thread its own chunks), later passes read it back from there.
  ExprP load(const Leaf& l, DType t, const Chunk& ch);

  // One pass over the thread's chunks: unrolled over the chunks held in registers, else a loop
  // that derives each chunk afresh. `step` folds a chunk into the carried values.
  std::vector<ExprP> forEachChunk(std::vector<ExprP> carried, const StepFn& step);

  // A chunk's lanes of the reduced operand, in the accumulator's dtype.
  ExprP values(const ENode& x, DType acc, Chunk& ch);

  // The row's total of f(chunk) over every valid lane: each chunk's lanes folded, the chunks
  // accumulated by the thread, then combined across the row's threads.
  ExprP rowReduce(kir::Combine cb, DType acc, const std::function<ExprP(Chunk&)>& f);
  // A thread's partial combined across its row (every thread of the row gets the total), and
  // how the row's threads combine.
  ExprP combineRow(kir::Combine cb, const ExprP& partial);
  kir::CombineSpec rowSpec(kir::Combine cb, int values = 1);
  // The chunk's position along the reduced axes `kept`, row-major.
  ExprP keptPosition(const std::vector<size_t>& kept, const Chunk& ch);
  // Sub-row reductions (RowKernel::sub_rows): their values (one per combination of the axes
  // they keep, in sub_values_), and their stores, one thread of the row each.
  void subRowReduce(const ENode& r);
  // The rows' reductions in launch order, independent sums, means and sub-row reductions
  // batched: one pass and one combine a batch (LOOM_NO_BATCHED_REDUCTIONS: one each).
  void reduceAll();
  bool batchable(const ENode& r) const;
  // reduceAll's order: batches of a row's independent sums, means and sub-row sums (one pass and
  // one combine each), the other reductions alone. The grid tier's barriers a set: one a batch
  // (one a variance).
  std::vector<std::vector<const ENode*>> reductionBatches() const;
  int gridBarriersPerSet() const;
  void lanePositions(const ENode& x, DType acc, Chunk& ch, std::vector<ExprP>::iterator slots, int64_t K,
                     kir::Combine cb);
  void reduceBatch(const std::vector<const ENode*>& batch);
  // Chunks of the thread in each position its batch's sub-row reductions keep, where they are
  // whole runs of its chunks in order (0: they are not).
  int64_t chunksPerSubRow(const std::vector<const ENode*>& batch) const;
  // forEachChunk over the thread's chunks [first, first + count), the passes' loads not yet
  // marked as held (the caller does, after its last range).
  std::vector<ExprP> forEachChunkIn(int64_t first, int64_t count, std::vector<ExprP> carried, const StepFn& step);
  // A mean's shift: the row's first element of `x` (0 where it is not finite).
  ExprP rowShift(const ENode& x, DType acc);
  void storeSubRows(const RowKernel::Store& s);

  // The mean of a row summed around its first element, so that 1e4 + U(0,1) keeps its digits.
  ExprP shiftedMean(const ENode& x, DType acc, double n);
  std::pair<ExprP, ExprP> welford(const ENode& x, DType acc);
  void reduce(const ENode& r);
  void storeAll();
  bool hoistInvariant(const ENode& n, Chunk& ch);
  void storeChunk(const RowKernel::Store& s, const ExprP& value, const Chunk& ch, const ExprP& pred);
  const ir::Fusion& f_;
  const RowKernel& k_;
  const Tuning& tune_;
  kir::Kernel& out_;
  kir::Builder b_;
  ExprP tid_, t_in_row_, row_in_block_, lane_, vt_, row_valid_, first_row_, rank_;
  bool every_row_ = false;  // every block's rows are the tensor's: no row guard (blocks())
  std::string reduced_buf_;
  std::map<const ENode*, int64_t> reduced_index_;
  std::map<const ENode*, bool> invariant_;
  bool registers_ = true, unrolled_ = true;
  int chunk_unroll_ = 1;
  std::map<Leaf, int64_t> smem_offset_;
  std::set<Leaf> filled_, pass_loaded_;
  std::vector<ExprP> outer_idx_;
  int64_t row_chunks_ = 0;
  std::vector<Chunk> chunks_;
  Chunk edge_;  // a peeled row's edge element, with chunks_
  std::vector<std::pair<Leaf, DType>> ahead_loads_;  // prefetchedLoads()
  std::vector<lower::EPtr> roots_;  // every store's value
  std::vector<const ENode*> reductions_, columns_;
  ExprP ws_;
  std::vector<int64_t> column_offset_;  // each column reduction's partials' first byte
  std::map<const ENode*, ExprP> reduced_;
  std::map<const ENode*, std::vector<ExprP>> sub_values_;
  std::map<std::pair<const ENode*, double>, std::pair<ExprP, ExprP>> stats_;
  int next_combine_ = 0, next_mean_ = 0;
  ExprP group_ws_, parity_, set_;
  ExprP buf_base_;            // byte offset of the fill buffer in use (two fill buffers)
  int64_t buffer_bytes_ = 0;  // one fill buffer's bytes
  int next_region_ = 0, barriers_per_set_ = 0, barriers_done_ = 0;

};

}  // namespace loom::schedule::norm_lower_detail
