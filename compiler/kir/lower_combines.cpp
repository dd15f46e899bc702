#include "compiler/kir/lower_combines.h"

#include <algorithm>
#include <cmath>
#include <functional>

#include <fmt/format.h>

#include "compiler/kir/builder.h"
#include "compiler/kir/welford.h"

namespace loom::kir {

namespace {

class Lowering {
 public:
  explicit Lowering(Kernel& k) : k_(k) {}

  Body body(const Body& in) {
    Body out;
    for (const auto& s : in) {
      switch (s->kind) {
        case Stmt::Kind::Combine: {
          Builder b(s->name + "_");
          expand(*s, b);
          for (auto& x : b.take()) out.push_back(std::move(x));
          break;
        }
        case Stmt::Kind::Welford: {
          Builder b(s->name + "_");
          expandWelford(*s, b);
          for (auto& x : b.take()) out.push_back(std::move(x));
          break;
        }
        case Stmt::Kind::If:
          out.push_back(s->uniform ? uniformIf(s->cond, s->name, body(s->body)) : ifThen(s->cond, s->name, body(s->body)));
          break;
        case Stmt::Kind::Spread: out.push_back(spread(s->name, s->mapping, s->count, body(s->body))); break;
        case Stmt::Kind::Repeat:
          out.push_back(repeat(s->name, s->count, s->carried, body(s->body), s->yields, s->results, s->unroll, s->trips));
          break;
        case Stmt::Kind::Loop:
          out.push_back(loop(s->name, s->init, s->cond, s->step, s->mapping, body(s->body), s->unroll, s->exit));
          break;
        default: out.push_back(s);
      }
    }
    return out;
  }

 private:
  // Each value: a butterfly within each warp; rows of several warps, each warp's totals through
  // shared memory (one barrier for every value); then across the cluster and the grid.
  void expand(const Stmt& s, Builder& b) {
    const DType acc = s.value->type.dtype;
    const ir::OpKind op = combineOp(s.combine);
    const int T = s.threads;
    const int n = static_cast<int>(s.yields.size());
    std::vector<ExprP> v = s.yields;
    for (int off = std::min(T, 32) / 2; off >= 1; off /= 2)
      for (auto& x : v) {
        ExprP other = b.bind(intrinsic(Intrinsic::ShflXor, x->type, {x, i32Const(off)}));
        x = b.math(op, acc, {x, other});
      }
    if (T > 32) {
      const int wpr = T / 32;
      const std::string buf = bufferName(k_, "red_smem");
      k_.buffers.push_back({buf, "red_smem", Place::Smem, acc, int64_t{wpr} * s.rows * n, 8});
      ExprP warp = b.udiv(b.convert(var(s.thread_in_row, Type::idx()), Type::i32()), i32Const(32));
      ExprP base = b.mul(var(s.row_in_block, Type::i32()), i32Const(wpr * n));
      ExprP lane0 = b.op(IndexOp::Eq, var(s.lane, Type::i32()), i32Const(0));
      // Value i of warp w at base + i * wpr + w.
      b.ifThen(lane0, "publish", [&] {
        for (int i = 0; i < n; ++i) b.emit(bufStore(buf, b.add(b.add(base, i32Const(i * wpr)), warp), v[static_cast<size_t>(i)]));
      });
      b.emit(barrier(Barrier::Block));
      if (n == 1 || s.cluster == 1) {
        for (int i = 0; i < n; ++i) {
          ExprP total = b.bind(bufLoad(buf, acc, b.add(base, i32Const(i * wpr))));
          for (int w = 1; w < wpr; ++w)
            total = b.math(op, acc, {total, b.bind(bufLoad(buf, acc, b.add(base, i32Const(i * wpr + w))))});
          v[static_cast<size_t>(i)] = total;
        }
      } else {
        // Several values over a cluster: thread i of the row totals value i over the warps (in
        // warp order, as above), then every thread reads the totals, so that no thread holds n x
        // warps values beside the n x cluster it reads next (group norm backward's ten: 128
        // registers and spills, 92 and none this way; a block barrier more, which costs where the
        // registers were no problem: bench/results/2026-11-27-h100-split-sums.md).
        const std::string tbuf = bufferName(k_, "red_totals");
        k_.buffers.push_back({tbuf, "red_totals", Place::Smem, acc, int64_t{s.rows} * n, 8});
        ExprP tbase = b.mul(var(s.row_in_block, Type::i32()), i32Const(n));
        // (me < n where it is used: the remainder only bounds it for the verifier.)
        ExprP me = b.urem(b.convert(var(s.thread_in_row, Type::idx()), Type::i32()), i32Const(n));
        b.ifThen(b.op(IndexOp::Ult, var(s.thread_in_row, Type::idx()), intConst(n)), "totals", [&] {
          ExprP at = b.add(base, b.mul(me, i32Const(wpr)));
          ExprP total = b.bind(bufLoad(buf, acc, at));
          for (int w = 1; w < wpr; ++w) total = b.math(op, acc, {total, b.bind(bufLoad(buf, acc, b.add(at, i32Const(w))))});
          b.emit(bufStore(tbuf, b.add(tbase, me), total));
        });
        b.emit(barrier(Barrier::Block));
        for (int i = 0; i < n; ++i) v[static_cast<size_t>(i)] = b.bind(bufLoad(tbuf, acc, b.add(tbase, i32Const(i))));
      }
      b.emit(barrier(Barrier::Block));
    }
    if (s.cluster > 1) v = acrossCluster(s, b, v);
    if (s.grid.region >= 0) v = acrossGrid(s, b, v);
    for (int i = 0; i < n; ++i) b.bindAs(s.results[static_cast<size_t>(i)], v[static_cast<size_t>(i)]);
  }

