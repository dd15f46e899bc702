#include "compiler/codegen/kir_to_llvm.h"

#include <algorithm>
#include <cmath>
#include <map>

#include <fmt/format.h>
#include <llvm/IR/InlineAsm.h>
#include <llvm/IR/IntrinsicsNVPTX.h>

#include <llvm/IR/IRBuilder.h>
#include <llvm/IR/Module.h>

#include "compiler/codegen/kernel_module.h"
#include "compiler/codegen/lane_access.h"
#include "compiler/codegen/op_emit.h"
#include "compiler/codegen/ptx_backend.h"
#include "ir/error.h"

namespace loom::codegen {

namespace {

using kir::Expr;
using kir::Stmt;

class Translator {
 public:
  Translator(const kir::Kernel& k, KernelModule& km) : k_(k), km_(km), b_(km.builder()) {
    idx_ty_ = k.index_bits == 64 ? b_.getInt64Ty() : b_.getInt32Ty();
  }

  void run() {
    // Each symbolic size: its 64-bit parameter, as the kernel's index type.
    for (size_t i = 0; i < k_.sizes.size(); ++i)
      env_[k_.sizes[i].name] = {b_.CreateTrunc(km_.param(static_cast<int>(k_.params.size() + i)), idx_ty_)};
    for (const auto& buf : k_.buffers) buffer(buf);
    body(k_.body);
    b_.CreateRetVoid();
  }

 private:
  llvm::Value* c(int64_t v) { return llvm::ConstantInt::get(idx_ty_, static_cast<uint64_t>(v), true); }

  llvm::Value* special(kir::Special s) {
    switch (s) {
      case kir::Special::TidX: return km_.threadIdx();
      case kir::Special::CtaidX: return km_.blockIdx();
      case kir::Special::NctaidX: return km_.gridDim();
    }
    return nullptr;
  }

  llvm::Type* intType(const kir::Type& t) {
    if (t.dtype == DType::Bool) return b_.getInt1Ty();
    return t.dtype == DType::I32 ? b_.getInt32Ty() : idx_ty_;
  }
  // The dtype an integer of the kernel has as data.
  DType intDType(const kir::Type& t) { return t.dtype == DType::I32 || k_.index_bits == 32 ? DType::I32 : DType::I64; }

  void buffer(const kir::Buffer& buf) {
    if (buf.place == kir::Place::SmemDyn) {  // extern: sized at launch
      auto* arr = llvm::ArrayType::get(b_.getInt8Ty(), 0);
      auto* gv = new llvm::GlobalVariable(*km_.function()->getParent(), arr, false, llvm::GlobalValue::ExternalLinkage,
                                          nullptr, buf.name, nullptr, llvm::GlobalValue::NotThreadLocal, 3);
      gv->setAlignment(llvm::Align(static_cast<uint64_t>(buf.align)));
      buffers_[buf.name] = gv;
      return;
    }
    llvm::Type* ty = regType(b_.getContext(), buf.elem);
    auto* arr = llvm::ArrayType::get(ty, static_cast<uint64_t>(buf.count));
    auto* gv = new llvm::GlobalVariable(*km_.function()->getParent(), arr, false, llvm::GlobalValue::InternalLinkage,
                                        llvm::UndefValue::get(arr), buf.name, nullptr,
                                        llvm::GlobalValue::NotThreadLocal, 3);
    gv->setAlignment(llvm::Align(static_cast<uint64_t>(buf.align)));
    LOOM_ASSERT(gv->getName() == buf.name, "kir -> LLVM: buffer `{}` became `{}`", buf.name, gv->getName().str());
    buffers_[buf.name] = gv;
  }

  // An inline-asm call with side effects returning `ret` (void where null).
  llvm::Value* asmCall(llvm::Type* ret, const std::vector<llvm::Value*>& args, const char* text, const char* constraints) {
    std::vector<llvm::Type*> tys;
    for (auto* v : args) tys.push_back(v->getType());
    auto* fn = llvm::InlineAsm::get(llvm::FunctionType::get(ret ? ret : b_.getVoidTy(), tys, false), text, constraints, true);
    return b_.CreateCall(fn, args);
  }

