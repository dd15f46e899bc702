// The CPU reference, op by op: every kind in ir::allOpKinds() against a direct formula written
// here, on small and odd sizes, in several dtypes, and the edge semantics of ir/op_math.h.
// Rounding, broadcasting, strides and the rest: test_reference_semantics.cpp; bindSizes:
// test_bind_sizes.cpp; the index and bit ops' checks: reference_index_checks.cpp.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <map>
#include <functional>
#include <numbers>

#include "frontend/builder.h"
#include "ir/error.h"
#include "ir/op_math.h"
#include "ir/philox.h"
#include "reference/reference.h"
#include "runtime/host_tensor.h"
#include "tests/op_builders.h"
#include "tests/reference_index_checks.h"
#include "tests/reference_test_util.h"

using namespace loom;
using ir::OpKind;
using loom::test::applyBinary;
using loom::test::applyUnary;
using loom::test::checkArgReduce;
using loom::test::checkBitcast;
using loom::test::checkGather;
using loom::test::checkValues;
using loom::test::kInf;
using loom::test::kNaN;
using loom::test::run;
using loom::test::stored;

namespace {

// Values of a tensor with a transformation applied (for inputs with a constrained range).
HostTensor mapped(const HostTensor& t, const std::function<double(double)>& f) {
  auto v = t.toVector();
  for (double& x : v) x = f(x);
  return HostTensor::fromValues(t.dtype(), t.shape(), v);
}

std::function<double(double)> unaryFormula(OpKind k) {
  const double s2 = std::sqrt(2.0);
  switch (k) {
    case OpKind::Neg: return [](double x) { return -x; };
    case OpKind::Abs: return [](double x) { return x < 0 ? -x : x; };
    case OpKind::Relu: return [](double x) { return x > 0 ? x : 0.0; };
    case OpKind::Exp: return [](double x) { return std::exp(x); };
    case OpKind::Exp2: return [](double x) { return std::pow(2.0, x); };
    case OpKind::Log: return [](double x) { return std::log(x); };
    case OpKind::Log2: return [](double x) { return std::log(x) / std::numbers::ln2; };
    case OpKind::Sqrt: return [](double x) { return std::pow(x, 0.5); };
    case OpKind::Rsqrt: return [](double x) { return std::pow(x, -0.5); };
    case OpKind::Reciprocal: return [](double x) { return 1.0 / x; };
    case OpKind::Tanh: return [](double x) { return std::tanh(x); };
    case OpKind::Sigmoid: return [](double x) { return std::exp(x) / (std::exp(x) + 1.0); };
    case OpKind::Gelu: return [s2](double x) { return 0.5 * x * std::erfc(-x / s2); };
    case OpKind::GeluTanh:
      return [](double x) {
        double u = std::sqrt(2.0 / std::numbers::pi) * (x + 0.044715 * x * x * x);
        return 0.5 * x * (1.0 + std::tanh(u));
      };
    case OpKind::Silu: return [](double x) { return x / (1.0 + std::exp(-x)); };
    case OpKind::Sin: return [](double x) { return std::sin(x); };
    case OpKind::Cos: return [](double x) { return std::cos(x); };
    case OpKind::Erf: return [](double x) { return 1.0 - std::erfc(x); };
    case OpKind::Floor: return [](double x) { return std::floor(x); };
    case OpKind::Ceil: return [](double x) { return std::ceil(x); };
    case OpKind::Round: return [](double x) { return std::nearbyint(x); };
    case OpKind::IsNan: return [](double x) { return std::isnan(x) ? 1.0 : 0.0; };
    case OpKind::IsInf: return [](double x) { return std::isinf(x) ? 1.0 : 0.0; };
    default: return nullptr;
  }
}

bool positiveDomain(OpKind k) {
  return k == OpKind::Log || k == OpKind::Log2 || k == OpKind::Sqrt || k == OpKind::Rsqrt ||
         k == OpKind::Reciprocal;
}

// Python-style remainder and truncating division, written directly.
double pyRemainder(double a, double b) { return a - std::floor(a / b) * b; }

std::function<double(double, double)> binaryFormula(OpKind k, DType t) {
  const bool integer = isInt(t);
  switch (k) {
    case OpKind::Add: return [](double a, double b) { return a + b; };
    case OpKind::Sub: return [](double a, double b) { return a - b; };
    case OpKind::Mul: return [](double a, double b) { return a * b; };
    case OpKind::Div:
      if (integer) return [](double a, double b) { return b == 0 ? 0.0 : std::trunc(a / b); };
      return [](double a, double b) { return a / b; };
    case OpKind::Max: return [](double a, double b) { return a >= b ? a : b; };
    case OpKind::Min: return [](double a, double b) { return a <= b ? a : b; };
    case OpKind::Remainder:
      if (integer) return [](double a, double b) { return b == 0 ? 0.0 : pyRemainder(a, b); };
      return pyRemainder;
    case OpKind::Pow: return [](double a, double b) { return std::exp(b * std::log(a)); };
    case OpKind::Eq: return [](double a, double b) { return a == b ? 1.0 : 0.0; };
    case OpKind::Ne: return [](double a, double b) { return a != b ? 1.0 : 0.0; };
    case OpKind::Lt: return [](double a, double b) { return a < b ? 1.0 : 0.0; };
    case OpKind::Le: return [](double a, double b) { return a <= b ? 1.0 : 0.0; };
    case OpKind::Gt: return [](double a, double b) { return a > b ? 1.0 : 0.0; };
    case OpKind::Ge: return [](double a, double b) { return a >= b ? 1.0 : 0.0; };
    case OpKind::And:
      if (integer)
        return [](double a, double b) {
          return static_cast<double>(static_cast<int64_t>(a) & static_cast<int64_t>(b));
        };
      return [](double a, double b) { return (a != 0 && b != 0) ? 1.0 : 0.0; };
    case OpKind::Or:
      if (integer)
        return [](double a, double b) {
          return static_cast<double>(static_cast<int64_t>(a) | static_cast<int64_t>(b));
        };
      return [](double a, double b) { return (a != 0 || b != 0) ? 1.0 : 0.0; };
    default: return nullptr;
  }
}

// --- one check per family ---

void checkUnary(OpKind k) {
  auto formula = unaryFormula(k);
  REQUIRE(formula);
  const bool predicate = ir::opFamily(k) == ir::OpFamily::Predicate;
  struct Case { DType t; std::vector<int64_t> shape; };
  for (const Case& c : {Case{DType::F32, {3, 1531}}, Case{DType::F64, {1531}},
                        Case{DType::F16, {3}}, Case{DType::BF16, {1531}}, Case{DType::F32, {}}}) {
    FusionBuilder fb("unary");
    std::vector<Dim> dims(c.shape.begin(), c.shape.end());
    auto x = fb.input("x", c.t, dims);
    fb.output("y", applyUnary(k, x));
    auto f = fb.finish();
    HostTensor in;
    if (predicate) {
      std::vector<double> special = {kNaN, kInf, -kInf, 0.0, -0.0, 1.0, -1.5, 3e30, 1e-40};
      auto r = HostTensor::random(c.t, c.shape, 11);
      auto v = r.toVector();
      for (size_t i = 0; i < v.size(); ++i) v[i] = special[i % special.size()];
      in = HostTensor::fromValues(c.t, c.shape, v);
    } else if (positiveDomain(k)) {
      in = HostTensor::random(c.t, c.shape, 11, 0.25, 4.0);
    } else {
      in = HostTensor::random(c.t, c.shape, 11, -4.0, 4.0);
    }
    auto out = run(*f, {in});
    std::vector<double> want;
    for (double v : in.toVector()) want.push_back(formula(v));
    checkValues(out[0], want, predicate ? DType::Bool : c.t,
                fmt::format("{} on {}", ir::opName(k), in.describe()));
  }
  if (ir::opFamily(k) == ir::OpFamily::UnaryAny) {  // integers too
    for (DType t : {DType::I32, DType::I64}) {
      FusionBuilder fb("unary_int");
      auto x = fb.input("x", t, {1531});
      fb.output("y", applyUnary(k, x));
      auto f = fb.finish();
      auto in = HostTensor::random(t, {1531}, 5, -1000, 1000);
      std::vector<double> want;
      for (double v : in.toVector()) want.push_back(formula(v));
      checkValues(run(*f, {in})[0], want, t, fmt::format("{} on {}", ir::opName(k), dtypeName(t)));
    }
  }
}

void checkNot() {
  FusionBuilder fb("not");
  auto x = fb.input("x", DType::Bool, {3, 1531});
  fb.output("y", logical_not(x));
  auto f = fb.finish();
  auto in = HostTensor::random(DType::Bool, {3, 1531}, 2);
  std::vector<double> want;
  for (double v : in.toVector()) want.push_back(v == 0 ? 1 : 0);
  checkValues(run(*f, {in})[0], want, DType::Bool, "not");
}

// a [R, C] op b [C] (broadcast over rows, b aligned to [1b, C] by the builder).
void checkBinaryOn(OpKind k, DType t, int64_t rows, int64_t cols, HostTensor a, HostTensor b) {
  FusionBuilder fb("binary");
  auto av = fb.input("a", t, {"R", "C"});
  auto bv = fb.input("b", t, {"C"});
  fb.output("y", applyBinary(k, av, bv));
  auto f = fb.finish();
  auto out = run(*f, {a, b});
  auto formula = binaryFormula(k, t);
  REQUIRE(formula);
  std::vector<double> want;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c) want.push_back(formula(a.get({r, c}), b.get({c})));
  DType out_t = ir::opFamily(k) == ir::OpFamily::Compare ? DType::Bool : t;
  // remainder's direct formula a - floor(a/b)*b rounds where fmod does not.
  double ulps = k == OpKind::Remainder ? 8 : 1;
  checkValues(out[0], want, out_t, fmt::format("{} on {} [{}, {}]", ir::opName(k), dtypeName(t), rows, cols), ulps);
}