  // Every block of the row's cluster holds its totals: the row's first thread publishes them in
  // its shared memory, and after the cluster's barrier every thread combines all blocks'
  // totals in rank order (so every block gets the same bits).
  std::vector<ExprP> acrossCluster(const Stmt& s, Builder& b, const std::vector<ExprP>& v) {
    const DType acc = v[0]->type.dtype;
    const int n = static_cast<int>(v.size());
    const std::string buf = bufferName(k_, "cluster_red");
    k_.buffers.push_back({buf, "cluster_red", Place::Smem, acc, int64_t{s.rows} * n, 8});
    // Value i of the block's row r at r * n + i.
    auto at = [&](int i) {
      return b.bind(bufAddr(buf, b.add(b.mul(var(s.row_in_block, Type::i32()), i32Const(n)), i32Const(i))));
    };
    std::vector<ExprP> slots;
    for (int i = 0; i < n; ++i) slots.push_back(at(i));
    b.ifThen(b.op(IndexOp::Eq, var(s.thread_in_row, Type::idx()), intConst(0)), "cpublish", [&] {
      for (int i = 0; i < n; ++i) b.emit(bufStore(buf, slots[static_cast<size_t>(i)], v[static_cast<size_t>(i)]));
    });
    b.emit(barrier(Barrier::ClusterArrive));
    b.emit(barrier(Barrier::ClusterWait));
    std::vector<ExprP> totals;
    for (int i = 0; i < n; ++i) {
      ExprP generic = b.bind(intrinsic(Intrinsic::ToGeneric, Type::addr(), {slots[static_cast<size_t>(i)]}));
      ExprP total;
      for (int r = 0; r < s.cluster; ++r) {
        ExprP remote = b.bind(intrinsic(Intrinsic::Mapa, Type::addr(), {generic, i32Const(r)}));
        ExprP x = b.bind(bufLoad(buf, acc, remote));
        total = total ? b.math(combineOp(s.combine), acc, {total, x}) : x;
      }
      totals.push_back(total);
    }
    return totals;
  }

  Stats shuffled(Builder& b, const Stats& st, int off) {
    auto shfl = [&](const ExprP& v) { return b.bind(intrinsic(Intrinsic::ShflXor, v->type, {v, i32Const(off)})); };
    ExprP n = shfl(st.n);
    ExprP mean = shfl(st.mean);
    ExprP m2 = shfl(st.m2);
    return {n, mean, m2};
  }