  // ld.relaxed.gpu of what other blocks published before a grid barrier: from the L2, never a
  // stale L1 line, at GPU scope. A packed f32 pair comes as one vector.
  llvm::Value* relaxedLoad(const kir::Type& t, llvm::Value* addr) {
    if (t.packed) {
      llvm::Type* f32 = b_.getFloatTy();
      auto* vt = llvm::FixedVectorType::get(f32, 2);
      llvm::Value* pair = asmCall(llvm::StructType::get(b_.getContext(), {f32, f32}), {addr},
                                  "ld.relaxed.gpu.global.v2.f32 {$0, $1}, [$2];", "=f,=f,l,~{memory}");
      llvm::Value* v = b_.CreateInsertElement(llvm::PoisonValue::get(vt), b_.CreateExtractValue(pair, 0), uint64_t{0});
      return b_.CreateInsertElement(v, b_.CreateExtractValue(pair, 1), uint64_t{1});
    }
    if (t.dtype == DType::F32) return asmCall(b_.getFloatTy(), {addr}, "ld.relaxed.gpu.global.f32 $0, [$1];", "=f,l,~{memory}");
    if (t.dtype == DType::F64) return asmCall(b_.getDoubleTy(), {addr}, "ld.relaxed.gpu.global.f64 $0, [$1];", "=d,l,~{memory}");
    if (t.dtype == DType::I32) return asmCall(b_.getInt32Ty(), {addr}, "ld.relaxed.gpu.global.u32 $0, [$1];", "=r,l,~{memory}");
    LOOM_ASSERT(t.dtype == DType::I64, "kir -> LLVM: a relaxed load of {}", t.str());
    return asmCall(b_.getInt64Ty(), {addr}, "ld.relaxed.gpu.global.u64 $0, [$1];", "=l,l,~{memory}");
  }

  // Several lanes of f32 (or f64) published by other blocks: ld.relaxed.gpu of 16 bytes at a
  // time (4 or 2 lanes; the address 16-byte aligned), fewer for what is left.
  Lanes relaxedLoadLanes(const kir::Type& t, llvm::Value* addr) {
    LOOM_ASSERT(t.dtype == DType::F32 || t.dtype == DType::F64, "kir -> LLVM: a relaxed load of {}", t.str());
    const bool f64 = t.dtype == DType::F64;
    llvm::Type* ty = f64 ? b_.getDoubleTy() : b_.getFloatTy();
    const int per = f64 ? 2 : 4;
    Lanes out;
    for (int at = 0; at < t.lanes; at += per) {
      const int n = std::min(per, t.lanes - at);
      llvm::Value* p = b_.CreateInBoundsGEP(ty, addr, b_.getInt64(at));
      if (n == 1) {
        out.push_back(relaxedLoad(kir::Type::data(t.dtype, 1), p));
        continue;
      }
      std::string regs, cons;
      for (int j = 0; j < n; ++j) {
        regs += fmt::format("{}${}", j ? ", " : "", j);
        cons += f64 ? "=d," : "=f,";
      }
      const std::string text = fmt::format("ld.relaxed.gpu.global.v{}.{} {{{}}}, [${}];", n, f64 ? "f64" : "f32", regs, n);
      std::vector<llvm::Type*> tys(static_cast<size_t>(n), ty);
      llvm::Value* v = asmCall(llvm::StructType::get(b_.getContext(), tys), {p}, text.c_str(), (cons + "l,~{memory}").c_str());
      for (int j = 0; j < n; ++j) out.push_back(b_.CreateExtractValue(v, static_cast<unsigned>(j)));
    }
    return out;
  }

