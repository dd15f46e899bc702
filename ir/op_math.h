#pragma once
// The scalar semantics of every pointwise op in ir/ops.def, in double: the CPU reference
// evaluates with these, and the GPU codegen (compiler/codegen/op_emit.cpp) matches them.
// `dtype` is the dtype of the operands (for Where, of the two data operands); the caller rounds
// the result to the op's output dtype (roundTo), except that these functions already wrap
// integer results to the width of `dtype`, as the GPU's integer arithmetic does.
//
// Floating point (f16/bf16 are computed here in double and rounded by the caller; the GPU
// widens them to f32, so results agree to within one rounding of the storage dtype):
//   neg, abs, exp, exp2, log, log2, sqrt, sin, cos, tanh, erf, floor, ceil: the C library's.
//   rsqrt(x) = 1/sqrt(x); reciprocal(x) = 1/x (IEEE: 1/0 = inf).
//   relu(x) = x < 0 ? 0 : x, so relu(NaN) = NaN and relu(-0) = -0 (as the GPU's select).
//   sigmoid(x) = 1/(1+e^-x); silu(x) = x·sigmoid(x).
//   gelu(x) = 0.5x(1+erf(x/√2)); gelu_tanh(x) = 0.5x(1+tanh(√(2/π)(x+0.044715x³))).
//   round: to the nearest integer, halves to even (torch.round, rint): 2.5 -> 2, -0.5 -> -0.
//   isnan, isinf (±inf): 1.0 or 0.0.
//   add, sub, mul, div: IEEE.  pow: std::pow (pow(x, 0) = 1, pow(-8, 1/3) = NaN).
//   max/min: NaN if either operand is NaN (torch.maximum); max(-0, +0) = +0, min = -0
//     (llvm.maximum / llvm.minimum).
//   remainder(a, b): Python/torch: a − floor(a/b)·b, computed exactly as fmod(a, b) moved to
//     the divisor's sign (remainder(-1, 3) = 2, remainder(1, -3) = -2); remainder(a, 0) = NaN.
//   compares: 1.0 or 0.0, IEEE (any compare with NaN is false except ne, which is true).
// Integers (i32, i64; exact for |values| < 2^53, the double's integer range):
//   neg, abs, add, sub, mul wrap around in two's complement at the dtype's width
//     (abs(INT_MIN) = INT_MIN), as the GPU does; relu(x) = max(x, 0).
//   div truncates toward zero (torch.div(rounding_mode="trunc")); division by zero gives 0
//     (torch raises; loom defines it, the GPU selects 0); INT_MIN / -1 wraps to INT_MIN.
//   remainder: Python semantics, the result has the divisor's sign (remainder(-7, 3) = 2,
//     remainder(7, -3) = -2); remainder by zero gives 0.
//   max/min: the usual.  and/or: bitwise.  compares: 1.0 or 0.0.
// Bool (values 0.0 and 1.0): and/or are logical, not is logical negation; eq/ne compare.
// Casts (evalCast): float -> float rounds to nearest even (roundTo); float -> int truncates
// toward zero and saturates at the int's range, NaN -> 0 (fptosi.sat); int -> int wraps
// (two's complement, like C++ and torch); x -> bool is x != 0 (NaN -> true); bool -> x is 0/1.
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numbers>

#include "ir/dtype.h"
#include "ir/error.h"
#include "ir/op.h"

