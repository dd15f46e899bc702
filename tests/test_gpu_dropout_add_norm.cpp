// [gpu]: dropout_add_layer_norm and dropout_add_rms_norm forward (the mask's numbers bit for bit,
// so the sum to its rounding) and their backward fed the forward's sum and statistics, against
// the reference, in the registers tier and at rows no vector divides.
#include <catch2/catch.hpp>

#include "tests/dropout_norm_fusions.h"
#include "tests/gpu_test_util.h"

using namespace loom;

TEST_CASE("dropout-add-norm forward and backward on the GPU match the reference", "[gpu][dropout_norm]") {
  if (!test::haveGpu()) return;
  for (bool rms : {false, true}) {
    for (const Bindings& sizes : {Bindings{{"N", 3}, {"D", 7}}, Bindings{{"N", 1024}, {"D", 4096}},
                                  Bindings{{"N", 257}, {"D", 1001}}}) {
      INFO((rms ? "rms" : "layer") << " N=" << sizes.at("N") << " D=" << sizes.at("D"));
      auto fwd = test::forward(rms, DType::BF16, true);
      std::vector<HostTensor> in = test::randomHostInputs(*fwd, sizes, {}, 3);
      in[2] = HostTensor::fromValues(DType::I64, {}, {20261204.0});
      in[3] = HostTensor::fromValues(DType::I64, {}, {4096.0});
      test::checkOnGpuWith(*fwd, sizes, in);
      const auto out = evaluateReference(*fwd, in, sizes);
      auto bwd = test::backward(rms, DType::BF16);
      std::vector<HostTensor> bin = test::randomHostInputs(*bwd, sizes, {}, 4);
      bin[2] = out[1];  // the sum
      bin[3] = HostTensor::fromValues(DType::F32, bin[3].shape(), out[2].toVector());
      if (!rms) bin[4] = HostTensor::fromValues(DType::F32, bin[4].shape(), out[3].toVector());
      const size_t at = rms ? 4 : 5;
      bin[at] = in[2];
      bin[at + 1] = in[3];
      test::checkOnGpuWith(*bwd, sizes, bin);
    }
  }
}
