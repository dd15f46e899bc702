#include "compiler/schedule/reduction/lower.h"

#include <map>

#include <fmt/format.h>

#include "compiler/kir/builder.h"
#include "compiler/schedule/reduction/accumulators.h"
#include "compiler/schedule/symbolic.h"
#include "ir/error.h"

namespace loom::schedule {

namespace {

using kir::ExprP;
using kir::Type;
using lower::ENode;
using red_detail::Accumulator;
using Values = std::vector<std::vector<ExprP>>;  // an accumulator's values, for each of the kernel's

ExprP c(int64_t v) { return kir::intConst(v); }

using kir::combineOf;
using kir::foldOf;

// Where a value is evaluated: the kernel's coordinates (rows then reduced axes) and the lanes.
struct Point {
  std::vector<ExprP> idx;
  int lanes = 1;
  std::map<const ENode*, ExprP> memo;
};

class ReductionLowering {
 public:
  ReductionLowering(const ir::Fusion& f, const ReductionKernel& r, kir::Kernel& out)
      : f_(f), r_(r), k_(r.k), out_(out) {}

  void run() {
    std::vector<lower::EPtr> roots;
    for (const auto& st : k_.stores) roots.push_back(st.value);
    acc_ = red_detail::accumulatorsOf(roots);
    cache_ = out_.noalias ? kir::Cache::Invariant : kir::Cache::Default;
    b_.spread("tid", kir::Mapping::Threads, r_.block, [&](const ExprP& tid) {
      tid_ = tid;
      b_.spread("blk", kir::Mapping::Blocks, r_.grid, [&](const ExprP& blk) {
        ExprP block = b_.bindAs("block", kir::convert(blk, Type::idx()));
        if (r_.split > 1) {
          ExprP at = kir::intConst(static_cast<int64_t>(out_.params.size()) - 1);
          ws_ = b_.bindAs("workspace", kir::intrinsic(kir::Intrinsic::ParamAddr, Type::addr(), {at}));
        }
        if (r_.layout == ReductionKernel::Layout::Inner) inner(block);
        else outer(block);
      });
    });
    out_.body = b_.take();
  }

 private:
  DType acc(const ENode* r) const { return computeDType(r->dtype); }
  const std::vector<Accumulator>& accs() const { return acc_.list; }

  // The axis a value's lanes run along: the innermost row axis (outer layout) or reduced axis.
  size_t laneAxis() const {
    return r_.layout == ReductionKernel::Layout::Outer ? k_.outer_shape.size() - 1
                                                      : k_.outer_shape.size() + k_.red_shape.size() - 1;
  }

  ExprP eval(const ENode& n, Point& p) {
    auto it = p.memo.find(&n);
    if (it != p.memo.end()) return it->second;
    ExprP out;
    switch (n.kind) {
      case ENode::Kind::Load: {
        const auto& s = n.leaf.strides;
        const kir::Access a = p.lanes == 1 ? kir::Access::Gather : k_.load_access.at(n.leaf);
        out = b_.bind(kir::load(n.leaf.input, n.dtype, kir::stridedOffset(n.leaf.offset, s, p.idx), p.lanes, a,
                                s[laneAxis()], cache_), "x");
        break;
      }
      case ENode::Kind::Const: out = kir::dataConst(n.dtype, n.value, p.lanes); break;
      case ENode::Kind::Index: {
        const auto& s = n.leaf.strides;
        out = b_.bind(kir::indexLanes(kir::stridedOffset(n.leaf.offset, s, p.idx), p.lanes, s[laneAxis()]), "ix");
        break;
      }
      case ENode::Kind::Reduce: out = totals_.at(&n); break;
      case ENode::Kind::Op: {
        std::vector<ExprP> args;
        for (const auto& a : n.args) args.push_back(eval(*a, p));
        out = b_.bind(kir::math(n.op, n.dtype, args, p.lanes));
        break;
      }
    }
    return p.memo[&n] = out;
  }

  // The reduced operand of `r` at `p`, in its accumulator's dtype.
  ExprP operand(const ENode* r, Point& p) {
    ExprP v = eval(*r->args[0], p);
    return r->args[0]->dtype == acc(r) ? v : b_.bind(kir::math(ir::OpKind::Cast, acc(r), {v}, p.lanes));
  }

