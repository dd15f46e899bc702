#include "frontend/builder.h"

#include <algorithm>

#include "ir/error.h"

namespace loom {

using ir::OpKind;

int normalizeDim(int dim, int rank, int rank_plus) {
  int n = rank + rank_plus;
  LOOM_USER_CHECK(dim >= -n && dim < n, "dim {} is out of range for a tensor of rank {} (valid: "
                  "{}..{})", dim, rank, -n, n - 1);
  return dim < 0 ? dim + n : dim;
}

namespace {
const ir::Value& valueOf(const ir::Value* v) {
  LOOM_USER_CHECK(v != nullptr, "an empty tensor handle (default-constructed) was used");
  return *v;
}
}  // namespace

DType Tensor::dtype() const { return valueOf(v_).dtype(); }
int Tensor::rank() const { return valueOf(v_).rank(); }
std::vector<Extent> Tensor::shape() const { return valueOf(v_).shape(); }
const std::string& Tensor::name() const { return valueOf(v_).name(); }

const Extent& Tensor::size(int dim) const {
  return valueOf(v_).axis(static_cast<size_t>(normalizeDim(dim, rank()))).extent;
}

FusionBuilder::FusionBuilder(std::string name) : f_(std::make_unique<ir::Fusion>(std::move(name))) {}
FusionBuilder::FusionBuilder(FusionBuilder&&) noexcept = default;
FusionBuilder& FusionBuilder::operator=(FusionBuilder&&) noexcept = default;
FusionBuilder::~FusionBuilder() = default;

// Every use of a builder after finish() (it hands its fusion over) is this error.
static ir::Fusion& building(const std::unique_ptr<ir::Fusion>& f) {
  LOOM_USER_CHECK(f != nullptr, "this FusionBuilder already finished its fusion: start a new builder");
  return *f;
}

Tensor FusionBuilder::input(const std::string& name, DType dtype, std::vector<Dim> shape) {
  building(f_);
  std::vector<ir::Axis> axes;
  for (const auto& d : shape) {
    LOOM_USER_CHECK(!d.infer, "input `{}`: -1 is only meaningful in reshape", name);
    axes.push_back(ir::Axis::iter(d.extent));
  }
  return {f_.get(), f_->addInput(name, dtype, std::move(axes))};
}

void FusionBuilder::output(const std::string& name, Tensor t, std::optional<Tensor> alias) {
  building(f_).addOutput(name, t.value(), alias ? alias->value() : nullptr);
}

Fusion FusionBuilder::finish() {
  building(f_).verify();
  f_->markFinished();
  return Fusion(std::move(f_));
}

namespace {

Tensor make(Tensor like, OpKind k, std::vector<Tensor> in, ir::Attrs attrs = ir::NoAttrs{}) {
  ir::Fusion* f = like.fusion();
  LOOM_USER_CHECK(f != nullptr, "`{}` was given an empty tensor handle", ir::opName(k));
  std::vector<const ir::Value*> vals;
  for (const auto& t : in) {
    LOOM_USER_CHECK(t.fusion() == f, "`{}`: operand `{}` belongs to fusion `{}`, not `{}`",
                    ir::opName(k), t.name(), t.fusion()->name(), f->name());
    vals.push_back(t.value());
  }
  return {f, f->addOp(k, std::move(vals), std::move(attrs))->output()};
}

std::vector<Tensor> makeMulti(Tensor like, OpKind k, Tensor in, ir::Attrs attrs) {
  ir::Fusion* f = like.fusion();
  const ir::Op* op = f->addOp(k, {in.value()}, std::move(attrs));
  std::vector<Tensor> out;
  for (const ir::Value* v : op->outputs()) out.push_back({f, v});
  return out;
}

// numpy alignment: prepend broadcast dims so all operands have the same rank.
std::vector<Tensor> alignRanks(std::vector<Tensor> in) {
  int r = 0;
  for (const auto& t : in) r = std::max(r, t.rank());
  for (auto& t : in)
    if (t.rank() != 0 && t.rank() < r) t = broadcastToRank(t, r);
  return in;
}

Tensor binary(OpKind k, Tensor a, Tensor b) {
  auto v = alignRanks({a, b});
  return make(v[0], k, v);
}

std::vector<int> normalizeDims(std::vector<int> dims, int rank) {
  for (auto& d : dims) d = normalizeDim(d, rank);
  std::sort(dims.begin(), dims.end());
  LOOM_USER_CHECK(std::adjacent_find(dims.begin(), dims.end()) == dims.end(),
                  "a dim is listed twice in a reduction");
  return dims;
}

}  // namespace

#define LOOM_DEFINE_UNARY(fn, kind) \
  Tensor fn(Tensor x) { return make(x, OpKind::kind, {x}); }
LOOM_DEFINE_UNARY(neg, Neg) LOOM_DEFINE_UNARY(abs, Abs) LOOM_DEFINE_UNARY(relu, Relu)
LOOM_DEFINE_UNARY(exp, Exp) LOOM_DEFINE_UNARY(exp2, Exp2) LOOM_DEFINE_UNARY(log, Log)
LOOM_DEFINE_UNARY(log2, Log2) LOOM_DEFINE_UNARY(sqrt, Sqrt) LOOM_DEFINE_UNARY(rsqrt, Rsqrt)
LOOM_DEFINE_UNARY(reciprocal, Reciprocal) LOOM_DEFINE_UNARY(tanh, Tanh)
LOOM_DEFINE_UNARY(sigmoid, Sigmoid) LOOM_DEFINE_UNARY(silu, Silu) LOOM_DEFINE_UNARY(sin, Sin)
LOOM_DEFINE_UNARY(cos, Cos) LOOM_DEFINE_UNARY(erf, Erf) LOOM_DEFINE_UNARY(floor, Floor)
LOOM_DEFINE_UNARY(ceil, Ceil) LOOM_DEFINE_UNARY(round, Round) LOOM_DEFINE_UNARY(isnan, IsNan)
LOOM_DEFINE_UNARY(isinf, IsInf) LOOM_DEFINE_UNARY(logical_not, Not)
#undef LOOM_DEFINE_UNARY

Tensor gelu(Tensor x, const std::string& approximate) {
  LOOM_USER_CHECK(approximate == "none" || approximate == "tanh",
                  "gelu: approximate must be \"none\" or \"tanh\", not \"{}\"", approximate);
  return make(x, approximate == "tanh" ? OpKind::GeluTanh : OpKind::Gelu, {x});
}

#define LOOM_DEFINE_BINARY(fn, kind)                                                     \
  Tensor fn(Tensor a, Tensor b) { return binary(OpKind::kind, a, b); }                   \
  Tensor fn(Tensor a, double b) { return binary(OpKind::kind, a, constant(a.fusion(), b, a.dtype())); } \
  Tensor fn(double a, Tensor b) { return binary(OpKind::kind, constant(b.fusion(), a, b.dtype()), b); }
LOOM_DEFINE_BINARY(add, Add) LOOM_DEFINE_BINARY(sub, Sub) LOOM_DEFINE_BINARY(mul, Mul)
LOOM_DEFINE_BINARY(div, Div) LOOM_DEFINE_BINARY(pow, Pow) LOOM_DEFINE_BINARY(maximum, Max)
LOOM_DEFINE_BINARY(minimum, Min) LOOM_DEFINE_BINARY(remainder, Remainder)
LOOM_DEFINE_BINARY(eq, Eq) LOOM_DEFINE_BINARY(ne, Ne) LOOM_DEFINE_BINARY(lt, Lt)
LOOM_DEFINE_BINARY(le, Le) LOOM_DEFINE_BINARY(gt, Gt) LOOM_DEFINE_BINARY(ge, Ge)
LOOM_DEFINE_BINARY(logical_and, And) LOOM_DEFINE_BINARY(logical_or, Or)
#undef LOOM_DEFINE_BINARY

Tensor where(Tensor cond, Tensor a, Tensor b) {
  auto v = alignRanks({cond, a, b});
  return make(v[1], OpKind::Where, v);
}
Tensor where(Tensor cond, Tensor a, double b) {
  return where(cond, a, constant(a.fusion(), b, a.dtype()));
}

Tensor cast(Tensor x, DType to) {
  if (x.dtype() == to) return x;
  return make(x, OpKind::Cast, {x}, ir::CastAttrs{to});
}

Tensor bitcast(Tensor x, DType to) { return make(x, OpKind::Bitcast, {x}, ir::CastAttrs{to}); }

static Tensor reduce(OpKind k, Tensor x, std::vector<int> dims, bool keepdim) {
  return make(x, k, {x}, ir::ReduceAttrs{normalizeDims(std::move(dims), x.rank()), keepdim, 0});
}
Tensor sum(Tensor x, std::vector<int> dims, bool keepdim) {
  return reduce(OpKind::Sum, x, std::move(dims), keepdim);
}
Tensor amax(Tensor x, std::vector<int> dims, bool keepdim) {
  return reduce(OpKind::ReduceMax, x, std::move(dims), keepdim);
}
Tensor amin(Tensor x, std::vector<int> dims, bool keepdim) {
  return reduce(OpKind::ReduceMin, x, std::move(dims), keepdim);
}
Tensor mean(Tensor x, std::vector<int> dims, bool keepdim) {
  return reduce(OpKind::Mean, x, std::move(dims), keepdim);
}

Tensor argmax(Tensor x, int dim, bool keepdim) {
  return reduce(OpKind::ArgMax, x, {dim}, keepdim);
}
Tensor argmin(Tensor x, int dim, bool keepdim) {
  return reduce(OpKind::ArgMin, x, {dim}, keepdim);
}

VarMean var_mean(Tensor x, std::vector<int> dims, double correction, bool keepdim) {
  auto out = makeMulti(x, OpKind::VarMean, x,
                       ir::ReduceAttrs{normalizeDims(std::move(dims), x.rank()), keepdim,
                                       correction});
  return {out[0], out[1], out[2]};
}

Tensor broadcast(Tensor x, std::vector<bool> is_new) {
  return make(x, OpKind::Broadcast, {x}, ir::BroadcastAttrs{std::move(is_new)});
}

Tensor broadcastToRank(Tensor x, int rank) {
  LOOM_USER_CHECK(rank >= x.rank(), "cannot broadcast `{}` of rank {} down to rank {}", x.name(),
                  x.rank(), rank);
  if (rank == x.rank()) return x;
  std::vector<bool> is_new(static_cast<size_t>(rank), false);
  for (int i = 0; i < rank - x.rank(); ++i) is_new[static_cast<size_t>(i)] = true;
  return broadcast(x, is_new);
}

Tensor reshape(Tensor x, std::vector<Dim> shape) {
  int inferred = -1;
  Extent known(1);
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i].infer) {
      LOOM_USER_CHECK(inferred < 0, "reshape of `{}`: -1 may appear only once", x.name());
      inferred = static_cast<int>(i);
    } else {
      known = known * shape[i].extent;
    }
  }
  std::vector<Extent> target;
  for (const auto& d : shape) target.push_back(d.extent);
  if (inferred >= 0) {
    Extent total(1);
    for (const auto& e : x.shape()) total = total * e;
    target[static_cast<size_t>(inferred)] = total / known;
  }
  return make(x, OpKind::Reshape, {x}, ir::ShapeAttrs{std::move(target)});
}

