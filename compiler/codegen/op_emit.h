#pragma once
// LLVM IR for loom's scalar op semantics (the GPU twin of ir/op_math.h). f16/bf16 values are
// widened to f32 for the math and rounded back, as the CPU reference rounds them.
#include <vector>

#include <llvm/IR/IRBuilder.h>

#include "ir/op.h"

namespace loom::codegen {

llvm::Type* regType(llvm::LLVMContext& c, DType t);  // bool is i1 in registers
llvm::Type* memType(llvm::LLVMContext& c, DType t);  // and i8 in memory

llvm::Value* emitConst(llvm::IRBuilder<>& b, DType t, double v);
llvm::Value* emitCast(llvm::IRBuilder<>& b, llvm::Value* v, DType from, DType to);
// A random op of one element (ir/philox.h): operands the seed, the offset and its index (i64).
llvm::Value* emitRandom(llvm::IRBuilder<>& b, ir::OpKind op, DType out, const std::vector<llvm::Value*>& args);
// Applies a pointwise op (not Cast) to operands of dtype `in` (Where: cond is bool, the rest `in`).
llvm::Value* emitPointwise(llvm::IRBuilder<>& b, ir::OpKind op, DType in,
                           const std::vector<llvm::Value*>& args);
// Memory <-> register forms (bool: i8 <-> i1).
llvm::Value* fromMemory(llvm::IRBuilder<>& b, llvm::Value* v, DType t);
llvm::Value* toMemory(llvm::IRBuilder<>& b, llvm::Value* v, DType t);

}  // namespace loom::codegen