  // The row's statistics: a butterfly of Chan's merges within each warp; for rows of several
  // warps, each warp's statistics in shared memory, merged by the row's first warp in a
  // butterfly, whose lane 0's result every thread of the row reads back.
  void expandWelford(const Stmt& s, Builder& b) {
    const DType acc = s.yields[0]->type.dtype;
    const int T = s.threads;
    const ExprP zero = dataConst(acc, 0, 1);
    Stats st{s.yields[0], s.yields[1], s.yields[2]};
    for (int off = std::min(T, 32) / 2; off >= 1 && !s.threads_merged; off /= 2) st = chanMerge(b, acc, st, shuffled(b, st, off));
    if (T > 32 && !s.threads_merged) {
      const int wpr = T / 32;
      const ExprP t_in_row = var(s.thread_in_row, Type::idx());
      const ExprP row_in_block = var(s.row_in_block, Type::i32());
      const std::string wbuf = bufferName(k_, "welford_smem");
      k_.buffers.push_back({wbuf, "welford_smem", Place::Smem, acc, int64_t{3} * wpr * s.rows, 8});
      ExprP warp = b.udiv(b.convert(t_in_row, Type::i32()), i32Const(32));
      ExprP base = b.mul(row_in_block, i32Const(3 * wpr));
      auto slot = [&](const ExprP& w, int field) { return b.add(base, b.add(b.mul(w, i32Const(3)), i32Const(field))); };
      b.ifThen(b.op(IndexOp::Eq, var(s.lane, Type::i32()), i32Const(0)), "wpublish", [&] {
        b.emit(bufStore(wbuf, slot(warp, 0), st.n));
        b.emit(bufStore(wbuf, slot(warp, 1), st.mean));
        b.emit(bufStore(wbuf, slot(warp, 2), st.m2));
      });
      b.emit(barrier(Barrier::Block));
      auto merged = byFirstWarp(s, b, acc, 3, [&] {
        ExprP w = b.convert(t_in_row, Type::i32());
        ExprP ok = b.op(IndexOp::Ult, w, i32Const(wpr));
        ExprP wc = b.select(ok, w, i32Const(0));
        ExprP n = b.select(ok, b.bind(bufLoad(wbuf, acc, slot(wc, 0))), zero);
        ExprP mean = b.select(ok, b.bind(bufLoad(wbuf, acc, slot(wc, 1))), zero);
        ExprP m2 = b.select(ok, b.bind(bufLoad(wbuf, acc, slot(wc, 2))), zero);
        Stats m{n, mean, m2};
        for (int off = std::min(wpr, 32) / 2; off >= 1; off /= 2) m = chanMerge(b, acc, m, shuffled(b, m, off));
        return std::vector<ExprP>{m.n, m.mean, m.m2};
      });
      st = {merged[0], merged[1], merged[2]};
    }
    if (s.grid.region >= 0) st = acrossGridStats(s, b, acc, st);
    b.bindAs(s.results[0], st.n);
    b.bindAs(s.results[1], st.mean);
    b.bindAs(s.results[2], st.m2);
  }

  // compute() by the first warp of each row only, and its lane 0's results for every thread of
  // the row: one thread's bits, so that every thread normalizes with the same statistics.
  std::vector<ExprP> byFirstWarp(const Stmt& s, Builder& b, DType acc, int n,
                                 const std::function<std::vector<ExprP>()>& compute) {
    const int T = s.threads;
    if (T <= 32) {  // rows whole within a warp: the value of the row's first thread
      std::vector<ExprP> out;
      for (const ExprP& v : compute()) {
        ExprP lane = var(s.lane, Type::i32());
        ExprP src = b.mul(b.udiv(lane, i32Const(T)), i32Const(T));
        out.push_back(b.bind(intrinsic(Intrinsic::ShflIdx, v->type, {v, src})));
      }
      return out;
    }
    const ExprP t_in_row = var(s.thread_in_row, Type::idx());
    const RowResults r = rowResults(s, acc, n);
    b.ifThen(b.op(IndexOp::Ult, t_in_row, intConst(32)), "first_warp", [&] {
      std::vector<ExprP> vals = compute();
      b.ifThen(b.op(IndexOp::Eq, t_in_row, intConst(0)), "first_lane", [&] {
        for (int i = 0; i < n; ++i) b.emit(bufStore(r.buf, r.slot(b, i), vals[static_cast<size_t>(i)]));
      });
    });
    return r.read(b, acc);
  }

