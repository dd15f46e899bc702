#include "compiler/kir/verifier.h"

#include <algorithm>
#include <functional>
#include <limits>
#include <map>
#include <set>

#include <fmt/format.h>

#include "compiler/kir/printer.h"
#include "ir/error.h"

namespace loom::kir {

namespace {

constexpr int64_t kInf = std::numeric_limits<int64_t>::max();

// A closed interval of values an index takes; `hi == kInf` when unbounded above.
struct Range {
  int64_t lo = 0, hi = kInf;
  int64_t mult = 1;  // every value is a multiple of this (0: the value is 0)
};

int64_t gcd(int64_t a, int64_t b) { return b == 0 ? (a < 0 ? -a : a) : gcd(b, a % b); }

// The largest multiple of m at most v (v >= 0).
int64_t floorTo(int64_t v, int64_t m) { return m > 1 && v >= 0 && v != kInf ? v / m * m : v; }

int64_t sat(__int128 v) {
  if (v > kInf) return kInf;
  if (v < -kInf) return -kInf;
  return static_cast<int64_t>(v);
}

int64_t multOf(IndexOp op, const Range& a, const Range& b) {
  switch (op) {
    case IndexOp::Add:
    case IndexOp::Sub: return gcd(a.mult, b.mult);
    case IndexOp::Mul: {
      __int128 m = __int128{a.mult} * b.mult;
      return m > (int64_t{1} << 40) ? 1 : static_cast<int64_t>(m);
    }
    case IndexOp::Rem: return b.lo == b.hi && b.lo > 0 ? gcd(a.mult, b.lo) : 1;
    case IndexOp::Div: return b.lo == b.hi && b.lo > 0 && a.mult % b.lo == 0 ? a.mult / b.lo : 1;
    default: return 1;
  }
}

Range applyRange(IndexOp op, Range a, Range b);

Range apply(IndexOp op, Range a, Range b) {
  Range r = applyRange(op, a, b);
  r.mult = isComparison(op) ? 1 : multOf(op, a, b);
  if (r.lo >= 0) r.hi = floorTo(r.hi, r.mult);
  return r;
}

Range applyRange(IndexOp op, Range a, Range b) {
  switch (op) {
    case IndexOp::Add:
      return {sat(__int128{a.lo} + b.lo), a.hi == kInf || b.hi == kInf ? kInf : sat(__int128{a.hi} + b.hi)};
    case IndexOp::Mul: {
      if (a.lo < 0 || b.lo < 0) return {-kInf, kInf};
      return {sat(__int128{a.lo} * b.lo), a.hi == kInf || b.hi == kInf ? kInf : sat(__int128{a.hi} * b.hi)};
    }
    case IndexOp::Div:
      if (a.lo < 0 || b.lo <= 0) return {-kInf, kInf};
      return {b.hi == kInf ? 0 : a.lo / b.hi, a.hi == kInf ? kInf : a.hi / b.lo};
    case IndexOp::Rem:
      if (a.lo < 0 || b.lo <= 0) return {-kInf, kInf};
      return {0, std::min(a.hi, b.hi == kInf ? kInf : b.hi - 1)};
    case IndexOp::Sub:
      return {b.hi == kInf ? -kInf : sat(__int128{a.lo} - b.hi), a.hi == kInf ? kInf : sat(__int128{a.hi} - b.lo)};
    case IndexOp::And:
      if (a.lo < 0 || b.lo < 0) return {-kInf, kInf};
      return {0, std::min(a.hi, b.hi)};
    case IndexOp::Shr:
      if (a.lo < 0 || b.lo < 0 || b.hi > 62) return {-kInf, kInf};
      return {a.lo >> b.hi, a.hi == kInf ? kInf : a.hi >> b.lo};
    case IndexOp::Or:
    case IndexOp::Xor: {
      // a | b and a ^ b stay within the larger operand with the smaller one's bits all set.
      if (a.lo < 0 || b.lo < 0 || a.hi == kInf || b.hi == kInf) return {-kInf, kInf};
      const int64_t small = std::min(a.hi, b.hi), large = std::max(a.hi, b.hi);
      int64_t mask = 0;
      while (mask < small) mask = mask * 2 + 1;
      return {0, large | mask};
    }
    case IndexOp::Lt:
    case IndexOp::Gt:
    case IndexOp::Ult:
    case IndexOp::Eq:
    case IndexOp::Ne: return {0, 1};
  }
  return {-kInf, kInf};
}

class Verifier {
 public:
  explicit Verifier(const Kernel& k) : k_(k) {
    limit_ = k.index_bits == 64 ? kInf : (int64_t{1} << (k.index_bits - 1)) - 1;
  }

