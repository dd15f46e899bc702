// cross_entropy and its backward (include/loom/composites.h, composites_backward.h): a row's
// logsumexp and its target's logit in one pass over the row, dlogits as one pointwise pass.
#include "frontend/composite_helpers.h"
#include "frontend/composites.h"
#include "frontend/composites_backward.h"
#include "ir/error.h"

namespace loom {

namespace {

// logits [N, C] and integer targets [N]; returns whether each row counts (target != ignore_index)
// and its target where it does (0 where not, which any row has).
std::pair<Tensor, Tensor> rowsAndTargets(const char* op, Tensor logits, Tensor target, int64_t ignore_index) {
  LOOM_USER_CHECK(logits.rank() == 2 && isFloat(logits.dtype()),
                  "{}: logits `{}` {} must be floats of rank 2, [N, C] (reshape other shapes to it)", op,
                  logits.name(), logits.value()->typeString());
  LOOM_USER_CHECK(target.rank() == 1 && isInt(target.dtype()),
                  "{}: target `{}` {} must be i32 or i64 class indices [N]", op, target.name(),
                  target.value()->typeString());
  LOOM_USER_CHECK(target.size(0) == logits.size(0), "{}: target `{}` has {} rows but logits `{}` have {}", op,
                  target.name(), target.size(0).str(), logits.name(), logits.size(0).str());
  Tensor counts = ne(target, static_cast<double>(ignore_index));
  return {counts, where(counts, target, 0.0)};
}

void checkSmoothing(const char* op, double label_smoothing) {
  LOOM_USER_CHECK(label_smoothing >= 0 && label_smoothing <= 1, "{}: label_smoothing {} must be in [0, 1]", op,
                  label_smoothing);
}

// 1 / C in the compute dtype: a constant where C is one, else 1 / sum(ones over C), a small kernel
// of its own before the pass over the logits.
Tensor inverseClasses(Tensor xc) {
  const Extent& c = xc.size(1);
  if (c.isConstant()) return constant(xc.fusion(), 1.0 / static_cast<double>(c.constant()), xc.dtype());
  return reciprocal(sum(full(xc.fusion(), {Dim(c)}, 1.0, xc.dtype()), {0}));
}

}  // namespace

CrossEntropyStats cross_entropy_with_stats(Tensor logits, Tensor target, int64_t ignore_index, double label_smoothing,
                                           LossReduction reduction) {
  checkSmoothing("cross_entropy", label_smoothing);
  auto [counts, safe] = rowsAndTargets("cross_entropy", logits, target, ignore_index);
  Tensor xc = cast(logits, computeDType(logits.dtype()));
  Tensor m = amax(xc, {1}, true);
  Tensor lse = log(sum(exp(xc - m), {1}, true)) + m;  // [N, 1b]
  // Squeezed before any sum over the rows, so that the rows' kernel writes it.
  Tensor lse_rows = squeeze(lse, {1});
  Tensor loss = lse - gather(xc, 1, unsqueeze(safe, 1));
  if (label_smoothing > 0)
    loss = (1 - label_smoothing) * loss + label_smoothing * (lse - mean(xc, {1}, true));
  loss = where(counts, squeeze(loss, {1}), 0.0);  // [N]
  if (reduction == LossReduction::Sum) loss = sum(loss, {0});
  if (reduction == LossReduction::Mean) loss = sum(loss, {0}) / sum(cast(counts, xc.dtype()), {0});
  return {cast(loss, logits.dtype()), lse_rows};
}

Tensor cross_entropy(Tensor logits, Tensor target, int64_t ignore_index, double label_smoothing,
                     LossReduction reduction) {
  return cross_entropy_with_stats(logits, target, ignore_index, label_smoothing, reduction).loss;
}

Tensor cross_entropy_backward(Tensor dloss, Tensor logits, Tensor target, Tensor lse, int64_t ignore_index,
                              double label_smoothing, LossReduction reduction) {
  checkSmoothing("cross_entropy_backward", label_smoothing);
  auto [counts, safe] = rowsAndTargets("cross_entropy_backward", logits, target, ignore_index);
  const bool rows = reduction == LossReduction::None;
  LOOM_USER_CHECK(rows ? dloss.rank() == 1 && dloss.size(0) == logits.size(0) : dloss.rank() == 0,
                  "cross_entropy_backward: dloss `{}` {} must be {} (the loss's shape)", dloss.name(),
                  dloss.value()->typeString(), rows ? "[N], a row's gradient each" : "a scalar");
  composite::checkStat("cross_entropy_backward", "lse", lse, {logits.size(0)}, "[N], the forward's logsumexp");
  Tensor xc = cast(logits, computeDType(logits.dtype()));
  Tensor g = composite::computeLike(dloss, logits);
  if (reduction == LossReduction::Mean) g = g / sum(cast(counts, xc.dtype()), {0});
  g = unsqueeze(where(counts, g, 0.0), 1);  // [N, 1b]
  Tensor p = exp(xc - unsqueeze(composite::computeLike(lse, logits), 1));
  Tensor classes = iota(xc.fusion(), {Dim(xc.size(0)), Dim(xc.size(1))}, 1, DType::I64);
  Tensor hit = eq(classes, unsqueeze(cast(safe, DType::I64), 1));
  Tensor d = p - cast(hit, xc.dtype()) * (1 - label_smoothing);
  if (label_smoothing > 0) d = d - label_smoothing * inverseClasses(xc);
  return cast(g * d, logits.dtype());
}

}  // namespace loom