  // Shared memory for the rows' results: value i of the block's row r at r * n + i; read by
  // every thread of the row after a block barrier.
  struct RowResults {
    std::string buf;
    ExprP row_in_block;
    int n;
    ExprP slot(Builder& b, int i) const { return b.add(b.mul(row_in_block, i32Const(n)), i32Const(i)); }
    std::vector<ExprP> read(Builder& b, DType acc) const {
      b.emit(barrier(Barrier::Block));
      std::vector<ExprP> out;
      for (int i = 0; i < n; ++i) out.push_back(b.bind(bufLoad(buf, acc, slot(b, i))));
      return out;
    }
  };
  RowResults rowResults(const Stmt& s, DType acc, int n) {
    const std::string rbuf = bufferName(k_, "row_result");
    k_.buffers.push_back({rbuf, "row_result", Place::Smem, acc, int64_t{n} * s.rows, 8});
    return {rbuf, var(s.row_in_block, Type::i32()), n};
  }

  // Value i computed (compute(i)) by warp i % W of the row's W warps, and lane 0's result for
  // every thread of the row: the same bits as byFirstWarp, the values' latencies spread over the
  // row's warps. Rows of one warp or less: byFirstWarp.
  std::vector<ExprP> byRowWarps(const Stmt& s, Builder& b, DType acc, int n, const std::function<ExprP(int)>& compute) {
    const int W = s.threads / 32;
    if (W <= 1 || n == 1)
      return byFirstWarp(s, b, acc, n, [&] {
        std::vector<ExprP> out;
        for (int i = 0; i < n; ++i) out.push_back(compute(i));
        return out;
      });
    const ExprP t_in_row = var(s.thread_in_row, Type::idx());
    const RowResults r = rowResults(s, acc, n);
    ExprP warp = b.udiv(t_in_row, intConst(32));
    for (int w = 0; w < std::min(W, n); ++w) {
      b.ifThen(b.op(IndexOp::Eq, warp, intConst(w)), fmt::format("warp{}", w), [&] {
        std::vector<std::pair<int, ExprP>> vals;
        for (int i = w; i < n; i += W) vals.emplace_back(i, compute(i));
        b.ifThen(b.op(IndexOp::Eq, b.urem(t_in_row, intConst(32)), intConst(0)), fmt::format("warp{}_lane0", w), [&] {
          for (const auto& [i, v] : vals) b.emit(bufStore(r.buf, r.slot(b, i), v));
        });
      });
    }
    return r.read(b, acc);
  }

  // --- the grid level ---
  // The address of slot `field` of block `rank`'s partial for the block's row in the group's
  // workspace: past the counters' 128 bytes, per region and set parity (3 slots of 8 bytes a
  // region; field f in region + f / 3), blocks innermost (a warp reading 32 blocks' partials
  // reads 256 contiguous bytes).
  ExprP wsSlot(const Stmt& s, Builder& b, const ExprP& rank, int field) {
    const GridLevel& g = s.grid;
    ExprP plane = b.add(b.mul(b.add(intConst(int64_t{g.region + field / 3} * 2), var(g.parity, Type::idx())), intConst(3)),
                        intConst(field % 3));
    ExprP row = b.convert(var(s.row_in_block, Type::i32()), Type::idx());
    ExprP entry = b.add(b.mul(b.add(b.mul(plane, intConst(s.rows)), row), intConst(g.blocks)), rank);
    ExprP byte = b.add(intConst(128), b.mul(entry, intConst(8)));
    return b.bind(intrinsic(Intrinsic::ByteAddr, Type::addr(), {var(g.group_ws, Type::addr()), byte}));
  }

