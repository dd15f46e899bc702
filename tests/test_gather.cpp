// CPU-only: gather and index_select are written as masked reductions (the segmenter's rewrite),
// a target logit riding its row's logsumexp in one kernel, with PTX that ptxas accepts.
#include <catch2/catch.hpp>

#include "tests/compile_test_util.h"

#include "compiler/codegen/ptxas_check.h"
#include "compiler/compile.h"
#include "compiler/segment/segmenter.h"
#include "frontend/internal_api.h"
#include "tests/gather_fusions.h"
#include "tests/planned_kernels.h"

using namespace loom;
using loom::test::descsFor;

TEST_CASE("gather and index_select compile to the planned kernels with PTX ptxas accepts", "[ptx][gather]") {
  for (const auto& c : test::gatherCases()) {
    INFO(test::caseName(*c.f, c.sizes));
    const CompiledPlan plan = test::plannedWithPtxas(*c.f, c.sizes);
    INFO(plan.segments);
    CHECK(plan.kernels.size() == c.kernels);
  }
}

TEST_CASE("a row's target logit joins its logsumexp in one normalization kernel", "[segment][gather]") {
  auto f = test::crossEntropyLoss(DType::BF16, DType::I64);
  const Bindings sizes = {{"N", 8192}, {"V", 128256}};
  const auto plan = segment::segmentFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}});
  REQUIRE(plan.rewritten);
  const std::string s = plan.str(*plan.rewritten);
  INFO(s);
  REQUIRE(plan.segments.size() == 1);
  CHECK(plan.segments[0].scheduler == "normalization");
  for (const ir::Op* op : plan.rewritten->ops()) CHECK(op->family() != ir::OpFamily::Gather);
  // The logits are read once: the target is one i64 a row.
  CHECK(plan.segments[0].bytesRead() == uint64_t{8192} * 128256 * 2 + 8192 * 8);
}