void checkBinary(OpKind k) {
  const ir::OpFamily fam = ir::opFamily(k);
  auto awayFromZero = [](double v) { return v < 0 ? v - 0.5 : v + 0.5; };
  if (fam == ir::OpFamily::Logical) {
    for (DType t : {DType::Bool, DType::I32, DType::I64}) {
      auto a = HostTensor::random(t, {3, 1531}, 1, -100, 100);
      auto b = HostTensor::random(t, {1531}, 2, -100, 100);
      checkBinaryOn(k, t, 3, 1531, a, b);
    }
    return;
  }
  if (fam == ir::OpFamily::Compare) {
    for (DType t : {DType::F32, DType::F16, DType::I32, DType::I64, DType::Bool}) {
      // Whole numbers in [-3, 3]: many ties.
      auto ai = HostTensor::random(DType::I32, {3, 1531}, 1, -3, 3);
      auto bi = HostTensor::random(DType::I32, {1531}, 2, -3, 3);
      auto a = HostTensor::fromValues(t, {3, 1531}, ai.toVector());
      auto b = HostTensor::fromValues(t, {1531}, bi.toVector());
      checkBinaryOn(k, t, 3, 1531, a, b);
    }
    return;
  }
  if (k == OpKind::Pow) {
    for (DType t : {DType::F32, DType::F64, DType::F16}) {
      auto a = HostTensor::random(t, {3, 1531}, 1, 0.1, 3.0);
      auto b = HostTensor::random(t, {1531}, 2, -2.0, 2.0);
      checkBinaryOn(k, t, 3, 1531, a, b);
    }
    return;
  }
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    auto a = HostTensor::random(t, {3, 1531}, 1, -4.0, 4.0);
    auto b = mapped(HostTensor::random(t, {1531}, 2, -3.0, 3.0), awayFromZero);
    checkBinaryOn(k, t, 3, 1531, a, b);
    checkBinaryOn(k, t, 1, 3, HostTensor::random(t, {1, 3}, 3), mapped(HostTensor::random(t, {3}, 4), awayFromZero));
  }
  for (DType t : {DType::I32, DType::I64}) {
    auto a = HostTensor::random(t, {3, 1531}, 1, -50, 50);
    auto b = HostTensor::random(t, {1531}, 2, -7, 7);  // zero divisors included
    checkBinaryOn(k, t, 3, 1531, a, b);
  }
}

