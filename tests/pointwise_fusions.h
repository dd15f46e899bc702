#pragma once
// Fusions that cover every pointwise op in every dtype it accepts (shared by the CPU-only PTX
// tests and the [gpu] tests).
#include <memory>
#include <vector>

#include "frontend/internal_api.h"

namespace loom::test {

// One fusion per (dtype, arity): every unary op (or every binary op, or where) that accepts
// the dtype, applied to inputs `x` (and `y`, and bool `c`) of shape [N], one output each.
inline std::vector<std::unique_ptr<ir::Fusion>> everyPointwiseOp() {
  std::vector<std::unique_ptr<ir::Fusion>> out;
  const DType all[] = {DType::Bool, DType::I32, DType::I64, DType::F16, DType::BF16, DType::F32, DType::F64};
  for (DType t : all) {
    for (int arity = 1; arity <= 3; ++arity) {
      auto f = std::make_unique<ir::Fusion>(fmt::format("ops{}_{}", arity, dtypeName(t)));
      std::vector<ir::Axis> n = {ir::Axis::iter(Extent::symbol("N"))};
      std::vector<const ir::Value*> in;
      if (arity == 3) in.push_back(f->addInput("c", DType::Bool, n));
      in.push_back(f->addInput("x", t, n));
      if (arity >= 2) in.push_back(f->addInput("y", t, n));
      int outputs = 0;
      for (ir::OpKind k : ir::allOpKinds()) {
        if (!ir::isPointwise(k) || k == ir::OpKind::Cast || k == ir::OpKind::Bitcast) continue;
        size_t want = k == ir::OpKind::Where ? 3 : (ir::opFamily(k) == ir::OpFamily::Unary ||
                                                    ir::opFamily(k) == ir::OpFamily::UnaryAny ||
                                                    ir::opFamily(k) == ir::OpFamily::Predicate ||
                                                    ir::opFamily(k) == ir::OpFamily::LogicalNot)
                                                       ? 1 : 2;
        if (want != static_cast<size_t>(arity)) continue;
        try {
          const ir::Op* op = f->addOp(k, in);
          f->addOutput(std::string(ir::opName(k)) + "_out", op->output());
          ++outputs;
        } catch (const Error&) {
          // The op does not accept this dtype; typing rejects it, as tested elsewhere.
        }
      }
      if (outputs) out.push_back(std::move(f));
    }
    // Casts from t to every dtype.
    auto f = std::make_unique<ir::Fusion>(fmt::format("casts_{}", dtypeName(t)));
    const ir::Value* x = f->addInput("x", t, {ir::Axis::iter(Extent::symbol("N"))});
    for (DType to : all)
      if (to != t)
        f->addOutput(fmt::format("to_{}", dtypeName(to)), f->addOp(ir::OpKind::Cast, {x}, ir::CastAttrs{to})->output());
    // And the same bits as the other dtype of 32 bits.
    if (t == DType::F32 || t == DType::I32) {
      const DType to = t == DType::F32 ? DType::I32 : DType::F32;
      f->addOutput(fmt::format("bits_{}", dtypeName(to)), f->addOp(ir::OpKind::Bitcast, {x}, ir::CastAttrs{to})->output());
    }
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace loom::test