Tensor permute(Tensor x, std::vector<int> order) {
  for (auto& d : order) d = normalizeDim(d, x.rank());
  return make(x, OpKind::Permute, {x}, ir::DimsAttrs{std::move(order)});
}

Tensor squeeze(Tensor x, std::vector<int> dims) {
  return make(x, OpKind::Squeeze, {x}, ir::DimsAttrs{normalizeDims(std::move(dims), x.rank())});
}

Tensor unsqueeze(Tensor x, int dim) {
  return make(x, OpKind::Unsqueeze, {x}, ir::DimsAttrs{{normalizeDim(dim, x.rank(), 1)}});
}

Tensor slice(Tensor x, int dim, Dim start, Dim stop) {
  dim = normalizeDim(dim, x.rank());
  ir::SliceAttrs a;
  for (int d = 0; d < x.rank(); ++d) {
    a.starts.push_back(d == dim ? start.extent : Extent(0));
    a.stops.push_back(d == dim ? stop.extent : x.size(d));
  }
  return make(x, OpKind::Slice, {x}, std::move(a));
}

Tensor concat(std::vector<Tensor> pieces, int dim) {
  LOOM_USER_CHECK(!pieces.empty(), "concat of no pieces: give one tensor or more");
  Tensor first = pieces[0];
  return make(first, OpKind::Concat, std::move(pieces), ir::DimsAttrs{{normalizeDim(dim, first.rank())}});
}

