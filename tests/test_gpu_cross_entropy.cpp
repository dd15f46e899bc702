// [gpu]: cross_entropy (each reduction, with and without label smoothing, ignored rows among
// the targets) and its backward fed the forward's lse, against the reference.
#include <catch2/catch.hpp>

#include "tests/cross_entropy_fusions.h"
#include "tests/gpu_test_util.h"

using namespace loom;

TEST_CASE("cross_entropy and its backward on the GPU match the reference", "[gpu][cross_entropy]") {
  if (!test::haveGpu()) return;
  struct Rows {
    DType t;
    int64_t n, c;
  };
  for (const Rows& r : {Rows{DType::F32, 3, 7}, Rows{DType::F16, 4096, 1000}, Rows{DType::BF16, 256, 50257},
                        Rows{DType::F32, 65537, 3}}) {
    const Bindings sizes = {{"N", r.n}, {"C", r.c}};
    for (LossReduction red : {LossReduction::None, LossReduction::Mean, LossReduction::Sum}) {
      for (double eps : {0.0, 0.1}) {
        INFO(dtypeName(r.t) << " " << r.n << "x" << r.c << " reduction " << static_cast<int>(red) << " smoothing " << eps);
        auto fwd = test::crossEntropyForward(r.t, red, eps);
        const HostTensor x = HostTensor::random(r.t, {r.n, r.c}, 9, -4.0, 4.0);
        const HostTensor target = test::targetsFor(r.n, r.c);
        test::checkOnGpuWith(*fwd, sizes, {x, target});
        const HostTensor lse = evaluateReference(*fwd, {x, target}, sizes)[1];
        auto back = test::crossEntropyBackward(r.t, red, eps);
        const HostTensor dloss = red == LossReduction::None ? HostTensor::random(r.t, {r.n}, 10, -1.0, 1.0)
                                                            : HostTensor::fromValues(r.t, {}, {0.75});
        test::checkOnGpuWith(*back, sizes, {dloss, x, target, lse});
      }
    }
  }
}
