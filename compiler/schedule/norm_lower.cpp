#include "compiler/schedule/norm_lower.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include <fmt/format.h>

#include "compiler/kir/builder.h"
#include "compiler/kir/welford.h"
#include "ir/error.h"

namespace loom::schedule {

namespace {

using kir::ExprP;
using kir::Type;
using lower::ENode;
using lower::Leaf;

int64_t extentOf(const TensorDesc& d) {
  int64_t e = 1;
  for (size_t i = 0; i < d.shape.size(); ++i) {
    if (d.shape[i] == 0) return 0;
    e += (d.shape[i] - 1) * std::abs(d.strides[i]);
  }
  return e;
}

ExprP c(int64_t v) { return kir::intConst(v); }

// One chunk of `vec` neighbouring elements of a row: its coordinates, whether it is inside
// the row, and the values of the expression's nodes evaluated there.
struct Chunk {
  std::vector<ExprP> idx;  // outer coords ++ reduced coords (innermost * vec)
  ExprP valid;             // a predicate
  ExprP slot;              // its place in the row's copy in shared memory
  bool global = false;     // read from global memory even where the row is on chip
  ExprP r_sub;             // another row of the block (whole-line fills and stores): i32
  std::map<const ENode*, ExprP> memo;
};

using StepFn = std::function<std::vector<ExprP>(Chunk&, const std::vector<ExprP>&)>;

class NormLowering {
 public:
  NormLowering(const ir::Fusion& f, const NormKernel& k, const Tuning& tune, kir::Kernel& out)
      : f_(f), k_(k), tune_(tune), out_(out) {}

  void run() {
    const int T = k_.threads_per_row;
    b_.spread("tid", kir::Mapping::Threads, k_.block, [&](const ExprP& tid) { threads(tid); });
    out_.body = b_.take();
  }

 private:
  // What every thread of a block does: its place in its row, then its block's rows.
  void threads(const ExprP& tid) {
    const int T = k_.threads_per_row;
    tid_ = tid;
    t_in_row_ = b_.bindAs("t_in_row", kir::convert(b_.urem(tid, kir::i32Const(T)), Type::idx()));
    row_in_block_ = b_.bindAs("row_in_block", kir::index(kir::IndexOp::Div, tid, kir::i32Const(T)));
    lane_ = b_.bindAs("lane", kir::index(kir::IndexOp::Rem, tid, kir::i32Const(32)));
    b_.spread("blk", kir::Mapping::Blocks, k_.grid, [&](const ExprP& blk) { blocks(blk); });
  }

  // What every block does with its rows.
  void blocks(const ExprP& blk) {
    const int T = k_.threads_per_row;
    ExprP block = b_.bindAs("block", kir::convert(blk, Type::idx()));
    vt_ = t_in_row_;
    if (k_.split > 1) {
      // A row split over `split` blocks (a cluster's consecutive blocks along x): block `rank`
      // takes every split-th run of T chunks.
      rank_ = b_.bindAs("rank", kir::index(kir::IndexOp::Rem, block, c(k_.split)));
      block = b_.bindAs("block_set", kir::index(kir::IndexOp::Div, block, c(k_.split)));
      vt_ = b_.bindAs("t_in_split", kir::add(kir::mul(rank_, c(T)), t_in_row_));
    }
    row_chunks_ = k_.rowElems() / k_.vec;
    registers_ = k_.registers && k_.chunks * k_.vec <= 128;
    // Every chunk unrolled (all loads up front) only while the row stays in registers; rows
    // held in shared memory loop, unrolled by 4, or wholly (up to 8 chunks) where two loads or
    // more stream from global memory per element each pass.
    unrolled_ = registers_;
    chunk_unroll_ = 1;
    if (!k_.grid_sync && k_.cluster == 1 && !k_.thread_fill && !k_.rowTier() && !k_.smem_leaves.empty()) {
      chunk_unroll_ = 4;
      int streamed = 0;
      for (const auto& [leaf, access] : k_.load_access)
        streamed += access == kir::Access::Vector &&
                    std::find(k_.smem_leaves.begin(), k_.smem_leaves.end(), leaf) == k_.smem_leaves.end();
      if (streamed >= 2 && k_.chunks <= 8) chunk_unroll_ = k_.chunks;
    }
    if (tune_.chunk_unroll) chunk_unroll_ = *tune_.chunk_unroll;
    if (k_.smem_bytes > 0) {
      out_.buffers.push_back({"loom_row_smem", "loom_row_smem", kir::Place::SmemDyn, DType::F32, k_.smem_bytes, 16});
      int64_t off = 0;
      for (const auto& l : k_.smem_leaves) {
        smem_offset_[l] = off;
        const int64_t elems = k_.async_fill ? int64_t{k_.rows_per_block} * k_.chunks * k_.threads_per_row * k_.vec
                                            : k_.rowElems();
        const int64_t bytes = elems * dtypeBytes(f_.inputs()[static_cast<size_t>(l.input)]->dtype());
        off += (bytes + 15) / 16 * 16;
      }
    }
    std::vector<lower::EPtr> roots;
    for (const auto& st : k_.stores) roots.push_back(st.value);
    lower::visitPostOrder(roots, [&](const ENode& n) {
      if (n.kind == ENode::Kind::Reduce) reductions_.push_back(&n);
    });
    LOOM_ASSERT(k_.split == k_.cluster, "rows split over {} blocks outside a cluster", k_.split);
    rowsAt(b_.bindAs("first_row", kir::mul(block, c(k_.rows_per_block))));
  }