void checkWhere() {
  FusionBuilder fb("where");
  auto c = fb.input("c", DType::Bool, {3, 1531});
  auto a = fb.input("a", DType::F32, {3, 1531});
  auto b = fb.input("b", DType::F32, {1531});
  fb.output("y", where(c, a, b));
  fb.output("z", where(c, b, -2.5));
  auto f = fb.finish();
  auto ct = HostTensor::random(DType::Bool, {3, 1531}, 1);
  auto at = HostTensor::random(DType::F32, {3, 1531}, 2);
  auto bt = HostTensor::random(DType::F32, {1531}, 3);
  auto out = run(*f, {ct, at, bt});
  std::vector<double> wy, wz;
  for (int64_t r = 0; r < 3; ++r)
    for (int64_t i = 0; i < 1531; ++i) {
      bool cond = ct.get({r, i}) != 0;
      wy.push_back(cond ? at.get({r, i}) : bt.get({i}));
      wz.push_back(cond ? bt.get({i}) : -2.5);
    }
  checkValues(out[0], wy, DType::F32, "where");
  checkValues(out[1], wz, DType::F32, "where with a scalar");
}

void checkCast() {
  // Values over many binades: f16 subnormals, normals, overflow; and exact ties.
  std::vector<double> v;
  auto u = HostTensor::random(DType::F64, {3 * 1531}, 9, -1.0, 1.0).toVector();
  auto e = HostTensor::random(DType::I32, {3 * 1531}, 10, -30, 20).toVector();
  for (size_t i = 0; i < u.size(); ++i) v.push_back(static_cast<float>(std::ldexp(u[i], static_cast<int>(e[i]))));
  v[0] = 1.0 + std::ldexp(1.0, -11);     // f16 tie: to even, 1
  v[1] = 1.0 + std::ldexp(3.0, -11);     // f16 tie: to even, 1 + 2^-9
  v[2] = 65519.0;                        // f16: 65504
  v[3] = 65520.0;                        // f16: inf
  v[4] = std::ldexp(1.0, -25);           // f16: 0 (tie to even)
  v[5] = std::ldexp(3.0, -25);           // f16: 2^-23
  v[6] = 1.0 + std::ldexp(1.0, -8);      // bf16 tie: 1
  v[7] = -2.7;                           // ints: -2
  v[8] = kNaN;                           // ints: 0, bool: true
  v[9] = -0.0;                           // bool: false
  v[10] = 3e9;                           // i32: saturates
  auto in = HostTensor::fromValues(DType::F32, {3, 1531}, v);
  for (DType to : {DType::F16, DType::BF16, DType::F64, DType::I32, DType::I64, DType::Bool}) {
    FusionBuilder fb("cast");
    auto x = fb.input("x", DType::F32, {3, 1531});
    fb.output("y", cast(x, to));
    auto f = fb.finish();
    std::vector<double> want;
    for (double x : in.toVector()) {
      double w = x;
      if (to == DType::I32) w = std::isnan(x) ? 0 : std::clamp(std::trunc(x), -2147483648.0, 2147483647.0);
      if (to == DType::I64) w = std::isnan(x) ? 0 : std::trunc(x);
      if (to == DType::Bool) w = x != 0 ? 1 : 0;
      want.push_back(w);
    }
    checkValues(run(*f, {in})[0], want, to, fmt::format("cast f32 -> {}", dtypeName(to)), 0);
  }
  // From integers and bool.
  FusionBuilder fb("cast_int");
  auto i = fb.input("i", DType::I64, {1531});
  auto b = fb.input("b", DType::Bool, {1531});
  fb.output("to_i32", cast(i, DType::I32));
  fb.output("to_f16", cast(i, DType::F16));
  fb.output("b_f32", cast(b, DType::F32));
  fb.output("b_i64", cast(b, DType::I64));
  auto f = fb.finish();
  auto it = HostTensor::random(DType::I64, {1531}, 1, -1e6, 1e6);
  auto bt = HostTensor::random(DType::Bool, {1531}, 2);
  auto out = run(*f, {it, bt});
  checkValues(out[0], it.toVector(), DType::I32, "cast i64 -> i32", 0);
  checkValues(out[1], it.toVector(), DType::F16, "cast i64 -> f16", 0);
  checkValues(out[2], bt.toVector(), DType::F32, "cast bool -> f32", 0);
  checkValues(out[3], bt.toVector(), DType::I64, "cast bool -> i64", 0);
}

