#include "compiler/kir/printer.h"

#include <iterator>

#include <fmt/format.h>

namespace loom::kir {

// Everything is appended to one buffer (a kernel's text is also its class key, printed on
// every new size of a compiled class): no text is built for a part and then copied.
namespace {

using Out = fmt::memory_buffer;

template <typename... A>
void put(Out& out, fmt::format_string<A...> f, A&&... a) {
  fmt::format_to(std::back_inserter(out), f, std::forward<A>(a)...);
}
void put(Out& out, std::string_view s) { out.append(s.data(), s.data() + s.size()); }

int precedence(const Expr& e) {
  if (e.kind != Expr::Kind::Index) return 3;
  switch (e.iop) {
    case IndexOp::Lt: return 0;
    case IndexOp::Add: return 1;
    default: return 2;
  }
}

void putParam(Out& out, const Kernel& k, int p) {
  if (p >= 0 && p < static_cast<int>(k.params.size())) put(out, k.params[static_cast<size_t>(p)].name);
  else put(out, "param{}", p);
}

void putMemSuffix(Out& out, Access a, int lanes, Cache c) {
  if (a == Access::Vector) put(out, ".v{}", lanes);
  else put(out, ".{}", accessName(a));
  if (a != Access::Vector && lanes > 1) put(out, "x{}", lanes);
  if (c != Cache::Default) put(out, ".{}", cacheName(c));
}

void putExpr(Out& out, const Kernel& k, const Expr& e);

// `a, b, c`
void putList(Out& out, const Kernel& k, const std::vector<ExprP>& es) {
  for (size_t i = 0; i < es.size(); ++i) {
    if (i) put(out, ", ");
    putExpr(out, k, *es[i]);
  }
}
void putNames(Out& out, const std::vector<std::string>& names) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (i) put(out, ", ");
    put(out, names[i]);
  }
}

void putExpr(Out& out, const Kernel& k, const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Int:
      if (e.type.isPred()) put(out, e.ivalue ? "true" : "false");
      else put(out, "{}", e.ivalue);
      return;
    case Expr::Kind::Var: put(out, e.name); return;
    case Expr::Kind::Special: put(out, specialName(e.special)); return;
    case Expr::Kind::Index: {
      auto side = [&](const Expr& a, bool right) {
        const bool paren = precedence(a) < precedence(e) ||
                           (right && precedence(a) == precedence(e) && e.iop != IndexOp::Add && e.iop != IndexOp::Mul);
        if (paren) put(out, "(");
        putExpr(out, k, a);
        if (paren) put(out, ")");
      };
      side(*e.args[0], false);
      put(out, " {} ", indexOpName(e.iop));
      side(*e.args[1], true);
      return;
    }
    case Expr::Kind::Const: put(out, "{}:{}", e.fvalue, dtypeName(e.type.dtype)); return;
    case Expr::Kind::Math:
      if (e.op == ir::OpKind::Cast || e.op == ir::OpKind::Bitcast) {
        put(out, "{}<{}>(", ir::opName(e.op), dtypeName(e.type.dtype));
        putExpr(out, k, *e.args[0]);
      } else {
        put(out, "{}(", ir::opName(e.op));
        putList(out, k, e.args);
      }
      put(out, ")");
      return;
    case Expr::Kind::Select:
      putExpr(out, k, *e.args[0]);
      put(out, " ? ");
      putExpr(out, k, *e.args[1]);
      put(out, " : ");
      putExpr(out, k, *e.args[2]);
      return;
    case Expr::Kind::Convert:
      put(out, "{}<{}>(", e.type.index ? "zext" : "cast", e.type.str());
      putExpr(out, k, *e.args[0]);
      put(out, ")");
      return;
    case Expr::Kind::Intrinsic:
      put(out, "{}(", intrinsicName(e.intrinsic));
      putList(out, k, e.args);
      put(out, ")");
      return;
    case Expr::Kind::BufAddr:
      put(out, "&{}[", e.buffer);
      putExpr(out, k, *e.args[0]);
      put(out, "]");
      return;
    case Expr::Kind::BufLoad:
      if (e.args[0]->type.address) {
        put(out, "*");
        putExpr(out, k, *e.args[0]);
        put(out, "  ({})", e.buffer);
      } else {
        put(out, "{}[", e.buffer);
        putExpr(out, k, *e.args[0]);
        put(out, "]");
      }
      return;
    case Expr::Kind::BytesLoad:
      put(out, "{}[byte ", e.buffer);
      putExpr(out, k, *e.args[0]);
      put(out, "]  (align {})", e.align);
      return;
    case Expr::Kind::Load:
      put(out, "load");
      putMemSuffix(out, e.access, e.type.lanes, e.cache);
      if (e.access == Access::Gather && e.type.lanes > 1) put(out, " (stride {})", e.inner_stride);
      put(out, " ");
      putParam(out, k, e.param);
      put(out, "[");
      putExpr(out, k, *e.args[0]);
      put(out, "]");
      return;
  }
  put(out, "?");
}