  std::vector<std::string> run() {
    if (k_.index_bits != 32 && k_.index_bits != 64) problem(fmt::format("index type of {} bits", k_.index_bits));
    if (k_.launch.block < 1 || k_.launch.grid < 1) problem("a launch of no threads");
    std::set<std::string> names;
    for (const auto& b : k_.buffers)
      if (!names.insert(b.name).second) problem(fmt::format("buffer `{}` is declared twice", b.name));
    for (const auto& s : k_.sizes) {
      if (s.max < 1 || s.max > limit_) problem(fmt::format("size `{}` of at most {}: not an extent of {}-bit indices", s.name, s.max, k_.index_bits));
      bind(s.name, Type::idx(), {1, std::max<int64_t>(1, s.max), 1});
    }
    body(k_.body);
    return problems_;
  }

 private:
  void problem(std::string s) { problems_.push_back(std::move(s)); }

  // The ranges of a select's two choices where its condition (comparisons, and-ed) holds or not.
  void narrow(const ExprP& cond_expr, const Expr& x_true, const Expr& x_false, Range& a, Range& b) {
    const Expr* cond = definition(*cond_expr);
    if (!cond || cond->kind != Expr::Kind::Index) return;
    if (cond->iop == IndexOp::And) {  // both hold where the value is chosen
      Range dummy = b;
      narrow(cond->args[0], x_true, x_true, a, dummy);
      narrow(cond->args[1], x_true, x_true, a, dummy);
      return;
    }
    if (!isComparison(cond->iop)) return;
    const Range n = expr(*cond->args[1]);
    const IndexOp op = cond->iop;
    if (sameName(*cond->args[0], x_true)) {  // x chosen where the comparison holds
      if ((op == IndexOp::Ult || op == IndexOp::Lt) && n.hi != kInf) a.hi = floorTo(std::min(a.hi, n.hi - 1), a.mult);
      if (op == IndexOp::Ult) a.lo = std::max<int64_t>(a.lo, 0);
      if (op == IndexOp::Gt) a.lo = std::max(a.lo, n.lo == kInf ? a.lo : n.lo + 1);
    }
    if (&x_true != &x_false && sameName(*cond->args[0], x_false)) {  // x chosen where it fails
      if (op == IndexOp::Lt) b.lo = std::max(b.lo, n.lo);
      if (op == IndexOp::Gt) b.hi = std::min(b.hi, n.hi);
    }
  }

  // What a name was bound to by `let`, or the expression itself.
  const Expr* definition(const Expr& e) const {
    if (e.kind != Expr::Kind::Var) return &e;
    auto it = defs_.find(e.name);
    return it == defs_.end() ? nullptr : it->second;
  }
  static bool sameName(const Expr& a, const Expr& b) {
    return a.kind == Expr::Kind::Var && b.kind == Expr::Kind::Var && a.name == b.name;
  }

  void bind(const std::string& name, Type t, Range r) {
    if (!ever_.insert(name).second) problem(fmt::format("`{}` is bound twice", name));
    scope_.push_back(name);
    types_[name] = t;
    ranges_[name] = r;
  }

