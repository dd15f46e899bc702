#pragma once
// The C++ builder API: build a fusion in a few readable lines.
//
//   loom::FusionBuilder fb("gelu_bias");
//   auto x = fb.input("x", loom::DType::F16, {"N", 1024});
//   auto b = fb.input("b", loom::DType::F16, {1024});
//   fb.output("y", loom::gelu(x + b));        // b broadcasts like in numpy/PyTorch
//   loom::Fusion f = fb.finish();
//
// Binary ops broadcast numpy-style (missing leading dims become broadcast dims); Python-style
// negative dims are accepted; a C++ double next to a tensor becomes a constant of its dtype.
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <loom/dtype.h>
#include <loom/export.h>
#include <loom/extent.h>
#include <loom/fusion.h>

// Declared outside the exported region: these types stay hidden.
namespace loom {
namespace ir {
class Value;  // loom's IR: opaque outside loom
}
}  // namespace loom

#pragma GCC visibility push(default)
namespace loom {

// A size in a shape: a number, or a symbol such as "N" resolved when the fusion runs.
struct Dim {
  Extent extent;
  bool infer = false;  // -1 in a reshape: resolved from the element count
  Dim(int64_t c) : extent(c == -1 ? 1 : c), infer(c == -1) {}  // NOLINT
  Dim(int c) : Dim(static_cast<int64_t>(c)) {}     // NOLINT
  Dim(const char* sym) : extent(Extent::symbol(sym)) {}  // NOLINT
  Dim(Extent e) : extent(std::move(e)) {}         // NOLINT
};

// A handle to a value of the fusion being built.
class Tensor {
 public:
  Tensor() = default;
#ifdef LOOM_INTERNAL_API
  Tensor(ir::Fusion* f, const ir::Value* v) : f_(f), v_(v) {}
  const ir::Value* value() const { return v_; }
  ir::Fusion* fusion() const { return f_; }
#endif
  DType dtype() const;
  int rank() const;
  std::vector<Extent> shape() const;
  const Extent& size(int dim) const;  // negative dims count from the back
  const std::string& name() const;
  explicit operator bool() const { return v_ != nullptr; }

 private:
  ir::Fusion* f_ = nullptr;
  const ir::Value* v_ = nullptr;
};

class FusionBuilder {
 public:
  explicit FusionBuilder(std::string name);
  FusionBuilder(FusionBuilder&&) noexcept;
  FusionBuilder& operator=(FusionBuilder&&) noexcept;
  ~FusionBuilder();
  Tensor input(const std::string& name, DType dtype, std::vector<Dim> shape);
  Tensor scalarInput(const std::string& name, DType dtype) { return input(name, dtype, {}); }
  // `alias`: an input this output is written back into in place (e.g. running statistics).
  void output(const std::string& name, Tensor t, std::optional<Tensor> alias = std::nullopt);
  // Verifies and hands over the fusion; the builder is empty afterwards.
  Fusion finish();
#ifdef LOOM_INTERNAL_API
  ir::Fusion& fusion() { return *f_; }  // loom's own code
  ir::Fusion* fusionOrNull() { return f_.get(); }
#endif