  void rowsAt(const ExprP& first_row) {
    first_row_ = first_row;
    ExprP row = b_.add(first_row, b_.convert(row_in_block_, Type::idx()));
    row_valid_ = b_.bindAs("row_valid", kir::index(kir::IndexOp::Ult, row, c(k_.rows())));
    row = b_.bindAs("row", kir::select(row_valid_, row, c(k_.rows() - 1)));
    outer_idx_ = unravel(row, k_.outer_shape, 1);
    if (unrolled_)
      for (int i = 0; i < k_.chunks; ++i) chunks_.push_back(chunkAt(c(i)));
    if (k_.async_fill) asyncFill();
    for (const ENode* r : reductions_) reduce(*r);
    publishReductions();
    // No block of a cluster may leave while another still reads its shared memory: arrive
    // after the last reduction, wait before returning (the stores run in between). Relaxed
    // only where the remote reads it guards are complete (read after a block barrier).
    if (k_.cluster > 1)
      b_.emit(kir::barrier(coalescedStores() ? kir::Barrier::ClusterArriveRelaxed : kir::Barrier::ClusterArrive));
    storeAll();
    if (k_.cluster > 1) b_.emit(kir::barrier(kir::Barrier::ClusterWait));
  }

  std::vector<ExprP> unravel(const ExprP& i, const std::vector<int64_t>& shape, int vec) {
    std::vector<ExprP> idx(shape.size());
    ExprP q = i;
    for (size_t d = shape.size(); d-- > 0;) {
      const int64_t e = d + 1 == shape.size() ? shape[d] / vec : shape[d];
      idx[d] = d == 0 ? q : b_.urem(q, c(e));
      if (d + 1 == shape.size() && vec > 1) idx[d] = b_.mul(idx[d], c(vec));
      if (d > 0) q = b_.udiv(q, c(e));
    }
    return idx;
  }

  // Chunk k of thread t's row at outer coordinates `outer`: chunk t + k * T of the row, clamped
  // into it.
  Chunk chunkOf(std::vector<ExprP> outer, const ExprP& t, const ExprP& k) {
    Chunk ch;
    ExprP vt = k_.split > 1 ? b_.add(b_.mul(rank_, c(k_.threads_per_row)), t) : t;
    ExprP ci = b_.add(vt, b_.mul(k, c(int64_t{k_.threads_per_row} * k_.split)));
    ch.valid = b_.op(kir::IndexOp::Ult, ci, c(row_chunks_));
    ci = b_.select(ch.valid, ci, c(row_chunks_ - 1));
    ch.slot = ci;
    ch.idx = std::move(outer);
    auto red = unravel(ci, k_.red_shape, k_.vec);
    ch.idx.insert(ch.idx.end(), red.begin(), red.end());
    return ch;
  }

