#include "compiler/kir/lower_combines.h"

#include <algorithm>

#include <fmt/format.h>

#include "compiler/kir/builder.h"

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
        case Stmt::Kind::If: out.push_back(ifThen(s->cond, s->name, body(s->body))); break;
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
    b.bindAs(s.name, v);
  }

  Kernel& k_;
};

}  // namespace

Kernel lowerCombines(const Kernel& k) {
  Kernel out = k;
  out.buffers = k.buffers;
  Lowering low(out);
  out.body = low.body(k.body);
  return out;
}

}  // namespace loom::kir