  // Every block of the group arrives, then waits until all have: the group's e-th barrier (from
  // 1) waits for e * blocks arrivals on its counter, which only grows during a launch.
  void gridBarrier(const Stmt& s, Builder& b) {
    const GridLevel& g = s.grid;
    b.emit(barrier(Barrier::Block));
    ExprP e = b.add(b.mul(var(g.set, Type::idx()), intConst(g.barriers_per_set)), intConst(g.barrier));
    ExprP target = b.convert(b.mul(e, intConst(g.blocks)), Type::i32());
    b.emit(gridSync(g.tid, var(g.group_ws, Type::addr()), target));
    b.emit(barrier(Barrier::Block));
  }

  // Lane l of the row's first W = min(T, 32) threads visits blocks l, l + W, ... in order:
  // fn(block, in range), the block clamped to 0 past the last.
  void forEachLaneBlock(const Stmt& s, Builder& b, const std::function<void(const ExprP&, const ExprP&)>& fn) {
    const int W = std::min(s.threads, 32);
    ExprP lane = W == 32 ? b.convert(var(s.lane, Type::i32()), Type::idx()) : var(s.thread_in_row, Type::idx());
    for (int64_t r0 = 0; r0 < s.grid.blocks; r0 += W) {
      ExprP r = b.add(lane, intConst(r0));
      ExprP ok = b.op(IndexOp::Ult, r, intConst(s.grid.blocks));
      fn(b.select(ok, r, intConst(0)), ok);
    }
  }

  // The row's totals over every block: each block's leader publishes its totals; after one
  // barrier a warp of the row combines every block's for each value in a fixed order (lane l
  // blocks l, l + 32, ..., then a butterfly): the same bits in every block and every run.
  std::vector<ExprP> acrossGrid(const Stmt& s, Builder& b, const std::vector<ExprP>& v) {
    const DType acc = v[0]->type.dtype;
    const ExprP id = combineIdentity(s.combine, acc);
    const int n = static_cast<int>(v.size());
    b.ifThen(b.op(IndexOp::Eq, var(s.thread_in_row, Type::idx()), intConst(0)), "gpublish", [&] {
      for (int i = 0; i < n; ++i) b.emit(globalStore(wsSlot(s, b, var(s.grid.rank, Type::idx()), i), v[static_cast<size_t>(i)], 8));
    });
    gridBarrier(s, b);
    return byRowWarps(s, b, acc, n, [&](int i) {
      ExprP total = id;
      forEachLaneBlock(s, b, [&](const ExprP& r, const ExprP& ok) {
        ExprP x = b.bind(intrinsic(Intrinsic::RelaxedLoad, Type::data(acc, 1), {wsSlot(s, b, r, i)}));
        total = b.math(combineOp(s.combine), acc, {total, b.select(ok, x, id)});
      });
      for (int off = std::min(s.threads, 32) / 2; off >= 1; off /= 2) {
        ExprP other = b.bind(intrinsic(Intrinsic::ShflXor, total->type, {total, i32Const(off)}));
        total = b.math(combineOp(s.combine), acc, {total, other});
      }
      return total;
    });
  }

