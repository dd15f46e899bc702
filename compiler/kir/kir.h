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

#include "compiler/tensor_desc.h"
#include "ir/dtype.h"
#include "ir/fusion.h"
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
enum class Intrinsic {
#define LOOM_KIR_INTRINSIC(e, text, n) e,
#include "compiler/kir/kir.def"
#undef LOOM_KIR_INTRINSIC
};
enum class Place {
#define LOOM_KIR_PLACE(e, text) e,
#include "compiler/kir/kir.def"
#undef LOOM_KIR_PLACE
};
enum class Barrier {
#define LOOM_KIR_BARRIER(e, text) e,
#include "compiler/kir/kir.def"
#undef LOOM_KIR_BARRIER
};
enum class Combine {
#define LOOM_KIR_COMBINE(e, text) e,
#include "compiler/kir/kir.def"
#undef LOOM_KIR_COMBINE
};

std::string_view mappingName(Mapping m);
std::string_view specialName(Special s);
std::string_view indexOpName(IndexOp o);
bool isComparison(IndexOp o);
std::string_view accessName(Access a);
std::string_view cacheName(Cache c);
std::string_view intrinsicName(Intrinsic i);
int intrinsicOperands(Intrinsic i);
std::string_view placeName(Place p);
std::string_view barrierName(Barrier b);
std::string_view combineName(Combine c);
// The fusion op a combine applies, and its identity in `acc` (one lane).
ir::OpKind combineOp(Combine c);
// The combine of a fusion reduction (Sum, Mean: Sum; ReduceMax: Max; ReduceMin: Min).
Combine combineOf(ir::OpKind reduction);
struct Expr;
std::shared_ptr<const Expr> combineIdentity(Combine c, DType acc, int lanes = 1);
// The intrinsic that folds a value's lanes by `c` (FoldSum, FoldMax, FoldMin).
Intrinsic foldOf(Combine c);

// The type of a value. Integers of the kernel (`index`): `dtype` I64 is the kernel's index
// type (32 or 64 bits, Kernel::index_bits), I32 a 32-bit integer whatever the index type
// (thread ids), Bool a predicate. Data: `lanes` elements of `dtype`.
struct Type {
  bool index = true;
  DType dtype = DType::I64;
  int lanes = 1;
  bool address = false;  // the address of a buffer's slot or of global memory (`index` too)
  bool packed = false;   // data whose lanes travel as one vector value (a workspace pair)
  bool operator==(const Type&) const = default;
  static Type idx() { return {}; }
  static Type i32() { return {true, DType::I32, 1}; }
  static Type pred() { return {true, DType::Bool, 1}; }
  static Type addr() { return {true, DType::I64, 1, true}; }
  static Type data(DType t, int lanes) { return {false, t, lanes}; }
  static Type pair(DType t) { return {false, t, 2, false, true}; }
  bool isPred() const { return index && dtype == DType::Bool && !address; }
  std::string str() const;
};

struct Expr;
using ExprP = std::shared_ptr<const Expr>;

struct Expr {
  enum class Kind { Int, Var, Special, Index, Const, Math, Load, Select, Convert, Intrinsic, BufLoad, BytesLoad, BufAddr };
  Kind kind = Kind::Int;
  Type type;
  int64_t ivalue = 0;     // Int (of `type`: the index type, i32 or a predicate)
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
  Intrinsic intrinsic = Intrinsic::ShflXor;
  std::string buffer;     // BufLoad: element args[0] of this buffer; BytesLoad: `type.lanes`
                          // elements from byte args[0] of this (dynamic) buffer, `align` aligned
};

// Checking factories (an internal error on a malformed node).
ExprP intConst(int64_t v, Type t = Type::idx());
ExprP i32Const(int64_t v);
ExprP predConst(bool v);
ExprP var(std::string name, Type t);
ExprP special(Special s);
ExprP index(IndexOp op, ExprP a, ExprP b);
ExprP add(ExprP a, ExprP b);
ExprP mul(ExprP a, ExprP b);
// Element `base + sum of idx[d] * strides[d]` (axes of stride 0 left out), as one expression.
ExprP stridedOffset(int64_t base, const std::vector<int64_t>& strides, const std::vector<ExprP>& idx);
ExprP dataConst(DType t, double v, int lanes);
// The i64 data `base + j * stride` in lane j of `lanes`: an element's index (an index
// expression) as a value.
ExprP indexLanes(ExprP base, int lanes, int64_t stride);
// A pointwise op of the fusion (ir/ops.def) applied lanewise; Cast converts to `result`. The
// result has the most lanes of any operand (one-lane operands stand for every lane), or
// `lanes` where given (every lane computed, though the operands have one).
ExprP math(ir::OpKind op, DType result, std::vector<ExprP> args, int lanes = 0);
ExprP load(int param, DType t, ExprP offset, int lanes, Access a, int64_t inner_stride,
           Cache cache);
