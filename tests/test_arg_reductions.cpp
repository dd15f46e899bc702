// CPU-only: argmax and argmin are written as the reductions the schedulers hold (the segmenter's
// rewrite), one kernel beside their neighbours wherever the normalization scheduler keeps the
// row on chip, with PTX that ptxas accepts.
#include <catch2/catch.hpp>

#include <algorithm>

#include "tests/compile_test_util.h"

#include "compiler/codegen/ptxas_check.h"
#include "compiler/compile.h"
#include "compiler/segment/segmenter.h"
#include "frontend/internal_api.h"
#include "frontend/parser.h"
#include "tests/arg_fusions.h"
#include "tests/planned_kernels.h"

using namespace loom;
using loom::test::descsFor;

TEST_CASE("argmax and argmin compile to the planned kernels with PTX ptxas accepts", "[ptx][arg]") {
  for (const auto& c : test::argCases()) {
    INFO(test::caseName(*c.f, c.sizes));
    const CompiledPlan plan = test::plannedWithPtxas(*c.f, c.sizes, c.layouts);
    INFO(plan.segments);
    CHECK(plan.kernels.size() == c.kernels);
  }
}

namespace {
bool hasKind(const ir::Fusion& g, ir::OpKind k) {
  const auto ops = g.ops();
  return std::any_of(ops.begin(), ops.end(), [&](const ir::Op* op) { return op->kind() == k; });
}
int64_t reductions(const ir::Fusion& g) {
  const auto ops = g.ops();
  return std::count_if(ops.begin(), ops.end(), [](const ir::Op* op) { return op->family() == ir::OpFamily::Reduce; });
}
}  // namespace

TEST_CASE("the arg-reduction rewrite keeps the fusion's inputs and outputs and names its parts", "[segment][arg]") {
  auto f = test::predictedClass(DType::F16);
  const Bindings sizes = {{"N", 64}, {"D", 1000}};
  const auto plan = segment::segmentFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}});
  REQUIRE(plan.rewritten);
  const ir::Fusion& g = *plan.rewritten;
  REQUIRE(g.inputs().size() == 1);
  REQUIRE(g.outputs().size() == 3);
  CHECK(g.outputs()[1].name == "class");
  CHECK(g.outputs()[1].value->dtype() == DType::I64);
  for (const ir::Op* op : g.ops()) CHECK(op->family() != ir::OpFamily::ArgReduce);
  const std::string s = plan.str(g);
  INFO(s);
  CHECK(plan.segments.size() == 1);
  // f16 rows: one reduction of packed keys, the float's bits read as an integer.
  const std::string name = g.outputs()[1].value->name();
  CHECK(s.find("amax (" + name + "_best)") != std::string::npos);
  CHECK(s.find("bitcast (" + name + "_bits)") != std::string::npos);
  CHECK(s.find("_extreme") == std::string::npos);
}

TEST_CASE("arg-reductions take one reduction of keys where the index fits their low word", "[segment][arg]") {
  const Bindings sizes = {{"N", 64}, {"D", 1000}};
  auto plan = [&](DType t, const Bindings& at) {
    auto f = test::argExtremes(t, 2, 1);
    auto p = segment::segmentFusion(*f, at, descsFor(*f, at), CompileOptions{{90, 132}});
    REQUIRE(p.rewritten);
    return p.rewritten;
  };
  // i32: the value is its own order; no bits, no NaN.
  auto i32 = plan(DType::I32, sizes);
  CHECK(!hasKind(*i32, ir::OpKind::Bitcast));
  CHECK(!hasKind(*i32, ir::OpKind::IsNan));
  CHECK(reductions(*i32) == 2);
  // f64 and i64 hold no order in 32 bits: the extreme, then the first index that holds it.
  for (DType t : {DType::F64, DType::I64}) {
    auto g = plan(t, sizes);
    INFO(dtypeName(t));
    CHECK(!hasKind(*g, ir::OpKind::Bitcast));
    CHECK(hasKind(*g, ir::OpKind::IsNan) == (t == DType::F64));
    CHECK(reductions(*g) == 4);
  }
  // A row past 2^32 elements: its indices do not fit the low word.
  CHECK(hasKind(*plan(DType::F32, {{"N", 1}, {"D", 4294967296}}), ir::OpKind::Bitcast));
  CHECK(!hasKind(*plan(DType::F32, {{"N", 1}, {"D", 4294967297}}), ir::OpKind::Bitcast));
}

TEST_CASE("examples/fusions/predicted_class.loom is one kernel over a Llama-sized vocabulary", "[segment][arg][text]") {
  auto f = parseFusionFile(std::string(LOOM_SOURCE_DIR) + "/examples/fusions/predicted_class.loom");
  const Bindings sizes = {{"N", 8192}, {"V", 128256}};
  const auto plan = segment::segmentFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}});
  INFO(plan.str(plan.rewritten ? *plan.rewritten : *f));
  CHECK(plan.segments.size() == 1);
  CHECK(plan.segments[0].scheduler == "normalization");
}

TEST_CASE("a smallest index starts from i64's largest value, not the wrapped double", "[ptx][arg]") {
  // The identity of an i64 min is 2^63 - 1, which a double rounds past; a wrapped constant would
  // be i64's smallest, and the whole reduction would fold to it.
  auto f = test::argExtremes(DType::F64, 2, 1);  // two reductions: f64 keys would not fit
  const Bindings sizes = {{"N", 64}, {"D", 1000}};
  const CompiledPlan plan = compilePlan(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}});
  REQUIRE(plan.kernels.size() == 1);
  const std::string& ptx = plan.kernels[0].kernel.ptx;
  CHECK(ptx.find("9223372036854775807") != std::string::npos);
}