  // Every accumulator's fold of `values(unit)` over the units first + (m * U + u) * step,
  // U = `unroll`, in that order: the U units of a trip are loaded before any is folded, and
  // units from `count` on fold nothing (read at unit 0). The values are elements (each
  // accumulator's one: a plain one's lanes folded already where `units` is Lanes, a triple's
  // operand), or partials (every value of each accumulator) merged in unit order.
  // `count_at_run` (symbolic kernels): the count read at run time, `count` its largest.
  enum class Units { Lanes, ByLane, Partials };
  using UnitValues = std::function<Values(const ExprP& unit, const ExprP& valid)>;
  // Trips whose every unit lies inside the count for every thread (all but the last, mostly)
  // test none of them: the loads' bounds and the identities selected for units past the count
  // cost as much as the folds of a narrow row, where the scheduler says so (`unchecked_trips`;
  // docs/performance.md#unchecked-trips).
  Values foldUnits(const ExprP& first, int64_t step, int64_t count, int lanes, int unroll, Units units,
                   const UnitValues& values, const ExprP& count_at_run = nullptr) {
    const int U = unroll;
    const int64_t per_thread = (count + step - 1) / step;
    const int64_t trips = std::max<int64_t>(1, (per_thread + U - 1) / U);
    // At least one trip: a count is at least 1.
    const ExprP trips_at_run =
        count_at_run ? kir::index(kir::IndexOp::Div, kir::add(count_at_run, c(step * U - 1)), c(step * U)) : nullptr;
    const ExprP bound = count_at_run ? count_at_run : c(count);
    const bool partials = units == Units::Partials;
    const int64_t unchecked =
        count_at_run || partials || !r_.unchecked_trips ? 0 : std::min(trips, count / (step * U));
    auto trip = [&](const ExprP& m, const std::vector<ExprP>& carried, bool checked) {
      std::vector<Values> parts(U);
      std::vector<ExprP> valid(U);
      for (int u = 0; u < U; ++u) {
        ExprP j = b_.add(first, b_.mul(b_.add(b_.mul(m, c(U)), c(u)), c(step)));
        valid[u] = checked ? b_.bind(kir::index(kir::IndexOp::Ult, j, bound)) : kir::intConst(1, Type::pred());
        Values v = values(checked ? b_.select(valid[u], j, c(0)) : j, valid[u]);
        for (size_t i = 0; i < accs().size(); ++i) {
          std::vector<ExprP> id = red_detail::identityOf(accs()[i], lanes);
          if (accs()[i].welford && !partials) {
            parts[u].push_back(v[i]);  // the trip's statistics select their elements
            continue;
          }
          std::vector<ExprP> p;
          for (size_t x = 0; x < id.size(); ++x) p.push_back(checked ? b_.select(valid[u], v[i][x], id[x]) : v[i][x]);
          parts[u].push_back(std::move(p));
        }
      }
      Values next = unflatten(carried);
      for (int u = 0; u < U; ++u)
        for (size_t i = 0; i < accs().size(); ++i)
          if (partials || !accs()[i].welford) next[i] = red_detail::mergeInto(b_, accs()[i], next[i], parts[u][i]);
      for (size_t i = 0; i < accs().size(); ++i) {
        if (partials || !accs()[i].welford) continue;
        std::vector<ExprP> stats;
        for (int u = 0; u < U; ++u) stats.push_back(parts[u][i][0]);
        next[i] = red_detail::foldTripStats(b_, accs()[i], next[i], stats, valid, units == Units::Lanes);
      }
      return flatten(next);
    };
    std::vector<ExprP> flat = identities(lanes);
    if (unchecked > 0)
      flat = b_.repeat("m", unchecked, flat, [&](const ExprP& m, const std::vector<ExprP>& carried) {
        return trip(m, carried, false);
      });
    if (unchecked < trips)
      flat = b_.repeat("m", trips - unchecked, flat, [&](const ExprP& m, const std::vector<ExprP>& carried) {
        return trip(unchecked ? b_.add(m, c(unchecked)) : m, carried, true);
      }, 1, trips_at_run);
    return unflatten(flat);
  }