  // The thread's chunk k of its row; filled by cp.async, the block's copy holds it at slot
  // t + k * T.
  Chunk chunkAt(const ExprP& k) {
    Chunk ch = chunkOf(outer_idx_, t_in_row_, k);
    if (k_.async_fill) ch.slot = b_.add(t_in_row_, b_.mul(k, c(k_.threads_per_row)));
    return ch;
  }

  // The m-th of the thread's units of the block's rows for whole-line accesses: unit
  // u = tid + m * block is chunk c_in of row r_sub at position `rest` (thread fill: the thread's
  // own chunk m).
  Chunk unitChunk(const ExprP& m, const ExprP& first_row) {
    if (k_.thread_fill) return chunkAt(m);
    const int L = k_.rows_per_block, T = k_.threads_per_row;
    const int64_t q = k_.red_shape.back() / k_.vec;
    ExprP t = b_.convert(tid_, Type::idx());
    ExprP slot = b_.add(t, b_.mul(m, c(int64_t{L} * T)));
    ExprP r_sub = c(0);
    if (L > 1) {
      LOOM_ASSERT(T % q == 0, "{} threads per row, {} chunks per position", T, q);
      ExprP c_in = b_.urem(t, c(q));
      r_sub = b_.urem(b_.udiv(t, c(q)), c(L));
      slot = b_.add(b_.mul(b_.add(b_.udiv(t, c(q * L)), b_.mul(m, c(T / q))), c(q)), c_in);
    }
    ExprP row = b_.add(first_row, r_sub);
    ExprP row_ok = b_.op(kir::IndexOp::Ult, row, c(k_.rows()));
    // (The chunk's arguments in the order the emitter computed them.)
    ExprP k = b_.udiv(slot, c(T));
    ExprP tr = b_.urem(slot, c(T));
    std::vector<ExprP> outer = unravel(b_.select(row_ok, row, c(k_.rows() - 1)), k_.outer_shape, 1);
    Chunk ch = chunkOf(std::move(outer), tr, k);
    ch.valid = b_.op(kir::IndexOp::And, row_ok, ch.valid);
    ch.slot = slot;
    ch.r_sub = b_.convert(r_sub, Type::i32());
    return ch;
  }

  int64_t unitTrips() const { return k_.chunks; }

  // For values constant along the row: its reduced coordinates 0.
  Chunk rowChunk() {
    Chunk ch;
    ch.valid = kir::predConst(true);
    ch.slot = c(0);
    ch.global = true;
    ch.idx = outer_idx_;
    for (size_t i = 0; i < k_.red_shape.size(); ++i) ch.idx.push_back(c(0));
    return ch;
  }

  static ExprP offset(int64_t base, const std::vector<int64_t>& strides, const std::vector<ExprP>& idx) {
    ExprP o = c(base);
    for (size_t d = 0; d < strides.size(); ++d)
      if (strides[d] != 0) o = kir::add(o, kir::mul(idx[d], c(strides[d])));
    return o;
  }

  kir::Cache cache() const {
    const bool noalias = std::none_of(k_.output_alias.begin(), k_.output_alias.end(), [](int a) { return a >= 0; });
    return noalias ? kir::Cache::Invariant : kir::Cache::Default;
  }

  static bool perRow(const ENode& n) {
    if (n.kind != ENode::Kind::Op) return n.kind != ENode::Kind::Load;
    return std::all_of(n.args.begin(), n.args.end(), [](const lower::EPtr& a) { return perRow(*a); });
  }

  bool halfOutputs() const {
    return std::all_of(k_.stores.begin(), k_.stores.end(),
                       [](const auto& s) { return s.dtype == DType::F16 || s.dtype == DType::BF16; });
  }