// Naive reductions of a [2, 3, 5]-style tensor over `dims`, row-major outputs.
std::vector<double> naiveReduce(const HostTensor& x, const std::vector<int>& dims,
                                const std::function<double(const std::vector<double>&)>& f) {
  const auto& s = x.shape();
  std::vector<int64_t> kept;
  for (int d = 0; d < x.rank(); ++d)
    if (std::find(dims.begin(), dims.end(), d) == dims.end()) kept.push_back(d);
  std::vector<std::vector<double>> groups;
  std::vector<int64_t> idx(s.size(), 0);
  std::map<std::vector<int64_t>, std::vector<double>> by_key;
  for (int64_t i = 0; i < x.numel(); ++i) {
    int64_t r = i;
    for (int d = x.rank() - 1; d >= 0; --d) {
      idx[static_cast<size_t>(d)] = r % s[static_cast<size_t>(d)];
      r /= s[static_cast<size_t>(d)];
    }
    std::vector<int64_t> key;
    for (int64_t d : kept) key.push_back(idx[static_cast<size_t>(d)]);
    by_key[key].push_back(x.get(idx));
  }
  std::vector<double> out;
  for (const auto& [key, vals] : by_key) out.push_back(f(vals));  // std::map: row-major order
  return out;
}

double naiveSum(const std::vector<double>& v) { double s = 0; for (double x : v) s += x; return s; }
double naiveMean(const std::vector<double>& v) { return naiveSum(v) / static_cast<double>(v.size()); }
double naiveVar(const std::vector<double>& v, double correction) {
  double m = naiveMean(v), s = 0;
  for (double x : v) s += (x - m) * (x - m);
  return s / (static_cast<double>(v.size()) - correction);
}

void checkReduce(OpKind k) {
  struct Case { DType t; std::vector<int64_t> shape; std::vector<int> dims; bool keepdim; };
  std::vector<Case> cases = {{DType::F32, {3, 1531}, {1}, false}, {DType::F32, {3, 1531}, {0}, true},
                             {DType::F64, {2, 3, 5}, {0, 2}, true}, {DType::F16, {2, 3, 5}, {1}, false},
                             {DType::F32, {2, 3, 5}, {0, 1, 2}, false}, {DType::F32, {1531}, {0}, false}};
  if (k != OpKind::Mean) cases.push_back({DType::I32, {3, 1531}, {1}, false});
  for (const auto& c : cases) {
    FusionBuilder fb("reduce");
    std::vector<Dim> dims(c.shape.begin(), c.shape.end());
    auto x = fb.input("x", c.t, dims);
    Tensor y = k == OpKind::Sum ? sum(x, c.dims, c.keepdim)
               : k == OpKind::Mean ? mean(x, c.dims, c.keepdim)
               : k == OpKind::ReduceMax ? amax(x, c.dims, c.keepdim)
                                        : amin(x, c.dims, c.keepdim);
    fb.output("y", y);
    auto f = fb.finish();
    auto in = HostTensor::random(c.t, c.shape, 3, -100, 100);
    auto out = run(*f, {in});
    std::vector<int64_t> want_shape;
    for (int d = 0; d < static_cast<int>(c.shape.size()); ++d) {
      bool red = std::find(c.dims.begin(), c.dims.end(), d) != c.dims.end();
      if (!red) want_shape.push_back(c.shape[static_cast<size_t>(d)]);
      else if (c.keepdim) want_shape.push_back(1);
    }
    CHECK(out[0].shape() == want_shape);
    std::function<double(const std::vector<double>&)> g = naiveSum;
    if (k == OpKind::Mean) g = naiveMean;
    if (k == OpKind::ReduceMax) g = [](const std::vector<double>& v) { return *std::max_element(v.begin(), v.end()); };
    if (k == OpKind::ReduceMin) g = [](const std::vector<double>& v) { return *std::min_element(v.begin(), v.end()); };
    checkValues(out[0], naiveReduce(in, c.dims, g), c.t,
                fmt::format("{} over dims {} of {}", ir::opName(k), c.dims.size(), in.describe()));
  }
}

