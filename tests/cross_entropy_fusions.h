#pragma once
// cross_entropy and its backward as fusions (shared by the CPU tests and the [gpu] tests), and
// targets with ignored rows.
#include <memory>
#include <vector>

#include "frontend/composites.h"
#include "frontend/composites_backward.h"
#include "frontend/internal_api.h"
#include "runtime/host_tensor.h"

namespace loom::test {

// The loss (and each row's logsumexp) of logits [N, C].
inline std::unique_ptr<ir::Fusion> crossEntropyForward(DType t, LossReduction r, double smoothing) {
  FusionBuilder fb("cross_entropy");
  auto x = fb.input("logits", t, {"N", "C"});
  auto target = fb.input("target", DType::I64, {"N"});
  auto s = cross_entropy_with_stats(x, target, -100, smoothing, r);
  fb.output("loss", s.loss);
  fb.output("lse", s.lse);
  return fb.finish();
}

// dlogits from dloss (the loss's shape), the logits, the targets and the forward's lse.
// `classes`: the symbol C, or a constant (as a model's vocabulary is).
inline std::unique_ptr<ir::Fusion> crossEntropyBackward(DType t, LossReduction r, double smoothing,
                                                        Dim classes = Dim("C")) {
  FusionBuilder fb("cross_entropy_backward");
  auto dloss = r == LossReduction::None ? fb.input("dloss", t, {"N"}) : fb.input("dloss", t, {});
  auto x = fb.input("logits", t, {Dim("N"), classes});
  auto target = fb.input("target", DType::I64, {"N"});
  auto lse = fb.input("lse", DType::F32, {"N"});
  fb.output("dlogits", cross_entropy_backward(dloss, x, target, lse, -100, smoothing, r));
  return fb.finish();
}

// Targets in [0, classes), the first and last classes among them, every seventh row ignored.
inline HostTensor targetsFor(int64_t rows, int64_t classes) {
  std::vector<double> v;
  for (int64_t i = 0; i < rows; ++i) {
    const uint64_t h = (static_cast<uint64_t>(i) + 1) * 0x9e3779b97f4a7c15ULL;
    v.push_back(i % 7 == 3 ? -100.0 : i == 0 ? static_cast<double>(classes - 1)
                                             : static_cast<double>((h >> 17) % static_cast<uint64_t>(classes)));
  }
  return HostTensor::fromValues(DType::I64, {rows}, v);
}

}  // namespace loom::test
