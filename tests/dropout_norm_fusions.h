#pragma once
// dropout_add_layer_norm and dropout_add_rms_norm and their backward as fusions (shared by the
// CPU tests and the [gpu] tests), with p = kP.
#include <memory>

#include "frontend/composites.h"
#include "frontend/composites_backward.h"
#include "frontend/internal_api.h"

namespace loom::test {

inline constexpr double kP = 0.25;

// The forward (y, sum, mean, rstd; rms: y, sum, rstd) beside the mask's uniform numbers.
inline std::unique_ptr<ir::Fusion> forward(bool rms, DType t, bool with_uniform) {
  FusionBuilder fb(rms ? "dropout_add_rms_norm" : "dropout_add_layer_norm");
  auto x = fb.input("x", t, {"N", "D"});
  auto r = fb.input("residual", t, {"N", "D"});
  auto seed = fb.scalarInput("seed", DType::I64);
  auto offset = fb.scalarInput("offset", DType::I64);
  auto w = fb.input("w", t, {"D"});
  auto out = rms ? dropout_add_rms_norm(x, r, seed, offset, kP, {"D"}, w)
                 : dropout_add_layer_norm(x, r, seed, offset, kP, {"D"}, w, fb.input("b", t, {"D"}));
  fb.output("y", out.y);
  fb.output("sum", out.sum);
  if (!rms) fb.output("mean", out.mean);
  fb.output("rstd", out.rstd);
  if (with_uniform) fb.output("u", randUniform(seed, offset, {"N", "D"}, DType::F32));
  return fb.finish();
}

inline std::unique_ptr<ir::Fusion> backward(bool rms, DType t) {
  FusionBuilder fb(rms ? "dropout_add_rms_norm_backward" : "dropout_add_layer_norm_backward");
  auto dy = fb.input("dy", t, {"N", "D"});
  auto ds = fb.input("dsum", t, {"N", "D"});
  auto s = fb.input("sum", t, {"N", "D"});
  auto mean = rms ? Tensor{} : fb.input("mean", DType::F32, {Dim("N"), Dim(1)});
  auto rstd = fb.input("rstd", DType::F32, {Dim("N"), Dim(1)});
  auto seed = fb.scalarInput("seed", DType::I64);
  auto offset = fb.scalarInput("offset", DType::I64);
  auto w = fb.input("w", t, {"D"});
  auto g = rms ? dropout_add_rms_norm_backward(dy, ds, s, rstd, seed, offset, kP, {"D"}, w)
               : dropout_add_layer_norm_backward(dy, ds, s, mean, rstd, seed, offset, kP, {"D"}, w,
                                                 fb.input("b", t, {"D"}));
  fb.output("dx", g.dx);
  fb.output("dresidual", g.dresidual);
  fb.output("dw", g.dw);
  if (!rms) fb.output("db", g.db);
  return fb.finish();
}


}  // namespace loom::test
