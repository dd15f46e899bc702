// GPU: an Executor's signatures. It holds a bounded number of plans (least recently used
// dropped with their intermediates, planned again when they come back), and runs the plan of
// the sizes it is given where two signatures share their inputs.
#include <catch2/catch.hpp>

#include "tests/gpu_test_util.h"

using namespace loom;

TEST_CASE("an Executor drops its least recently used signatures, and plans them again when they come back",
          "[gpu][executor]") {
  if (!test::haveGpu()) return;
  // Two kernels and an intermediate between them: y = x / (its column sums), then y's row sums.
  auto f = parseFusion(
      "fusion colrow {\n  in x: f32[N, D]\n  s: f32[1b, D] = sum(x, dims=[0], keepdim=true)\n"
      "  y: f32[N, D] = div(x, s)\n  z: f32[N] = sum(y, dims=[1])\n  out z = z\n}\n");
  Executor ex(*f);
  ex.limitSignatures(3);
  // 300 and 100 come back after being dropped; each call is checked against the reference.
  int step = 0;
  for (int64_t n : {100, 200, 300, 400, 100, 500, 300, 200, 100}) {
    const Bindings sizes{{"N", n}, {"D", 67}};
    INFO("call " << step << ": N=" << n);
    // Positive inputs: column sums far from zero.
    const auto host = test::randomHostInputs(*f, sizes, {}, static_cast<uint64_t>(n + step++), 0.5, 1.5);
    test::runAndCheck(ex, *f, sizes, host);
    REQUIRE(ex.planFor(std::vector<DeviceTensor>{DeviceTensor::fromHost(host[0])}, sizes).temps.size() == 1);
    CHECK(ex.signatures() <= 3);
  }
  CHECK(ex.signatures() == 3);
}

TEST_CASE("runInto runs the plan of the sizes it is given where two signatures share their inputs",
          "[gpu][executor]") {
  if (!test::haveGpu()) return;
  // x[N*D] as N rows of D: one input signature, two plans (its sizes given beside it).
  auto f = parseFusion(
      "fusion rows {\n  in x: f32[N*D]\n  r: f32[N, D] = reshape(x, shape=[N, D])\n"
      "  y: f32[N] = sum(r, dims=[1])\n  out y = y\n}\n");
  Executor ex(*f);
  int step = 0;
  for (const Bindings& sizes : {Bindings{{"N", 2}, {"D", 8}}, Bindings{{"N", 4}, {"D", 4}},
                                Bindings{{"N", 2}, {"D", 8}}, Bindings{{"N", 4}, {"D", 4}}}) {
    INFO("call " << step << ": N=" << sizes.at("N") << " D=" << sizes.at("D"));
    test::runAndCheck(ex, *f, sizes, test::randomHostInputs(*f, sizes, {}, static_cast<uint64_t>(step++)));
  }
  CHECK(ex.signatures() == 2);
}