  // A flat list of every accumulator's values (a Repeat's carried values), split by
  // accumulator; and back.
  Values unflatten(const std::vector<ExprP>& flat) const {
    Values out;
    for (const Accumulator& a : accs()) out.emplace_back(flat.begin() + a.slot, flat.begin() + a.slot + a.width());
    return out;
  }
  static std::vector<ExprP> flatten(const Values& values) {
    std::vector<ExprP> out;
    for (const auto& v : values) out.insert(out.end(), v.begin(), v.end());
    return out;
  }
  // Every accumulator's identity, flat, `lanes` lanes each (a triple's count: one).
  std::vector<ExprP> identities(int lanes) const {
    Values ids;
    for (const Accumulator& a : accs()) ids.push_back(red_detail::identityOf(a, lanes));
    return flatten(ids);
  }

  // The units (elements, or vectors of the inner layout) a row reduces: the largest a symbolic
  // kernel serves; and their count, read at run time where the kernel takes its size (null from
  // unitsAtRun where every size is known).
  int64_t unitLanes() const { return r_.layout == ReductionKernel::Layout::Inner ? k_.vec : 1; }
  int64_t mostUnits() const { return r_.symbolic() ? r_.reducedCount(r_.size_max) / unitLanes() : r_.rowUnits(); }
  ExprP countOf(int64_t per) const {
    if (!r_.symbolic()) return c(k_.rowElems() / per);
    return kir::mul(kir::var(sizeVar(r_.size_symbol), Type::idx()), c(r_.reducedCount(1) / per));
  }
  ExprP unitsAtRun() const { return r_.symbolic() ? countOf(unitLanes()) : nullptr; }

  // The thread's share of the elements: `at(unit)` gives a unit's point; with `fold_lanes`, the
  // lanes of a unit are folded into one value (inner layout), else kept lane by lane.
  Values accumulate(const ExprP& first, int64_t step, int lanes, bool fold_lanes,
                    const std::function<Point(const ExprP&)>& at) {
    const Units units = fold_lanes ? Units::Lanes : Units::ByLane;
    return foldUnits(first, step, mostUnits(), fold_lanes ? 1 : lanes, r_.unroll, units, [&](const ExprP& j, const ExprP& valid) {
      Point p = at(j);
      storeElements(p, place_ok_ ? b_.op(kir::IndexOp::And, valid, place_ok_) : valid);
      Values v;
      for (const Accumulator& a : accs()) {
        ExprP x = operand(a.r, p);
        const kir::Combine cb = combineOf(a.r->op);
        if (fold_lanes && !a.welford)  // (a triple folds a trip's lanes with its statistics)
          x = b_.bind(kir::intrinsic(foldOf(cb), Type::data(a.acc(), 1), {x, kir::combineIdentity(cb, a.acc())}));
        v.push_back({x});
      }
      return v;
    }, unitsAtRun());
  }

  // The element stores (schedule/reduction/reduction.h) at `p`, where `ok`: each output's value there,
  // lanes along the layout's vector axis.
  void storeElements(Point& p, const ExprP& ok) {
    const size_t lane_axis = laneAxis();
    for (const auto& st : k_.stores) {
      if (st.row_only) continue;
      ExprP v = eval(*st.value, p);
      if (v->type.lanes != p.lanes) v = b_.bind(kir::intrinsic(kir::Intrinsic::Splat, Type::data(st.dtype, p.lanes), {v}));
      const kir::Access a = p.lanes == 1 ? kir::Access::Gather : st.access;
      ExprP off = b_.bind(kir::stridedOffset(st.offset, st.strides, p.idx), "off");
      b_.ifThen(ok, "estore", [&] {
        b_.emit(kir::store(k_.num_inputs + st.output, off, v, a, st.strides[lane_axis]));
      });
    }
  }

  // Value i's (of the flat list) partial of block `p` for row (or column) `row` in the workspace.
  ExprP wsSlot(size_t i, const ExprP& p, const ExprP& row) {
    ExprP entry = b_.add(b_.mul(b_.add(c(static_cast<int64_t>(i) * r_.split), p), c(k_.rows())), row);
    ExprP byte = b_.add(c(r_.counter_bytes), b_.mul(entry, c(8)));
    return b_.bind(kir::intrinsic(kir::Intrinsic::ByteAddr, Type::addr(), {ws_, byte}));
  }
  ExprP counterAt(const ExprP& i) {
    return b_.bind(kir::intrinsic(kir::Intrinsic::ByteAddr, Type::addr(), {ws_, b_.mul(i, c(4))}));
  }

