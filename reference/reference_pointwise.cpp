// The CPU reference's elementwise families: unary, binary, compare, logical, where, cast, with
// broadcasting (size-1 broadcast dims and rank-0 operands stretch). Scalar math: ir/op_math.h.
#include "ir/error.h"
#include "ir/op_math.h"
#include "reference/reference_internal.h"

namespace loom::reference {

Dense evalPointwise(const ir::Op& op, const std::vector<const Dense*>& in,
                    const std::vector<int64_t>& out_shape) {
  Dense out{out_shape, Values(static_cast<size_t>(numelOf(out_shape)))};
  std::vector<std::vector<int64_t>> strides;
  for (const Dense* d : in) strides.push_back(broadcastStrides(d->shape, out_shape));
  double* o = out.data.data();
  const ir::OpKind k = op.kind();
  switch (op.family()) {
    case ir::OpFamily::Unary:
    case ir::OpFamily::UnaryAny:
    case ir::OpFamily::Predicate:
    case ir::OpFamily::LogicalNot: {
      const double* x = in[0]->data.data();
      const DType t = op.input(0)->dtype();
      parallelForEachIndex(out_shape, strides, [&](int64_t i, const int64_t* off) {
        o[i] = ir::evalUnary(k, x[off[0]], t);
      });
      break;
    }
    case ir::OpFamily::Binary:
    case ir::OpFamily::BinaryFloat:
    case ir::OpFamily::Compare:
    case ir::OpFamily::Logical: {
      const double *a = in[0]->data.data(), *b = in[1]->data.data();
      const DType t = op.input(0)->dtype();
      parallelForEachIndex(out_shape, strides, [&](int64_t i, const int64_t* off) {
        o[i] = ir::evalBinary(k, a[off[0]], b[off[1]], t);
      });
      break;
    }
    case ir::OpFamily::Where: {
      const double *c = in[0]->data.data(), *a = in[1]->data.data(), *b = in[2]->data.data();
      parallelForEachIndex(out_shape, strides, [&](int64_t i, const int64_t* off) {
        o[i] = c[off[0]] != 0.0 ? a[off[1]] : b[off[2]];
      });
      break;
    }
    case ir::OpFamily::Cast: {
      const double* x = in[0]->data.data();
      // f32 results stay in double here too: a cast to f32 converts like a cast to f64.
      const DType from = op.input(0)->dtype(), to = op.attr<ir::CastAttrs>().to;
      const DType as = to == DType::F32 ? DType::F64 : to;
      parallelForEachIndex(out_shape, strides, [&](int64_t i, const int64_t* off) {
        o[i] = ir::evalCast(x[off[0]], from, as);
      });
      break;
    }
    case ir::OpFamily::Bitcast: {
      const double* x = in[0]->data.data();
      const DType to = op.attr<ir::CastAttrs>().to;
      parallelForEachIndex(out_shape, strides, [&](int64_t i, const int64_t* off) {
        o[i] = ir::evalBitcast(x[off[0]], to);
      });
      break;
    }
    default: LOOM_ASSERT(false, "`{}` is not elementwise", op.name());
  }
  return out;
}

}  // namespace loom::reference