  Range expr(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::Int: return {e.ivalue, e.ivalue, e.ivalue < 0 ? -e.ivalue : e.ivalue};
      case Expr::Kind::Select: {
        expr(*e.args[0]);
        Range a = expr(*e.args[1]), b = expr(*e.args[2]);
        // A value clamped into a range (`x < n ? x : y`, `x > n ? n : x`, ...): where x is
        // chosen, the comparison (or each of several and-ed together) says which side of n it is.
        narrow(e.args[0], *e.args[1], *e.args[2], a, b);
        return {std::min(a.lo, b.lo), std::max(a.hi, b.hi), gcd(a.mult, b.mult)};
      }
      case Expr::Kind::Convert: {
        Range r = expr(*e.args[0]);
        if (e.type.index && e.type.dtype == DType::I32 && (r.lo < 0 || r.hi > (int64_t{1} << 31) - 1))
          problem(fmt::format("`{}` may not fit 32 bits", printExpr(k_, e)));
        return r;
      }
      case Expr::Kind::Intrinsic:
        for (const auto& a : e.args) expr(*a);
        return {};
      case Expr::Kind::BufLoad: bufAccess(e.buffer, *e.args[0], false, e.type.dtype); return {};
      case Expr::Kind::BufAddr: bufAccess(e.buffer, *e.args[0], false, e.type.dtype, /*address_only=*/true); return {};
      case Expr::Kind::BytesLoad: bytesAccess(e.buffer, *e.args[0], false, e.type); return {};
      case Expr::Kind::Var: {
        auto it = types_.find(e.name);
        if (it == types_.end()) {
          problem(fmt::format("`{}` is used before it is bound", e.name));
          return {-kInf, kInf};
        }
        if (!(it->second == e.type))
          problem(fmt::format("`{}` is used as {} but bound as {}", e.name, e.type.str(), it->second.str()));
        return ranges_[e.name];
      }
      case Expr::Kind::Special:
        switch (e.special) {
          case Special::TidX: return {0, k_.launch.block - 1};
          case Special::CtaidX: return {0, k_.launch.grid - 1};
          case Special::NctaidX: return {k_.launch.grid, k_.launch.grid};
        }
        return {-kInf, kInf};
      case Expr::Kind::Index: {
        Range r = apply(e.iop, expr(*e.args[0]), expr(*e.args[1]));
        const int64_t lim = e.type.dtype == DType::I32 ? (int64_t{1} << 31) - 1 : limit_;
        if (!e.type.isPred() && (r.lo < -lim - 1 || r.hi > lim))
          problem(fmt::format("`{}` may take values outside [{}, {}] ({} bits)", printExpr(k_, e), -lim - 1, lim,
                              e.type.dtype == DType::I32 ? 32 : k_.index_bits));
        return r;
      }
      case Expr::Kind::Const: return {};
      case Expr::Kind::Math:
        for (const auto& a : e.args) expr(*a);
        return {};
      case Expr::Kind::Load:
        access("load", e.param, false, *e.args[0], e.access, e.type.lanes, e.inner_stride);
        return {};
    }
    return {};
  }

  void access(std::string_view what, int p, bool write, const Expr& offset, Access a, int lanes,
              int64_t inner_stride) {
    Range r = expr(offset);
    if (p < 0 || p >= static_cast<int>(k_.params.size())) {
      problem(fmt::format("a {} of parameter {}, which the kernel does not have", what, p));
      return;
    }
    const Param& prm = k_.params[static_cast<size_t>(p)];
    if (prm.workspace) {
      problem(fmt::format("a {} of the workspace `{}` as a tensor", what, prm.name));
      return;
    }
    if (prm.output != write)
      problem(fmt::format("a {} of `{}`, an {}", what, prm.name, prm.output ? "output" : "input"));
    int64_t span = a == Access::Splat ? 0 : a == Access::Vector ? lanes - 1 : (lanes - 1) * inner_stride;
    if (inner_stride < 0 && a == Access::Gather) span = 0, r.lo = sat(__int128{r.lo} + (lanes - 1) * inner_stride);
    if (r.lo < 0 || r.hi == kInf || sat(__int128{r.hi} + span) >= prm.extent)
      problem(fmt::format("a {} of `{}`[{}] may reach elements [{}, {}], outside [0, {})", what, prm.name,
                          printExpr(k_, offset), r.lo, r.hi == kInf ? "inf" : fmt::format("{}", r.hi + span),
                          prm.extent));
  }

  // The values a loop's variable takes inside its body: from its start up to the last value
  // for which `var < E` or `var + X < E` holds.
  Range loopRange(const Stmt& s, Range init) {
    const Expr& c = *s.cond;
    const Expr& lhs = *c.args[0];
    Range rhs = expr(*c.args[1]);
    int64_t slack = 0;
    bool bounded = false;
    if (lhs.kind == Expr::Kind::Var && lhs.name == s.name) {
      bounded = true;
    } else if (lhs.kind == Expr::Kind::Index && lhs.iop == IndexOp::Add && lhs.args[0]->kind == Expr::Kind::Var &&
               lhs.args[0]->name == s.name) {
      bounded = true;
      slack = expr(*lhs.args[1]).lo;
    }
    if (!bounded || rhs.hi == kInf) {
      problem(fmt::format("loop `{}`: its condition `{}` does not bound it", s.name, printExpr(k_, c)));
      return {init.lo, kInf};
    }
    return {init.lo, rhs.hi - 1 - slack};
  }

