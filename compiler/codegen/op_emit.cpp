#include "compiler/codegen/op_emit.h"

#include <llvm/IR/Intrinsics.h>
#include <llvm/IR/IntrinsicsNVPTX.h>
#include <llvm/IR/Module.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cmath>

#include "ir/error.h"
#include "ir/op_math.h"
#include "ir/philox.h"

namespace loom::codegen {

using ir::OpKind;

llvm::Type* regType(llvm::LLVMContext& c, DType t) {
  switch (t) {
    case DType::Bool: return llvm::Type::getInt1Ty(c);
    case DType::I32: return llvm::Type::getInt32Ty(c);
    case DType::I64: return llvm::Type::getInt64Ty(c);
    case DType::F16: return llvm::Type::getHalfTy(c);
    case DType::BF16: return llvm::Type::getBFloatTy(c);
    case DType::F32: return llvm::Type::getFloatTy(c);
    case DType::F64: return llvm::Type::getDoubleTy(c);
  }
  LOOM_ASSERT(false, "dtype");
}

llvm::Type* memType(llvm::LLVMContext& c, DType t) {
  return t == DType::Bool ? llvm::Type::getInt8Ty(c) : regType(c, t);
}

llvm::Value* fromMemory(llvm::IRBuilder<>& b, llvm::Value* v, DType t) {
  return t == DType::Bool ? b.CreateICmpNE(v, b.getInt8(0)) : v;
}
llvm::Value* toMemory(llvm::IRBuilder<>& b, llvm::Value* v, DType t) {
  return t == DType::Bool ? b.CreateZExt(v, b.getInt8Ty()) : v;
}

llvm::Value* emitConst(llvm::IRBuilder<>& b, DType t, double v) {
  llvm::Type* ty = regType(b.getContext(), t);
  if (isFloat(t)) return llvm::ConstantFP::get(ty, v);
  if (t == DType::Bool) return b.getInt1(v != 0);
  // Saturating at the dtype's range: a min's identity is i64's largest value, which a double
  // holds rounded up past it.
  int64_t i = ir::op_math_detail::toInt(v);
  if (t == DType::I32) i = std::clamp<int64_t>(i, INT32_MIN, INT32_MAX);
  return llvm::ConstantInt::get(ty, static_cast<uint64_t>(i), true);
}

namespace {

bool narrowFloat(DType t) { return t == DType::F16 || t == DType::BF16; }

llvm::Value* libdevice(llvm::IRBuilder<>& b, const char* f32name, const char* f64name,
                       const std::vector<llvm::Value*>& args) {
  llvm::Module* m = b.GetInsertBlock()->getModule();
  bool dbl = args[0]->getType()->isDoubleTy();
  std::vector<llvm::Type*> tys(args.size(), args[0]->getType());
  auto callee = m->getOrInsertFunction(dbl ? f64name : f32name,
                                       llvm::FunctionType::get(args[0]->getType(), tys, false));
  return b.CreateCall(callee, args);
}

llvm::Value* intrinsic(llvm::IRBuilder<>& b, llvm::Intrinsic::ID id,
                       const std::vector<llvm::Value*>& args) {
  return b.CreateIntrinsic(id, {args[0]->getType()}, args);
}

llvm::Value* floatOp(llvm::IRBuilder<>& b, OpKind op, const std::vector<llvm::Value*>& a) {
  llvm::Type* ty = a[0]->getType();
  auto c = [&](double v) { return llvm::ConstantFP::get(ty, v); };
  auto sigmoid = [&](llvm::Value* x) {
    return b.CreateFDiv(c(1.0), b.CreateFAdd(c(1.0), libdevice(b, "__nv_expf", "__nv_exp", {b.CreateFNeg(x)})));
  };
  switch (op) {
    case OpKind::Neg: return b.CreateFNeg(a[0]);
    case OpKind::Abs: return intrinsic(b, llvm::Intrinsic::fabs, {a[0]});
    case OpKind::Relu:  // NaN stays NaN: only values below zero become zero
      return b.CreateSelect(b.CreateFCmpOLT(a[0], c(0.0)), c(0.0), a[0]);
    case OpKind::Exp: return libdevice(b, "__nv_expf", "__nv_exp", a);
    case OpKind::Exp2: return libdevice(b, "__nv_exp2f", "__nv_exp2", a);
    case OpKind::Log: return libdevice(b, "__nv_logf", "__nv_log", a);
    case OpKind::Log2: return libdevice(b, "__nv_log2f", "__nv_log2", a);
    case OpKind::Sqrt: return libdevice(b, "__nv_sqrtf", "__nv_sqrt", a);
    case OpKind::Rsqrt: return libdevice(b, "__nv_rsqrtf", "__nv_rsqrt", a);
    case OpKind::Reciprocal: return b.CreateFDiv(c(1.0), a[0]);
    case OpKind::Tanh: return libdevice(b, "__nv_tanhf", "__nv_tanh", a);
    case OpKind::Sigmoid: return sigmoid(a[0]);
    case OpKind::Silu: return b.CreateFMul(a[0], sigmoid(a[0]));
    case OpKind::Gelu: {
      llvm::Value* e = libdevice(b, "__nv_erff", "__nv_erf", {b.CreateFMul(a[0], c(M_SQRT1_2))});
      return b.CreateFMul(b.CreateFMul(c(0.5), a[0]), b.CreateFAdd(c(1.0), e));
    }
    case OpKind::GeluTanh: {
      llvm::Value* x3 = b.CreateFMul(b.CreateFMul(a[0], a[0]), a[0]);
      llvm::Value* inner = b.CreateFMul(c(std::sqrt(2.0 / M_PI)), b.CreateFAdd(a[0], b.CreateFMul(c(0.044715), x3)));
      llvm::Value* t = libdevice(b, "__nv_tanhf", "__nv_tanh", {inner});
      return b.CreateFMul(b.CreateFMul(c(0.5), a[0]), b.CreateFAdd(c(1.0), t));
    }
    case OpKind::Sin: return libdevice(b, "__nv_sinf", "__nv_sin", a);
    case OpKind::Cos: return libdevice(b, "__nv_cosf", "__nv_cos", a);
    case OpKind::Erf: return libdevice(b, "__nv_erff", "__nv_erf", a);
    case OpKind::Floor: return libdevice(b, "__nv_floorf", "__nv_floor", a);
    case OpKind::Ceil: return libdevice(b, "__nv_ceilf", "__nv_ceil", a);
    case OpKind::Round: return libdevice(b, "__nv_rintf", "__nv_rint", a);  // half to even
    case OpKind::IsNan: return b.CreateFCmpUNO(a[0], a[0]);
    case OpKind::IsInf:
      return b.CreateFCmpOEQ(intrinsic(b, llvm::Intrinsic::fabs, {a[0]}), c(INFINITY));
    case OpKind::Add: return b.CreateFAdd(a[0], a[1]);
    case OpKind::Sub: return b.CreateFSub(a[0], a[1]);
    case OpKind::Mul: return b.CreateFMul(a[0], a[1]);
    case OpKind::Div: return b.CreateFDiv(a[0], a[1]);
    case OpKind::Max: return intrinsic(b, llvm::Intrinsic::maximum, a);  // NaN propagates
    case OpKind::Min: return intrinsic(b, llvm::Intrinsic::minimum, a);
    case OpKind::Pow: return libdevice(b, "__nv_powf", "__nv_pow", a);
    case OpKind::Remainder: {  // torch: fmod, then moved to the divisor's sign
      llvm::Value* r = libdevice(b, "__nv_fmodf", "__nv_fmod", a);
      llvm::Value* fix = b.CreateAnd(b.CreateFCmpONE(r, c(0.0)),
                                     b.CreateXor(b.CreateFCmpOLT(r, c(0.0)), b.CreateFCmpOLT(a[1], c(0.0))));
      return b.CreateSelect(fix, b.CreateFAdd(r, a[1]), r);
    }
    case OpKind::Eq: return b.CreateFCmpOEQ(a[0], a[1]);
    case OpKind::Ne: return b.CreateFCmpUNE(a[0], a[1]);
    case OpKind::Lt: return b.CreateFCmpOLT(a[0], a[1]);
    case OpKind::Le: return b.CreateFCmpOLE(a[0], a[1]);
    case OpKind::Gt: return b.CreateFCmpOGT(a[0], a[1]);
    case OpKind::Ge: return b.CreateFCmpOGE(a[0], a[1]);
    default: break;
  }
  LOOM_ASSERT(false, "no float lowering for `{}`", ir::opName(op));
}

llvm::Value* intOp(llvm::IRBuilder<>& b, OpKind op, const std::vector<llvm::Value*>& a) {
  llvm::Type* ty = a[0]->getType();
  auto zero = llvm::ConstantInt::get(ty, 0);
  // Division by 0 gives 0, and by -1 is negation (INT_MIN / -1 wraps): sdiv/srem never see
  // either, since both are undefined behaviour in LLVM IR.
  auto minus1 = llvm::ConstantInt::getSigned(ty, -1);
  auto safeDen = [&]() {
    llvm::Value* special = b.CreateOr(b.CreateICmpEQ(a[1], zero), b.CreateICmpEQ(a[1], minus1));
    return b.CreateSelect(special, llvm::ConstantInt::get(ty, 1), a[1]);
  };
  switch (op) {
    case OpKind::Neg: return b.CreateNeg(a[0]);
    case OpKind::Abs: return b.CreateSelect(b.CreateICmpSLT(a[0], zero), b.CreateNeg(a[0]), a[0]);
    case OpKind::Relu: return b.CreateSelect(b.CreateICmpSLT(a[0], zero), zero, a[0]);
    case OpKind::Not: return b.CreateNot(a[0]);
    case OpKind::Add: return b.CreateAdd(a[0], a[1]);
    case OpKind::Sub: return b.CreateSub(a[0], a[1]);
    case OpKind::Mul: return b.CreateMul(a[0], a[1]);
    case OpKind::Div:  // truncates toward zero; division by zero gives 0
      return b.CreateSelect(b.CreateICmpEQ(a[1], zero), zero,
                            b.CreateSelect(b.CreateICmpEQ(a[1], minus1), b.CreateNeg(a[0]),
                                           b.CreateSDiv(a[0], safeDen())));
    case OpKind::Remainder: {  // the divisor's sign, like torch.remainder; by zero gives 0
      llvm::Value* r = b.CreateSRem(a[0], safeDen());
      llvm::Value* fix = b.CreateAnd(b.CreateICmpNE(r, zero),
                                     b.CreateICmpSLT(b.CreateXor(r, a[1]), zero));
      r = b.CreateSelect(fix, b.CreateAdd(r, a[1]), r);
      return b.CreateSelect(b.CreateOr(b.CreateICmpEQ(a[1], zero), b.CreateICmpEQ(a[1], minus1)), zero, r);
    }
    case OpKind::Max: return ty->isIntegerTy(1) ? b.CreateOr(a[0], a[1]) : intrinsic(b, llvm::Intrinsic::smax, a);
    case OpKind::Min: return ty->isIntegerTy(1) ? b.CreateAnd(a[0], a[1]) : intrinsic(b, llvm::Intrinsic::smin, a);
    case OpKind::Eq: return b.CreateICmpEQ(a[0], a[1]);
    case OpKind::Ne: return b.CreateICmpNE(a[0], a[1]);
    // bool is i1, where `true` is -1 when read as signed: compare it unsigned.
    case OpKind::Lt: return ty->isIntegerTy(1) ? b.CreateICmpULT(a[0], a[1]) : b.CreateICmpSLT(a[0], a[1]);
    case OpKind::Le: return ty->isIntegerTy(1) ? b.CreateICmpULE(a[0], a[1]) : b.CreateICmpSLE(a[0], a[1]);
    case OpKind::Gt: return ty->isIntegerTy(1) ? b.CreateICmpUGT(a[0], a[1]) : b.CreateICmpSGT(a[0], a[1]);
    case OpKind::Ge: return ty->isIntegerTy(1) ? b.CreateICmpUGE(a[0], a[1]) : b.CreateICmpSGE(a[0], a[1]);
    case OpKind::And: return b.CreateAnd(a[0], a[1]);
    case OpKind::Or: return b.CreateOr(a[0], a[1]);
    default: break;
  }
  LOOM_ASSERT(false, "no integer lowering for `{}`", ir::opName(op));
}

}  // namespace

llvm::Value* emitRandom(llvm::IRBuilder<>& b, OpKind op, DType out, const std::vector<llvm::Value*>& a) {
  llvm::Type* i32 = b.getInt32Ty();
  llvm::Type* i64 = b.getInt64Ty();
  auto lo = [&](llvm::Value* x) { return b.CreateTrunc(x, i32); };
  auto hi = [&](llvm::Value* x) { return b.CreateTrunc(b.CreateLShr(x, 32), i32); };
  llvm::Value* c = b.CreateAdd(a[1], a[2]);  // the offset plus the element's index, modulo 2^64
  std::array<llvm::Value*, 4> w{lo(c), hi(c), b.getInt32(0), b.getInt32(0)};
  llvm::Value* k0 = lo(a[0]);
  llvm::Value* k1 = hi(a[0]);
  for (int r = 0; r < ir::kPhiloxRounds; ++r) {  // ir/philox.h's rounds
    if (r > 0) {
      k0 = b.CreateAdd(k0, b.getInt32(ir::kPhiloxW0));
      k1 = b.CreateAdd(k1, b.getInt32(ir::kPhiloxW1));
    }
    llvm::Value* p0 = b.CreateMul(b.getInt64(ir::kPhiloxM0), b.CreateZExt(w[0], i64));
    llvm::Value* p1 = b.CreateMul(b.getInt64(ir::kPhiloxM1), b.CreateZExt(w[2], i64));
    w = {b.CreateXor(b.CreateXor(hi(p1), w[1]), k0), lo(p1), b.CreateXor(b.CreateXor(hi(p0), w[3]), k1), lo(p0)};
  }
  auto wide = [&](llvm::Value* l, llvm::Value* h) {  // the top 53 bits of a 64-bit word
    return b.CreateLShr(b.CreateOr(b.CreateShl(b.CreateZExt(h, i64), 32), b.CreateZExt(l, i64)), 11);
  };
  auto scaled = [&](llvm::Value* k, llvm::Type* t, int bits) {
    return b.CreateFMul(b.CreateUIToFP(k, t), llvm::ConstantFP::get(t, std::ldexp(1.0, -bits)));
  };
  const bool f64 = out == DType::F64;
  llvm::Type* ft = f64 ? b.getDoubleTy() : b.getFloatTy();
  llvm::Value* r = nullptr;
  if (op == OpKind::RandUniform) {
    const int bits = ir::uniformBits(out);
    r = f64 ? scaled(wide(w[0], w[1]), ft, 53) : scaled(b.CreateLShr(w[0], 32 - bits), ft, bits);
  } else {
    LOOM_ASSERT(op == OpKind::RandNormal, "no random lowering for `{}`", ir::opName(op));
    llvm::Value* u1 = f64 ? scaled(b.CreateAdd(wide(w[0], w[1]), b.getInt64(1)), ft, 53)
                          : scaled(b.CreateAdd(b.CreateLShr(w[0], 8), b.getInt32(1)), ft, 24);
    llvm::Value* u2 = f64 ? scaled(wide(w[2], w[3]), ft, 53) : scaled(b.CreateLShr(w[1], 8), ft, 24);
    llvm::Value* radius = b.CreateIntrinsic(llvm::Intrinsic::sqrt, {ft}, {b.CreateFMul(llvm::ConstantFP::get(ft, -2.0),
                                                                          libdevice(b, "__nv_logf", "__nv_log", {u1}))});
    llvm::Value* angle = b.CreateFMul(llvm::ConstantFP::get(ft, 2 * M_PI), u2);
    r = b.CreateFMul(radius, libdevice(b, "__nv_cosf", "__nv_cos", {angle}));
  }
  return f64 || out == DType::F32 ? r : b.CreateFPTrunc(r, regType(b.getContext(), out));
}

llvm::Value* emitCast(llvm::IRBuilder<>& b, llvm::Value* v, DType from, DType to) {
  if (from == to) return v;
  llvm::Type* ty = regType(b.getContext(), to);
  if (to == DType::Bool) {
    if (isFloat(from)) return b.CreateFCmpUNE(v, llvm::ConstantFP::get(v->getType(), 0.0));
    return b.CreateICmpNE(v, llvm::ConstantInt::get(v->getType(), 0));
  }
  if (isFloat(from) && isFloat(to)) {
    // bf16 <-> f16 goes through f32.
    if (narrowFloat(from) && narrowFloat(to))
      return b.CreateFPTrunc(b.CreateFPExt(v, b.getFloatTy()), ty);
    return dtypeBytes(to) > dtypeBytes(from) ? b.CreateFPExt(v, ty) : b.CreateFPTrunc(v, ty);
  }
  if (isFloat(from)) {  // saturating, NaN -> 0, as the reference does
    if (narrowFloat(from)) v = b.CreateFPExt(v, b.getFloatTy());
    return b.CreateIntrinsic(llvm::Intrinsic::fptosi_sat, {ty, v->getType()}, {v});
  }
  if (isFloat(to)) {
    if (from == DType::Bool) return b.CreateUIToFP(v, ty);
    return b.CreateSIToFP(v, ty);
  }
  if (from == DType::Bool) return b.CreateZExt(v, ty);
  return b.CreateSExtOrTrunc(v, ty);
}

llvm::Value* emitPointwise(llvm::IRBuilder<>& b, OpKind op, DType in,
                           const std::vector<llvm::Value*>& args) {
  if (op == OpKind::Where) return b.CreateSelect(args[0], args[1], args[2]);
  if (!isFloat(in)) return intOp(b, op, args);
  if (!narrowFloat(in)) return floatOp(b, op, args);
  std::vector<llvm::Value*> wide;
  for (auto* a : args) wide.push_back(b.CreateFPExt(a, b.getFloatTy()));
  llvm::Value* r = floatOp(b, op, wide);
  return r->getType()->isFloatTy() ? b.CreateFPTrunc(r, regType(b.getContext(), in)) : r;
}

}  // namespace loom::codegen