void checkVarMean() {
  struct Case { DType t; std::vector<int64_t> shape; std::vector<int> dims; double corr; bool keepdim; };
  for (const Case& c : {Case{DType::F32, {3, 1531}, {1}, 0, false}, Case{DType::F32, {3, 1531}, {1}, 1, true},
                        Case{DType::F64, {2, 3, 5}, {0, 2}, 1, true}, Case{DType::F16, {2, 3, 5}, {1, 2}, 0, false},
                        Case{DType::BF16, {3, 1531}, {0}, 1, false}}) {
    FusionBuilder fb("var_mean");
    std::vector<Dim> dims(c.shape.begin(), c.shape.end());
    auto x = fb.input("x", c.t, dims);
    auto vm = var_mean(x, c.dims, c.corr, c.keepdim);
    fb.output("var", vm.var);
    fb.output("mean", vm.mean);
    fb.output("count", vm.count);
    auto f = fb.finish();
    auto in = HostTensor::random(c.t, c.shape, 4, -3, 5);
    auto out = run(*f, {in});
    std::string what = fmt::format("var_mean correction {} of {}", c.corr, in.describe());
    checkValues(out[0], naiveReduce(in, c.dims, [&](const std::vector<double>& v) { return naiveVar(v, c.corr); }), c.t, what + " var", 2);
    checkValues(out[1], naiveReduce(in, c.dims, naiveMean), c.t, what + " mean", 2);
    checkValues(out[2], naiveReduce(in, c.dims, [](const std::vector<double>& v) { return static_cast<double>(v.size()); }), DType::I64, what + " count");
    CHECK(out[0].shape() == out[2].shape());
  }
}

void checkView(OpKind k) {
  auto x = HostTensor::random(DType::F32, {3, 1, 1531}, 6);
  std::vector<double> xv = x.toVector();
  FusionBuilder fb("view");
  auto xt = fb.input("x", DType::F32, {3, 1, 1531});
  switch (k) {
    case OpKind::Broadcast: {
      auto s = squeeze(xt, {1});  // [3, 1531]
      fb.output("y", broadcast(s, {true, false, true, false}));  // [1b, 3, 1b, 1531]
      auto out = run(*fb.finish(), {x});
      CHECK(out[0].shape() == std::vector<int64_t>{1, 3, 1, 1531});
      checkValues(out[0], xv, DType::F32, "broadcast");
      return;
    }
    case OpKind::Reshape: {
      fb.output("y", reshape(xt, {3, 1531, 1}));
      auto out = run(*fb.finish(), {x});
      CHECK(out[0].shape() == std::vector<int64_t>{3, 1531, 1});
      checkValues(out[0], xv, DType::F32, "reshape");
      // Symbolic split and merge: [N, 4*H] -> [N, 4, H] -> [4*N*H]... via [N*4, H].
      FusionBuilder fb2("reshape_sym");
      auto y = fb2.input("y", DType::F32, {"N", Extent(4) * Extent::symbol("H")});
      auto split = reshape(y, {"N", 4, "H"});
      fb2.output("split", split);
      fb2.output("merged", reshape(split, {Extent::symbol("N") * Extent(4), "H"}));
      fb2.output("flat", reshape(split, {-1}));
      auto yt = HostTensor::random(DType::F32, {3, 4 * 7}, 7);
      auto out2 = run(*fb2.finish(), {yt});
      CHECK(out2[0].shape() == std::vector<int64_t>{3, 4, 7});
      CHECK(out2[1].shape() == std::vector<int64_t>{12, 7});
      CHECK(out2[2].shape() == std::vector<int64_t>{84});
      for (const auto& o : out2) checkValues(o, yt.toVector(), DType::F32, "symbolic reshape");
      return;
    }
    case OpKind::Permute: {
      auto z = HostTensor::random(DType::F32, {2, 3, 5}, 8);
      FusionBuilder fb2("permute");
      auto zt = fb2.input("z", DType::F32, {2, 3, 5});
      fb2.output("y", permute(zt, {2, 0, 1}));
      fb2.output("t", permute(zt, {-1, -2, 0}));
      auto out = run(*fb2.finish(), {z});
      CHECK(out[0].shape() == std::vector<int64_t>{5, 2, 3});
      CHECK(out[1].shape() == std::vector<int64_t>{5, 3, 2});
      std::vector<double> w0, w1;
      for (int64_t k2 = 0; k2 < 5; ++k2)
        for (int64_t i = 0; i < 2; ++i)
          for (int64_t j = 0; j < 3; ++j) w0.push_back(z.get({i, j, k2}));
      for (int64_t k2 = 0; k2 < 5; ++k2)
        for (int64_t j = 0; j < 3; ++j)
          for (int64_t i = 0; i < 2; ++i) w1.push_back(z.get({i, j, k2}));
      checkValues(out[0], w0, DType::F32, "permute 2,0,1");
      checkValues(out[1], w1, DType::F32, "permute 2,1,0");
      return;
    }
    case OpKind::Squeeze: {
      fb.output("y", squeeze(xt, {1}));
      auto out = run(*fb.finish(), {x});
      CHECK(out[0].shape() == std::vector<int64_t>{3, 1531});
      checkValues(out[0], xv, DType::F32, "squeeze");
      return;
    }
    case OpKind::Unsqueeze: {
      fb.output("y", unsqueeze(xt, -1));
      fb.output("z", unsqueeze(xt, 0));
      auto out = run(*fb.finish(), {x});
      CHECK(out[0].shape() == std::vector<int64_t>{3, 1, 1531, 1});
      CHECK(out[1].shape() == std::vector<int64_t>{1, 3, 1, 1531});
      checkValues(out[0], xv, DType::F32, "unsqueeze");
      checkValues(out[1], xv, DType::F32, "unsqueeze");
      return;
    }
    case OpKind::Slice: {
      fb.output("y", slice(xt, 2, 7, 1500));
      auto out = run(*fb.finish(), {x});
      CHECK(out[0].shape() == std::vector<int64_t>{3, 1, 1493});
      std::vector<double> w;
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t i = 7; i < 1500; ++i) w.push_back(x.get({r, 0, i}));
      checkValues(out[0], w, DType::F32, "slice");
      // Symbolic bounds: the second and third quarters of [B, 4*H].
      FusionBuilder fb2("slice_sym");
      Extent h = Extent::symbol("H");
      auto g = fb2.input("g", DType::F32, {"B", Extent(4) * h});
      fb2.output("y", slice(g, 1, h, Extent(3) * h));
      auto gt = HostTensor::random(DType::F32, {3, 4 * 5}, 9);
      auto out2 = run(*fb2.finish(), {gt});
      CHECK(out2[0].shape() == std::vector<int64_t>{3, 10});
      std::vector<double> w2;
      for (int64_t r = 0; r < 3; ++r)
        for (int64_t i = 5; i < 15; ++i) w2.push_back(gt.get({r, i}));
      checkValues(out2[0], w2, DType::F32, "symbolic slice");
      return;
    }
    default: FAIL("not a view: " << ir::opName(k));
  }
}