  // Thread 0 of the block arrives (release) on the counter, polls it relaxed until it reaches
  // the target, then acquires with one fence (an acquiring poll would invalidate the L1 on
  // every try); the others skip to the end.
  void gridSync(const Stmt& s) {
    llvm::Value* target = scalar(*s.src);
    llvm::Value* counter = scalar(*s.offset);
    llvm::Function* fn = km_.function();
    auto* lead = llvm::BasicBlock::Create(b_.getContext(), "gb_lead", fn);
    auto* spin = llvm::BasicBlock::Create(b_.getContext(), "gb_spin", fn);
    auto* done = llvm::BasicBlock::Create(b_.getContext(), "gb_done", fn);
    b_.CreateCondBr(b_.CreateICmpEQ(env_.at(s.name)[0], b_.getInt32(0)), lead, done);
    b_.SetInsertPoint(lead);
    asmCall(b_.getInt32Ty(), {counter}, "atom.add.release.gpu.global.u32 $0, [$1], 1;", "=r,l,~{memory}");
    b_.CreateBr(spin);
    b_.SetInsertPoint(spin);
    llvm::Value* seen = asmCall(b_.getInt32Ty(), {counter}, "ld.relaxed.gpu.global.u32 $0, [$1];", "=r,l,~{memory}");
    auto* wait = llvm::BasicBlock::Create(b_.getContext(), "gb_wait", fn);
    auto* acquire = llvm::BasicBlock::Create(b_.getContext(), "gb_acquire", fn);
    b_.CreateCondBr(b_.CreateICmpUGE(seen, target), acquire, wait);
    b_.SetInsertPoint(acquire);
    asmCall(nullptr, {}, "fence.acq_rel.gpu;", "~{memory}");
    b_.CreateBr(done);
    b_.SetInsertPoint(wait);
    asmCall(nullptr, {}, "nanosleep.u32 64;", "~{memory}");
    b_.CreateBr(spin);
    b_.SetInsertPoint(done);
  }

  llvm::Value* bytePtr(const std::string& name, llvm::Value* byte) {
    return b_.CreateInBoundsGEP(b_.getInt8Ty(), buffers_.at(name), byte);
  }

  // for (k = 0; ; ) { body; k += 1; if !(k < count) break }, carrying values (phis); the last
  // values yielded are the loop's results.
  void repeat(const Stmt& s) {
    std::vector<Lanes> init;  // each carried value lane by lane
    for (const auto& [n, e] : s.carried) init.push_back(expr(*e));
    llvm::Value* trips = s.trips ? scalar(*s.trips) : c(s.count);  // evaluated once, before the loop
    llvm::Function* fn = km_.function();
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(b_.getContext(), "loop", fn);
    auto* exit = llvm::BasicBlock::Create(b_.getContext(), "loop_done", fn);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* k = b_.CreatePHI(idx_ty_, 2);
    k->addIncoming(c(0), pre);
    env_[s.name] = {k};
    std::vector<std::vector<llvm::PHINode*>> phis(init.size());
    for (size_t i = 0; i < init.size(); ++i) {
      Lanes lanes;
      for (llvm::Value* v : init[i]) {
        phis[i].push_back(b_.CreatePHI(v->getType(), 2));
        phis[i].back()->addIncoming(v, pre);
        lanes.push_back(phis[i].back());
      }
      env_[s.carried[i].first] = lanes;
    }
    body(s.body);
    std::vector<Lanes> next;
    for (const auto& y : s.yields) next.push_back(expr(*y));
    llvm::Value* kn = b_.CreateAdd(k, c(1));
    llvm::BasicBlock* latch = b_.GetInsertBlock();
    k->addIncoming(kn, latch);
    for (size_t i = 0; i < phis.size(); ++i) {
      LOOM_ASSERT(next[i].size() == phis[i].size(), "kir -> LLVM: a carried value of {} lanes yields {}",
                  phis[i].size(), next[i].size());
      for (size_t j = 0; j < phis[i].size(); ++j) phis[i][j]->addIncoming(next[i][j], latch);
    }
    llvm::BranchInst* back = b_.CreateCondBr(b_.CreateICmpSLT(kn, trips), head, exit);
    if (s.unroll > 1) {
      llvm::LLVMContext& cx = b_.getContext();
      llvm::MDNode* count = llvm::MDNode::get(cx, {llvm::MDString::get(cx, "llvm.loop.unroll.count"),
                                                   llvm::ConstantAsMetadata::get(b_.getInt32(static_cast<uint32_t>(s.unroll)))});
      llvm::MDNode* self = llvm::MDNode::getDistinct(cx, {nullptr, count});
      self->replaceOperandWith(0, self);
      back->setMetadata(llvm::LLVMContext::MD_loop, self);
    }
    b_.SetInsertPoint(exit);
    for (size_t i = 0; i < next.size(); ++i) env_[s.results[i]] = next[i];
  }

