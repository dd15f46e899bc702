#pragma once
// Normalization fusions the tests share beyond the built-ins.
#include <memory>

#include "include/loom/loom.h"

namespace loom::test {

// A residual add before a layer norm: two loads held on chip per row.
inline std::unique_ptr<ir::Fusion> addLayerNorm(DType t) {
  FusionBuilder fb("add_layer_norm");
  auto x = fb.input("x", t, {"N", "D"});
  auto r = fb.input("r", t, {"N", "D"});
  fb.output("y", layer_norm(add(x, r), {"D"}, std::nullopt, std::nullopt, 1e-5));
  return fb.finish();
}

}  // namespace loom::test