// Concat along the last dim and along the first, of pieces of unequal extents, against the
// pieces' own values; and the shapes it refuses.
void checkConcat() {
  auto a = HostTensor::random(DType::F32, {3, 5}, 1), b = HostTensor::random(DType::F32, {3, 10}, 2);
  FusionBuilder fb("concat");
  auto at = fb.input("a", DType::F32, {"N", "H"});
  auto bt = fb.input("b", DType::F32, {"N", Extent(2) * Extent::symbol("H")});
  fb.output("last", concat({at, bt, at}, -1));                    // [N, 4*H]
  fb.output("first", concat({permute(at, {1, 0}), permute(at, {1, 0})}, 0));  // [2*H, N]
  auto out = run(*fb.finish(), {a, b});
  REQUIRE(out[0].shape() == std::vector<int64_t>{3, 20});
  REQUIRE(out[1].shape() == std::vector<int64_t>{10, 3});
  std::vector<double> last, first;
  for (int64_t r = 0; r < 3; ++r) {
    for (int64_t c = 0; c < 5; ++c) last.push_back(a.get({r, c}));
    for (int64_t c = 0; c < 10; ++c) last.push_back(b.get({r, c}));
    for (int64_t c = 0; c < 5; ++c) last.push_back(a.get({r, c}));
  }
  for (int k = 0; k < 2; ++k)
    for (int64_t c = 0; c < 5; ++c)
      for (int64_t r = 0; r < 3; ++r) first.push_back(a.get({r, c}));
  checkValues(out[0], last, DType::F32, "concat along the last dim");
  checkValues(out[1], first, DType::F32, "concat along the first dim");
  FusionBuilder bad("bad");
  auto x = bad.input("x", DType::F32, {"N", "H"});
  auto y = bad.input("y", DType::F32, {"M", "H"});
  auto z = bad.input("z", DType::F16, {"N", "H"});
  CHECK_THROWS_WITH(concat({x, y}, 1), Catch::Contains("differ in dim 0; only dim 1 may differ"));
  CHECK_THROWS_WITH(concat({x, y}, 0), Catch::Contains("do not add up to one size"));
  CHECK_THROWS_WITH(concat({x, z}, 1), Catch::Contains("differ in dtype or rank"));
  CHECK_THROWS_WITH(concat({}, 0), Catch::Contains("concat of no pieces"));
}

void checkCreation(OpKind k) {
  FusionBuilder fb("create");
  auto x = fb.input("x", DType::F32, {"N", 3});
  if (k == OpKind::Constant) {
    fb.output("c", constant(&fb.fusion(), 0.1, DType::F16));
    fb.output("y", x * 2.5);
    auto xt = HostTensor::random(DType::F32, {4, 3}, 1);
    auto out = run(*fb.finish(), {xt});
    CHECK(out[0].shape().empty());
    CHECK(out[0].getLinear(0) == stored(DType::F16, 0.1));
    std::vector<double> w;
    for (double v : xt.toVector()) w.push_back(v * 2.5);
    checkValues(out[1], w, DType::F32, "x * constant");
  } else {
    fb.output("full", full(&fb.fusion(), {"N", 3}, 1.5, DType::F32));
    fb.output("full_k", full(&fb.fusion(), {"K", "N"}, -7.25, DType::I32));
    auto out = run(*fb.finish(), {HostTensor::random(DType::F32, {4, 3}, 1)}, {{"K", 2}});
    checkValues(out[0], std::vector<double>(12, 1.5), DType::F32, "full");
    CHECK(out[1].shape() == std::vector<int64_t>{2, 4});
    checkValues(out[1], std::vector<double>(8, -7.0), DType::I32, "full i32");
  }
}

