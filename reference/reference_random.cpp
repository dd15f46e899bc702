// The reference's iota and random numbers (ir/philox.h defines their bits).
#include <cmath>

#include "ir/philox.h"
#include "reference/reference_internal.h"

namespace loom::reference {

Dense createIota(const ir::Op& op, const std::vector<int64_t>& shape) {
  const int dim = op.attr<ir::ScalarAttrs>().dim;
  Dense d{shape, Values(static_cast<size_t>(numelOf(shape)))};
  int64_t inner = 1;  // elements between neighbours along `dim`
  for (size_t i = static_cast<size_t>(dim) + 1; i < shape.size(); ++i) inner *= shape[i];
  const int64_t extent = shape[static_cast<size_t>(dim)];
  double* v = d.data.data();
  runtime::parallelForRanges(static_cast<int64_t>(d.data.size()), kParallelRange, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) v[i] = static_cast<double>(i / inner % extent);
  });
  roundResult(d, op.output()->dtype());
  return d;
}

Dense createRandom(const ir::Op& op, const Dense& seed, const Dense& offset, const std::vector<int64_t>& shape) {
  const DType t = op.output()->dtype();
  const bool normal = op.kind() == ir::OpKind::RandNormal;
  const auto s = static_cast<int64_t>(seed.data.at(0)), o = static_cast<int64_t>(offset.data.at(0));
  Dense d{shape, Values(static_cast<size_t>(numelOf(shape)))};
  double* v = d.data.data();
  runtime::parallelForRanges(static_cast<int64_t>(d.data.size()), kParallelRange, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const ir::PhiloxWords w = ir::randomWords(s, o, i);
      v[i] = normal ? ir::normalOf(w, t) : ir::uniformOf(w, t);
    }
  });
  roundResult(d, t);
  return d;
}

// Uniform numbers are exact; normal ones carry the GPU's f32 (or f64) log, sqrt and cos of
// arguments rounded to that type: a few units in its last place of the radius, times the angle's.
Dense boundRandom(const ir::Op& op, const Dense& result) {
  Dense b = zeros(result.shape);
  if (op.kind() != ir::OpKind::RandNormal) return b;
  const double eps = op.output()->dtype() == DType::F64 ? 0x1p-50 : 0x1p-20;
  for (size_t i = 0; i < b.data.size(); ++i) b.data[i] = eps * (1 + 8 * std::abs(result.data[i]));
  return b;
}

}  // namespace loom::reference
