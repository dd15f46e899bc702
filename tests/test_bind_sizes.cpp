// bindSizes (runtime/bind_sizes.h), which the reference and the runtime share: the inputs'
// count, dtypes, ranks and sizes checked, and symbols solved from `N`, `4*H`, `C/32`.
#include <catch2/catch.hpp>

#include <cstdint>
#include <vector>

#include "frontend/builder.h"
#include "ir/fusion.h"
#include "reference/reference.h"
#include "runtime/bind_sizes.h"
#include "runtime/host_tensor.h"

using namespace loom;
using ir::OpKind;

TEST_CASE("reference: bindSizes checks the inputs", "[reference]") {
  FusionBuilder fb("bind");
  auto x = fb.input("x", DType::F16, {"N", "D"});
  auto w = fb.input("w", DType::F16, {"D"});
  fb.output("y", x * w);
  auto f = fb.finish();
  auto xt = HostTensor::random(DType::F16, {4, 1024}, 1);
  auto wt = HostTensor::random(DType::F16, {1024}, 2);
  Bindings b = bindSizes(*f, {xt, wt});
  CHECK(b == Bindings{{"D", 1024}, {"N", 4}});
  CHECK(evalShape(f->outputs()[0].value, b) == std::vector<int64_t>{4, 1024});

  SECTION("count") {
    CHECK_THROWS_WITH(bindSizes(*f, {xt}), Catch::Contains("takes 2 inputs") &&
                                               Catch::Contains("`w` f16[D]") && Catch::Contains("but 1 were given"));
  }
  SECTION("dtype") {
    CHECK_THROWS_WITH(bindSizes(*f, {HostTensor::random(DType::F32, {4, 1024}, 1), wt}),
                      Catch::Contains("input `x`") && Catch::Contains("must be f16[N, D]") &&
                          Catch::Contains("f32[4, 1024]"));
  }
  SECTION("rank") {
    CHECK_THROWS_WITH(bindSizes(*f, {HostTensor::random(DType::F16, {4, 2, 512}, 1), wt}),
                      Catch::Contains("input `x`") && Catch::Contains("f16[4, 2, 512]") &&
                          Catch::Contains("rank 3, not 2"));
  }
  SECTION("size") {
    CHECK_THROWS_WITH(bindSizes(*f, {xt, HostTensor::random(DType::F16, {1000}, 2)}),
                      Catch::Contains("input `w` dim 0 is 1000 but the fusion needs D=1024 (from input `x` dim 1)"));
    CHECK_THROWS_WITH(evaluateReference(*f, {xt, wt}, {{"D", 1000}}),
                      Catch::Contains("input `x` dim 1 is 1024 but the fusion needs D=1000 (given)"));
  }
  SECTION("constant sizes") {
    FusionBuilder fb2("c");
    auto y = fb2.input("y", DType::F32, {"N", 1024});
    fb2.output("z", y + 1.0);
    auto f2 = fb2.finish();
    CHECK_THROWS_WITH(bindSizes(*f2, {HostTensor::empty(DType::F32, {4, 1000})}),
                      Catch::Contains("input `y` dim 1 is 1000 but the fusion needs 1024"));
  }
}

TEST_CASE("reference: bindSizes solves and checks symbols", "[reference]") {
  SECTION("k*S and C/32") {
    FusionBuilder fb("k");
    Extent h = Extent::symbol("H"), c = Extent::symbol("C");
    auto g = fb.input("g", DType::F32, {"B", Extent(4) * h});
    auto y = fb.input("y", DType::F32, {c / Extent(32), h});
    fb.output("o", sum(g, {1}));
    fb.output("p", y * 2.0);
    auto f = fb.finish();
    auto b = bindSizes(*f, {HostTensor::empty(DType::F32, {2, 40}), HostTensor::empty(DType::F32, {3, 10})});
    CHECK(b == Bindings{{"B", 2}, {"C", 96}, {"H", 10}});
    CHECK_THROWS_WITH(bindSizes(*f, {HostTensor::empty(DType::F32, {2, 42}), HostTensor::empty(DType::F32, {3, 10})}),
                      Catch::Contains("input `g` dim 1 is 42") && Catch::Contains("4*H"));
    CHECK_THROWS_WITH(bindSizes(*f, {HostTensor::empty(DType::F32, {2, 40}), HostTensor::empty(DType::F32, {3, 11})}),
                      Catch::Contains("input `y` dim 1 is 11 but the fusion needs H=10 (from input `g` dim 1)"));
  }
  SECTION("a compound extent is checked once its symbols are known") {
    FusionBuilder fb("gn");
    Extent c = Extent::symbol("C");
    auto x = fb.input("x", DType::F32, {"N", "C"});
    auto s = fb.input("s", DType::F32, {c / Extent(4), 4});
    fb.output("o", reshape(x, {"N", 4, c / Extent(4)}));
    fb.output("p", s * 1.0);
    auto f = fb.finish();
    CHECK(bindSizes(*f, {HostTensor::empty(DType::F32, {2, 12}), HostTensor::empty(DType::F32, {3, 4})}).at("C") == 12);
    CHECK_THROWS_WITH(bindSizes(*f, {HostTensor::empty(DType::F32, {2, 12}), HostTensor::empty(DType::F32, {5, 4})}),
                      Catch::Contains("input `s` dim 0 is 5 but the fusion needs C/4 = 3 with C=12 (from input `x` dim 1)"));
    CHECK_THROWS_WITH(bindSizes(*f, {HostTensor::empty(DType::F32, {2, 10}), HostTensor::empty(DType::F32, {3, 4})}),
                      Catch::Contains("not a whole number"));
  }
  SECTION("missing symbols") {
    FusionBuilder fb("m");
    Extent h = Extent::symbol("H"), w = Extent::symbol("W");
    auto x = fb.input("x", DType::F32, {"N", h * w});
    fb.output("y", x + 1.0);
    auto f = fb.finish();
    CHECK_THROWS_WITH(bindSizes(*f, {HostTensor::empty(DType::F32, {2, 12})}),
                      Catch::Contains("size `H` is not known") && Catch::Contains("H*W"));
    CHECK(bindSizes(*f, {HostTensor::empty(DType::F32, {2, 12})}, {{"H", 3}, {"W", 4}}).size() == 3);
    FusionBuilder fb2("full");
    auto y = fb2.input("y", DType::F32, {"N"});
    fb2.output("z", full(&fb2.fusion(), {"K"}, 1.0, DType::F32));
    fb2.output("w", y + 1.0);
    auto f2 = fb2.finish();
    CHECK_THROWS_WITH(evaluateReference(*f2, {HostTensor::empty(DType::F32, {2})}),
                      Catch::Contains("size `K` is not known") && Catch::Contains("give it"));
  }
  SECTION("broadcast input axes have size 1") {
    ir::Fusion f("b");
    const ir::Value* x = f.addInput("x", DType::F32, {ir::Axis::iter(Extent::symbol("N")), ir::Axis::bcast()});
    f.addOutput("y", f.addOp(OpKind::Neg, {x})->output());
    CHECK(evaluateReference(f, {HostTensor::fromValues(DType::F32, {2, 1}, {1, 2})})[0].toVector() ==
          std::vector<double>{-1, -2});
    CHECK_THROWS_WITH(bindSizes(f, {HostTensor::empty(DType::F32, {2, 3})}),
                      Catch::Contains("input `x` dim 1 is 3 but it is a broadcast dim"));
  }
}
