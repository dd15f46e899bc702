#include "compiler/kir/lower_combines.h"

#include <algorithm>

#include <fmt/format.h>

#include "compiler/kir/builder.h"
#include "compiler/kir/welford.h"

namespace loom::kir {

namespace {

ir::OpKind opOf(Combine c) {
  switch (c) {
    case Combine::Sum: return ir::OpKind::Add;
    case Combine::Max: return ir::OpKind::Max;
    case Combine::Min: return ir::OpKind::Min;
  }
  return ir::OpKind::Add;
}

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
        case Stmt::Kind::If: out.push_back(ifThen(s->cond, s->name, body(s->body))); break;
        case Stmt::Kind::Spread: out.push_back(spread(s->name, s->mapping, s->count, body(s->body))); break;
        case Stmt::Kind::Repeat:
          out.push_back(repeat(s->name, s->count, s->carried, body(s->body), s->yields, s->results, s->unroll));
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
  void expand(const Stmt& s, Builder& b) {
    const DType acc = s.value->type.dtype;
    const ir::OpKind op = opOf(s.combine);
    const int T = s.threads;
    ExprP v = s.value;
    for (int off = std::min(T, 32) / 2; off >= 1; off /= 2) {
      ExprP other = b.bind(intrinsic(Intrinsic::ShflXor, v->type, {v, i32Const(off)}));
      v = b.math(op, acc, {v, other});
    }
    if (T > 32) {
      const int wpr = T / 32;
      const std::string buf = bufferName(k_, "red_smem");
      k_.buffers.push_back({buf, "red_smem", Place::Smem, acc, int64_t{wpr} * s.rows, 8});
      ExprP warp = b.udiv(b.convert(var(s.thread_in_row, Type::idx()), Type::i32()), i32Const(32));
      ExprP base = b.mul(var(s.row_in_block, Type::i32()), i32Const(wpr));
      ExprP lane0 = b.op(IndexOp::Eq, var(s.lane, Type::i32()), i32Const(0));
      b.ifThen(lane0, "publish", [&] { b.emit(bufStore(buf, b.add(base, warp), v)); });
      b.emit(barrier(Barrier::Block));
      ExprP total = b.bind(bufLoad(buf, acc, b.add(base, i32Const(0))));
      for (int w = 1; w < wpr; ++w) {
        ExprP x = b.bind(bufLoad(buf, acc, b.add(base, i32Const(w))));
        total = b.math(op, acc, {total, x});
      }
      b.emit(barrier(Barrier::Block));
      v = total;
    }
    if (s.cluster > 1) v = acrossCluster(s, b, v);
    b.bindAs(s.name, v);
  }

  // Every block of the row's cluster holds its total: the row's first thread publishes it in
  // its shared memory, and after the cluster's barrier every thread combines all blocks'
  // totals in rank order (so every block gets the same bits).
  ExprP acrossCluster(const Stmt& s, Builder& b, ExprP v) {
    const DType acc = v->type.dtype;
    const std::string buf = bufferName(k_, "cluster_red");
    k_.buffers.push_back({buf, "cluster_red", Place::Smem, acc, s.rows, 8});
    ExprP at = b.bind(bufAddr(buf, var(s.row_in_block, Type::i32())));
    b.ifThen(b.op(IndexOp::Eq, var(s.thread_in_row, Type::idx()), intConst(0)), "cpublish",
             [&] { b.emit(bufStore(buf, at, v)); });
    b.emit(barrier(Barrier::ClusterArrive));
    b.emit(barrier(Barrier::ClusterWait));
    ExprP generic = b.bind(intrinsic(Intrinsic::ToGeneric, Type::addr(), {at}));
    ExprP total;
    for (int r = 0; r < s.cluster; ++r) {
      ExprP remote = b.bind(intrinsic(Intrinsic::Mapa, Type::addr(), {generic, i32Const(r)}));
      ExprP x = b.bind(bufLoad(buf, acc, remote));
      total = total ? b.math(opOf(s.combine), acc, {total, x}) : x;
    }
    return total;
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
    for (int off = std::min(T, 32) / 2; off >= 1; off /= 2) st = chanMerge(b, acc, st, shuffled(b, st, off));
    if (T > 32) {
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
      const std::string rbuf = bufferName(k_, "row_result");
      k_.buffers.push_back({rbuf, "row_result", Place::Smem, acc, int64_t{3} * s.rows, 8});
      auto rslot = [&](int i) { return b.add(b.mul(row_in_block, i32Const(3)), i32Const(i)); };
      b.ifThen(b.op(IndexOp::Ult, t_in_row, intConst(32)), "first_warp", [&] {
        ExprP w = b.convert(t_in_row, Type::i32());
        ExprP ok = b.op(IndexOp::Ult, w, i32Const(wpr));
        ExprP wc = b.select(ok, w, i32Const(0));
        ExprP n = b.select(ok, b.bind(bufLoad(wbuf, acc, slot(wc, 0))), zero);
        ExprP mean = b.select(ok, b.bind(bufLoad(wbuf, acc, slot(wc, 1))), zero);
        ExprP m2 = b.select(ok, b.bind(bufLoad(wbuf, acc, slot(wc, 2))), zero);
        Stats m{n, mean, m2};
        for (int off = std::min(wpr, 32) / 2; off >= 1; off /= 2) m = chanMerge(b, acc, m, shuffled(b, m, off));
        b.ifThen(b.op(IndexOp::Eq, t_in_row, intConst(0)), "first_lane", [&] {
          b.emit(bufStore(rbuf, rslot(0), m.n));
          b.emit(bufStore(rbuf, rslot(1), m.mean));
          b.emit(bufStore(rbuf, rslot(2), m.m2));
        });
      });
      b.emit(barrier(Barrier::Block));
      ExprP n = b.bind(bufLoad(rbuf, acc, rslot(0)));
      ExprP mean = b.bind(bufLoad(rbuf, acc, rslot(1)));
      ExprP m2 = b.bind(bufLoad(rbuf, acc, rslot(2)));
      st = {n, mean, m2};
    }
    b.bindAs(s.results[0], st.n);
    b.bindAs(s.results[1], st.mean);
    b.bindAs(s.results[2], st.m2);
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