  // After every thread has published: thread 0 counts the block in on counter `counter`
  // (acquire-release); the block that makes it `split` runs `body` (the same branch for every
  // thread of the block: the flag goes through shared memory).
  void lastBlock(const ExprP& counter, const std::function<void()>& body) {
    b_.emit(kir::barrier(kir::Barrier::Block));
    const std::string flag = kir::bufferName(out_, "last_block");
    out_.buffers.push_back({flag, "last_block", kir::Place::Smem, DType::F32, 1, 4});
    b_.ifThen(b_.op(kir::IndexOp::Eq, tid_, kir::i32Const(0)), "arrive", [&] {
      ExprP before = b_.bind(kir::intrinsic(kir::Intrinsic::AtomAddAcqRel, Type::i32(), {counterAt(counter)}));
      ExprP last = b_.op(kir::IndexOp::Eq, before, kir::i32Const(r_.split - 1));
      b_.emit(kir::bufStore(flag, kir::i32Const(0),
                            b_.select(last, kir::dataConst(DType::F32, 1, 1), kir::dataConst(DType::F32, 0, 1))));
    });
    b_.emit(kir::barrier(kir::Barrier::Block));
    ExprP v = b_.bind(kir::bufLoad(flag, DType::F32, kir::i32Const(0)));
    ExprP is_last = b_.convert(b_.math(ir::OpKind::Gt, DType::Bool, {v, kir::dataConst(DType::F32, 0, 1)}), Type::pred());
    b_.uniformIf(is_last, "last_block", body);
  }

  // Every store of the row (or column) `row`, with the accumulators' totals.
  void epilogue(const ExprP& row, const Values& totals) {
    for (const ENode* r : acc_.reductions) {
      const size_t i = acc_.of.at(r);
      ExprP n;
      if (r->op == ir::OpKind::Mean || r->op == ir::OpKind::VarMean)
        n = r_.symbolic() ? b_.bind(kir::convert(countOf(1), Type::data(acc(r), 1)))
                          : kir::dataConst(acc(r), static_cast<double>(k_.rowElems()), 1);
      totals_[r] = red_detail::resultOf(b_, *r, accs()[i], totals[i], n);
    }
    Point p;
    p.idx = b_.unravel(row, k_.outer_shape, 1);
    for (size_t d = 0; d < k_.red_shape.size(); ++d) p.idx.push_back(c(0));
    for (const auto& st : k_.stores) {
      if (!st.row_only) continue;  // an element store, written in the pass
      ExprP v = eval(*st.value, p);
      b_.emit(kir::store(k_.num_inputs + st.output, kir::stridedOffset(st.offset, st.strides, p.idx), v,
                         kir::Access::Gather, 1));
    }
  }

  void inner(const ExprP& block);
  void outer(const ExprP& block);
  Values blockColumns(const Values& parts, const ExprP& tx, const ExprP& ty);
  Values combineBlock(const Values& values, const std::string& stem, int threads);
  // Every accumulator's values at `slot(value index)` of the workspace, as stores after the
  // block's combine.
  void publish(const Values& totals, const std::function<ExprP(size_t)>& slot);

  std::vector<std::string> tile_bufs_;  // blockColumns' shared memory, a buffer a value