// iota against its index; random numbers against ir/philox.h element by element.
void checkIndexed(OpKind k) {
  FusionBuilder fb("indexed");
  if (k == OpKind::Iota) {
    fb.output("i", iota(fb, {"N", 3, 2}, 1, DType::I32));
    fb.output("f", iota(fb, {5}, -1, DType::F16));
    auto out = run(*fb.finish(), {}, {{"N", 2}});
    std::vector<double> want;
    for (int a = 0; a < 2; ++a)
      for (int b = 0; b < 3; ++b)
        for (int c = 0; c < 2; ++c) want.push_back(b);
    checkValues(out[0], want, DType::I32, "iota along dim 1");
    checkValues(out[1], {0, 1, 2, 3, 4}, DType::F16, "iota along the last dim");
    return;
  }
  auto seed = fb.input("seed", DType::I64, {});
  auto offset = fb.input("offset", DType::I64, {});
  const DType t = k == OpKind::RandNormal ? DType::F64 : DType::F32;
  fb.output("r", k == OpKind::RandNormal ? randNormal(seed, offset, {4, 3}, t) : randUniform(seed, offset, {4, 3}, t));
  auto out = run(*fb.finish(), {HostTensor::fromValues(DType::I64, {}, {7}), HostTensor::fromValues(DType::I64, {}, {100})});
  std::vector<double> want;
  for (int64_t i = 0; i < 12; ++i) {
    const ir::PhiloxWords w = ir::randomWords(7, 100, i);
    want.push_back(k == OpKind::RandNormal ? ir::normalOf(w, t) : ir::uniformOf(w, t));
  }
  checkValues(out[0], want, t, ir::opName(k).data());
}

void checkOp(OpKind k) {
  switch (ir::opFamily(k)) {
    case ir::OpFamily::Unary:
    case ir::OpFamily::UnaryAny:
    case ir::OpFamily::Predicate: return checkUnary(k);
    case ir::OpFamily::LogicalNot: return checkNot();
    case ir::OpFamily::Binary:
    case ir::OpFamily::BinaryFloat:
    case ir::OpFamily::Compare:
    case ir::OpFamily::Logical: return checkBinary(k);
    case ir::OpFamily::Where: return checkWhere();
    case ir::OpFamily::Cast: return checkCast();
    case ir::OpFamily::Bitcast: return checkBitcast();
    case ir::OpFamily::Reduce: return checkReduce(k);
    case ir::OpFamily::VarMean: return checkVarMean();
    case ir::OpFamily::ArgReduce: return checkArgReduce(k);
    case ir::OpFamily::Broadcast:
    case ir::OpFamily::Reshape:
    case ir::OpFamily::Permute:
    case ir::OpFamily::Squeeze:
    case ir::OpFamily::Unsqueeze:
    case ir::OpFamily::Slice: return checkView(k);
    case ir::OpFamily::Concat: return checkConcat();
    case ir::OpFamily::Gather: return checkGather(k);
    case ir::OpFamily::Constant:
    case ir::OpFamily::Full: return checkCreation(k);
    case ir::OpFamily::Iota:
    case ir::OpFamily::Random: return checkIndexed(k);
  }
  FAIL("no reference test for op `" << ir::opName(k) << "`");
}

// One-op fusion on given values (for the edge-semantics tests).
std::vector<double> unaryOn(OpKind k, DType t, const std::vector<double>& v) {
  FusionBuilder fb("u");
  auto x = fb.input("x", t, {static_cast<int64_t>(v.size())});
  fb.output("y", applyUnary(k, x));
  return run(*fb.finish(), {HostTensor::fromValues(t, {static_cast<int64_t>(v.size())}, v)})[0].toVector();
}
std::vector<double> binaryOn(OpKind k, DType t, const std::vector<double>& a, const std::vector<double>& b) {
  FusionBuilder fb("b");
  int64_t n = static_cast<int64_t>(a.size());
  auto x = fb.input("a", t, {n});
  auto y = fb.input("b", t, {n});
  fb.output("y", applyBinary(k, x, y));
  return run(*fb.finish(), {HostTensor::fromValues(t, {n}, a), HostTensor::fromValues(t, {n}, b)})[0].toVector();
}

bool sameBits(const std::vector<double>& got, const std::vector<double>& want) {
  if (got.size() != want.size()) return false;
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isnan(got[i]) != std::isnan(want[i])) return false;
    if (!std::isnan(got[i]) && (got[i] != want[i] || std::signbit(got[i]) != std::signbit(want[i])))
      return false;
  }
  return true;
}

}  // namespace

TEST_CASE("reference: every op kind against a direct formula", "[reference]") {
  for (OpKind k : ir::allOpKinds()) {
    DYNAMIC_SECTION("op " << ir::opName(k)) { checkOp(k); }
  }
}