  ExprP eval(const ENode& n, Chunk& ch) {
    auto it = ch.memo.find(&n);
    if (it != ch.memo.end()) return it->second;
    const int v = k_.vec;
    ExprP out;
    switch (n.kind) {
      case ENode::Kind::Load: out = load(n.leaf, n.dtype, ch); break;
      case ENode::Kind::Const: out = kir::dataConst(n.dtype, n.value, v); break;
      case ENode::Kind::Reduce:
        out = reduced_.at(&n);
        if (ch.r_sub) out = b_.bind(kir::bufLoad(reduced_buf_, n.dtype, reducedSlot(&n, ch.r_sub)));  // another row's
        break;
      case ENode::Kind::Op: {
        std::vector<ExprP> args;
        for (const auto& a : n.args) args.push_back(eval(*a, ch));
        if (n.op == ir::OpKind::Exp && n.dtype == DType::F32 && halfOutputs())
          out = b_.bind(kir::intrinsic(kir::Intrinsic::ExpApprox, Type::data(DType::F32, v), args));
        else if (n.op == ir::OpKind::Div && n.dtype == DType::F32 && perRow(*n.args[1]))
          // By a value of the row (softmax's sum): a reciprocal and a multiply.
          out = b_.bind(kir::intrinsic(kir::Intrinsic::MulRcp, Type::data(DType::F32, v), args));
        else
          out = b_.bind(kir::math(n.op, n.dtype, args, v));
        break;
      }
    }
    return ch.memo[&n] = out;
  }

  ExprP loadGlobal(const Leaf& l, DType t, const Chunk& ch) {
    return b_.bind(kir::load(l.input, t, offset(l.offset, l.strides, ch.idx), k_.vec, k_.load_access.at(l),
                             l.strides.back(), cache()), "x");
  }

  // Byte of the chunk's piece of `l`'s copy of the row in shared memory (rows one after
  // another in the block).
  ExprP smemByte(const Leaf& l, DType t, const Chunk& ch) {
    const int64_t piece = int64_t{k_.vec} * dtypeBytes(t);
    const int L = k_.rows_per_block;
    const ExprP rib = ch.r_sub ? ch.r_sub : row_in_block_;
    ExprP slot = ch.slot;
    if (k_.async_fill && L > 1 && !k_.thread_fill) {
      // Swizzled: a warp of the whole-line fill and stores touches 32 / L neighbouring slots of
      // each of L rows, whose regions start on the same bank; XOR-ing the slot with
      // row * 32 / L (within its aligned 32) spreads them over every bank.
      ExprP r = kir::convert(rib, Type::idx());
      slot = kir::index(kir::IndexOp::Xor, slot,
                        kir::index(kir::IndexOp::And, kir::mul(r, c(32 / std::min(L, 32))), c(31)));
    }
    ExprP byte = kir::add(c(smem_offset_.at(l)), kir::mul(slot, c(piece)));
    if (L > 1)
      byte = kir::add(byte, kir::mul(kir::convert(rib, Type::idx()), c(int64_t{k_.chunks} * k_.threads_per_row * piece)));
    return byte;
  }

  // Copies the block's chunks of every held load into shared memory with cp.async, all in
  // flight at once, and waits for them; several rows a block: whole lines, then a barrier.
  void asyncFill() {
    bool copied = false;
    for (const auto& l : k_.smem_leaves) {
      const DType t = f_.inputs()[static_cast<size_t>(l.input)]->dtype();
      const int piece = k_.fillPieceBytes(t);
      LOOM_ASSERT(piece == 4 || piece == 8 || piece == 16, "cp.async of {} bytes", piece);
      b_.repeat("m", unitTrips(), {}, [&](const ExprP& m, const std::vector<ExprP>& carried) {
        Chunk ch = unitChunk(m, first_row_);
        b_.emit(kir::asyncCopy("loom_row_smem", smemByte(l, t, ch), l.input, t,
                               offset(l.offset, l.strides, ch.idx), piece));
        return carried;
      });
      filled_.insert(l);
      copied = true;
    }
    if (copied) b_.emit(kir::asyncWaitAll());
    if (k_.rows_per_block > 1 && !k_.thread_fill) b_.emit(kir::barrier(kir::Barrier::Block));
  }

  // Several rows a block storing by whole lines: each thread writes chunks of other rows, so
  // every row's reductions go to shared memory for the block.
  bool coalescedStores() const { return k_.async_fill && k_.rows_per_block > 1 && !k_.thread_fill; }

