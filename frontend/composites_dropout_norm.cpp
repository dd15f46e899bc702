// dropout_add_layer_norm and dropout_add_rms_norm with their backward (include/loom/composites.h,
// composites_backward.h): the residual stream's sum and its norm in one pass; the backward
// recomputes the dropout mask from the seed and offset instead of reading one.
#include "frontend/composite_helpers.h"
#include "frontend/composites.h"
#include "frontend/composites_backward.h"
#include "ir/error.h"

namespace loom {

namespace {

// x + dropout(residual) in the compute dtype, rounded to x's dtype (what the next block reads
// and what the norm and its backward see).
Tensor residualSum(const char* op, Tensor x, Tensor residual, Tensor seed, Tensor offset, double p) {
  LOOM_USER_CHECK(x.shape() == residual.shape(), "{}: residual `{}` {} must have x `{}`'s shape {}", op,
                  residual.name(), residual.value()->typeString(), x.name(), x.value()->typeString());
  LOOM_USER_CHECK(isFloat(x.dtype()) && isFloat(residual.dtype()), "{}: x and residual must be floats", op);
  const DType cd = computeDType(x.dtype());
  return cast(cast(x, cd) + dropout(cast(residual, cd), p, seed, offset), x.dtype());
}

// The gradient reaching the sum (the norm's dx and dsum where given) as dx and, through the same
// mask, dresidual.
DropoutAddNormGrads throughSum(Tensor dnorm, std::optional<Tensor> dsum, Tensor sum, Tensor seed, Tensor offset,
                               double p, Tensor dw, Tensor db) {
  const DType cd = computeDType(sum.dtype());
  Tensor total = cast(dnorm, cd);
  if (dsum) total = total + cast(*dsum, cd);
  return {cast(total, sum.dtype()), cast(dropout(total, p, seed, offset), sum.dtype()), dw, db};
}

}  // namespace

DropoutAddNormResult dropout_add_layer_norm(Tensor x, Tensor residual, Tensor seed, Tensor offset, double p,
                                            const std::vector<Dim>& normalized_shape, std::optional<Tensor> weight,
                                            std::optional<Tensor> bias, double eps) {
  Tensor s = residualSum("dropout_add_layer_norm", x, residual, seed, offset, p);
  NormStats n = layer_norm_with_stats(s, normalized_shape, weight, bias, eps);
  return {n.y, s, n.mean, n.rstd};
}

DropoutAddNormResult dropout_add_rms_norm(Tensor x, Tensor residual, Tensor seed, Tensor offset, double p,
                                          const std::vector<Dim>& normalized_shape, std::optional<Tensor> weight,
                                          double eps) {
  Tensor s = residualSum("dropout_add_rms_norm", x, residual, seed, offset, p);
  RmsNormStats n = rms_norm_with_stats(s, normalized_shape, weight, eps);
  return {n.y, s, Tensor{}, n.rstd};
}

DropoutAddNormGrads dropout_add_layer_norm_backward(Tensor dy, std::optional<Tensor> dsum, Tensor sum, Tensor mean,
                                                    Tensor rstd, Tensor seed, Tensor offset, double p,
                                                    const std::vector<Dim>& normalized_shape,
                                                    std::optional<Tensor> weight, std::optional<Tensor> bias) {
  if (dsum) composite::checkGrad("dropout_add_layer_norm_backward", *dsum, sum);
  NormGrads g = layer_norm_backward(dy, sum, mean, rstd, normalized_shape, weight, bias);
  return throughSum(g.dx, dsum, sum, seed, offset, p, g.dw, g.db);
}

DropoutAddNormGrads dropout_add_rms_norm_backward(Tensor dy, std::optional<Tensor> dsum, Tensor sum, Tensor rstd,
                                                  Tensor seed, Tensor offset, double p,
                                                  const std::vector<Dim>& normalized_shape,
                                                  std::optional<Tensor> weight) {
  if (dsum) composite::checkGrad("dropout_add_rms_norm_backward", *dsum, sum);
  NormGrads g = rms_norm_backward(dy, sum, rstd, normalized_shape, weight);
  return throughSum(g.dx, dsum, sum, seed, offset, p, g.dw, Tensor{});
}

}  // namespace loom
