#include "compiler/kir/unroll.h"

#include <fmt/format.h>

#include "compiler/kir/rename.h"
#include "ir/error.h"

namespace loom::kir {

namespace {

// A trip's leading lets of indices and loads: what the main loop issues first.
bool issuesFirst(const Stmt& s) {
  return s.kind == Stmt::Kind::Let && (s.value->type.index || s.value->kind == Expr::Kind::Load);
}

Body unrollBody(const Body& body);

void unrollLoop(const Stmt& s, Body& out) {
  const int u = s.unroll;
  const std::string& v = s.name;
  LOOM_ASSERT(s.cond->args[0]->kind == Expr::Kind::Var && s.cond->args[0]->name == v,
              "unroll: loop `{}` must test its variable against its end", v);
  const ExprP end = s.cond->args[1];
  const Body inner = unrollBody(s.body);
  const ExprP idx = var(v, Type::idx());
  out.push_back(let(v + "_span", mul(s.step, intConst(u - 1))));
  out.push_back(let(v + "_step", mul(s.step, intConst(u))));
  Body main;
  std::vector<Body> trips;
  for (int j = 0; j < u; ++j) {
    const std::string vj = fmt::format("{}_{}", v, j);
    main.push_back(let(vj, add(idx, mul(s.step, intConst(j)))));
    trips.push_back(renameBody(inner, fmt::format("_{}", j), {{v, vj}}));
  }
  std::vector<size_t> split;
  for (const auto& t : trips) {
    size_t n = 0;
    while (n < t.size() && issuesFirst(*t[n])) ++n;
    main.insert(main.end(), t.begin(), t.begin() + static_cast<std::ptrdiff_t>(n));
    split.push_back(n);
  }
  for (size_t j = 0; j < trips.size(); ++j)
    main.insert(main.end(), trips[j].begin() + static_cast<std::ptrdiff_t>(split[j]), trips[j].end());
  const std::string rest = v + "_rest";
  out.push_back(loop(v, s.init, index(IndexOp::Lt, add(idx, var(v + "_span", Type::idx())), end),
                     var(v + "_step", Type::idx()), s.mapping, std::move(main), 1, rest));
  const std::string vr = v + "_r";
  out.push_back(loop(vr, var(rest, Type::idx()), index(IndexOp::Lt, var(vr, Type::idx()), end), s.step,
                     s.mapping, renameBody(inner, "_r", {{v, vr}}), 1, s.exit));
}

Body unrollBody(const Body& body) {
  Body out;
  for (const auto& s : body) {
    if (s->kind == Stmt::Kind::Repeat) {
      out.push_back(repeat(s->name, s->count, s->carried, unrollBody(s->body), s->yields, s->results, s->unroll, s->trips));
    } else if (s->kind == Stmt::Kind::If) {
      out.push_back(s->uniform ? uniformIf(s->cond, s->name, unrollBody(s->body)) : ifThen(s->cond, s->name, unrollBody(s->body)));
    } else if (s->kind == Stmt::Kind::Spread) {
      out.push_back(spread(s->name, s->mapping, s->count, unrollBody(s->body)));
    } else if (s->kind != Stmt::Kind::Loop) {
      out.push_back(s);
    } else if (s->unroll > 1) {
      unrollLoop(*s, out);
    } else {
      out.push_back(loop(s->name, s->init, s->cond, s->step, s->mapping, unrollBody(s->body), 1, s->exit));
    }
  }
  return out;
}

}  // namespace

Kernel unrollLoops(const Kernel& k) {
  Kernel out = k;
  out.body = unrollBody(k.body);
  return out;
}

}  // namespace loom::kir