  llvm::Value* slot(const std::string& name, llvm::Value* i) {
    llvm::GlobalVariable* gv = buffers_.at(name);
    return b_.CreateInBoundsGEP(gv->getValueType(), gv, {llvm::ConstantInt::get(i->getType(), 0), i});
  }

  // A full-warp shuffle of a 32- or 64-bit value (64-bit values travel as two halves).
  llvm::Value* shuffle(llvm::Intrinsic::ID id, llvm::Value* v, llvm::Value* lane_arg) {
    llvm::Type* ty = v->getType();
    unsigned bits = ty->getPrimitiveSizeInBits();
    auto shfl = [&](llvm::Value* x) {
      return b_.CreateIntrinsic(id, {}, {b_.getInt32(0xffffffffu), x, lane_arg, b_.getInt32(31)});
    };
    if (bits == 32) return b_.CreateBitCast(shfl(b_.CreateBitCast(v, b_.getInt32Ty())), ty);
    LOOM_ASSERT(bits == 64, "kir -> LLVM: shuffle of a {}-bit value", bits);
    auto* v2 = llvm::FixedVectorType::get(b_.getInt32Ty(), 2);
    llvm::Value* p = b_.CreateBitCast(v, v2);
    llvm::Value* lo = shfl(b_.CreateExtractElement(p, uint64_t{0}));
    llvm::Value* hi = shfl(b_.CreateExtractElement(p, uint64_t{1}));
    llvm::Value* r = b_.CreateInsertElement(llvm::PoisonValue::get(v2), lo, uint64_t{0});
    r = b_.CreateInsertElement(r, hi, uint64_t{1});
    return b_.CreateBitCast(r, ty);
  }