Tensor gather(Tensor x, int dim, Tensor index) {
  return make(x, OpKind::Gather, {x, index}, ir::DimsAttrs{{normalizeDim(dim, x.rank())}});
}
Tensor index_select(Tensor x, int dim, Tensor index) {
  return make(x, OpKind::IndexSelect, {x, index}, ir::DimsAttrs{{normalizeDim(dim, x.rank())}});
}

std::vector<Tensor> chunk(Tensor x, int n, int dim) {
  LOOM_USER_CHECK(n > 0, "chunk of `{}`: the number of chunks must be positive, not {}", x.name(), n);
  const Extent& e = x.size(dim);
  Extent piece = e / Extent(n);
  LOOM_USER_CHECK(piece.den() == 1, "chunk of `{}`: dim {} of extent {} does not split into {} "
                  "equal chunks", x.name(), dim, e.str(), n);
  std::vector<Tensor> out;
  for (int i = 0; i < n; ++i) out.push_back(slice(x, dim, piece * Extent(i), piece * Extent(i + 1)));
  return out;
}

Tensor constant(ir::Fusion* f, double value, DType dtype) {
  LOOM_USER_CHECK(f != nullptr, "constant needs a fusion being built (not a finished builder)");
  return {f, f->addOp(OpKind::Constant, {}, ir::ScalarAttrs{value, dtype, {}})->output()};
}

