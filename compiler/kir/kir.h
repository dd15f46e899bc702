#pragma once
// The kernel IR: how ONE kernel computes what its segment of the fusion says, written out so
// that codegen only translates. A kernel is parameters (global tensors), a launch shape and a
// body of statements: `let` bindings, loops with their mapping onto the GPU (threads, blocks,
// grid-stride, ...), and stores. Expressions are index arithmetic on the kernel's index type,
// or typed data of `lanes` neighbouring elements: loads (with their access, alignment and
// cache hint), constants, and the fusion's scalar ops applied lanewise.
//
// The IR is immutable: nodes are made by the checking factories below, which refuse a
// malformed node with an internal error; kir/verifier.h checks a whole kernel (names bound
// before use, loads and stores inside their tensors for every iteration of their loops).
// ../shared/KIR.md draws where it is going; kir/printer.h gives its text form.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ir/dtype.h"
#include "ir/op.h"

namespace loom::kir {

enum class Mapping {
#define LOOM_KIR_MAPPING(e, text) e,
#include "compiler/kir/kir.def"
#undef LOOM_KIR_MAPPING
};
enum class Special {
#define LOOM_KIR_SPECIAL(e, text) e,
#include "compiler/kir/kir.def"
#undef LOOM_KIR_SPECIAL
};
enum class IndexOp {
#define LOOM_KIR_INDEX_OP(e, text, cmp) e,
#include "compiler/kir/kir.def"
#undef LOOM_KIR_INDEX_OP
};
enum class Access {
#define LOOM_KIR_ACCESS(e, text) e,
#include "compiler/kir/kir.def"
#undef LOOM_KIR_ACCESS
};
enum class Cache {
#define LOOM_KIR_CACHE(e, text) e,
#include "compiler/kir/kir.def"
#undef LOOM_KIR_CACHE
};

std::string_view mappingName(Mapping m);
std::string_view specialName(Special s);
std::string_view indexOpName(IndexOp o);
bool isComparison(IndexOp o);
std::string_view accessName(Access a);
std::string_view cacheName(Cache c);

// The type of a value: an index of the kernel's index type (one lane), or `lanes` elements of
// `dtype`.
struct Type {
  bool index = true;
  DType dtype = DType::I64;
  int lanes = 1;
  bool operator==(const Type&) const = default;
  static Type idx() { return {}; }
  static Type data(DType t, int lanes) { return {false, t, lanes}; }
  std::string str() const;
};

struct Expr;
using ExprP = std::shared_ptr<const Expr>;

struct Expr {
  enum class Kind { Int, Var, Special, Index, Const, Math, Load };
  Kind kind;
  Type type;
  int64_t ivalue = 0;     // Int
  double fvalue = 0;      // Const (every lane)
  std::string name;       // Var
  Special special = Special::TidX;
  IndexOp iop = IndexOp::Add;
  ir::OpKind op = ir::OpKind::Add;  // Math (Cast: to `type.dtype`)
  std::vector<ExprP> args;          // Index, Math; Load: {offset}
  // Load: `type.lanes` elements of parameter `param` from element `args[0]` on.
  int param = -1;
  Access access = Access::Gather;
  int64_t inner_stride = 1;  // elements between lanes (Gather)
  int align = 1;             // bytes the first lane's address is known to be a multiple of
  Cache cache = Cache::Default;
};

// Checking factories (an internal error on a malformed node).
ExprP intConst(int64_t v);
ExprP var(std::string name, Type t);
ExprP special(Special s);
ExprP index(IndexOp op, ExprP a, ExprP b);
ExprP add(ExprP a, ExprP b);
ExprP mul(ExprP a, ExprP b);
ExprP dataConst(DType t, double v, int lanes);
// A pointwise op of the fusion (ir/ops.def) applied lanewise; Cast converts to `result`.
ExprP math(ir::OpKind op, DType result, std::vector<ExprP> args);
ExprP load(int param, DType t, ExprP offset, int lanes, Access a, int64_t inner_stride,
           Cache cache);

struct Stmt;
using StmtP = std::shared_ptr<const Stmt>;
using Body = std::vector<StmtP>;

struct Stmt {
  enum class Kind { Let, Loop, Store };
  Kind kind;
  std::string name;  // Let: the name bound; Loop: its variable
  ExprP value;       // Let; Store: what is written
  // Loop: for (name = init; cond; name += step) body, spread by `mapping`; `exit` (when not
  // empty) names the variable's value once `cond` fails.
  ExprP init, cond, step;
  Mapping mapping = Mapping::Serial;
  int unroll = 1;        // trips a thread makes at once (a later pass writes them out)
  Body body;
  std::string exit;
  // Store: `value`'s lanes to parameter `param` from element `offset` on.
  int param = -1;
  ExprP offset;
  Access access = Access::Gather;
  int64_t inner_stride = 1;
  int align = 1;
};

StmtP let(std::string name, ExprP value);
StmtP loop(std::string var, ExprP init, ExprP cond, ExprP step, Mapping m, Body body,
           int unroll = 1, std::string exit = "");
StmtP store(int param, ExprP offset, ExprP value, Access a, int64_t inner_stride);

// A global tensor the kernel reads or writes, as the kernel addresses it: elements
// [0, extent) from its base pointer.
struct Param {
  std::string name;
  DType dtype;
  bool output = false;
  int64_t extent = 0;
};

struct Launch {
  int64_t grid = 1;
  int block = 1;
};

struct Kernel {
  std::string name;
  std::string scheduler;       // who made it, for dumps
  std::vector<Param> params;   // inputs (read only), then outputs
  bool noalias = true;         // no output is written into an input's memory
  int index_bits = 32;
  Launch launch;
  Body body;
};

}  // namespace loom::kir