  // A buffer's element `index` read or written: inside the buffer, written before it is read,
  // and a barrier between a write and a read (the reader may be another thread).
  void bufAccess(const std::string& name, const Expr& index, bool write, DType t, bool address_only = false) {
    Range r = expr(index);
    if (index.type.address) {  // through an address: its slot was checked where it was taken
      const Expr* d = definition(index);
      while (d && d->kind == Expr::Kind::Intrinsic) d = definition(*d->args[0]);
      if (!d || d->kind != Expr::Kind::BufAddr || d->buffer != name)
        problem(fmt::format("an access to `{}` through an address not of that buffer", name));
      r = {0, 0};
    }
    auto it = std::find_if(k_.buffers.begin(), k_.buffers.end(), [&](const Buffer& b) { return b.name == name; });
    if (it == k_.buffers.end()) {
      problem(fmt::format("buffer `{}` is not declared", name));
      return;
    }
    if (!address_only && (it->any_type ? dtypeBytes(t) > dtypeBytes(it->elem) : it->elem != t))
      problem(fmt::format("buffer `{}` of {} accessed as {}", name, dtypeName(it->elem), dtypeName(t)));
    if (!index.type.address && (r.lo < 0 || r.hi >= it->count))
      problem(fmt::format("`{}`[{}] may reach slots [{}, {}], outside [0, {})", name, printExpr(k_, index), r.lo,
                          r.hi == kInf ? "inf" : fmt::format("{}", r.hi), it->count));
    BufState& st = buf_[name];
    if (address_only) return;
    if (write) {
      st.written = true;
      st.synced = false;
    } else if (!st.written) {
      problem(fmt::format("buffer `{}` is read before anything is written to it", name));
    } else if (!st.synced) {
      problem(fmt::format("buffer `{}` is read after a write with no barrier between them", name));
    }
  }

  // Bytes of a dynamic buffer. Each thread reads back the slots it wrote itself, or slots
  // others wrote before a barrier (the schedule's claim): only the order is checked.
  void bytesAccess(const std::string& name, const Expr& byte, bool write, const Type& t) {
    Range r = expr(byte);
    auto it = std::find_if(k_.buffers.begin(), k_.buffers.end(), [&](const Buffer& b) { return b.name == name; });
    if (it == k_.buffers.end() || it->place != Place::SmemDyn) {
      problem(fmt::format("`{}` is not a dynamic shared-memory buffer", name));
      return;
    }
    const int64_t bytes = int64_t{t.lanes} * dtypeBytes(t.dtype);
    if (r.lo < 0 || r.hi == kInf || sat(__int128{r.hi} + bytes) > it->count)
      problem(fmt::format("`{}`[byte {}] may reach bytes [{}, {}], outside [0, {})", name, printExpr(k_, byte), r.lo,
                          r.hi == kInf ? "inf" : fmt::format("{}", r.hi + bytes - 1), it->count));
    BufState& st = buf_[name];
    if (write) {
      st.written = true;
    } else if (!st.written) {
      problem(fmt::format("buffer `{}` is read before anything is written to it", name));
    } else if (st.pending) {
      problem(fmt::format("buffer `{}` is read before the cp.async copies into it are waited for", name));
    }
  }

  // Names bound since the scope had `outer` of them are not visible past it (but stay bound once).
  void leave(size_t outer) {
    for (size_t i = outer; i < scope_.size(); ++i) types_.erase(scope_[i]);
    scope_.resize(outer);
  }

  void scoped(const Body& b) {
    const size_t outer = scope_.size();
    body(b);
    leave(outer);
  }

