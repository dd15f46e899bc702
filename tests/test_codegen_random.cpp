// CPU-only: iota and random numbers lower in every scheduler (pointwise, normalization in its
// tiers, reduction in both layouts) to PTX that ptxas accepts, each fusion one kernel.
#include <catch2/catch.hpp>

#include "tests/compile_test_util.h"

#include "compiler/codegen/ptxas_check.h"
#include "compiler/compile.h"
#include "frontend/internal_api.h"

using namespace loom;
using loom::test::descsFor;

namespace {

// y: dropout(x) normalized over the last dim plus each element's column index; d: the dropped
// values themselves (so a row kernel stores a value made from indices too).
std::unique_ptr<ir::Fusion> droppedStats(DType t) {
  FusionBuilder fb("dropped_stats");
  auto x = fb.input("x", t, {"N", "D"});
  auto s = fb.input("seed", DType::I64, {});
  auto o = fb.input("offset", DType::I64, {});
  auto d = dropout(cast(x, DType::F32), 0.25, s, o);
  auto vm = var_mean(d, {1}, 0.0, true);
  fb.output("y", cast((d - vm.mean) * rsqrt(vm.var + 1e-5) + cast(iota(fb, {"N", "D"}, 1), DType::F32), t));
  fb.output("d", cast(d, t));
  return fb.finish();
}

std::unique_ptr<ir::Fusion> stats(int dim) {
  FusionBuilder fb("dropped_columns");
  auto x = fb.input("x", DType::F16, {"M", "D"});
  auto s = fb.input("seed", DType::I64, {});
  auto o = fb.input("offset", DType::I64, {});
  auto vm = var_mean(dropout(cast(x, DType::F32), 0.5, s, o) + randNormal(s, o, {"M", "D"}, DType::F32), {dim}, 0.0);
  fb.output("v", vm.var);
  fb.output("m", vm.mean);
  return fb.finish();
}

}  // namespace

TEST_CASE("iota and random numbers compile in every scheduler to PTX ptxas accepts", "[ptx][random]") {
  struct Case {
    std::unique_ptr<ir::Fusion> f;
    Bindings sizes;
    std::map<std::string, std::vector<int>> layouts;
    std::string scheduler;
  };
  std::vector<Case> cases;
  for (DType t : {DType::F16, DType::BF16, DType::F32, DType::F64}) {
    cases.push_back({droppedStats(t), {{"N", 1000}, {"D", 1024}}, {}, "normalization"});
    cases.push_back({droppedStats(t), {{"N", 64}, {"D", 65537}}, {}, "normalization"});
  }
  cases.push_back({droppedStats(DType::F16), {{"N", 8}, {"D", 1 << 20}}, {}, "normalization"});
  cases.push_back({stats(0), {{"M", 100003}, {"D", 64}}, {}, "reduction"});     // outer layout
  cases.push_back({stats(1), {{"M", 4}, {"D", 1 << 22}}, {}, "reduction"});      // inner layout
  cases.push_back({stats(0), {{"M", 64}, {"D", 300000}}, {{"x", {1, 0}}}, "normalization"});
  for (const auto& c : cases) {
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