  ExprP reducedSlot(const ENode* r, const ExprP& rib) {
    return kir::add(kir::mul(kir::convert(rib, Type::idx()), c(static_cast<int64_t>(reduced_index_.size()))),
                    c(reduced_index_.at(r)));
  }

  void publishReductions() {
    if (!coalescedStores() || reductions_.empty()) return;
    const int64_t R = static_cast<int64_t>(reductions_.size());
    out_.buffers.push_back({kir::bufferName(out_, "reduced_smem"), "reduced_smem", kir::Place::Smem, DType::I64,
                            R * k_.rows_per_block, 8, true});
    reduced_buf_ = out_.buffers.back().name;
    for (int64_t j = 0; j < R; ++j) reduced_index_[reductions_[static_cast<size_t>(j)]] = j;
    b_.ifThen(b_.op(kir::IndexOp::Eq, t_in_row_, c(0)), "rpublish", [&] {
      for (const ENode* r : reductions_) b_.emit(kir::bufStore(reduced_buf_, reducedSlot(r, row_in_block_), reduced_.at(r)));
    });
    b_.emit(kir::barrier(kir::Barrier::Block));
  }

  // A held load: the first pass reads global memory and keeps what it read in shared memory
  // (each thread its own chunks), later passes read it back from there.
  ExprP load(const Leaf& l, DType t, const Chunk& ch) {
    if (!smem_offset_.count(l) || ch.global) return loadGlobal(l, t, ch);
    const int align = std::min(16, k_.vec * dtypeBytes(t));
    if (filled_.count(l)) return b_.bind(kir::bytesLoad("loom_row_smem", t, k_.vec, smemByte(l, t, ch), align), "s");
    ExprP v = loadGlobal(l, t, ch);
    b_.emit(kir::bytesStore("loom_row_smem", smemByte(l, t, ch), v, align));
    pass_loaded_.insert(l);
    return v;
  }

  // One pass over the thread's chunks: unrolled over the chunks held in registers, else a loop
  // that derives each chunk afresh. `step` folds a chunk into the carried values.
  std::vector<ExprP> forEachChunk(std::vector<ExprP> carried, const StepFn& step) {
    if (unrolled_) {
      for (auto& ch : chunks_) carried = step(ch, carried);
    } else {
      carried = b_.repeat("k", k_.chunks, carried, [&](const ExprP& k, const std::vector<ExprP>& in) {
        Chunk ch = chunkAt(k);
        return step(ch, in);
      }, chunk_unroll_);
    }
    filled_.insert(pass_loaded_.begin(), pass_loaded_.end());
    pass_loaded_.clear();
    return carried;
  }

  // A chunk's lanes of the reduced operand, in the accumulator's dtype.
  ExprP values(const ENode& x, DType acc, Chunk& ch) {
    ExprP v = eval(x, ch);
    return x.dtype == acc ? v : b_.bind(kir::math(ir::OpKind::Cast, acc, {v}, k_.vec));
  }

  static ExprP identity(kir::Combine cb, DType acc) {
    if (cb == kir::Combine::Sum) return kir::dataConst(acc, 0, 1);
    if (isFloat(acc)) return kir::dataConst(acc, cb == kir::Combine::Max ? -INFINITY : INFINITY, 1);
    const double big = acc == DType::I64 ? 9223372036854775807.0 : 2147483647.0;
    return kir::dataConst(acc, cb == kir::Combine::Max ? -big - 1 : big, 1);
  }

  static ir::OpKind opOf(kir::Combine cb) {
    return cb == kir::Combine::Sum ? ir::OpKind::Add : cb == kir::Combine::Max ? ir::OpKind::Max : ir::OpKind::Min;
  }