// `cond ? a : b` of two values of one type (lanewise for data; `cond` one predicate).
ExprP select(ExprP cond, ExprP a, ExprP b);
// An integer as another integer type (zero-extended or truncated), or as data (a value cast);
// a one-lane data bool as a predicate.
ExprP convert(ExprP x, Type to);
ExprP intrinsic(Intrinsic i, Type result, std::vector<ExprP> args);
// Element `index` of a buffer of `elem` (or, where `index` is an address, what it points at).
ExprP bufLoad(std::string buffer, DType elem, ExprP index);
// The address of a buffer's slot `index`: to compute it once for several accesses.
ExprP bufAddr(std::string buffer, ExprP index);
// `lanes` elements of `t` at byte `byte` of a dynamic shared-memory buffer, as one access.
ExprP bytesLoad(std::string buffer, DType t, int lanes, ExprP byte, int align);

// The grid level of a combine (a cooperative launch): each block's leader publishes its part of
// the row in the workspace, and after a grid barrier the row's first warp reads every block's, in
// block order, so every block gets the same bits. `region` < 0: no grid level.
struct GridLevel {
  int region = -1;               // this reduction's slots in the group's workspace
  int blocks = 1;                // blocks sharing each row (P)
  int barrier = 0;               // this reduction's grid barrier within its set (from 1)
  int barriers_per_set = 0;
  std::string rank, parity, set;  // the block among the row's, the set's parity and number (indices)
  std::string group_ws, tid;     // the group's workspace (an address), the raw thread id (i32)
  // How a row is dealt to its blocks (runs of `threads` chunks of `vec` in turn), for the
  // elements each block holds: Welford's packed f32 partials carry no count.
  int64_t row_chunks = 0;
  int chunks = 0, vec = 1;
};

struct Stmt;
using StmtP = std::shared_ptr<const Stmt>;
using Body = std::vector<StmtP>;

struct Stmt {
  enum class Kind { Let, Loop, Store, If, Barrier, BufStore, Combine, Repeat, BytesStore, Welford, AsyncCopy, AsyncWait, Spread,
                    GlobalStore, GridSync, RelaxedZero, AsyncCommit };
  Kind kind = Kind::Let;
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
  // If: `body` where `cond` (a predicate) holds; `name` labels it.
  // Barrier: every thread of `barrier` arrives before any goes on.
  Barrier barrier = Barrier::Block;
  // BufStore: `value` to element `offset` of buffer `name`.
  // Combine: `name` = `value` combined by `combine` over the `threads` threads of each row
  // (`threads` consecutive threads of the block; `rows` rows a block), so that every thread
  // of the row holds the same result: the row's `domain` reduced. A butterfly within warps,
  // then (rows of several warps) every warp's value through shared memory. `thread_in_row`
  // (an index), `row_in_block` and `lane` (i32) name the values a lowering pass needs.
  Combine combine = Combine::Sum;
  std::string domain;
  int threads = 1, rows = 1;
  int cluster = 1;  // Combine: blocks of a cluster sharing each row (their totals through DSMEM)
  GridLevel grid;   // Combine, Welford: the grid level, if any
  bool threads_merged = false;  // Welford: the row's threads agree already (the grid level only)
  std::string thread_in_row, row_in_block, lane;
  // Repeat: for (name = 0; ; ) { body; name += 1; if !(name < count) break } (at least one
  // trip), `carried` values (name, start) bound inside the body, `yields` their next values,
  // `results` their last values after the loop; `unroll` asks LLVM to unroll by that count.
  // Welford: `results` (count, mean, M2) = Chan's merge of every thread's `yields` (count,
  // mean, M2) over the row's threads, as Combine.
  int64_t count = 0;
  ExprP trips;  // Repeat: its trip count at run time (at least 1), `count` its largest; or none
  std::vector<std::pair<std::string, ExprP>> carried;
  std::vector<ExprP> yields;
  std::vector<std::string> results;
  // BytesStore: `value` (all lanes, one access) to byte `offset` of dynamic buffer `name`.
  // Spread: `name` over [0, `count`) spread by `mapping` (threads or blocks), `body` once each.
  // If with `uniform`: every thread of every block that shares the barriers inside takes the
  // same branch, so barriers may sit under it.
  // GlobalStore: `value` to global address `offset` (aligned `align`), for other blocks to read
  // after a grid barrier. GridSync: the grid barrier on the u32 counter at address `offset`:
  // thread `name` 0 of each block arrives (release) and waits until it reads `src` (acquire).
  // RelaxedZero: a relaxed store of u32 0 to global address `offset`.
  bool uniform = false;
  // AsyncCopy: cp.async of `bytes` bytes from element `src` of parameter `param` (of
  // `copy_dtype`) to byte `offset` of dynamic buffer `name`; AsyncWait: until every copy this
  // thread issued has landed.
  ExprP src;
  int bytes = 0;
  DType copy_dtype = DType::F32;
};

