// [gpu]: multi-kernel fusions end to end against the CPU reference.
#include <catch2/catch.hpp>

#include "tests/gpu_test_util.h"

using namespace loom;

TEST_CASE("multi-segment fusions run end to end", "[gpu][segment]") {
  if (!test::haveGpu()) return;
  {
    FusionBuilder fb("ln_colsum");
    auto x = fb.input("x", DType::F16, {"N", "D"});
    auto y = layer_norm(x, {"D"});
    fb.output("y", y);
    fb.output("colsum", sum(toCompute(y), {0}));
    auto f = fb.finish();
    for (auto s : {Bindings{{"N", 64}, {"D", 256}}, Bindings{{"N", 7}, {"D", 1531}}, Bindings{{"N", 1}, {"D", 3}},
                   Bindings{{"N", 65544}, {"D", 3}}, Bindings{{"N", 3}, {"D", 65544}}})
      test::checkOnGpu(*f, s);
  }
  {
    FusionBuilder fb("row_plus_col");
    auto x = fb.input("x", DType::F32, {"N", "D"});
    fb.output("y", sum(x, {1}, true) + sum(x, {0}, true));
    auto f = fb.finish();
    for (auto s : {Bindings{{"N", 33}, {"D", 70}}, Bindings{{"N", 1}, {"D", 5}}}) test::checkOnGpu(*f, s);
  }
}
