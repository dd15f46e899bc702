#pragma once
// Shared by the reduction scheduler's CPU and GPU tests: fusions whose outputs include pointwise
// functions of the inputs over every element beside their reductions (element stores), and
// var_mean's statistics.
#include <memory>
#include <string>

#include "frontend/internal_api.h"

namespace loom::test {

// A bias gradient beside the activation gradient it sums (dgelu-style: dy * sigmoid(x) in f32,
// stored in the input dtype), its column sums over M and their maxima.
inline std::unique_ptr<ir::Fusion> biasGrad(DType t) {
  FusionBuilder fb("bias_grad");
  auto x = fb.input("x", t, {"M", "D"});
  auto dy = fb.input("dy", t, {"M", "D"});
  auto g = toCompute(dy) * sigmoid(toCompute(x));
  fb.output("dx", cast(g, t));
  fb.output("db", cast(sum(g, {0}), t));
  fb.output("gmax", amax(g, {0}));
  return fb.finish();
}

// var_mean over a dim: down the columns of [M, D] (dim 0, the outer layout: BatchNorm1d's
// statistics) or along the rows (dim 1, the inner layout), f32 statistics of any float input.
inline std::unique_ptr<ir::Fusion> varMean(DType t, int dim, double correction) {
  FusionBuilder fb("var_mean_dim" + std::to_string(dim));
  auto x = fb.input("x", t, {"M", "D"});
  auto vm = var_mean(toCompute(x), {dim}, correction);
  fb.output("var", vm.var);
  fb.output("mean", vm.mean);
  return fb.finish();
}

}  // namespace loom::test
