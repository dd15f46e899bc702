#pragma once
// Normalization fusions the tests share beyond the built-ins.
#include <memory>

#include "frontend/internal_api.h"

namespace loom::test {

// A residual add before a layer norm: two loads held on chip per row.
inline std::unique_ptr<ir::Fusion> addLayerNorm(DType t) {
  FusionBuilder fb("add_layer_norm");
  auto x = fb.input("x", t, {"N", "D"});
  auto r = fb.input("r", t, {"N", "D"});
  fb.output("y", layer_norm(add(x, r), {"D"}, std::nullopt, std::nullopt, 1e-5));
  return fb.finish();
}

// LayerNorm2d of an f16 image plus an f32 residual, and the per-pixel channel mean as a second
// output: in NCHW, a load and a store over vectors of rows beside the held image, and a
// row-only store.
inline std::unique_ptr<ir::Fusion> layerNorm2dResidual() {
  FusionBuilder fb("layer_norm_2d_residual");
  auto x = fb.input("x", DType::F16, {"N", "C", "H", "W"});
  auto r = fb.input("r", DType::F32, {"N", "C", "H", "W"});
  fb.output("y", add(cast(layer_norm_2d(x), DType::F32), r));
  fb.output("m", mean(cast(x, DType::F32), {1}, true));
  return fb.finish();
}

// LayerNorm2d of an f16 image plus an f32 one, both held on chip per pixel: over 7 x 7 pixels
// (no vector of rows), the f16 pieces loaded and stored, the f32 ones copied with cp.async.
inline std::unique_ptr<ir::Fusion> layerNorm2dOfSum() {
  FusionBuilder fb("layer_norm_2d_of_sum");
  auto x = fb.input("x", DType::F16, {"N", "C", "H", "W"});
  auto r = fb.input("r", DType::F32, {"N", "C", "H", "W"});
  fb.output("y", cast(layer_norm_2d(add(cast(x, DType::F32), r)), DType::F16));
  return fb.finish();
}

}  // namespace loom::test