  const ir::Fusion& f_;
  const ReductionKernel& r_;
  const RowKernel& k_;
  kir::Kernel& out_;
  kir::Builder b_;
  kir::Cache cache_ = kir::Cache::Default;
  ExprP tid_, ws_;
  ExprP place_ok_;  // outer layout: the thread's rows are the tensor's (past them: clamped to row 0)
  red_detail::Accumulators acc_;
  std::map<const ENode*, ExprP> totals_;
};

// The inner layout: block `row * split + s` folds vectors s * T + t, then every T * split-th.
void ReductionLowering::inner(const ExprP& block) {
  const int T = r_.block;
  const int64_t S = r_.split;
  ExprP t = b_.bindAs("t_in_row", kir::convert(tid_, Type::idx()));
  b_.bindAs("row_in_block", kir::index(kir::IndexOp::Div, tid_, kir::i32Const(T)));
  b_.bindAs("lane", kir::index(kir::IndexOp::Rem, tid_, kir::i32Const(32)));
  ExprP row = S > 1 ? b_.bindAs("row", kir::index(kir::IndexOp::Div, block, c(S))) : block;
  ExprP s = S > 1 ? b_.bindAs("rank", kir::index(kir::IndexOp::Rem, block, c(S))) : c(0);
  std::vector<ExprP> outer_idx = b_.unravel(row, k_.outer_shape, 1);
  auto parts = accumulate(b_.add(b_.mul(s, c(T)), t), int64_t{T} * S, k_.vec, true, [&](const ExprP& j) {
    Point p;
    p.idx = outer_idx;
    for (const auto& x : b_.unravel(j, k_.red_shape, k_.vec)) p.idx.push_back(x);
    p.lanes = k_.vec;
    return p;
  });
  Values totals = combineBlock(parts, "block_total", T);
  ExprP leader = b_.op(kir::IndexOp::Eq, tid_, kir::i32Const(0));
  if (S == 1) {
    b_.ifThen(leader, "store", [&] { epilogue(row, totals); });
    return;
  }
  b_.ifThen(leader, "publish", [&] { publish(totals, [&](size_t i) { return wsSlot(i, s, row); }); });
  lastBlock(row, [&] {
    // Partials t, t + T, ... of the row, in that order.
    auto sums = foldUnits(t, T, S, 1, 1, Units::Partials, [&](const ExprP& p, const ExprP&) {
      Values v;
      for (const Accumulator& a : accs()) {
        v.emplace_back();
        for (int x = 0; x < a.width(); ++x)
          v.back().push_back(b_.bind(kir::intrinsic(kir::Intrinsic::RelaxedLoad, Type::data(a.acc(), 1),
                                                    {wsSlot(static_cast<size_t>(a.slot + x), p, row)})));
      }
      return v;
    });
    Values finals = combineBlock(sums, "row_total", T);
    b_.ifThen(b_.op(kir::IndexOp::Eq, tid_, kir::i32Const(0)), "store", [&] {
      epilogue(row, finals);
      b_.emit(kir::relaxedZero(counterAt(row)));
    });
  });
}

// The inner layout's combine of the row's `threads` threads: every accumulator's values, in
// names `stem` and its number.
Values ReductionLowering::combineBlock(const Values& values, const std::string& stem, int threads) {
  Values totals;
  for (size_t i = 0; i < accs().size(); ++i) {
    const Accumulator& a = accs()[i];
    const std::string name = fmt::format("{}{}", stem, i);
    const kir::CombineSpec spec{combineOf(a.r->op), k_.red_atoms, threads, 1, "t_in_row", "row_in_block", "lane", 1,
                                kir::GridLevel{}};
    if (!a.welford) {
      b_.emit(kir::combine(name, values[i][0], spec));
      totals.push_back({kir::var(name, Type::data(a.acc(), 1))});
      continue;
    }
    std::vector<std::string> names = {name + "_n", name + "_mean", name + "_m2"};
    b_.emit(kir::welford(names, values[i], spec));
    totals.emplace_back();
    for (const auto& n : names) totals.back().push_back(kir::var(n, Type::data(a.acc(), 1)));
  }
  return totals;
}

void ReductionLowering::publish(const Values& totals, const std::function<ExprP(size_t)>& slot) {
  for (size_t i = 0; i < accs().size(); ++i)
    for (int x = 0; x < accs()[i].width(); ++x)
      b_.emit(kir::globalStore(slot(static_cast<size_t>(accs()[i].slot + x)), totals[i][static_cast<size_t>(x)], 8));
}

// Columns of threads through shared memory: thread (ty, tx) holds lanes tx * vec + l of the
// tile's rows; thread `tid` gets the total of row tid of the tile over every ty, in ty order
// (threads past the tile's rows get row 0's).
Values ReductionLowering::blockColumns(const Values& parts, const ExprP& tx, const ExprP& ty) {
  const int V = k_.vec, W = r_.bx * V;
  // The last block's second use takes the first's buffers: lastBlock's barrier lies between the
  // first's reads and the second's stores.
  const bool again = !tile_bufs_.empty();
  for (size_t i = 0; i < accs().size(); ++i) {
    const Accumulator& a = accs()[i];
    for (int x = 0; x < a.width(); ++x) {
      const size_t at = static_cast<size_t>(a.slot + x);
      if (!again) {
        tile_bufs_.push_back(kir::bufferName(out_, "tile_partials"));
        out_.buffers.push_back({tile_bufs_.back(), "tile_partials", kir::Place::Smem, a.acc(), int64_t{r_.by} * W, 8});
      }
      const std::string& buf = tile_bufs_[at];
      const ExprP& part = parts[i][static_cast<size_t>(x)];
      ExprP base = b_.add(b_.mul(ty, kir::i32Const(W)), b_.mul(tx, kir::i32Const(V)));
      for (int l = 0; l < V; ++l) {
        // (A triple's count, one for the thread's lanes, is stored for each.)
        ExprP lane = part->type.lanes == 1
                         ? part
                         : b_.bind(kir::intrinsic(kir::Intrinsic::Lane, Type::data(a.acc(), 1), {part, kir::i32Const(l)}));
        b_.emit(kir::bufStore(buf, b_.add(base, kir::i32Const(l)), lane));
      }
    }
  }
  b_.emit(kir::barrier(kir::Barrier::Block));
  ExprP mine = b_.select(b_.op(kir::IndexOp::Ult, tid_, kir::i32Const(W)), tid_, kir::i32Const(0));
  // In ty order, 8 rows of threads a trip.
  const int per = std::min(r_.by, 8);
  LOOM_ASSERT(r_.by % per == 0, "reduction: {} rows of threads in trips of {}", r_.by, per);
  return unflatten(b_.repeat("y", r_.by / per, identities(1), [&](const ExprP& y, const std::vector<ExprP>& carried) {
    Values next = unflatten(carried);
    ExprP row0 = b_.mul(b_.convert(y, Type::i32()), kir::i32Const(int64_t{per} * W));
    for (int u = 0; u < per; ++u)
      for (size_t i = 0; i < accs().size(); ++i) {
        const Accumulator& a = accs()[i];
        ExprP at = b_.add(b_.add(mine, row0), kir::i32Const(int64_t{u} * W));
        std::vector<ExprP> part;
        for (int x = 0; x < a.width(); ++x)
          part.push_back(b_.bind(kir::bufLoad(tile_bufs_[static_cast<size_t>(a.slot + x)], a.acc(), at)));
        next[i] = red_detail::mergeInto(b_, a, next[i], part);
      }
    return flatten(next);
  }));
}

// The outer layout: block `tile * split + s`; thread (ty, tx) folds rows tx * vec.. of the tile
// at reduced elements s * by + ty, then every by * split-th.
void ReductionLowering::outer(const ExprP& block) {
  const int V = k_.vec, W = r_.bx * V;
  const int64_t S = r_.split, C = k_.rows();
  ExprP tx = b_.bindAs("tx", kir::index(kir::IndexOp::Rem, tid_, kir::i32Const(r_.bx)));
  ExprP ty = b_.bindAs("ty", kir::index(kir::IndexOp::Div, tid_, kir::i32Const(r_.bx)));
  ExprP tile = S > 1 ? b_.bindAs("tile", kir::index(kir::IndexOp::Div, block, c(S))) : block;
  ExprP s = S > 1 ? b_.bindAs("rank", kir::index(kir::IndexOp::Rem, block, c(S))) : c(0);
  ExprP col0 = b_.add(b_.mul(tile, c(W)), b_.mul(b_.convert(tx, Type::idx()), c(V)));
  place_ok_ = b_.bind(kir::index(kir::IndexOp::Ult, col0, c(C)));
  ExprP col = b_.select(place_ok_, col0, c(0));
  std::vector<ExprP> outer_idx = b_.unravel(col, k_.outer_shape, 1);
  ExprP first = b_.add(b_.mul(s, c(r_.by)), b_.convert(ty, Type::idx()));
  // The reduced elements are walked from the last to the first, so that a kernel after this one
  // reading the same tensors from their start finds the last read still in L2 (channels-last
  // batch norm backward's dx after its channel sums): unit j is element count - 1 - j (a unit
  // past the count, which accumulate reads at unit 0, at the last element: a valid one either
  // way; the clamp, never taken, bounds it for the verifier, whose ranges do not relate j to the
  // count).
  const ExprP count = countOf(1);
  const ExprP last = r_.symbolic() ? kir::index(kir::IndexOp::Sub, count, c(1)) : c(k_.rowElems() - 1);
  auto parts = accumulate(first, int64_t{r_.by} * S, V, false, [&](const ExprP& j) {
    Point p;
    p.idx = outer_idx;
    ExprP e = b_.bind(kir::index(kir::IndexOp::Sub, last, j), "rev");
    e = b_.select(b_.op(kir::IndexOp::Ult, e, count), e, c(0));
    for (const auto& x : b_.unravel(e, k_.red_shape, 1)) p.idx.push_back(x);
    p.lanes = V;
    return p;
  });
  Values totals = blockColumns(parts, tx, ty);
  ExprP row = b_.add(b_.mul(tile, c(W)), b_.convert(tid_, Type::idx()));
  ExprP ok = b_.bind(kir::index(kir::IndexOp::Ult, row, c(C)));
  ExprP mine = b_.select(ok, row, c(0));
  ExprP owner = b_.op(kir::IndexOp::Ult, tid_, kir::i32Const(W));
  if (S == 1) {
    b_.ifThen(owner, "owner", [&] { b_.ifThen(ok, "store", [&] { epilogue(mine, totals); }); });
    return;
  }
  b_.ifThen(owner, "owner", [&] {
    b_.ifThen(ok, "publish", [&] { publish(totals, [&](size_t i) { return wsSlot(i, s, mine); }); });
  });
  lastBlock(tile, [&] {
    // Partials ty, ty + by, ... of the thread's rows, `unroll` of them loaded before any is added.
    auto sums = foldUnits(b_.convert(ty, Type::idx()), r_.by, S, V, r_.partial_unroll, Units::Partials,
                          [&](const ExprP& p, const ExprP&) {
      Values v;
      for (const Accumulator& a : accs()) {
        v.emplace_back();
        for (int x = 0; x < a.width(); ++x) {
          // (A triple's count is the same for every row of a block: one load.)
          const int lanes = a.welford && x == 0 ? 1 : V;
          std::vector<ExprP> ls;
          for (int l = 0; l < lanes; ++l)
            ls.push_back(b_.bind(kir::intrinsic(kir::Intrinsic::RelaxedLoad, Type::data(a.acc(), 1),
                                                {wsSlot(static_cast<size_t>(a.slot + x), p, b_.add(col, c(l)))})));
          v.back().push_back(lanes == 1 ? ls[0] : b_.bind(kir::intrinsic(kir::Intrinsic::Concat, Type::data(a.acc(), V), ls)));
        }
      }
      return v;
    });
    Values finals = blockColumns(sums, tx, ty);
    b_.ifThen(owner, "owner", [&] { b_.ifThen(ok, "store", [&] { epilogue(mine, finals); }); });
    b_.ifThen(b_.op(kir::IndexOp::Eq, tid_, kir::i32Const(0)), "reset", [&] { b_.emit(kir::relaxedZero(counterAt(tile))); });
  });
}

}  // namespace

kir::Kernel lowerReduction(const ir::Fusion& f, const ReductionKernel& r, const std::vector<TensorDesc>& inputs) {
  kir::Kernel out;
  out.name = r.k.name;
  out.scheduler = "reduction";
  if (r.symbolic()) {
    // The first reduced axis of the largest size served is the first dim of every tensor naming it.
    out.params = paramsAtLargest(f, inputs, r.k.outputs, r.size_symbol, r.size_max);
    out.sizes.push_back({sizeVar(r.size_symbol), r.size_max});
  } else {
    out.params = kir::fusionParams(f, inputs, r.k.outputs);
  }
  if (r.split > 1) out.params.push_back({"workspace", DType::I64, false, r.workspace_bytes, true});
  out.noalias = kir::noAlias(r.k.output_alias);
  out.index_bits = r.k.index64 ? 64 : 32;
  out.launch = {r.grid, r.block};
  ReductionLowering(f, r, out).run();
  return out;
}

}  // namespace loom::schedule