  // A combine's or Welford merge's names for the thread's place: bound, of their types.
  void checkThreadNames(const Stmt& s, std::string_view what) {
    if (s.threads <= 1) return;
    for (const auto* n : {&s.thread_in_row, &s.row_in_block, &s.lane}) {
      const Type want = n == &s.thread_in_row ? Type::idx() : Type::i32();
      if (!(types_.count(*n) && types_[*n] == want))
        problem(fmt::format("{} `{}`: `{}` is not a bound {}", what, s.name, *n, want.str()));
    }
  }

  void stmt(const Stmt& s) {
    switch (s.kind) {
      case Stmt::Kind::If:
        expr(*s.cond);
        if_depth_ += s.uniform ? 0 : 1;
        scoped(s.body);
        if_depth_ -= s.uniform ? 0 : 1;
        break;
      case Stmt::Kind::GlobalStore:
      case Stmt::Kind::RelaxedZero:
        expr(*s.offset);
        if (s.value) expr(*s.value);
        break;
      case Stmt::Kind::GridSync:
        if (if_depth_ > 0) problem("a grid barrier under `if`: blocks whose threads skip it would wait forever");
        expr(*s.offset);
        expr(*s.src);
        for (auto& [name, st] : buf_) st.synced = true;
        break;
      case Stmt::Kind::Barrier:
        if (if_depth_ > 0)
          problem(fmt::format("a {} barrier under `if`: threads that skip it would wait forever", barrierName(s.barrier)));
        // An arrival orders nothing for this block's readers; the block barrier and the cluster's
        // wait do.
        if (s.barrier == Barrier::Block || s.barrier == Barrier::ClusterWait)
          for (auto& [name, st] : buf_) st.synced = true;
        break;
      case Stmt::Kind::BufStore:
        expr(*s.value);
        bufAccess(s.name, *s.offset, true, s.value->type.dtype);
        break;
      case Stmt::Kind::AsyncCopy: {
        const int64_t lanes = s.bytes / dtypeBytes(s.copy_dtype);
        const Expr* src = s.src.get();
        if (src->type.address) {  // an element's address: check the element
          const Expr* d = definition(*src);
          if (!d || d->kind != Expr::Kind::Intrinsic || d->intrinsic != Intrinsic::ElemAddr) {
            problem("a cp.async from an address that is not a parameter's element");
            break;
          }
          src = d->args[1].get();
        }
        access("cp.async", s.param, false, *src, Access::Vector, static_cast<int>(lanes), 1);
        bytesAccess(s.name, *s.offset, true, Type::data(s.copy_dtype, static_cast<int>(lanes)));
        buf_[s.name].pending = true;
        break;
      }
      case Stmt::Kind::Spread: {
        const int64_t want = s.mapping == Mapping::Threads ? k_.launch.block : k_.launch.grid;
        if (s.count != want)
          problem(fmt::format("`{}` spread over [0, {}) of {}, but the launch has {}", s.name, s.count,
                              mappingName(s.mapping), want));
        const size_t outer = scope_.size();
        bind(s.name, Type::i32(), {0, s.count - 1});
        body(s.body);
        leave(outer);
        break;
      }
      case Stmt::Kind::AsyncWait:  // (wait_group n: the schedule waits for the group it reads next)
        for (auto& [name, st] : buf_) st.pending = false;
        break;
      case Stmt::Kind::AsyncCommit: break;
      case Stmt::Kind::BytesStore:
        expr(*s.value);
        bytesAccess(s.name, *s.offset, true, s.value->type);
        break;
      case Stmt::Kind::Repeat: {
        if (s.trips) {
          // Every thread of the grid takes the same trips (barriers may sit in the body): the
          // count is of the kernel's sizes and constants alone.
          std::function<bool(const Expr&)> uniform = [&](const Expr& e) {
            if (e.kind == Expr::Kind::Var)
              return std::any_of(k_.sizes.begin(), k_.sizes.end(), [&](const SizeParam& p) { return p.name == e.name; });
            if (e.kind != Expr::Kind::Int && e.kind != Expr::Kind::Index) return false;
            return std::all_of(e.args.begin(), e.args.end(), [&](const ExprP& a) { return uniform(*a); });
          };
          if (!uniform(*s.trips))
            problem(fmt::format("repeat `{}`: its trips `{}` are not of the kernel's sizes alone", s.name,
                                printExpr(k_, *s.trips)));
          const Range t = expr(*s.trips);
          if (t.lo < 1 || t.hi > s.count)
            problem(fmt::format("repeat `{}`: its trips `{}` may take [{}, {}], outside [1, {}]", s.name,
                                printExpr(k_, *s.trips), t.lo, t.hi == kInf ? "inf" : fmt::format("{}", t.hi), s.count));
        }
        std::vector<Type> inits;
        for (const auto& [n, e] : s.carried) {
          expr(*e);
          inits.push_back(e->type);
        }
        const size_t outer = scope_.size();
        bind(s.name, Type::idx(), {0, s.count - 1});
        for (size_t i = 0; i < s.carried.size(); ++i) bind(s.carried[i].first, inits[i], {-kInf, kInf});
        body(s.body);
        std::vector<Range> last;
        for (const auto& y : s.yields) last.push_back(expr(*y));
        leave(outer);
        for (size_t i = 0; i < s.results.size(); ++i) bind(s.results[i], s.yields[i]->type, last[i]);
        break;
      }
      case Stmt::Kind::Welford:
        checkThreadNames(s, "welford");
        for (const auto& y : s.yields) expr(*y);
        for (const auto& r : s.results) bind(r, s.yields[0]->type, {});
        break;
      case Stmt::Kind::Combine: {
        checkThreadNames(s, "combine");
        std::vector<Range> in;
        for (const auto& y : s.yields) in.push_back(expr(*y));
        for (size_t i = 0; i < s.results.size(); ++i) bind(s.results[i], s.yields[i]->type, in[i]);
        break;
      }
      case Stmt::Kind::Let:
        bind(s.name, s.value->type, expr(*s.value));
        defs_[s.name] = s.value.get();
        break;
      case Stmt::Kind::Loop: {
        Range init = expr(*s.init);
        Range step = expr(*s.step);
        if (step.lo <= 0) problem(fmt::format("loop `{}` has a step that may not be positive", s.name));
        // The condition reads the variable: bind it (unbounded) to check the names, then with
        // the range the condition allows.
        types_[s.name] = Type::idx();
        ranges_[s.name] = {init.lo, kInf};
        Range inside = loopRange(s, init);
        types_.erase(s.name);
        const size_t outer = scope_.size();
        bind(s.name, Type::idx(), inside);
        // The variable steps once past the last trip: that value too must fit.
        Range after = apply(IndexOp::Add, inside, step);
        if (after.hi > limit_)
          problem(fmt::format("loop `{}` steps to {}, past {}-bit indices", s.name, after.hi, k_.index_bits));
        body(s.body);
        // What the body bound, the variable too, is not visible after the loop.
        leave(outer);
        if (!s.exit.empty()) bind(s.exit, Type::idx(), {init.lo, after.hi});
        break;
      }
      case Stmt::Kind::Store:
        expr(*s.value);
        access("store", s.param, true, *s.offset, s.access, s.value->type.lanes, s.inner_stride);
        if (s.param >= 0 && s.param < static_cast<int>(k_.params.size()) &&
            k_.params[static_cast<size_t>(s.param)].dtype != s.value->type.dtype)
          problem(fmt::format("a store of {} into `{}` of {}", s.value->type.str(),
                              k_.params[static_cast<size_t>(s.param)].name,
                              dtypeName(k_.params[static_cast<size_t>(s.param)].dtype)));
        break;
    }
  }

  void body(const Body& b) {
    for (const auto& s : b) stmt(*s);
  }

  const Kernel& k_;
  int64_t limit_;
  std::map<std::string, Type> types_;
  std::map<std::string, Range> ranges_;
  std::set<std::string> ever_;       // names are bound once in a whole kernel
  std::vector<std::string> scope_;   // names bound, innermost last
  struct BufState {
    bool written = false, synced = false, pending = false;
  };
  std::map<std::string, BufState> buf_;
  std::map<std::string, const Expr*> defs_;
  int if_depth_ = 0;
  std::vector<std::string> problems_;
};

}  // namespace

std::vector<std::string> verify(const Kernel& k) { return Verifier(k).run(); }

void verifyOrFail(const Kernel& k, const std::string& after_pass) {
  auto problems = verify(k);
  LOOM_ASSERT(problems.empty(), "kernel IR after pass `{}` does not verify: {}\n{}", after_pass,
              fmt::join(problems, "; "), printKernel(k));
}

}  // namespace loom::kir
