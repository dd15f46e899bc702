#include "compiler/kir/printer.h"

#include <fmt/format.h>

namespace loom::kir {

namespace {

int precedence(const Expr& e) {
  if (e.kind != Expr::Kind::Index) return 3;
  switch (e.iop) {
    case IndexOp::Lt: return 0;
    case IndexOp::Add: return 1;
    default: return 2;
  }
}

std::string constText(double v) {
  std::string s = fmt::format("{}", v);
  return s;
}

std::string paramName(const Kernel& k, int p) {
  return p >= 0 && p < static_cast<int>(k.params.size()) ? k.params[static_cast<size_t>(p)].name
                                                         : fmt::format("param{}", p);
}

std::string memSuffix(Access a, int lanes, Cache c) {
  std::string s = a == Access::Vector ? fmt::format(".v{}", lanes) : fmt::format(".{}", accessName(a));
  if (a != Access::Vector && lanes > 1) s += fmt::format("x{}", lanes);
  if (c != Cache::Default) s += fmt::format(".{}", cacheName(c));
  return s;
}

void printBody(const Kernel& k, const Body& body, int depth, std::string& out);

void printStmt(const Kernel& k, const Stmt& s, int depth, std::string& out) {
  const std::string pad(static_cast<size_t>(2 * depth), ' ');
  switch (s.kind) {
    case Stmt::Kind::Let:
      out += fmt::format("{}let {}: {} = {}\n", pad, s.name, s.value->type.str(), printExpr(k, *s.value));
      break;
    case Stmt::Kind::Loop:
      out += fmt::format("{}for {} = {}; {}; {} += {}  [{}{}]{}\n", pad, s.name, printExpr(k, *s.init),
                         printExpr(k, *s.cond), s.name, printExpr(k, *s.step), mappingName(s.mapping),
                         s.unroll > 1 ? fmt::format(", unroll {}", s.unroll) : "",
                         s.exit.empty() ? "" : fmt::format("  (after: {})", s.exit));
      printBody(k, s.body, depth + 1, out);
      break;
    case Stmt::Kind::If:
      out += fmt::format("{}if {}:  [{}{}]\n", pad, printExpr(k, *s.cond), s.name, s.uniform ? ", uniform" : "");
      printBody(k, s.body, depth + 1, out);
      break;
    case Stmt::Kind::Barrier: out += fmt::format("{}barrier.{}\n", pad, barrierName(s.barrier)); break;
    case Stmt::Kind::BufStore:
      if (s.offset->type.address)
        out += fmt::format("{}*{} = {}  ({})\n", pad, printExpr(k, *s.offset), printExpr(k, *s.value), s.name);
      else
        out += fmt::format("{}{}[{}] = {}\n", pad, s.name, printExpr(k, *s.offset), printExpr(k, *s.value));
      break;
    case Stmt::Kind::Combine: {
      std::string how = s.threads == 1 ? "one thread a row" : s.threads <= 32 ? "a butterfly over the warp's lanes"
                        : fmt::format("a butterfly over each warp's lanes, then its {} warps through shared memory", s.threads / 32);
      if (s.cluster > 1) how += fmt::format(", then the {} blocks of the cluster through distributed shared memory", s.cluster);
      std::vector<std::string> v;
      for (const auto& e : s.yields) v.push_back(printExpr(k, *e));
      out += fmt::format("{}let {}: {} = combine.{}({}) over {}: {} threads a row ({} a block), {}\n", pad,
                         s.results.size() == 1 ? s.name : fmt::format("({})", fmt::join(s.results, ", ")),
                         s.value->type.str(), combineName(s.combine), fmt::join(v, ", "), s.domain, s.threads, s.rows, how);
      break;
    }
    case Stmt::Kind::Repeat: {
      std::vector<std::string> carry, yields;
      for (const auto& [n, e] : s.carried) carry.push_back(fmt::format("{} = {}", n, printExpr(k, *e)));
      for (const auto& e : s.yields) yields.push_back(printExpr(k, *e));
      out += fmt::format("{}for {} in [0, {}){}{}:\n", pad, s.name,
                         s.trips ? fmt::format("{}) (at most {}", printExpr(k, *s.trips), s.count) : fmt::format("{}", s.count),
                         carry.empty() ? "" : fmt::format(" carrying ({})", fmt::join(carry, ", ")),
                         s.unroll > 1 ? fmt::format("  [unroll {}]", s.unroll) : "");
      printBody(k, s.body, depth + 1, out);
      if (!yields.empty())
        out += fmt::format("{}  next ({})\n{}after: ({}) = last ({})\n", pad, fmt::join(yields, ", "), pad,
                           fmt::join(s.results, ", "), fmt::join(yields, ", "));
      break;
    }
    case Stmt::Kind::AsyncCopy:
      out += fmt::format("{}cp.async.{} {}[byte {}] <- {}[{}]\n", pad, s.bytes, s.name, printExpr(k, *s.offset),
                         paramName(k, s.param), printExpr(k, *s.src));
      break;
    case Stmt::Kind::Spread:
      out += fmt::format("{}for {} in [0, {})  [{}: {}]\n", pad, s.name, s.count, mappingName(s.mapping),
                         s.mapping == Mapping::Threads ? "tid.x" : "ctaid.x");
      printBody(k, s.body, depth + 1, out);
      break;
    case Stmt::Kind::AsyncWait:
      out += s.count < 0 ? fmt::format("{}cp.async.wait_all\n", pad) : fmt::format("{}cp.async.wait_group {}\n", pad, s.count);
      break;
    case Stmt::Kind::AsyncCommit: out += fmt::format("{}cp.async.commit_group\n", pad); break;
    case Stmt::Kind::GlobalStore:
      out += fmt::format("{}*{} = {}  (global, align {})\n", pad, printExpr(k, *s.offset), printExpr(k, *s.value), s.align);
      break;
    case Stmt::Kind::GridSync:
      out += fmt::format("{}barrier.grid: counter *{} reaches {} (thread {} 0 of each block arrives and waits)\n", pad,
                         printExpr(k, *s.offset), printExpr(k, *s.src), s.name);
      break;
    case Stmt::Kind::RelaxedZero: out += fmt::format("{}st.relaxed.gpu *{} = 0:u32\n", pad, printExpr(k, *s.offset)); break;
    case Stmt::Kind::BytesStore:
      out += fmt::format("{}{}[byte {}] = {}  (align {}{})\n", pad, s.name, printExpr(k, *s.offset),
                         printExpr(k, *s.value), s.align, s.access == Access::Gather ? ", scalar" : "");
      break;
    case Stmt::Kind::Welford: {
      std::vector<std::string> v;
      for (const auto& e : s.yields) v.push_back(printExpr(k, *e));
      out += fmt::format("{}let ({}) = welford({}) over {}: {} threads a row ({} a block), Chan's merge {}\n", pad,
                         fmt::join(s.results, ", "), fmt::join(v, ", "), s.domain, s.threads, s.rows,
                         s.threads <= 32 ? "in a butterfly over the warp's lanes"
                                         : "in a butterfly over each warp's lanes, then the row's first warp over its warps");
      break;
    }
    case Stmt::Kind::Store: {
      const Type& t = s.value->type;
      out += fmt::format("{}store{}{} {}[{}] = {}\n", pad, memSuffix(s.access, t.lanes, Cache::Default),
                         s.access == Access::Gather && t.lanes > 1 ? fmt::format(" (stride {})", s.inner_stride) : "",
                         paramName(k, s.param), printExpr(k, *s.offset), printExpr(k, *s.value));
      break;
    }
  }
}

void printBody(const Kernel& k, const Body& body, int depth, std::string& out) {
  for (const auto& s : body) printStmt(k, *s, depth, out);
}

}  // namespace

std::string printExpr(const Kernel& k, const Expr& e) {
  switch (e.kind) {
    case Expr::Kind::Int:
      if (e.type.isPred()) return e.ivalue ? "true" : "false";
      return fmt::format("{}", e.ivalue);
    case Expr::Kind::Var: return e.name;
    case Expr::Kind::Special: return std::string(specialName(e.special));
    case Expr::Kind::Index: {
      auto side = [&](const Expr& a, bool right) {
        std::string t = printExpr(k, a);
        bool paren = precedence(a) < precedence(e) ||
                     (right && precedence(a) == precedence(e) && e.iop != IndexOp::Add && e.iop != IndexOp::Mul);
        return paren ? "(" + t + ")" : t;
      };
      return fmt::format("{} {} {}", side(*e.args[0], false), indexOpName(e.iop), side(*e.args[1], true));
    }
    case Expr::Kind::Const: return fmt::format("{}:{}", constText(e.fvalue), dtypeName(e.type.dtype));
    case Expr::Kind::Math: {
      std::vector<std::string> a;
      for (const auto& x : e.args) a.push_back(printExpr(k, *x));
      if (e.op == ir::OpKind::Cast) return fmt::format("cast<{}>({})", dtypeName(e.type.dtype), a[0]);
      return fmt::format("{}({})", ir::opName(e.op), fmt::join(a, ", "));
    }
    case Expr::Kind::Select:
      return fmt::format("{} ? {} : {}", printExpr(k, *e.args[0]), printExpr(k, *e.args[1]), printExpr(k, *e.args[2]));
    case Expr::Kind::Convert: return fmt::format("{}<{}>({})", e.type.index ? "zext" : "cast", e.type.str(), printExpr(k, *e.args[0]));
    case Expr::Kind::Intrinsic: {
      std::vector<std::string> a;
      for (const auto& x : e.args) a.push_back(printExpr(k, *x));
      return fmt::format("{}({})", intrinsicName(e.intrinsic), fmt::join(a, ", "));
    }
    case Expr::Kind::BufAddr: return fmt::format("&{}[{}]", e.buffer, printExpr(k, *e.args[0]));
    case Expr::Kind::BufLoad:
      if (e.args[0]->type.address) return fmt::format("*{}  ({})", printExpr(k, *e.args[0]), e.buffer);
      return fmt::format("{}[{}]", e.buffer, printExpr(k, *e.args[0]));
    case Expr::Kind::BytesLoad:
      return fmt::format("{}[byte {}]  (align {})", e.buffer, printExpr(k, *e.args[0]), e.align);
    case Expr::Kind::Load:
      return fmt::format("load{}{} {}[{}]", memSuffix(e.access, e.type.lanes, e.cache),
                         e.access == Access::Gather && e.type.lanes > 1 ? fmt::format(" (stride {})", e.inner_stride) : "",
                         paramName(k, e.param), printExpr(k, *e.args[0]));
  }
  return "?";
}

std::string printKernel(const Kernel& k) {
  std::string out = fmt::format("kernel {} ({}; {}-bit indices{})\n", k.name, k.scheduler, k.index_bits,
                                k.noalias ? "" : "; an output aliases an input");
  for (const auto& p : k.params)
    out += p.workspace ? fmt::format("  ws  {}: {} bytes, zeroed once\n", p.name, p.extent)
                       : fmt::format("  {} {}: {}[{}]\n", p.output ? "out" : "in ", p.name, dtypeName(p.dtype), p.extent);
  for (const auto& s : k.sizes) out += fmt::format("  {}: 1 to {}, a size parameter\n", s.name, s.max);
  out += fmt::format("  launch grid {}, block {}{}\n", k.launch.grid, k.launch.block,
                     k.min_blocks_per_sm ? fmt::format(", at least {} blocks an SM", k.min_blocks_per_sm) : "");
  for (const auto& b : k.buffers)
    out += b.place == Place::SmemDyn ? fmt::format("  {} {}: {} bytes\n", placeName(b.place), b.name, b.count)
                                     : fmt::format("  {} {}: {}[{}]\n", placeName(b.place), b.name, dtypeName(b.elem), b.count);
  printBody(k, k.body, 1, out);
  return out;
}

}  // namespace loom::kir