  Lanes intrinsic(const Expr& e) {
    std::vector<Lanes> a;
    for (const auto& x : e.args) a.push_back(expr(*x));
    auto at = [&](size_t i, size_t j) { return a[i].size() == 1 ? a[i][0] : a[i][j]; };
    Lanes out;
    switch (e.intrinsic) {
      case kir::Intrinsic::Splat: return Lanes(static_cast<size_t>(e.type.lanes), a[0][0]);
      case kir::Intrinsic::First: return {a[0][0]};
      case kir::Intrinsic::ParamAddr: return {km_.param(static_cast<int>(e.args[0]->ivalue))};
      case kir::Intrinsic::ByteAddr:
        return {b_.CreateInBoundsGEP(b_.getInt8Ty(), a[0][0], b_.CreateZExtOrTrunc(a[1][0], b_.getInt64Ty()))};
      case kir::Intrinsic::RelaxedLoad:
        return e.type.lanes > 1 && !e.type.packed ? relaxedLoadLanes(e.type, a[0][0]) : Lanes{relaxedLoad(e.type, a[0][0])};
      case kir::Intrinsic::AtomAddAcqRel:
        return {asmCall(b_.getInt32Ty(), {a[0][0]}, "atom.add.acq_rel.gpu.global.u32 $0, [$1], 1;", "=r,l,~{memory}")};
      case kir::Intrinsic::PackLo: {
        auto* vt = llvm::FixedVectorType::get(a[0][0]->getType(), 2);
        return {b_.CreateInsertElement(llvm::PoisonValue::get(vt), a[0][0], uint64_t{0})};
      }
      case kir::Intrinsic::PackHi: return {b_.CreateInsertElement(a[0][0], a[1][0], uint64_t{1})};
      case kir::Intrinsic::Lane: return {a[0][static_cast<size_t>(e.args[1]->ivalue)]};
      case kir::Intrinsic::Concat: {
        Lanes out;
        for (const auto& x : a) out.push_back(x[0]);
        return out;
      }
      case kir::Intrinsic::ElemAddr:
        return {b_.CreateInBoundsGEP(memType(b_.getContext(), e.type.dtype), km_.param(static_cast<int>(e.args[0]->ivalue)), a[1][0])};
      case kir::Intrinsic::Unpack: return {b_.CreateExtractElement(a[0][0], static_cast<uint64_t>(e.args[1]->ivalue))};
      case kir::Intrinsic::ToGeneric: return {b_.CreateAddrSpaceCast(a[0][0], llvm::PointerType::get(b_.getContext(), 0))};
      case kir::Intrinsic::Mapa: return {b_.CreateIntrinsic(llvm::Intrinsic::nvvm_mapa, {}, {a[0][0], a[1][0]})};
      case kir::Intrinsic::FoldSqDiff: {
        llvm::Value* r = a[2][0];
        for (llvm::Value* x : a[0]) {
          llvm::Value* d = b_.CreateFSub(x, a[1][0]);
          r = b_.CreateFAdd(r, b_.CreateFMul(d, d));
        }
        return {r};
      }
      case kir::Intrinsic::FoldSum:
      case kir::Intrinsic::FoldMax:
      case kir::Intrinsic::FoldMin: {
        const ir::OpKind op = e.intrinsic == kir::Intrinsic::FoldSum ? ir::OpKind::Add
                              : e.intrinsic == kir::Intrinsic::FoldMax ? ir::OpKind::Max : ir::OpKind::Min;
        llvm::Value* r = a[1][0];
        for (llvm::Value* x : a[0]) r = emitPointwise(b_, op, e.type.dtype, {r, x});
        return {r};
      }
      default: break;
    }
    for (size_t j = 0; j < static_cast<size_t>(e.type.lanes); ++j) {
      switch (e.intrinsic) {
        case kir::Intrinsic::ShflXor: out.push_back(shuffle(llvm::Intrinsic::nvvm_shfl_sync_bfly_i32, at(0, j), at(1, 0))); break;
        case kir::Intrinsic::ShflIdx: out.push_back(shuffle(llvm::Intrinsic::nvvm_shfl_sync_idx_i32, at(0, j), at(1, 0))); break;
        case kir::Intrinsic::ExpApprox: {
          llvm::Value* y = b_.CreateFMul(at(0, j), llvm::ConstantFP::get(at(0, j)->getType(), M_LOG2E));
          out.push_back(b_.CreateIntrinsic(llvm::Intrinsic::nvvm_ex2_approx_ftz_f, {}, {y}));
          break;
        }
        case kir::Intrinsic::DivApprox:
          out.push_back(b_.CreateIntrinsic(llvm::Intrinsic::nvvm_div_approx_f, {}, {at(0, j), at(1, j)}));
          break;
        case kir::Intrinsic::MulRcp:
          out.push_back(b_.CreateFMul(at(0, j), b_.CreateFDiv(llvm::ConstantFP::get(at(1, j)->getType(), 1.0), at(1, j))));
          break;
        case kir::Intrinsic::SqDiff: {
          llvm::Value* d = b_.CreateFSub(at(0, j), at(1, j));
          out.push_back(b_.CreateFMul(d, d));
          break;
        }
        default: LOOM_ASSERT(false, "kir -> LLVM: intrinsic `{}`", kir::intrinsicName(e.intrinsic));
      }
    }
    return out;
  }

  llvm::Value* indexOp(kir::IndexOp op, llvm::Value* a, llvm::Value* b) {
    switch (op) {
      case kir::IndexOp::Add: return b_.CreateAdd(a, b);
      case kir::IndexOp::Sub: return b_.CreateSub(a, b);
      case kir::IndexOp::Mul: return b_.CreateMul(a, b);
      case kir::IndexOp::Div: return b_.CreateUDiv(a, b);
      case kir::IndexOp::Rem: return b_.CreateURem(a, b);
      case kir::IndexOp::And: return b_.CreateAnd(a, b);
      case kir::IndexOp::Or: return b_.CreateOr(a, b);
      case kir::IndexOp::Xor: return b_.CreateXor(a, b);
      case kir::IndexOp::Shr: return b_.CreateLShr(a, b);
      case kir::IndexOp::Lt: return b_.CreateICmpSLT(a, b);
      case kir::IndexOp::Gt: return b_.CreateICmpSGT(a, b);
      case kir::IndexOp::Ult: return b_.CreateICmpULT(a, b);
      case kir::IndexOp::Eq: return b_.CreateICmpEQ(a, b);
      case kir::IndexOp::Ne: return b_.CreateICmpNE(a, b);
    }
    return nullptr;
  }

  // An index expression's one value.
  llvm::Value* scalar(const Expr& e) {
    Lanes l = expr(e);
    LOOM_ASSERT(l.size() == 1, "kir -> LLVM: an index of {} lanes", l.size());
    return l[0];
  }

