// CPU-only: iota and random numbers lower in every scheduler (pointwise, normalization in its
// tiers, reduction in both layouts) to PTX that ptxas accepts, each fusion one kernel.
#include <catch2/catch.hpp>

#include "tests/compile_test_util.h"

#include "compiler/codegen/ptxas_check.h"
#include "compiler/compile.h"
#include "frontend/internal_api.h"
#include "tests/random_fusions.h"

using namespace loom;
using loom::test::descsFor;

TEST_CASE("iota and random numbers compile in every scheduler to PTX ptxas accepts", "[ptx][random]") {
  for (const auto& c : test::randomRowCases()) {
    for (int sm : {80, 90}) {
      INFO(c.f->name() << " " << c.sizes.begin()->second << " x " << c.sizes.rbegin()->second << " sm_" << sm);
      const CompiledPlan plan = compilePlan(*c.f, c.sizes, descsFor(*c.f, c.sizes, c.layouts), CompileOptions{{sm, 132}});
      INFO(plan.segments);
      REQUIRE(plan.kernels.size() == 1);
      CHECK(plan.segments.find(c.scheduler + " scheduler") != std::string::npos);
      const std::string err = loom::test::ptxasErrors(plan.kernels[0].kernel.ptx, sm);
      INFO(err);
      CHECK(err.empty());
    }
  }
}