 private:
  std::unique_ptr<ir::Fusion> f_;
};

// --- pointwise ---
#define LOOM_DECLARE_UNARY(fn) Tensor fn(Tensor x);
LOOM_DECLARE_UNARY(neg) LOOM_DECLARE_UNARY(abs) LOOM_DECLARE_UNARY(relu) LOOM_DECLARE_UNARY(exp)
LOOM_DECLARE_UNARY(exp2) LOOM_DECLARE_UNARY(log) LOOM_DECLARE_UNARY(log2) LOOM_DECLARE_UNARY(sqrt)
LOOM_DECLARE_UNARY(rsqrt) LOOM_DECLARE_UNARY(reciprocal) LOOM_DECLARE_UNARY(tanh)
LOOM_DECLARE_UNARY(sigmoid) LOOM_DECLARE_UNARY(silu) LOOM_DECLARE_UNARY(sin)
LOOM_DECLARE_UNARY(cos) LOOM_DECLARE_UNARY(erf) LOOM_DECLARE_UNARY(floor) LOOM_DECLARE_UNARY(ceil)
LOOM_DECLARE_UNARY(round) LOOM_DECLARE_UNARY(isnan) LOOM_DECLARE_UNARY(isinf)
LOOM_DECLARE_UNARY(logical_not)
#undef LOOM_DECLARE_UNARY
// approximate: "none" (erf form) or "tanh", as in torch.nn.functional.gelu.
Tensor gelu(Tensor x, const std::string& approximate = "none");

#define LOOM_DECLARE_BINARY(fn) \
  Tensor fn(Tensor a, Tensor b); Tensor fn(Tensor a, double b); Tensor fn(double a, Tensor b);
LOOM_DECLARE_BINARY(add) LOOM_DECLARE_BINARY(sub) LOOM_DECLARE_BINARY(mul) LOOM_DECLARE_BINARY(div)
LOOM_DECLARE_BINARY(pow) LOOM_DECLARE_BINARY(maximum) LOOM_DECLARE_BINARY(minimum)
LOOM_DECLARE_BINARY(remainder) LOOM_DECLARE_BINARY(eq) LOOM_DECLARE_BINARY(ne)
LOOM_DECLARE_BINARY(lt) LOOM_DECLARE_BINARY(le) LOOM_DECLARE_BINARY(gt) LOOM_DECLARE_BINARY(ge)
LOOM_DECLARE_BINARY(logical_and) LOOM_DECLARE_BINARY(logical_or)
#undef LOOM_DECLARE_BINARY

inline Tensor operator+(Tensor a, Tensor b) { return add(a, b); }
inline Tensor operator+(Tensor a, double b) { return add(a, b); }
inline Tensor operator+(double a, Tensor b) { return add(a, b); }
inline Tensor operator-(Tensor a, Tensor b) { return sub(a, b); }
inline Tensor operator-(Tensor a, double b) { return sub(a, b); }
inline Tensor operator-(double a, Tensor b) { return sub(a, b); }
inline Tensor operator*(Tensor a, Tensor b) { return mul(a, b); }
inline Tensor operator*(Tensor a, double b) { return mul(a, b); }
inline Tensor operator*(double a, Tensor b) { return mul(a, b); }
inline Tensor operator/(Tensor a, Tensor b) { return div(a, b); }
inline Tensor operator/(Tensor a, double b) { return div(a, b); }
inline Tensor operator/(double a, Tensor b) { return div(a, b); }
inline Tensor operator-(Tensor a) { return neg(a); }

Tensor where(Tensor cond, Tensor a, Tensor b);
Tensor where(Tensor cond, Tensor a, double b);
Tensor cast(Tensor x, DType to);
// The same 32 bits read as the other dtype: f32 to i32 or i32 to f32.
Tensor bitcast(Tensor x, DType to);

// --- reductions (dims may be negative; empty dims is an error) ---
Tensor sum(Tensor x, std::vector<int> dims, bool keepdim = false);
Tensor amax(Tensor x, std::vector<int> dims, bool keepdim = false);
Tensor amin(Tensor x, std::vector<int> dims, bool keepdim = false);
Tensor mean(Tensor x, std::vector<int> dims, bool keepdim = false);
// The i64 index of the first largest (smallest) element along `dim`; a NaN counts as the
// largest and the smallest (torch.argmax and torch.argmin).
Tensor argmax(Tensor x, int dim, bool keepdim = false);
Tensor argmin(Tensor x, int dim, bool keepdim = false);
struct VarMean {
  Tensor var, mean, count;
};
// Welford: variance with the given correction (0 population, 1 unbiased), mean and count.
VarMean var_mean(Tensor x, std::vector<int> dims, double correction = 0, bool keepdim = false);

// --- views ---
// is_new: one flag per output dim, true where a broadcast dim is inserted.
Tensor broadcast(Tensor x, std::vector<bool> is_new);
// Prepends broadcast dims up to `rank` (numpy alignment).
Tensor broadcastToRank(Tensor x, int rank);
// Sizes may hold one -1, resolved from the element count.
Tensor reshape(Tensor x, std::vector<Dim> shape);
Tensor permute(Tensor x, std::vector<int> order);
Tensor squeeze(Tensor x, std::vector<int> dims);
Tensor unsqueeze(Tensor x, int dim);
Tensor slice(Tensor x, int dim, Dim start, Dim stop);
// The pieces joined along dim (equal in every other dim; their extents along it multiples of
// one size, as H and 2*H).
Tensor concat(std::vector<Tensor> pieces, int dim);
// n equal slices along dim (the extent must divide by n).
std::vector<Tensor> chunk(Tensor x, int n, int dim);
// x's elements picked along dim by integer indices (torch.gather and torch.index_select):
// gather's index has x's rank and agrees with it outside dim, and the result has its shape;
// index_select's index is 1-d, and the result is x with dim's extent the index's.
Tensor gather(Tensor x, int dim, Tensor index);
Tensor index_select(Tensor x, int dim, Tensor index);

// --- creation ---
Tensor constant(FusionBuilder& fb, double value, DType dtype);
Tensor full(FusionBuilder& fb, std::vector<Dim> shape, double value, DType dtype);
// Each element's index along `dim` of `shape` (0, 1, 2, ... down that dim), in `dtype`.
Tensor iota(FusionBuilder& fb, std::vector<Dim> shape, int dim, DType dtype = DType::I64);

// --- random numbers ---
// Philox4x32-10 keyed by `seed`, its counter `offset` + each element's linear index in `shape`
// (ir/philox.h): the same numbers in every kernel that computes them, on the GPU and in the
// reference. `seed` and `offset` are i64 scalars (inputs of shape {}), so a new step's numbers
// need no new kernel: advance `offset` by the elements a call used.
// Uniform in [0, 1), each an exact multiple of 2^-p (p: 11 for f16, 8 for bf16, 24 for f32, 53 for f64).
Tensor randUniform(Tensor seed, Tensor offset, std::vector<Dim> shape, DType dtype);
// Standard normal (Box-Muller of two uniforms of one counter).
Tensor randNormal(Tensor seed, Tensor offset, std::vector<Dim> shape, DType dtype);
// `x` with each element zeroed with probability p and the rest scaled by 1 / (1 - p) (PyTorch's
// training dropout), its mask from randUniform over x's shape in f32: kept where u >= p.
// A backward recomputes the mask from the same seed and offset.
Tensor dropout(Tensor x, double p, Tensor seed, Tensor offset);

}  // namespace loom
#pragma GCC visibility pop