  // Chan's combination of every block's (count, mean, M2). f32 statistics: mean and M2 share
  // one 8-byte slot and each block's count is known here, so a partial is one load.
  Stats acrossGridStats(const Stmt& s, Builder& b, DType acc, const Stats& st) {
    const bool packed = acc == DType::F32;
    const ExprP rank = var(s.grid.rank, Type::idx());
    b.ifThen(b.op(IndexOp::Eq, var(s.thread_in_row, Type::idx()), intConst(0)), "gspublish", [&] {
      if (packed) {
        ExprP lo = b.bind(intrinsic(Intrinsic::PackLo, Type::pair(acc), {st.mean}));
        ExprP at = wsSlot(s, b, rank, 0);
        b.emit(globalStore(at, b.bind(intrinsic(Intrinsic::PackHi, Type::pair(acc), {lo, st.m2})), 8));
      } else {
        b.emit(globalStore(wsSlot(s, b, rank, 0), st.n, 8));
        b.emit(globalStore(wsSlot(s, b, rank, 1), st.mean, 8));
        b.emit(globalStore(wsSlot(s, b, rank, 2), st.m2, 8));
      }
    });
    gridBarrier(s, b);
    auto merged = byFirstWarp(s, b, acc, 3, [&] {
      const ExprP zero = dataConst(acc, 0, 1);
      Stats total{zero, zero, zero};
      forEachLaneBlock(s, b, [&](const ExprP& r, const ExprP& ok) {
        Stats x;
        if (packed) {
          ExprP v = b.bind(intrinsic(Intrinsic::RelaxedLoad, Type::pair(acc), {wsSlot(s, b, r, 0)}));
          ExprP n = blockCount(b, r, s.threads, s.grid.blocks, s.grid.chunks, s.grid.row_chunks, s.grid.vec, acc);
          ExprP mean = b.bind(intrinsic(Intrinsic::Unpack, Type::data(acc, 1), {v, i32Const(0)}));
          ExprP m2 = b.bind(intrinsic(Intrinsic::Unpack, Type::data(acc, 1), {v, i32Const(1)}));
          x = {n, mean, m2};
        } else {
          ExprP n = b.bind(intrinsic(Intrinsic::RelaxedLoad, Type::data(acc, 1), {wsSlot(s, b, r, 0)}));
          ExprP mean = b.bind(intrinsic(Intrinsic::RelaxedLoad, Type::data(acc, 1), {wsSlot(s, b, r, 1)}));
          ExprP m2 = b.bind(intrinsic(Intrinsic::RelaxedLoad, Type::data(acc, 1), {wsSlot(s, b, r, 2)}));
          x = {n, mean, m2};
        }
        x.n = b.select(ok, x.n, zero);
        x.mean = b.select(ok, x.mean, zero);
        x.m2 = b.select(ok, x.m2, zero);
        total = chanMerge(b, acc, total, x);
      });
      for (int off = std::min(s.threads, 32) / 2; off >= 1; off /= 2) total = chanMerge(b, acc, total, shuffled(b, total, off));
      return std::vector<ExprP>{total.n, total.mean, total.m2};
    });
    return {merged[0], merged[1], merged[2]};
  }

  Kernel& k_;
};

}  // namespace

namespace {
void firstUses(const Body& body, std::vector<std::string>& order);
void firstUses(const Expr& e, std::vector<std::string>& order) {
  if ((e.kind == Expr::Kind::BufLoad || e.kind == Expr::Kind::BytesLoad) &&
      std::find(order.begin(), order.end(), e.buffer) == order.end())
    order.push_back(e.buffer);
  for (const auto& a : e.args) firstUses(*a, order);
}
void firstUses(const Body& body, std::vector<std::string>& order) {
  for (const auto& s : body) {
    for (const ExprP& e : {s->value, s->init, s->cond, s->step, s->offset, s->src})
      if (e) firstUses(*e, order);
    for (const auto& y : s->yields) firstUses(*y, order);
    for (const auto& [n, e] : s->carried) firstUses(*e, order);
    const bool writes = s->kind == Stmt::Kind::BufStore || s->kind == Stmt::Kind::BytesStore ||
                        s->kind == Stmt::Kind::AsyncCopy;
    if (writes && std::find(order.begin(), order.end(), s->name) == order.end()) order.push_back(s->name);
    firstUses(s->body, order);
  }
}
}  // namespace

Kernel lowerCombines(const Kernel& k) {
  Kernel out = k;
  out.buffers = k.buffers;
  Lowering low(out);
  out.body = low.body(k.body);
  // Buffers in the order the kernel first uses them (the dynamic one first): the order their
  // symbols are made in.
  std::vector<std::string> order;
  firstUses(out.body, order);
  auto rank = [&](const Buffer& b) {
    if (b.place == Place::SmemDyn) return -1;
    auto it = std::find(order.begin(), order.end(), b.name);
    return static_cast<int>(it - order.begin());
  };
  std::stable_sort(out.buffers.begin(), out.buffers.end(), [&](const Buffer& a, const Buffer& b) { return rank(a) < rank(b); });
  return out;
}

}  // namespace loom::kir