  // The row's total of f(chunk) over every valid lane: each chunk's lanes folded, the chunks
  // accumulated by the thread, then combined across the row's threads.
  ExprP rowReduce(kir::Combine cb, DType acc, const std::function<ExprP(Chunk&)>& f) {
    const auto fold = cb == kir::Combine::Sum ? kir::Intrinsic::FoldSum
                      : cb == kir::Combine::Max ? kir::Intrinsic::FoldMax : kir::Intrinsic::FoldMin;
    ExprP partial = forEachChunk({identity(cb, acc)}, [&](Chunk& ch, const std::vector<ExprP>& carried) {
      ExprP vals = f(ch);
      ExprP local = b_.bind(kir::intrinsic(fold, Type::data(acc, 1), {vals, identity(cb, acc)}));
      ExprP part = b_.select(ch.valid, local, identity(cb, acc));
      return std::vector<ExprP>{b_.math(opOf(cb), acc, {carried[0], part})};
    })[0];
    const std::string name = fmt::format("row_{}{}", kir::combineName(cb), next_combine_++);
    b_.emit(kir::combine(name, partial, {cb, k_.red_atoms, k_.threads_per_row, k_.rows_per_block, "t_in_row",
                                         "row_in_block", "lane", k_.cluster}));
    return kir::var(name, Type::data(acc, 1));
  }

  // The mean of a row summed around its first element, so that 1e4 + U(0,1) keeps its digits.
  ExprP shiftedMean(const ENode& x, DType acc, double n) {
    // A row whole in the block's shared memory behind a barrier has its first element there;
    // with a thread fill, the row's first thread copied it: a shuffle.
    Chunk first = k_.thread_fill ? chunkAt(c(0)) : rowChunk();
    if (!k_.thread_fill) first.global = !(k_.async_fill && k_.split == 1 && k_.rows_per_block > 1);
    ExprP x0 = b_.bind(kir::intrinsic(kir::Intrinsic::First, Type::data(x.dtype, 1), {eval(x, first)}));
    if (x.dtype != acc) x0 = b_.bind(kir::math(ir::OpKind::Cast, acc, {x0}));
    if (k_.thread_fill) {
      const int T = k_.threads_per_row;
      ExprP src = b_.mul(b_.udiv(lane_, kir::i32Const(T)), kir::i32Const(T));
      x0 = b_.bind(kir::intrinsic(kir::Intrinsic::ShflIdx, x0->type, {x0, src}));
    }
    ExprP sum = rowReduce(kir::Combine::Sum, acc, [&](Chunk& ch) {
      return b_.bind(kir::math(ir::OpKind::Sub, acc, {values(x, acc, ch), x0}, k_.vec));
    });
    ExprP q = b_.math(ir::OpKind::Div, acc, {sum, kir::dataConst(acc, n, 1)});
    return b_.bindAs(fmt::format("mean{}", next_mean_++), kir::math(ir::OpKind::Add, acc, {x0, q}));
  }

  std::pair<ExprP, ExprP> welford(const ENode& x, DType acc);
  void reduce(const ENode& r);
  void storeAll();
  bool hoistInvariant(const ENode& n, Chunk& ch);
  void storeChunk(const NormKernel::Store& s, const ExprP& value, const Chunk& ch, const ExprP& pred);