Tensor full(ir::Fusion* f, std::vector<Dim> shape, double value, DType dtype) {
  std::vector<Extent> s;
  for (const auto& d : shape) s.push_back(d.extent);
  return {f, f->addOp(OpKind::Full, {}, ir::ScalarAttrs{value, dtype, std::move(s)})->output()};
}

Tensor constant(FusionBuilder& fb, double value, DType dtype) { return constant(fb.fusionOrNull(), value, dtype); }

Tensor iota(FusionBuilder& fb, std::vector<Dim> shape, int dim, DType dtype) {
  ir::Fusion* f = fb.fusionOrNull();
  LOOM_USER_CHECK(f != nullptr, "iota: this FusionBuilder already finished its fusion: start a new builder");
  return iota(f, std::move(shape), dim, dtype);
}

Tensor iota(ir::Fusion* f, std::vector<Dim> shape, int dim, DType dtype) {
  std::vector<Extent> s;
  for (const auto& d : shape) s.push_back(d.extent);
  const int rank = static_cast<int>(s.size());
  if (dim < 0 && dim >= -rank) dim += rank;
  return {f, f->addOp(OpKind::Iota, {}, ir::ScalarAttrs{0, dtype, std::move(s), dim})->output()};
}

namespace {
Tensor random(OpKind k, const Tensor& seed, const Tensor& offset, std::vector<Dim> shape, DType dtype) {
  LOOM_USER_CHECK(seed && offset, "{}: seed and offset must be tensors of the fusion (i64 scalar inputs)",
                  ir::opName(k));
  LOOM_USER_CHECK(seed.fusion() == offset.fusion(), "{}: seed and offset belong to different fusions",
                  ir::opName(k));
  std::vector<Extent> s;
  for (const auto& d : shape) s.push_back(d.extent);
  return {seed.fusion(), seed.fusion()->addOp(k, {seed.value(), offset.value()},
                                              ir::ScalarAttrs{0, dtype, std::move(s)})->output()};
}
}  // namespace

Tensor randUniform(Tensor seed, Tensor offset, std::vector<Dim> shape, DType dtype) {
  return random(OpKind::RandUniform, seed, offset, std::move(shape), dtype);
}

Tensor randNormal(Tensor seed, Tensor offset, std::vector<Dim> shape, DType dtype) {
  return random(OpKind::RandNormal, seed, offset, std::move(shape), dtype);
}

Tensor dropout(Tensor x, double p, Tensor seed, Tensor offset) {
  LOOM_USER_CHECK(x, "dropout: x is an empty tensor handle");
  LOOM_USER_CHECK(p >= 0 && p <= 1, "dropout: p = {} is not a probability (0 <= p <= 1)", p);
  std::vector<Dim> shape;
  for (const auto& e : x.shape()) shape.emplace_back(e);
  Tensor u = randUniform(seed, offset, std::move(shape), DType::F32);
  const double scale = p < 1 ? 1 / (1 - p) : 0;
  return where(ge(u, p), x * scale, 0.0);
}

Tensor full(FusionBuilder& fb, std::vector<Dim> shape, double value, DType dtype) {
  ir::Fusion* f = fb.fusionOrNull();
  LOOM_USER_CHECK(f != nullptr, "full: this FusionBuilder already finished its fusion: start a new builder");
  return full(f, std::move(shape), value, dtype);
}

}  // namespace loom