StmtP let(std::string name, ExprP value);
StmtP loop(std::string var, ExprP init, ExprP cond, ExprP step, Mapping m, Body body,
           int unroll = 1, std::string exit = "");
StmtP store(int param, ExprP offset, ExprP value, Access a, int64_t inner_stride);
StmtP ifThen(ExprP cond, std::string label, Body body);
StmtP barrier(Barrier b);
StmtP bufStore(std::string buffer, ExprP index, ExprP value);
struct CombineSpec {
  Combine op = Combine::Sum;
  std::string domain;
  int threads = 1, rows = 1;
  std::string thread_in_row, row_in_block, lane;  // the thread's place (see Stmt)
  int cluster = 1;
  GridLevel grid;
  bool threads_merged = false;  // Welford: every thread of the row holds its block's statistics already
};
StmtP combine(std::string result, ExprP value, const CombineSpec& spec);
// Several values combined at once, each as combine() would (one barrier for all of them at each
// level): `results[i]` the total of `values[i]`. Not at the grid level.
StmtP combineAll(std::vector<std::string> results, std::vector<ExprP> values, const CombineSpec& spec);
StmtP welford(std::vector<std::string> results, std::vector<ExprP> stats, const CombineSpec& spec);
StmtP repeat(std::string var, int64_t count, std::vector<std::pair<std::string, ExprP>> carried, Body body,
             std::vector<ExprP> yields, std::vector<std::string> results, int unroll, ExprP trips = nullptr);
// `scalar`: one element stored as such, not as a one-lane vector.
StmtP bytesStore(std::string buffer, ExprP byte, ExprP value, int align, bool scalar = false);
StmtP asyncCopy(std::string buffer, ExprP byte, int param, DType t, ExprP src, int bytes);
StmtP asyncWaitAll();
// Until all but the newest `pending` groups of this thread's copies have landed; and the end of
// a group (two fill buffers: each set's copies one group).
StmtP asyncWaitGroup(int pending);
StmtP asyncCommit();
// for `var` in [0, `extent`) spread over the block's threads (`var` = tid.x) or the grid's blocks
// (`var` = ctaid.x): every iteration at once, one a thread or a block. `var` is an i32.
StmtP spread(std::string var, Mapping m, int64_t extent, Body body);
StmtP uniformIf(ExprP cond, std::string label, Body body);
StmtP globalStore(ExprP addr, ExprP value, int align);
StmtP gridSync(std::string tid, ExprP counter, ExprP target);
StmtP relaxedZero(ExprP addr);

// A buffer of `count` elements of `elem` in `place`; `name` is its symbol in the kernel.
struct Buffer {
  std::string name;    // unique in the kernel: `symbol`, or with a number as LLVM would give it
  std::string symbol;  // the name asked for
  Place place = Place::Smem;
  DType elem = DType::F32;
  int64_t count = 0;
  int align = 8;
  bool any_type = false;  // slots hold values of any dtype no wider than `elem`
};

// A global tensor the kernel reads or writes, as the kernel addresses it: elements
// [0, extent) from its base pointer.
struct Param {
  std::string name;
  DType dtype;
  bool output = false;
  int64_t extent = 0;
  bool workspace = false;  // a global scratch of `extent` bytes (zeroed once), after the outputs
};

// A fusion's tensors as a kernel's parameters: its inputs (read only), then its outputs, each
// addressed over the elements its sizes and strides reach.
std::vector<Param> fusionParams(const ir::Fusion& f, const std::vector<TensorDesc>& inputs,
                                const std::vector<TensorDesc>& outputs);
// Whether no output is written into an input's memory (`output_alias`: input index or -1).
bool noAlias(const std::vector<int>& output_alias);

struct Launch {
  int64_t grid = 1;  // at most: with symbolic sizes, the grid of the largest sizes served
  int block = 1;
};

// A size the kernel takes at run time instead of knowing it (a symbolic extent: the rows of a
// layer norm, the batch of an LSTM cell), so that one kernel serves every size of its class.
// Sizes follow the tensors (and the workspace) as 64-bit kernel parameters, in order; inside
// the kernel each is an index value named `name`, in [1, max].
struct SizeParam {
  std::string name;
  int64_t max = 1;
};

struct Kernel {
  std::string name;
  std::string scheduler;       // who made it, for dumps
  std::vector<Param> params;   // inputs (read only), then outputs
  std::vector<SizeParam> sizes;  // after the params, in this order
  bool noalias = true;         // no output is written into an input's memory
  int index_bits = 32;
  Launch launch;
  std::vector<Buffer> buffers;  // in the order their symbols are made
  int min_blocks_per_sm = 0;    // registers must let this many blocks share an SM (0: any)
  Body body;
};

// The name a new buffer asking for `symbol` gets: `symbol` itself where no buffer (nor the
// kernel) has it, else with the next number of the kernel's one counter, as LLVM names globals.
std::string bufferName(const Kernel& k, const std::string& symbol);

}  // namespace loom::kir