  const ir::Fusion& f_;
  const NormKernel& k_;
  const Tuning& tune_;
  kir::Kernel& out_;
  kir::Builder b_;
  ExprP tid_, t_in_row_, row_in_block_, lane_, vt_, row_valid_, first_row_, rank_;
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
  std::vector<const ENode*> reductions_;
  std::map<const ENode*, ExprP> reduced_;
  std::map<std::pair<const ENode*, double>, std::pair<ExprP, ExprP>> stats_;
  int next_combine_ = 0, next_mean_ = 0;
};

// The row's (mean, M2) in one reduction: each chunk's exact two-pass statistics over its lanes
// merged into the thread's (Chan), then the row's threads merged.
std::pair<ExprP, ExprP> NormLowering::welford(const ENode& x, DType acc) {
  const ExprP zero = kir::dataConst(acc, 0, 1);
  auto folded = forEachChunk({zero, zero, zero}, [&](Chunk& ch, const std::vector<ExprP>& carried) {
    ExprP v = values(x, acc, ch);
    ExprP s = b_.bind(kir::intrinsic(kir::Intrinsic::FoldSum, Type::data(acc, 1), {v, zero}));
    ExprP cnt = kir::dataConst(acc, k_.vec, 1);
    ExprP mean = b_.math(ir::OpKind::Div, acc, {s, cnt});
    ExprP m2 = b_.bind(kir::intrinsic(kir::Intrinsic::FoldSqDiff, Type::data(acc, 1), {v, mean, zero}));
    ExprP n = b_.select(ch.valid, cnt, zero);
    ExprP mn = b_.select(ch.valid, mean, zero);
    ExprP m2v = b_.select(ch.valid, m2, zero);
    kir::Stats next = kir::chanMerge(b_, acc, {carried[0], carried[1], carried[2]}, {n, mn, m2v});
    return std::vector<ExprP>{next.n, next.mean, next.m2};
  });
  const std::string id = std::to_string(next_combine_++);
  std::vector<std::string> names = {"row_n" + id, "row_mean" + id, "row_m2" + id};
  b_.emit(kir::welford(names, folded, {kir::Combine::Sum, k_.red_atoms, k_.threads_per_row, k_.rows_per_block,
                                       "t_in_row", "row_in_block", "lane"}));
  return {kir::var(names[1], Type::data(acc, 1)), kir::var(names[2], Type::data(acc, 1))};
}

void NormLowering::reduce(const ENode& r) {
  if (reduced_.count(&r)) return;
  const ENode& x = *r.args[0];
  const DType acc = computeDType(r.dtype);
  const double n = static_cast<double>(k_.rowElems());
  auto vals = [&](Chunk& ch) { return values(x, acc, ch); };
  ExprP result;
  switch (r.op) {
    case ir::OpKind::Sum: result = rowReduce(kir::Combine::Sum, acc, vals); break;
    case ir::OpKind::ReduceMax: result = rowReduce(kir::Combine::Max, acc, vals); break;
    case ir::OpKind::ReduceMin: result = rowReduce(kir::Combine::Min, acc, vals); break;
    case ir::OpKind::Mean: result = shiftedMean(x, acc, n); break;
    case ir::OpKind::VarMean: {
      // Two passes over the row in registers: the mean, then squared deviations from it.
      auto key = std::make_pair(&x, r.correction);
      auto it = stats_.find(key);
      if (it == stats_.end() && !registers_ && !k_.async_fill) {
        // Streaming rows: one Welford pass instead of two reads for the statistics.
        auto [mean, m2] = welford(x, acc);
        ExprP var = b_.math(ir::OpKind::Div, acc, {m2, kir::dataConst(acc, n - r.correction, 1)});
        it = stats_.emplace(key, std::make_pair(var, mean)).first;
      }
      if (it == stats_.end()) {
        ExprP mean = shiftedMean(x, acc, n);
        ExprP m2 = rowReduce(kir::Combine::Sum, acc, [&](Chunk& ch) {
          return b_.bind(kir::intrinsic(kir::Intrinsic::SqDiff, Type::data(acc, k_.vec), {vals(ch), mean}));
        });
        ExprP var = b_.math(ir::OpKind::Div, acc, {m2, kir::dataConst(acc, n - r.correction, 1)});
        it = stats_.emplace(key, std::make_pair(var, mean)).first;
      }
      result = r.out_index == 0 ? it->second.first : it->second.second;
      break;
    }
    default: LOOM_ASSERT(false, "normalization lowering: reduction `{}`", ir::opName(r.op));
  }
  reduced_[&r] = r.dtype == acc ? result : b_.bind(kir::math(ir::OpKind::Cast, r.dtype, {result}));
}

// Evaluates in `ch` the parts of `n` that are the same for every unit of the thread: constants,
// reductions, and loads along no reduced axis but the innermost. Whether `n` is such a part.
bool NormLowering::hoistInvariant(const ENode& n, Chunk& ch) {
  auto it = invariant_.find(&n);
  if (it != invariant_.end()) return it->second;
  bool inv = true;
  switch (n.kind) {
    case ENode::Kind::Const:
    case ENode::Kind::Reduce: break;
    case ENode::Kind::Load:
      for (size_t d = k_.outer_shape.size(); d + 1 < n.leaf.strides.size(); ++d) inv = inv && n.leaf.strides[d] == 0;
      inv = inv && !smem_offset_.count(n.leaf);
      break;
    case ENode::Kind::Op:
      for (const auto& a : n.args) inv = hoistInvariant(*a, ch) && inv;
      break;
  }
  if (inv) eval(n, ch);
  return invariant_[&n] = inv;
}

void NormLowering::storeChunk(const NormKernel::Store& s, const ExprP& value, const Chunk& ch, const ExprP& pred) {
  ExprP off = b_.bind(offset(s.offset, s.strides, ch.idx), "off");
  const kir::Access a = s.access == kir::Access::Splat ? kir::Access::Gather : s.access;
  b_.ifThen(pred, "store", [&] { b_.emit(kir::store(k_.num_inputs + s.output, off, value, a, s.strides.back())); });
}

void NormLowering::storeAll() {
  Chunk row = rowChunk();
  for (const auto& s : k_.stores) {
    if (!s.row_only) continue;
    // One thread of the row writes: an in-place update (batch norm's running statistics)
    // must not be read by one thread after another has written it.
    ExprP one = b_.bind(kir::intrinsic(kir::Intrinsic::First, Type::data(s.dtype, 1), {eval(*s.value, row)}));
    ExprP first = b_.op(kir::IndexOp::Eq, vt_, c(0));
    storeChunk(s, one, row, b_.op(kir::IndexOp::And, row_valid_, first));
  }
  if (coalescedStores()) {
    // Whole lines: the units of the fill, each with its own row's reductions. What depends on
    // nothing but the thread's place (the row's statistics, a per-channel weight) is evaluated
    // once, before the loop, unrolled by 4 so that a thread has several units' loads in flight.
    Chunk first = unitChunk(c(0), first_row_);
    for (const auto& s : k_.stores)
      if (!s.row_only) hoistInvariant(*s.value, first);
    const int unroll = tune_.store_unroll ? *tune_.store_unroll : k_.cluster > 1 ? 1 : 4;
    b_.repeat("m", unitTrips(), {}, [&](const ExprP& m, const std::vector<ExprP>& carried) {
      Chunk ch = unitChunk(m, first_row_);
      ch.memo = first.memo;
      for (const auto& s : k_.stores) {
        if (s.row_only) continue;
        ExprP v = eval(*s.value, ch);
        if (v->type.lanes != k_.vec) v = b_.bind(kir::intrinsic(kir::Intrinsic::Splat, Type::data(s.dtype, k_.vec), {v}));
        storeChunk(s, v, ch, ch.valid);
      }
      return carried;
    }, unroll);
    return;
  }
  forEachChunk({}, [&](Chunk& ch, const std::vector<ExprP>& carried) {
    for (const auto& s : k_.stores) {
      if (s.row_only) continue;
      ExprP v = eval(*s.value, ch);
      if (v->type.lanes != k_.vec) v = b_.bind(kir::intrinsic(kir::Intrinsic::Splat, Type::data(s.dtype, k_.vec), {v}));
      storeChunk(s, v, ch, b_.op(kir::IndexOp::And, row_valid_, ch.valid));
    }
    return carried;
  });
}

}  // namespace

std::string normKirGap(const NormKernel& k) {
  if (k.grid_sync) return "rows split over the grid";
  if (k.rowTier()) return "vectors of rows";
  return "";
}

std::optional<kir::Kernel> lowerNormalization(const ir::Fusion& f, const NormKernel& k,
                                              const std::vector<TensorDesc>& inputs, const Tuning& tune) {
  if (!normKirGap(k).empty()) return std::nullopt;
  kir::Kernel out;
  out.name = k.name;
  out.scheduler = "normalization";
  for (size_t i = 0; i < inputs.size(); ++i)
    out.params.push_back({f.inputs()[i]->name(), inputs[i].dtype, false, extentOf(inputs[i])});
  for (size_t i = 0; i < k.outputs.size(); ++i)
    out.params.push_back({f.outputs()[i].name, k.outputs[i].dtype, true, extentOf(k.outputs[i])});
  out.noalias = std::none_of(k.output_alias.begin(), k.output_alias.end(), [](int a) { return a >= 0; });
  out.index_bits = k.index64 ? 64 : 32;
  out.launch = {k.grid, k.block};
  out.min_blocks_per_sm = k.min_blocks_per_sm;
  NormLowering(f, k, tune, out).run();
  return out;
}

}  // namespace loom::schedule