  Lanes expr(const Expr& e) {
    switch (e.kind) {
      case Expr::Kind::Int: return {llvm::ConstantInt::get(intType(e.type), static_cast<uint64_t>(e.ivalue), true)};
      case Expr::Kind::Select: {
        llvm::Value* cond = scalar(*e.args[0]);
        Lanes a = expr(*e.args[1]), b = expr(*e.args[2]);
        Lanes out;
        for (size_t j = 0; j < a.size(); ++j) out.push_back(b_.CreateSelect(cond, a[j], b[j]));
        return out;
      }
      case Expr::Kind::Convert: {
        llvm::Value* x = scalar(*e.args[0]);
        if (e.type.index) return {b_.CreateZExtOrTrunc(x, intType(e.type))};
        return {emitCast(b_, x, intDType(e.args[0]->type), e.type.dtype)};
      }
      case Expr::Kind::Intrinsic: return intrinsic(e);
      case Expr::Kind::BytesLoad: {
        llvm::Value* byte = scalar(*e.args[0]);
        llvm::Type* ety = memType(b_.getContext(), e.type.dtype);
        auto* vt = llvm::FixedVectorType::get(ety, static_cast<unsigned>(e.type.lanes));
        llvm::Value* ld = b_.CreateAlignedLoad(vt, bytePtr(e.buffer, byte), llvm::Align(static_cast<uint64_t>(e.align)));
        Lanes lanes;
        for (int j = 0; j < e.type.lanes; ++j)
          lanes.push_back(fromMemory(b_, b_.CreateExtractElement(ld, static_cast<uint64_t>(j)), e.type.dtype));
        return lanes;
      }
      case Expr::Kind::BufAddr: return {slot(e.buffer, scalar(*e.args[0]))};
      case Expr::Kind::BufLoad: {
        llvm::Value* i = scalar(*e.args[0]);
        llvm::Value* at = e.args[0]->type.address ? i : slot(e.buffer, i);
        return {b_.CreateLoad(regType(b_.getContext(), e.type.dtype), at)};
      }
      case Expr::Kind::Var: {
        auto it = env_.find(e.name);
        LOOM_ASSERT(it != env_.end(), "kir -> LLVM: `{}` is not bound", e.name);
        return it->second;
      }
      case Expr::Kind::Special: return {special(e.special)};
      case Expr::Kind::Index: {
        llvm::Value* a = scalar(*e.args[0]);
        llvm::Value* b = scalar(*e.args[1]);
        return {indexOp(e.iop, a, b)};
      }
      case Expr::Kind::Const: {
        Lanes out;
        for (int j = 0; j < e.type.lanes; ++j) out.push_back(emitConst(b_, e.type.dtype, e.fvalue));
        return out;
      }
      case Expr::Kind::Math: return math(e);
      case Expr::Kind::Load: {
        LOOM_ASSERT((e.cache == kir::Cache::Invariant) == k_.noalias,
                    "kir -> LLVM: invariant loads are those of a kernel without aliased outputs");
        llvm::Value* off = scalar(*e.args[0]);
        return loadLanes(km_, km_.param(e.param), e.type.dtype, off, e.access, e.type.lanes, e.inner_stride);
      }
    }
    return {};
  }

  Lanes math(const Expr& e) {
    std::vector<Lanes> args;
    for (const auto& a : e.args) args.push_back(expr(*a));
    Lanes out;
    for (size_t j = 0; j < static_cast<size_t>(e.type.lanes); ++j) {
      std::vector<llvm::Value*> lane;
      for (const auto& a : args) lane.push_back(a.size() == 1 ? a[0] : a[j]);
      if (e.op == ir::OpKind::Cast) {
        out.push_back(emitCast(b_, lane[0], e.args[0]->type.dtype, e.type.dtype));
      } else if (e.op == ir::OpKind::Bitcast) {
        out.push_back(b_.CreateBitCast(lane[0], regType(b_.getContext(), e.type.dtype)));
      } else if (ir::opFamily(e.op) == ir::OpFamily::Random) {
        out.push_back(emitRandom(b_, e.op, e.type.dtype, lane));
      } else {
        DType in = e.args[e.op == ir::OpKind::Where ? 1 : 0]->type.dtype;
        out.push_back(emitPointwise(b_, e.op, in, lane));
      }
    }
    return out;
  }

