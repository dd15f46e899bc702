#include "compiler/kir/rename.h"

#include "ir/error.h"

namespace loom::kir {

ExprP rename(const ExprP& e, const Renames& r) {
  if (e->kind == Expr::Kind::Var) {
    auto it = r.find(e->name);
    return it == r.end() ? e : var(it->second, e->type);
  }
  if (e->args.empty()) return e;
  std::vector<ExprP> args;
  bool changed = false;
  for (const auto& a : e->args) {
    args.push_back(rename(a, r));
    changed = changed || args.back() != a;
  }
  if (!changed) return e;
  switch (e->kind) {
    case Expr::Kind::Index: return index(e->iop, args[0], args[1]);
    case Expr::Kind::Math: return math(e->op, e->type.dtype, std::move(args), e->type.lanes);
    case Expr::Kind::Load:
      return load(e->param, e->type.dtype, args[0], e->type.lanes, e->access, e->inner_stride, e->cache);
    case Expr::Kind::Select: return select(args[0], args[1], args[2]);
    case Expr::Kind::Convert: return convert(args[0], e->type);
    case Expr::Kind::Intrinsic: return intrinsic(e->intrinsic, e->type, std::move(args));
    case Expr::Kind::BufLoad: return bufLoad(e->buffer, e->type.dtype, args[0]);
    case Expr::Kind::BufAddr: return bufAddr(e->buffer, args[0]);
    case Expr::Kind::BytesLoad: return bytesLoad(e->buffer, e->type.dtype, e->type.lanes, args[0], e->align);
    default: LOOM_ASSERT(false, "kernel IR: operands on a leaf expression");
  }
  return e;
}

namespace {
void collect(const Body& body, std::set<std::string>& out) {
  for (const auto& s : body) {
    if (s->kind == Stmt::Kind::Let) out.insert(s->name);
    if (s->kind == Stmt::Kind::If) collect(s->body, out);
    if (s->kind == Stmt::Kind::Spread) {
      out.insert(s->name);
      collect(s->body, out);
    }
    if (s->kind == Stmt::Kind::Repeat) {
      out.insert(s->name);
      for (const auto& [n, e] : s->carried) out.insert(n);
      collect(s->body, out);
    }
    if (s->kind == Stmt::Kind::Repeat || s->kind == Stmt::Kind::Welford || s->kind == Stmt::Kind::Combine)
      for (const auto& n : s->results) out.insert(n);
    if (s->kind == Stmt::Kind::Loop) {
      out.insert(s->name);
      if (!s->exit.empty()) out.insert(s->exit);
      collect(s->body, out);
    }
  }
}

GridLevel renameGrid(GridLevel g, const Renames& r) {
  for (std::string* n : {&g.rank, &g.parity, &g.set, &g.group_ws, &g.tid})
    if (auto it = r.find(*n); it != r.end()) *n = it->second;
  return g;
}

StmtP renameStmt(const Stmt& s, const Renames& r) {
  auto nm = [&](const std::string& n) {
    auto it = r.find(n);
    return it == r.end() ? n : it->second;
  };
  // Repeat, Welford and Combine: the values they yield and the names they bind.
  auto yields = [&] {
    std::vector<ExprP> out;
    for (const auto& e : s.yields) out.push_back(rename(e, r));
    return out;
  };
  auto results = [&] {
    std::vector<std::string> out;
    for (const auto& n : s.results) out.push_back(nm(n));
    return out;
  };
  switch (s.kind) {
    case Stmt::Kind::Let: return let(nm(s.name), rename(s.value, r));
    case Stmt::Kind::Loop: {
      Body b;
      for (const auto& x : s.body) b.push_back(renameStmt(*x, r));
      return loop(nm(s.name), rename(s.init, r), rename(s.cond, r), rename(s.step, r), s.mapping, std::move(b),
                  s.unroll, s.exit.empty() ? "" : nm(s.exit));
    }
    case Stmt::Kind::Store: return store(s.param, rename(s.offset, r), rename(s.value, r), s.access, s.inner_stride);
    case Stmt::Kind::If: {
      Body b;
      for (const auto& x : s.body) b.push_back(renameStmt(*x, r));
      return s.uniform ? uniformIf(rename(s.cond, r), s.name, std::move(b)) : ifThen(rename(s.cond, r), s.name, std::move(b));
    }
    case Stmt::Kind::Barrier: return barrier(s.barrier);
    case Stmt::Kind::BufStore: return bufStore(s.name, rename(s.offset, r), rename(s.value, r));
    case Stmt::Kind::Repeat: {
      Body b;
      for (const auto& x : s.body) b.push_back(renameStmt(*x, r));
      std::vector<std::pair<std::string, ExprP>> carried;
      for (const auto& [n, e] : s.carried) carried.push_back({nm(n), rename(e, r)});
      return repeat(nm(s.name), s.count, std::move(carried), std::move(b), yields(), results(), s.unroll,
                    s.trips ? rename(s.trips, r) : nullptr);
    }
    case Stmt::Kind::AsyncCopy:
      return asyncCopy(s.name, rename(s.offset, r), s.param, s.copy_dtype, rename(s.src, r), s.bytes);
    case Stmt::Kind::AsyncWait: return s.count < 0 ? asyncWaitAll() : asyncWaitGroup(static_cast<int>(s.count));
    case Stmt::Kind::AsyncCommit: return asyncCommit();
    case Stmt::Kind::GlobalStore: return globalStore(rename(s.offset, r), rename(s.value, r), s.align);
    case Stmt::Kind::GridSync: return gridSync(nm(s.name), rename(s.offset, r), rename(s.src, r));
    case Stmt::Kind::RelaxedZero: return relaxedZero(rename(s.offset, r));
    case Stmt::Kind::Spread: {
      Body b;
      for (const auto& x : s.body) b.push_back(renameStmt(*x, r));
      return spread(nm(s.name), s.mapping, s.count, std::move(b));
    }
    case Stmt::Kind::BytesStore:
      return bytesStore(s.name, rename(s.offset, r), rename(s.value, r), s.align, s.access == Access::Gather);
    case Stmt::Kind::Welford:
      return welford(results(), yields(),
                     {Combine::Sum, s.domain, s.threads, s.rows, nm(s.thread_in_row), nm(s.row_in_block), nm(s.lane), 1,
                      renameGrid(s.grid, r), s.threads_merged});
    case Stmt::Kind::Combine:
      return combineAll(results(), yields(),
                        {s.combine, s.domain, s.threads, s.rows, nm(s.thread_in_row), nm(s.row_in_block), nm(s.lane),
                         s.cluster, renameGrid(s.grid, r)});
  }
  return nullptr;
}
}  // namespace

std::set<std::string> boundNames(const Body& body) {
  std::set<std::string> out;
  collect(body, out);
  return out;
}

Body renameBody(const Body& body, const std::string& suffix, Renames r) {
  for (const auto& n : boundNames(body)) r[n] = n + suffix;
  Body out;
  for (const auto& s : body) out.push_back(renameStmt(*s, r));
  return out;
}

}  // namespace loom::kir
