#pragma once
// Shared by tests that build one-op fusions from an op kind: the builder's call for each unary
// and binary pointwise op kind.
#include <catch2/catch.hpp>

#include "frontend/builder.h"
#include "ir/op.h"

namespace loom::test {

using ir::OpKind;

// The builder's op of kind `k` on `x` (`a`, `b`); a test failure for any other kind.
inline Tensor applyUnary(OpKind k, Tensor x) {
  switch (k) {
    case OpKind::Neg: return neg(x);
    case OpKind::Abs: return abs(x);
    case OpKind::Relu: return relu(x);
    case OpKind::Exp: return exp(x);
    case OpKind::Exp2: return exp2(x);
    case OpKind::Log: return log(x);
    case OpKind::Log2: return log2(x);
    case OpKind::Sqrt: return sqrt(x);
    case OpKind::Rsqrt: return rsqrt(x);
    case OpKind::Reciprocal: return reciprocal(x);
    case OpKind::Tanh: return tanh(x);
    case OpKind::Sigmoid: return sigmoid(x);
    case OpKind::Gelu: return gelu(x);
    case OpKind::GeluTanh: return gelu(x, "tanh");
    case OpKind::Silu: return silu(x);
    case OpKind::Sin: return sin(x);
    case OpKind::Cos: return cos(x);
    case OpKind::Erf: return erf(x);
    case OpKind::Floor: return floor(x);
    case OpKind::Ceil: return ceil(x);
    case OpKind::Round: return round(x);
    case OpKind::IsNan: return isnan(x);
    case OpKind::IsInf: return isinf(x);
    case OpKind::Not: return logical_not(x);
    default: FAIL("not unary: " << ir::opName(k)); return x;
  }
}

inline Tensor applyBinary(OpKind k, Tensor a, Tensor b) {
  switch (k) {
    case OpKind::Add: return a + b;
    case OpKind::Sub: return a - b;
    case OpKind::Mul: return a * b;
    case OpKind::Div: return a / b;
    case OpKind::Max: return maximum(a, b);
    case OpKind::Min: return minimum(a, b);
    case OpKind::Remainder: return remainder(a, b);
    case OpKind::Pow: return pow(a, b);
    case OpKind::Eq: return eq(a, b);
    case OpKind::Ne: return ne(a, b);
    case OpKind::Lt: return lt(a, b);
    case OpKind::Le: return le(a, b);
    case OpKind::Gt: return gt(a, b);
    case OpKind::Ge: return ge(a, b);
    case OpKind::And: return logical_and(a, b);
    case OpKind::Or: return logical_or(a, b);
    default: FAIL("not binary: " << ir::opName(k)); return a;
  }
}

}  // namespace loom::test