  // for (v = init; cond; v += step) body; the variable's value once `cond` fails is bound to
  // the loop's `exit` name.
  void loop(const Stmt& s) {
    llvm::Value* init = scalar(*s.init);
    llvm::Function* fun = b_.GetInsertBlock()->getParent();
    llvm::BasicBlock* pre = b_.GetInsertBlock();
    auto* head = llvm::BasicBlock::Create(b_.getContext(), "loop", fun);
    auto* bodyb = llvm::BasicBlock::Create(b_.getContext(), "body", fun);
    auto* exit = llvm::BasicBlock::Create(b_.getContext(), "exit", fun);
    b_.CreateBr(head);
    b_.SetInsertPoint(head);
    llvm::PHINode* i = b_.CreatePHI(idx_ty_, 2);
    i->addIncoming(init, pre);
    env_[s.name] = {i};
    b_.CreateCondBr(scalar(*s.cond), bodyb, exit);
    b_.SetInsertPoint(bodyb);
    body(s.body);
    llvm::Value* next = b_.CreateAdd(i, scalar(*s.step));
    i->addIncoming(next, b_.GetInsertBlock());
    b_.CreateBr(head);
    b_.SetInsertPoint(exit);
    if (!s.exit.empty()) env_[s.exit] = {i};
  }

