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
  std::map<const ENode*, ExprP> memo;
};

using StepFn = std::function<std::vector<ExprP>(Chunk&, const std::vector<ExprP>&)>;

class NormLowering {
 public:
  NormLowering(const ir::Fusion& f, const NormKernel& k, const Tuning& tune, kir::Kernel& out)
      : f_(f), k_(k), tune_(tune), out_(out) {}

  void run() {
    const int T = k_.threads_per_row;
    ExprP tid = b_.bindAs("tid", kir::special(kir::Special::TidX));
    t_in_row_ = b_.bindAs("t_in_row", kir::convert(b_.urem(tid, kir::i32Const(T)), Type::idx()));
    row_in_block_ = b_.bindAs("row_in_block", kir::index(kir::IndexOp::Div, tid, kir::i32Const(T)));
    lane_ = b_.bindAs("lane", kir::index(kir::IndexOp::Rem, tid, kir::i32Const(32)));
    ExprP block = b_.bindAs("block", kir::convert(b_.bind(kir::special(kir::Special::CtaidX)), Type::idx()));
    vt_ = t_in_row_;
    row_chunks_ = k_.rowElems() / k_.vec;
    registers_ = k_.registers && k_.chunks * k_.vec <= 128;
    // Every chunk unrolled (all loads up front) only while the row stays in registers; rows
    // held in shared memory loop, unrolled by 4, or wholly (up to 8 chunks) where two loads or
    // more stream from global memory per element each pass.
    unrolled_ = registers_;
    chunk_unroll_ = 1;
    if (!k_.smem_leaves.empty()) {
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
        const int64_t bytes = k_.rowElems() * dtypeBytes(f_.inputs()[static_cast<size_t>(l.input)]->dtype());
        off += (bytes + 15) / 16 * 16;
      }
    }
    std::vector<lower::EPtr> roots;
    for (const auto& st : k_.stores) roots.push_back(st.value);
    lower::visitPostOrder(roots, [&](const ENode& n) {
      if (n.kind == ENode::Kind::Reduce) reductions_.push_back(&n);
    });
    rowsAt(b_.bindAs("first_row", kir::mul(block, c(k_.rows_per_block))));
    out_.body = b_.take();
  }

 private:
  void rowsAt(const ExprP& first_row) {
    ExprP row = b_.add(first_row, b_.convert(row_in_block_, Type::idx()));
    row_valid_ = b_.bindAs("row_valid", kir::index(kir::IndexOp::Ult, row, c(k_.rows())));
    row = b_.bindAs("row", kir::select(row_valid_, row, c(k_.rows() - 1)));
    outer_idx_ = unravel(row, k_.outer_shape, 1);
    if (unrolled_)
      for (int i = 0; i < k_.chunks; ++i) chunks_.push_back(chunkOf(c(i)));
    for (const ENode* r : reductions_) reduce(*r);
    storeAll();
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

  // Chunk k of the thread's row: chunk t + k * T of the row, clamped into it.
  Chunk chunkOf(const ExprP& k) {
    Chunk ch;
    ExprP ci = b_.add(vt_, b_.mul(k, c(int64_t{k_.threads_per_row} * k_.split)));
    ch.valid = b_.op(kir::IndexOp::Ult, ci, c(row_chunks_));
    ci = b_.select(ch.valid, ci, c(row_chunks_ - 1));
    ch.slot = ci;
    ch.idx = outer_idx_;
    auto red = unravel(ci, k_.red_shape, k_.vec);
    ch.idx.insert(ch.idx.end(), red.begin(), red.end());
    return ch;
  }

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
      case ENode::Kind::Reduce: out = reduced_.at(&n); break;
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
    ExprP byte = kir::add(c(smem_offset_.at(l)), kir::mul(ch.slot, c(piece)));
    if (k_.rows_per_block > 1)
      byte = kir::add(byte, kir::mul(kir::convert(row_in_block_, Type::idx()),
                                     c(int64_t{k_.chunks} * k_.threads_per_row * piece)));
    return byte;
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
        Chunk ch = chunkOf(k);
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
                                         "row_in_block", "lane"}));
    return kir::var(name, Type::data(acc, 1));
  }

  // The mean of a row summed around its first element, so that 1e4 + U(0,1) keeps its digits.
  ExprP shiftedMean(const ENode& x, DType acc, double n) {
    Chunk first = rowChunk();
    ExprP x0 = b_.bind(kir::intrinsic(kir::Intrinsic::First, Type::data(x.dtype, 1), {eval(x, first)}));
    if (x.dtype != acc) x0 = b_.bind(kir::math(ir::OpKind::Cast, acc, {x0}));
    ExprP sum = rowReduce(kir::Combine::Sum, acc, [&](Chunk& ch) {
      return b_.bind(kir::math(ir::OpKind::Sub, acc, {values(x, acc, ch), x0}, k_.vec));
    });
    ExprP q = b_.math(ir::OpKind::Div, acc, {sum, kir::dataConst(acc, n, 1)});
    return b_.bindAs(fmt::format("mean{}", next_mean_++), kir::math(ir::OpKind::Add, acc, {x0, q}));
  }

  std::pair<ExprP, ExprP> welford(const ENode& x, DType acc);
  void reduce(const ENode& r);
  void storeAll();
  void storeChunk(const NormKernel::Store& s, const ExprP& value, const Chunk& ch, const ExprP& pred);

  const ir::Fusion& f_;
  const NormKernel& k_;
  const Tuning& tune_;
  kir::Kernel& out_;
  kir::Builder b_;
  ExprP t_in_row_, row_in_block_, lane_, vt_, row_valid_;
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
      if (it == stats_.end() && !registers_) {
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
  if (k.async_fill) return "rows copied to shared memory by cp.async";
  if (k.cluster > 1 || k.split > 1 || k.grid_sync) return "rows split over blocks";
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
