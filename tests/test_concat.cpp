// CPU-only: the concat op in the pointwise scheduler: a concat output is one store per run of
// its pieces, each at its place along the joined dim; pieces of unequal extents in runs of
// the extent that divides them; a concat read by another op is written by its own kernel; more
// than 64 runs are refused with the reason; ptxas accepts the kernels.
#include <catch2/catch.hpp>

#include "tests/compile_test_util.h"

#include "compiler/compile.h"
#include "compiler/schedule/scheduler.h"
#include "compiler/segment/segmenter.h"

using namespace loom;
using loom::test::descsFor;
using loom::test::has;

TEST_CASE("concat: gate gradients into one [B, 4H] matrix, one store per gate", "[schedule][concat]") {
  FusionBuilder fb("gates");
  auto a = fb.input("a", DType::F16, {"B", "H"});
  auto b = fb.input("b", DType::F16, {"B", "H"});
  fb.output("g", concat({a * b, a + b, a - b, a}, 1));
  fb.output("s", -b);
  auto f = fb.finish();
  const Bindings sizes{{"B", 256}, {"H", 1024}};
  StageText stages;
  auto k = compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}, &stages);
  const std::string& kernel = stages[DumpStage::Kernel];
  INFO(kernel);
  CHECK(has(kernel, "store.f16 g[i.[4096, 1]]"));
  CHECK(has(kernel, "store.f16 g[1024 + i.[4096, 1]]"));
  CHECK(has(kernel, "store.f16 g[3072 + i.[4096, 1]] = v0  (vector)"));
  CHECK(has(kernel, "262144 elements as 32768 chunks of 8"));
  LOOM_CHECK_PTXAS(k.ptx, 90);
}

TEST_CASE("concat: unequal pieces in runs, along any dim; read by another op: its own kernel", "[schedule][concat]") {
  FusionBuilder fb("runs");
  auto a = fb.input("a", DType::F32, {"B", "H"});
  auto b = fb.input("b", DType::F32, {"B", Extent(2) * Extent::symbol("H")});
  fb.output("g", concat({a, b}, 1));
  fb.output("rows", concat({a, a, a}, 0));
  auto f = fb.finish();
  for (auto sizes : {Bindings{{"B", 4}, {"H", 8}}, Bindings{{"B", 33}, {"H", 7}}}) {
    StageText stages;
    auto k = compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}, &stages);
    const std::string& kernel = stages[DumpStage::Kernel];
    INFO(kernel);
    const int64_t h = sizes.at("H");
    CHECK(has(kernel, fmt::format("load.f32 b[{} + i.", h)));  // b's second run
    CHECK(has(kernel, fmt::format("store.f32 g[{} + i.", 2 * h)));
    CHECK(has(kernel, fmt::format("store.f32 rows[{} + i.", 2 * sizes.at("B") * h)));
    LOOM_CHECK_PTXAS(k.ptx, 90);
    LOOM_CHECK_PTXAS(compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{80, 108}}).ptx, 80);
  }
  FusionBuilder fr("read");
  auto x = fr.input("x", DType::F32, {"B", "H"});
  fr.output("n", -concat({x, x * 2.0}, 1));
  auto g = fr.finish();
  const Bindings sizes{{"B", 4}, {"H", 8}};
  auto p = segment::segmentFusion(*g, sizes, descsFor(*g, sizes), CompileOptions{{90, 132}});
  REQUIRE(p.segments.size() == 2);
  CHECK(has(p.str(*g), "is read by another op of the kernel: a concat is written as an output"));
}

TEST_CASE("concat: more than 64 runs are refused, naming them", "[schedule][concat]") {
  FusionBuilder fb("coprime");
  auto a = fb.input("a", DType::F32, {"B", "H"});
  auto b = fb.input("b", DType::F32, {"B", Extent(2) * Extent::symbol("H")});
  fb.output("g", concat({a, b}, 1));
  auto f = fb.finish();
  const Bindings sizes{{"B", 4}, {"H", 1001}};
  // 1001 and 2002 share 1001: two runs; fine. Pieces of coprime sizes come from a symbol each:
  CHECK_NOTHROW(compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}));
  FusionBuilder fc("many");
  auto x = fc.input("x", DType::F32, {"B", 1});
  auto y = fc.input("y", DType::F32, {"B", 100});
  fc.output("g", concat({x, y}, 1));
  auto g = fc.finish();
  const Bindings s2{{"B", 4}};
  CHECK_THROWS_WITH(compileFusion(*g, s2, descsFor(*g, s2), CompileOptions{{90, 132}}),
                    Catch::Contains("joins pieces in 100 runs or more of 1 along dim 1: loom writes at most 64"));
}