void putPad(Out& out, int depth) {
  for (int i = 0; i < depth; ++i) put(out, "  ");
}

void putBody(Out& out, const Kernel& k, const Body& body, int depth);

void putCombine(Out& out, const Kernel& k, const Stmt& s) {
  put(out, "let ");
  if (s.results.size() == 1) {
    put(out, s.name);
  } else {
    put(out, "(");
    putNames(out, s.results);
    put(out, ")");
  }
  put(out, ": {} = combine.{}(", s.value->type.str(), combineName(s.combine));
  putList(out, k, s.yields);
  put(out, ") over {}: {} threads a row ({} a block), ", s.domain, s.threads, s.rows);
  if (s.threads == 1) put(out, "one thread a row");
  else if (s.threads <= 32) put(out, "a butterfly over the warp's lanes");
  else put(out, "a butterfly over each warp's lanes, then its {} warps through shared memory", s.threads / 32);
  if (s.cluster > 1) put(out, ", then the {} blocks of the cluster through distributed shared memory", s.cluster);
  put(out, "\n");
}

void putRepeat(Out& out, const Kernel& k, const Stmt& s, int depth) {
  put(out, "for {} in [0, ", s.name);
  if (s.trips) {
    putExpr(out, k, *s.trips);
    put(out, ") (at most {})", s.count);
  } else {
    put(out, "{})", s.count);
  }
  if (!s.carried.empty()) {
    put(out, " carrying (");
    for (size_t i = 0; i < s.carried.size(); ++i) {
      put(out, "{}{} = ", i ? ", " : "", s.carried[i].first);
      putExpr(out, k, *s.carried[i].second);
    }
    put(out, ")");
  }
  if (s.unroll > 1) put(out, "  [unroll {}]", s.unroll);
  put(out, ":\n");
  putBody(out, k, s.body, depth + 1);
  if (s.yields.empty()) return;
  putPad(out, depth);
  put(out, "  next (");
  putList(out, k, s.yields);
  put(out, ")\n");
  putPad(out, depth);
  put(out, "after: (");
  putNames(out, s.results);
  put(out, ") = last (");
  putList(out, k, s.yields);
  put(out, ")\n");
}