TEST_CASE("reference: edge semantics of pointwise ops", "[reference]") {
  using V = std::vector<double>;
  SECTION("relu, max and min propagate NaN") {
    CHECK(sameBits(unaryOn(OpKind::Relu, DType::F32, {kNaN, -1, 2, -0.0}), V{kNaN, 0, 2, -0.0}));
    CHECK(sameBits(binaryOn(OpKind::Max, DType::F32, {kNaN, 1, 1, -0.0}, {1, kNaN, 2, 0.0}), V{kNaN, kNaN, 2, 0.0}));
    CHECK(sameBits(binaryOn(OpKind::Min, DType::F32, {kNaN, 1, 1, -0.0}, {1, kNaN, 2, 0.0}), V{kNaN, kNaN, 1, -0.0}));
  }
  SECTION("round is half to even") {
    CHECK(sameBits(unaryOn(OpKind::Round, DType::F32, {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999998, -0.4, 3.7}),
                   V{0, 2, 2, -0.0, -2, -2, 2, -0.0, 4}));
    CHECK(unaryOn(OpKind::Round, DType::F16, {2.5, 3.5}) == V{2, 4});
  }
  SECTION("remainder has the divisor's sign; int division truncates; by zero gives 0") {
    CHECK(binaryOn(OpKind::Remainder, DType::F32, {-1, 1, 5.5, -5.5, 6}, {3, -3, 2, 2, 3}) == V{2, -2, 1.5, 0.5, 0});
    CHECK(std::isnan(binaryOn(OpKind::Remainder, DType::F32, {1}, {0})[0]));
    CHECK(binaryOn(OpKind::Remainder, DType::I32, {-7, 7, -7, 7, 5, -6}, {3, -3, -3, 3, 0, 3}) == V{2, -2, -1, 1, 0, 0});
    CHECK(binaryOn(OpKind::Div, DType::I32, {-7, 7, -7, 7, 5, -5}, {2, -2, -2, 2, 0, 0}) == V{-3, -3, 3, 3, 0, 0});
    CHECK(binaryOn(OpKind::Div, DType::I64, {-9, 9}, {4, 4}) == V{-2, 2});
    CHECK(binaryOn(OpKind::Div, DType::F32, {1, -1, 0}, {0, 0, 0})[0] == kInf);
  }
  SECTION("integers wrap at their width") {
    const double imax = 2147483647, imin = -2147483648.0;
    CHECK(binaryOn(OpKind::Add, DType::I32, {imax, imin}, {1, -1}) == V{imin, imax});
    CHECK(binaryOn(OpKind::Mul, DType::I32, {65536}, {65536}) == V{0});
    CHECK(binaryOn(OpKind::Div, DType::I32, {imin}, {-1}) == V{imin});
    CHECK(unaryOn(OpKind::Abs, DType::I32, {imin, -5}) == V{imin, 5});
    CHECK(unaryOn(OpKind::Neg, DType::I32, {imin, 5}) == V{imin, -5});
    CHECK(binaryOn(OpKind::Add, DType::I64, {4e15}, {5e15}) == V{9e15});
  }
  SECTION("and/or are bitwise on ints and logical on bool; not") {
    CHECK(binaryOn(OpKind::And, DType::I32, {12, -1, 6}, {10, 7, 1}) == V{8, 7, 0});
    CHECK(binaryOn(OpKind::Or, DType::I64, {12, -8, 6}, {10, 3, 1}) == V{14, -5, 7});
    CHECK(binaryOn(OpKind::And, DType::Bool, {1, 1, 0, 0}, {1, 0, 1, 0}) == V{1, 0, 0, 0});
    CHECK(binaryOn(OpKind::Or, DType::Bool, {1, 1, 0, 0}, {1, 0, 1, 0}) == V{1, 1, 1, 0});
    CHECK(unaryOn(OpKind::Not, DType::Bool, {1, 0}) == V{0, 1});
  }
  SECTION("compares with NaN; isnan and isinf") {
    V a = {kNaN, 1, kNaN}, b = {1, kNaN, kNaN};
    CHECK(binaryOn(OpKind::Eq, DType::F32, a, b) == V{0, 0, 0});
    CHECK(binaryOn(OpKind::Ne, DType::F32, a, b) == V{1, 1, 1});
    CHECK(binaryOn(OpKind::Lt, DType::F32, a, b) == V{0, 0, 0});
    CHECK(binaryOn(OpKind::Ge, DType::F32, a, b) == V{0, 0, 0});
    CHECK(unaryOn(OpKind::IsNan, DType::F16, {kNaN, kInf, 1}) == V{1, 0, 0});
    CHECK(unaryOn(OpKind::IsInf, DType::BF16, {kNaN, -kInf, 1e38}) == V{0, 1, 0});
  }
  SECTION("op_math directly: gelu, sigmoid, silu") {
    CHECK(ir::evalUnary(OpKind::Gelu, 1.0, DType::F64) == Approx(0.8413447460685429).epsilon(1e-12));
    CHECK(ir::evalUnary(OpKind::GeluTanh, 1.0, DType::F64) == Approx(0.8411919906082768).epsilon(1e-12));
    CHECK(ir::evalUnary(OpKind::Sigmoid, 0.0, DType::F32) == 0.5);
    CHECK(ir::evalUnary(OpKind::Sigmoid, -1000.0, DType::F32) == 0.0);
    CHECK(ir::evalUnary(OpKind::Silu, 2.0, DType::F64) == Approx(1.7615941559557649).epsilon(1e-12));
    CHECK(ir::evalCast(4294967301.0, DType::I64, DType::I32) == 5);  // int -> int wraps
    CHECK(ir::evalCast(3e9, DType::F32, DType::I32) == 2147483647);   // float -> int saturates
  }
}
