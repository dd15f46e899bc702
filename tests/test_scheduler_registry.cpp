// CPU-only: the scheduler registry (compiler/schedule/schedulers.def) is what compile and the
// segmenter ask, in order, and every scheduler's reason comes back when none takes a fusion.
#include <catch2/catch.hpp>

#include "tests/compile_test_util.h"

#include "compiler/schedule/scheduler.h"
#include "frontend/internal_api.h"

using namespace loom;
using loom::test::descsFor;

TEST_CASE("registry: the schedulers in order, each taking what it can", "[schedule]") {
  const auto& all = schedule::schedulers();
  REQUIRE(all.size() == 3);
  CHECK(all[0]->name() == "pointwise");
  CHECK(all[1]->name() == "reduction");
  CHECK(all[2]->name() == "normalization");
  for (const char* name : {"add", "layer_norm"}) {
    const Example* e = findExample(name);
    REQUIRE(e != nullptr);
    auto f = e->buildDefault();
    std::vector<std::string> why;
    auto p = schedule::planSegment(*f, e->default_sizes, descsFor(*f, e->default_sizes), CompileOptions{DeviceInfo{90, 132}},
                                   "k", &why);
    REQUIRE(p.has_value());
    CHECK(p->scheduler == (std::string(name) == "add" ? "pointwise" : "normalization"));
    CHECK(!p->lower().body.empty());
    CHECK(p->launch.block > 0);
  }
}

TEST_CASE("registry: a fusion no scheduler takes gets every scheduler's reason", "[schedule]") {
  FusionBuilder fb("three_patterns");
  auto x = fb.input("x", DType::F32, {"N", "D", "E"});
  fb.output("a", sum(x, {0}));
  fb.output("b", sum(x, {1}));
  fb.output("c", sum(x, {2}));
  auto f = fb.finish();
  Bindings sizes{{"N", 64}, {"D", 32}, {"E", 8}};
  std::vector<std::string> why;
  auto p = schedule::planSegment(*f, sizes, descsFor(*f, sizes), CompileOptions{DeviceInfo{90, 132}}, "k", &why);
  CHECK(!p.has_value());
  REQUIRE(why.size() == 3);
  CHECK(why[0].rfind("pointwise: ", 0) == 0);
  CHECK(why[1].rfind("reduction: ", 0) == 0);
  CHECK(why[2].rfind("normalization: ", 0) == 0);
}
