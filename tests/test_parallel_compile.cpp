// CPU-only: the kernels of a plan that no cache holds compile at once, one thread each; the
// plan is the same as compiling them one by one (as when stage texts are collected).
#include <catch2/catch.hpp>

#include "compiler/compile.h"
#include "frontend/internal_api.h"
#include "tests/compile_test_util.h"

using namespace loom;

TEST_CASE("a plan's kernels compiled at once equal those compiled one by one", "[segment][compile]") {
  for (const char* name : {"group_norm_backward", "instance_norm_backward", "layer_norm_2d_backward"}) {
    const auto* e = findExample(name);
    auto f = e->buildDefault();
    const auto descs = test::descsFor(*f, e->default_sizes);
    StageText stages;  // collecting stage texts compiles one by one, in the segments' order
    const CompiledPlan one = compilePlan(*f, e->default_sizes, descs, CompileOptions{{90, 132}}, &stages);
    REQUIRE(one.kernels.size() >= 2);
    for (int rep = 0; rep < 3; ++rep) {
      const CompiledPlan all = compilePlan(*f, e->default_sizes, descs, CompileOptions{{90, 132}});
      REQUIRE(all.kernels.size() == one.kernels.size());
      for (size_t k = 0; k < all.kernels.size(); ++k) {
        INFO(name << " kernel " << k);
        CHECK(all.kernels[k].key == one.kernels[k].key);
        CHECK(all.kernels[k].kernel.name == one.kernels[k].kernel.name);
        CHECK(all.kernels[k].kernel.ptx == one.kernels[k].kernel.ptx);
        CHECK(all.kernels[k].args == one.kernels[k].args);
      }
    }
  }
}