namespace loom::ir {

namespace op_math_detail {

// Two's-complement wrap of an integer to the width of `t` (i32 or i64).
inline int64_t wrapInt(uint64_t bits, DType t) {
  if (t == DType::I32) return static_cast<int64_t>(static_cast<int32_t>(static_cast<uint32_t>(bits)));
  return static_cast<int64_t>(bits);
}

// A double holding an integer value (already in range) as int64.
inline int64_t toInt(double v) {
  if (std::isnan(v)) return 0;
  if (v >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (v < -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return static_cast<int64_t>(v);
}

inline double roundHalfEven(double x) {
  if (!std::isfinite(x)) return x;
  double f = std::floor(x);
  double diff = x - f;  // exact for doubles
  double r;
  if (diff > 0.5) r = f + 1.0;
  else if (diff < 0.5) r = f;
  else r = std::fmod(f, 2.0) == 0.0 ? f : f + 1.0;
  return std::copysign(r, x);  // keeps -0 for -0.4 and -0.5, as rint does
}

inline double sigmoid(double x) { return 1.0 / (1.0 + std::exp(-x)); }

inline double intUnary(OpKind k, double xd, DType t) {
  int64_t x = toInt(xd);
  uint64_t ux = static_cast<uint64_t>(x);
  switch (k) {
    case OpKind::Neg: return static_cast<double>(wrapInt(0 - ux, t));
    case OpKind::Abs: return static_cast<double>(x < 0 ? wrapInt(0 - ux, t) : x);
    case OpKind::Relu: return static_cast<double>(x < 0 ? 0 : x);
    default: break;
  }
  LOOM_ASSERT(false, "`{}` has no integer semantics", opName(k));
}

inline double intBinary(OpKind k, double ad, double bd, DType t) {
  int64_t a = toInt(ad), b = toInt(bd);
  uint64_t ua = static_cast<uint64_t>(a), ub = static_cast<uint64_t>(b);
  switch (k) {
    case OpKind::Add: return static_cast<double>(wrapInt(ua + ub, t));
    case OpKind::Sub: return static_cast<double>(wrapInt(ua - ub, t));
    case OpKind::Mul: return static_cast<double>(wrapInt(ua * ub, t));
    case OpKind::Div:
      if (b == 0) return 0.0;
      if (b == -1) return static_cast<double>(wrapInt(0 - ua, t));  // INT_MIN / -1 wraps
      return static_cast<double>(a / b);                             // C++: toward zero
    case OpKind::Remainder: {
      if (b == 0 || b == -1) return 0.0;
      int64_t r = a % b;
      if (r != 0 && ((r < 0) != (b < 0))) r += b;
      return static_cast<double>(r);
    }
    case OpKind::Max: return static_cast<double>(a > b ? a : b);
    case OpKind::Min: return static_cast<double>(a < b ? a : b);
    case OpKind::And: return static_cast<double>(a & b);
    case OpKind::Or: return static_cast<double>(a | b);
    default: break;
  }
  LOOM_ASSERT(false, "`{}` has no integer semantics", opName(k));
}

}  // namespace op_math_detail

// Unary, UnaryAny, Predicate and LogicalNot ops. `dtype` is the operand's dtype.
inline double evalUnary(OpKind k, double x, DType dtype) {
  namespace d = op_math_detail;
  if (k == OpKind::Not) return x != 0.0 ? 0.0 : 1.0;
  if (isInt(dtype)) return d::intUnary(k, x, dtype);
  switch (k) {
    case OpKind::Neg: return -x;
    case OpKind::Abs: return std::fabs(x);
    case OpKind::Relu: return x < 0.0 ? 0.0 : x;
    case OpKind::Exp: return std::exp(x);
    case OpKind::Exp2: return std::exp2(x);
    case OpKind::Log: return std::log(x);
    case OpKind::Log2: return std::log2(x);
    case OpKind::Sqrt: return std::sqrt(x);
    case OpKind::Rsqrt: return 1.0 / std::sqrt(x);
    case OpKind::Reciprocal: return 1.0 / x;
    case OpKind::Tanh: return std::tanh(x);
    case OpKind::Sigmoid: return d::sigmoid(x);
    case OpKind::Gelu: return 0.5 * x * (1.0 + std::erf(x / std::sqrt(2.0)));
    case OpKind::GeluTanh: {
      const double k0 = std::sqrt(2.0 / std::numbers::pi);
      return 0.5 * x * (1.0 + std::tanh(k0 * (x + 0.044715 * x * x * x)));
    }
    case OpKind::Silu: return x * d::sigmoid(x);
    case OpKind::Sin: return std::sin(x);
    case OpKind::Cos: return std::cos(x);
    case OpKind::Erf: return std::erf(x);
    case OpKind::Floor: return std::floor(x);
    case OpKind::Ceil: return std::ceil(x);
    case OpKind::Round: return d::roundHalfEven(x);
    case OpKind::IsNan: return std::isnan(x) ? 1.0 : 0.0;
    case OpKind::IsInf: return std::isinf(x) ? 1.0 : 0.0;
    default: break;
  }
  LOOM_ASSERT(false, "`{}` is not a unary op", opName(k));
}

// Binary, BinaryFloat, Compare and Logical ops. `dtype` is the operands' dtype.
inline double evalBinary(OpKind k, double a, double b, DType dtype) {
  namespace d = op_math_detail;
  switch (k) {  // the same for every dtype
    case OpKind::Eq: return a == b ? 1.0 : 0.0;
    case OpKind::Ne: return a != b ? 1.0 : 0.0;
    case OpKind::Lt: return a < b ? 1.0 : 0.0;
    case OpKind::Le: return a <= b ? 1.0 : 0.0;
    case OpKind::Gt: return a > b ? 1.0 : 0.0;
    case OpKind::Ge: return a >= b ? 1.0 : 0.0;
    default: break;
  }
  if (dtype == DType::Bool) {
    if (k == OpKind::And) return (a != 0.0 && b != 0.0) ? 1.0 : 0.0;
    if (k == OpKind::Or) return (a != 0.0 || b != 0.0) ? 1.0 : 0.0;
    LOOM_ASSERT(false, "`{}` has no bool semantics", opName(k));
  }
  if (isInt(dtype)) return d::intBinary(k, a, b, dtype);
  switch (k) {
    case OpKind::Add: return a + b;
    case OpKind::Sub: return a - b;
    case OpKind::Mul: return a * b;
    case OpKind::Div: return a / b;
    case OpKind::Max:
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
      if (a == b) return std::signbit(a) ? b : a;
      return a > b ? a : b;
    case OpKind::Min:
      if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
      if (a == b) return std::signbit(a) ? a : b;
      return a < b ? a : b;
    case OpKind::Remainder: {
      double r = std::fmod(a, b);
      if (r != 0.0 && ((r < 0.0) != (b < 0.0))) r += b;
      return r;
    }
    case OpKind::Pow: return std::pow(a, b);
    default: break;
  }
  LOOM_ASSERT(false, "`{}` is not a binary op on {}", opName(k), dtypeName(dtype));
}

// Cast of a value of dtype `from` to `to` (see the header comment for the rules).
inline double evalCast(double x, DType from, DType to) {
  namespace d = op_math_detail;
  if (isInt(from) && isInt(to))
    return static_cast<double>(d::wrapInt(static_cast<uint64_t>(d::toInt(x)), to));
  return roundTo(to, x);
}

// Bitcast between f32 and i32: the value's 32 bits read as the other dtype (an f32 value is first
// rounded to f32, as the GPU holds it).
inline double evalBitcast(double x, DType to) {
  if (to == DType::I32) {
    const float f = static_cast<float>(x);
    int32_t i = 0;
    std::memcpy(&i, &f, 4);
    return static_cast<double>(i);
  }
  const int32_t i = static_cast<int32_t>(x);
  float f = 0;
  std::memcpy(&f, &i, 4);
  return static_cast<double>(f);
}

}  // namespace loom::ir
