// CPU-only: normalization built-ins schedule as ONE kernel whose PTX passes ptxas, and the
// domain analysis finds group norm's atoms through its reshapes.
#include <catch2/catch.hpp>

#include "tests/compile_test_util.h"

#include "compiler/analysis/domains.h"
#include "compiler/codegen/ptxas_check.h"
#include "compiler/compile.h"
#include "include/loom/loom.h"

using namespace loom;
using loom::test::descsFor;

TEST_CASE("every built-in compiles to one kernel that ptxas accepts", "[ptx][norm]") {
  for (const auto& e : builtinExamples()) {
    auto f = e.buildDefault();
    for (int sm : {80, 90}) {
      for (bool nhwc : {false, true}) {
        if (nhwc && f->input("x")->rank() != 4) continue;
        std::map<std::string, std::vector<int>> lay;
        if (nhwc) lay["x"] = {0, 2, 3, 1};
        INFO(e.name << " sm_" << sm << (nhwc ? " nhwc" : ""));
        auto k = compileFusion(*f, e.default_sizes, descsFor(*f, e.default_sizes, lay), CompileOptions{sm, 132});
        std::string err = codegen::ptxasCheck(k.ptx, sm);
        INFO(err);
        CHECK(err.empty());
      }
    }
  }
}

TEST_CASE("group norm's atoms are N, 32, C/32, H, W and it reduces {C/32, H, W}", "[analysis][norm]") {
  auto f = findExample("group_norm")->buildDefault();
  analysis::DomainAnalysis da(*f);
  CHECK(da.conflicts().empty());
  std::vector<std::string> names;
  for (const auto& a : da.atoms()) names.push_back(a.name);
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"32", "C/32", "H", "N", "W"});
  for (const ir::Op* op : f->ops())
    if (ir::isReduction(op->kind())) CHECK(da.atomSetStr(da.reducedAtoms(op)) == "{C/32, H, W}");
  // x's channel axis is made of two atoms, outer 32 then C/32.
  const auto& c = da.axisAtoms(f->input("x"), 1);
  REQUIRE(c.size() == 2);
  CHECK(da.atoms()[static_cast<size_t>(c[0])].name == "32");
  CHECK(da.atoms()[static_cast<size_t>(c[1])].name == "C/32");
}

TEST_CASE("LayerNorm2d reduces C; incompatible splits are a conflict", "[analysis][norm]") {
  auto f = findExample("layer_norm_2d")->buildDefault();
  analysis::DomainAnalysis da(*f);
  for (const ir::Op* op : f->ops())
    if (ir::isReduction(op->kind())) CHECK(da.atomSetStr(da.reducedAtoms(op)) == "{C}");

  FusionBuilder fb("conflict");
  auto x = fb.input("x", DType::F32, {"N", 12});
  auto a = reshape(x, {"N", 2, 6});
  auto b = reshape(x, {"N", 3, 4});
  fb.output("a", sum(a, {2}));
  fb.output("b", sum(b, {2}));
  auto g = fb.finish();
  analysis::DomainAnalysis dc(*g);
  REQUIRE_FALSE(dc.conflicts().empty());
  CHECK(dc.conflicts()[0].find("split two incompatible ways") != std::string::npos);
}

TEST_CASE("reductions over different atoms are refused with the atoms named", "[norm]") {
  FusionBuilder fb("two_reductions");
  auto x = fb.input("x", DType::F32, {"N", "D"});
  auto y = layer_norm(x, {"D"});
  fb.output("col", sum(y, {0}));
  auto f = fb.finish();
  Bindings sizes{{"N", 8}, {"D", 16}};
  CHECK_THROWS_WITH(compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{90, 132}),
                    Catch::Contains("cannot share one kernel: their iterated atoms differ"));
}

TEST_CASE("the schedule says where the row lives", "[norm]") {
  auto f = findExample("layer_norm")->buildDefault();
  for (int64_t d : {1024, 1 << 20}) {
    Bindings sizes{{"N", 4}, {"D", d}};
    StageText text;
    compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{90, 132}, &text);
    INFO(text[DumpStage::Schedule]);
    CHECK(text[DumpStage::Schedule].find(d == 1024 ? "stays in registers" : "does not fit in registers") != std::string::npos);
  }
}