void putStmt(Out& out, const Kernel& k, const Stmt& s, int depth) {
  putPad(out, depth);
  switch (s.kind) {
    case Stmt::Kind::Let:
      put(out, "let {}: {} = ", s.name, s.value->type.str());
      putExpr(out, k, *s.value);
      put(out, "\n");
      break;
    case Stmt::Kind::Loop:
      put(out, "for {} = ", s.name);
      putExpr(out, k, *s.init);
      put(out, "; ");
      putExpr(out, k, *s.cond);
      put(out, "; {} += ", s.name);
      putExpr(out, k, *s.step);
      put(out, "  [{}", mappingName(s.mapping));
      if (s.unroll > 1) put(out, ", unroll {}", s.unroll);
      put(out, "]");
      if (!s.exit.empty()) put(out, "  (after: {})", s.exit);
      put(out, "\n");
      putBody(out, k, s.body, depth + 1);
      break;
    case Stmt::Kind::If:
      put(out, "if ");
      putExpr(out, k, *s.cond);
      put(out, ":  [{}{}]\n", s.name, s.uniform ? ", uniform" : "");
      putBody(out, k, s.body, depth + 1);
      break;
    case Stmt::Kind::Barrier: put(out, "barrier.{}\n", barrierName(s.barrier)); break;
    case Stmt::Kind::BufStore:
      if (s.offset->type.address) {
        put(out, "*");
        putExpr(out, k, *s.offset);
        put(out, " = ");
        putExpr(out, k, *s.value);
        put(out, "  ({})\n", s.name);
      } else {
        put(out, "{}[", s.name);
        putExpr(out, k, *s.offset);
        put(out, "] = ");
        putExpr(out, k, *s.value);
        put(out, "\n");
      }
      break;
    case Stmt::Kind::Combine: putCombine(out, k, s); break;
    case Stmt::Kind::Repeat: putRepeat(out, k, s, depth); break;
    case Stmt::Kind::AsyncCopy:
      put(out, "cp.async.{} {}[byte ", s.bytes, s.name);
      putExpr(out, k, *s.offset);
      put(out, "] <- ");
      putParam(out, k, s.param);
      put(out, "[");
      putExpr(out, k, *s.src);
      put(out, "]\n");
      break;
    case Stmt::Kind::Spread:
      put(out, "for {} in [0, {})  [{}: {}]\n", s.name, s.count, mappingName(s.mapping),
          s.mapping == Mapping::Threads ? "tid.x" : "ctaid.x");
      putBody(out, k, s.body, depth + 1);
      break;
    case Stmt::Kind::AsyncWait:
      if (s.count < 0) put(out, "cp.async.wait_all\n");
      else put(out, "cp.async.wait_group {}\n", s.count);
      break;
    case Stmt::Kind::AsyncCommit: put(out, "cp.async.commit_group\n"); break;
    case Stmt::Kind::GlobalStore:
      put(out, "*");
      putExpr(out, k, *s.offset);
      put(out, " = ");
      putExpr(out, k, *s.value);
      put(out, "  (global, align {})\n", s.align);
      break;
    case Stmt::Kind::GridSync:
      put(out, "barrier.grid: counter *");
      putExpr(out, k, *s.offset);
      put(out, " reaches ");
      putExpr(out, k, *s.src);
      put(out, " (thread {} 0 of each block arrives and waits)\n", s.name);
      break;
    case Stmt::Kind::RelaxedZero:
      put(out, "st.relaxed.gpu *");
      putExpr(out, k, *s.offset);
      put(out, " = 0:u32\n");
      break;
    case Stmt::Kind::BytesStore:
      put(out, "{}[byte ", s.name);
      putExpr(out, k, *s.offset);
      put(out, "] = ");
      putExpr(out, k, *s.value);
      put(out, "  (align {}{})\n", s.align, s.access == Access::Gather ? ", scalar" : "");
      break;
    case Stmt::Kind::Welford:
      put(out, "let (");
      putNames(out, s.results);
      put(out, ") = welford(");
      putList(out, k, s.yields);
      put(out, ") over {}: {} threads a row ({} a block), Chan's merge {}\n", s.domain, s.threads, s.rows,
          s.threads <= 32 ? "in a butterfly over the warp's lanes"
                          : "in a butterfly over each warp's lanes, then the row's first warp over its warps");
      break;
    case Stmt::Kind::Store:
      put(out, "store");
      putMemSuffix(out, s.access, s.value->type.lanes, Cache::Default);
      if (s.access == Access::Gather && s.value->type.lanes > 1) put(out, " (stride {})", s.inner_stride);
      put(out, " ");
      putParam(out, k, s.param);
      put(out, "[");
      putExpr(out, k, *s.offset);
      put(out, "] = ");
      putExpr(out, k, *s.value);
      put(out, "\n");
      break;
  }
}

void putBody(Out& out, const Kernel& k, const Body& body, int depth) {
  for (const auto& s : body) putStmt(out, k, *s, depth);
}

}  // namespace

std::string printExpr(const Kernel& k, const Expr& e) {
  Out out;
  putExpr(out, k, e);
  return fmt::to_string(out);
}

std::string printKernel(const Kernel& k) {
  Out out;
  put(out, "kernel {} ({}; {}-bit indices{})\n", k.name, k.scheduler, k.index_bits,
      k.noalias ? "" : "; an output aliases an input");
  for (const auto& p : k.params) {
    if (p.workspace) put(out, "  ws  {}: {} bytes, zeroed once\n", p.name, p.extent);
    else put(out, "  {} {}: {}[{}]\n", p.output ? "out" : "in ", p.name, dtypeName(p.dtype), p.extent);
  }
  for (const auto& s : k.sizes) put(out, "  {}: 1 to {}, a size parameter\n", s.name, s.max);
  put(out, "  launch grid {}, block {}", k.launch.grid, k.launch.block);
  if (k.min_blocks_per_sm) put(out, ", at least {} blocks an SM", k.min_blocks_per_sm);
  put(out, "\n");
  for (const auto& b : k.buffers) {
    if (b.place == Place::SmemDyn) put(out, "  {} {}: {} bytes\n", placeName(b.place), b.name, b.count);
    else put(out, "  {} {}: {}[{}]\n", placeName(b.place), b.name, dtypeName(b.elem), b.count);
  }
  putBody(out, k, k.body, 1);
  return fmt::to_string(out);
}

}  // namespace loom::kir