  void stmt(const Stmt& s) {
    switch (s.kind) {
      case Stmt::Kind::Let: env_[s.name] = expr(*s.value); break;
      case Stmt::Kind::Loop:
        LOOM_ASSERT(s.unroll == 1, "kir -> LLVM: loop `{}` still unrolled {} times (the unroll pass "
                    "writes the trips out)", s.name, s.unroll);
        loop(s);
        break;
      case Stmt::Kind::If: {
        llvm::Value* cond = scalar(*s.cond);
        llvm::Function* fn = km_.function();
        auto* then = llvm::BasicBlock::Create(b_.getContext(), s.name, fn);
        auto* cont = llvm::BasicBlock::Create(b_.getContext(), s.name + "_done", fn);
        b_.CreateCondBr(cond, then, cont);
        b_.SetInsertPoint(then);
        body(s.body);
        b_.CreateBr(cont);
        b_.SetInsertPoint(cont);
        break;
      }
      case Stmt::Kind::Barrier: {
        const llvm::Intrinsic::ID id = s.barrier == kir::Barrier::Block ? llvm::Intrinsic::nvvm_barrier0
                                       : s.barrier == kir::Barrier::ClusterArrive ? llvm::Intrinsic::nvvm_barrier_cluster_arrive_aligned
                                       : s.barrier == kir::Barrier::ClusterArriveRelaxed
                                           ? llvm::Intrinsic::nvvm_barrier_cluster_arrive_relaxed_aligned
                                           : llvm::Intrinsic::nvvm_barrier_cluster_wait_aligned;
        b_.CreateIntrinsic(id, {}, {});
        break;
      }
      case Stmt::Kind::BufStore: {
        llvm::Value* i = scalar(*s.offset);
        llvm::Value* v = scalar(*s.value);
        b_.CreateStore(v, s.offset->type.address ? i : slot(s.name, i));
        break;
      }
      case Stmt::Kind::Combine:
      case Stmt::Kind::Welford:
        LOOM_ASSERT(false, "kir -> LLVM: combine `{}` not lowered (pass lower-combines)", s.name);
        break;
      case Stmt::Kind::Repeat: repeat(s); break;
      case Stmt::Kind::AsyncCopy: {
        llvm::Value* g = s.src->type.address ? scalar(*s.src)
                                             : b_.CreateInBoundsGEP(memType(b_.getContext(), s.copy_dtype), km_.param(s.param), scalar(*s.src));
        const auto id = s.bytes == 16 ? llvm::Intrinsic::nvvm_cp_async_cg_shared_global_16
                        : s.bytes == 8 ? llvm::Intrinsic::nvvm_cp_async_ca_shared_global_8
                                       : llvm::Intrinsic::nvvm_cp_async_ca_shared_global_4;
        llvm::Value* dst = bytePtr(s.name, scalar(*s.offset));
        b_.CreateIntrinsic(id, {}, {dst, g});
        break;
      }
      case Stmt::Kind::Spread:
        env_[s.name] = {s.mapping == kir::Mapping::Threads ? km_.threadIdx() : km_.blockIdx()};
        body(s.body);
        break;
      case Stmt::Kind::AsyncWait:
        if (s.count < 0) b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_all, {}, {});
        else b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_wait_group, {}, {b_.getInt32(static_cast<uint32_t>(s.count))});
        break;
      case Stmt::Kind::AsyncCommit: b_.CreateIntrinsic(llvm::Intrinsic::nvvm_cp_async_commit_group, {}, {}); break;
      case Stmt::Kind::GlobalStore: {
        llvm::Value* addr = scalar(*s.offset);
        Lanes lanes = expr(*s.value);
        llvm::Value* v = lanes[0];
        if (lanes.size() > 1) {  // one vector (LLVM splits what is wider than 16 bytes)
          v = llvm::PoisonValue::get(llvm::FixedVectorType::get(lanes[0]->getType(), static_cast<unsigned>(lanes.size())));
          for (size_t j = 0; j < lanes.size(); ++j) v = b_.CreateInsertElement(v, lanes[j], static_cast<uint64_t>(j));
        }
        b_.CreateAlignedStore(v, addr, llvm::Align(static_cast<uint64_t>(s.align)));
        break;
      }
      case Stmt::Kind::GridSync: gridSync(s); break;
      case Stmt::Kind::RelaxedZero:
        asmCall(nullptr, {scalar(*s.offset)}, "st.relaxed.gpu.global.u32 [$0], 0;", "l,~{memory}");
        break;
      case Stmt::Kind::BytesStore: {
        Lanes v = expr(*s.value);
        const DType t = s.value->type.dtype;
        llvm::Type* ety = memType(b_.getContext(), t);
        if (s.access == kir::Access::Gather) {  // one element, stored as such
          llvm::Value* byte = scalar(*s.offset);
          b_.CreateAlignedStore(v[0], bytePtr(s.name, byte), llvm::Align(static_cast<uint64_t>(s.align)));
          break;
        }
        auto* vt = llvm::FixedVectorType::get(ety, static_cast<unsigned>(v.size()));
        llvm::Value* vec = llvm::PoisonValue::get(vt);
        for (size_t j = 0; j < v.size(); ++j) vec = b_.CreateInsertElement(vec, toMemory(b_, v[j], t), static_cast<uint64_t>(j));
        llvm::Value* byte = scalar(*s.offset);
        b_.CreateAlignedStore(vec, bytePtr(s.name, byte), llvm::Align(static_cast<uint64_t>(s.align)));
        break;
      }
      case Stmt::Kind::Store: {
        llvm::Value* off = scalar(*s.offset);
        Lanes v = expr(*s.value);
        storeLanes(km_, km_.param(s.param), s.value->type.dtype, off, s.access, v, s.inner_stride);
        break;
      }
    }
  }

  void body(const kir::Body& b) {
    for (const auto& s : b) stmt(*s);
  }

  const kir::Kernel& k_;
  KernelModule& km_;
  llvm::IRBuilder<>& b_;
  llvm::Type* idx_ty_;
  std::map<std::string, Lanes> env_;
  std::map<std::string, llvm::GlobalVariable*> buffers_;
};

}  // namespace

std::unique_ptr<llvm::Module> translateKernel(const kir::Kernel& k, llvm::LLVMContext& ctx) {
  int inputs = 0;
  for (const auto& p : k.params) inputs += p.output || p.workspace ? 0 : 1;
  KernelModule km(ctx, k.name, static_cast<int>(k.params.size()), inputs, k.noalias, k.launch.block,
                  static_cast<int>(k.sizes.size()));
  if (k.min_blocks_per_sm > 0) km.minBlocksPerSM(k.min_blocks_per_sm);
  Translator(k, km).run();
  return km.finish();
}

std::string translateToPtx(const kir::Kernel& k, int sm) {
  llvm::LLVMContext ctx;
  return compileToPtx(translateKernel(k, ctx), ctx, PtxOptions{sm, 2});
}

}  // namespace loom::codegen
