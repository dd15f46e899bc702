// CPU-only: the framework ops (frontend/framework_ops.h) that the C ABI and loom.torch run: each
// builds in every float dtype with and without its optional tensors, segments, and evaluates;
// the forward ops agree with the built-ins they generalize; bad parameters are located errors.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/compile_test_util.h"

#include "compiler/segment/segmenter.h"
#include "frontend/framework_ops.h"

using namespace loom;

namespace {

std::vector<HostTensor> randomInputs(const ir::Fusion& f, const Bindings& sizes, uint64_t seed) {
  std::vector<HostTensor> in;
  for (const ir::Value* v : f.inputs()) {
    const bool positive = v->name() == "rstd" || v->name() == "save_invstd" || v->name() == "running_var";
    in.push_back(HostTensor::random(v->dtype(), evalShape(v, sizes), seed++, positive ? 0.5 : -1.0, positive ? 2.0 : 1.0));
  }
  return in;
}

}  // namespace

TEST_CASE("every framework op builds, segments and evaluates in every float dtype", "[framework_ops]") {
  const Bindings sizes{{"N", 3}, {"D", 40}, {"C", 8}, {"S", 15}};
  for (const FrameworkOpInfo& op : frameworkOps())
    for (const char* dt : {"f16", "bf16", "f32", "f64"})
      for (const char* param : {"f32", "none"}) {
        OpParams p{{"x", dt}, {"w", param}};
        const bool backward = op.name.find("_backward") != std::string::npos;
        if (op.name.rfind("group_norm", 0) == 0) p.insert_or_assign("groups", std::to_string(4));
        if (op.name.rfind("batch_norm", 0) == 0 && !backward) p["running"] = op.name == "batch_norm_eval" ? "f32" : param;
        if (!backward && op.name.find("rms") == std::string::npos) p["b"] = param;
        INFO(op.name << " " << dt << " " << param);
        auto f = buildFrameworkOp(op.name, p);
        auto plan = segment::segmentFusion(*f, sizes, test::descsFor(*f, sizes), CompileOptions{{90, 132}});
        CHECK_FALSE(plan.segments.empty());
        const auto out = evaluateReference(*f, randomInputs(*f, sizes, 7), sizes);
        REQUIRE(out.size() == f->outputs().size());
        for (const auto& t : out)
          for (double v : t.toVector()) REQUIRE(std::isfinite(v));
      }
}

TEST_CASE("framework ops agree with the built-ins they generalize", "[framework_ops]") {
  // layer_norm with eps 1e-5, f16 x and weights: the built-in layer_norm's y.
  auto op = buildFrameworkOp("layer_norm", {{"x", "f16"}, {"w", "f16"}, {"b", "f16"}});
  auto builtin = loadFusion("layer_norm");
  const Bindings sizes{{"N", 5}, {"D", 64}};
  const auto in = randomInputs(*builtin, sizes, 3);
  const auto a = evaluateReference(*op, in, sizes), b = evaluateReference(*builtin, in, sizes);
  CHECK(a[0].toVector() == b[0].toVector());
  CHECK(a.size() == 3);  // y, mean, rstd
  // A one-kernel backward, as the built-in.
  auto bwd = buildFrameworkOp("layer_norm_backward", {{"x", "bf16"}, {"w", "bf16"}, {"b", "bf16"}});
  const Bindings big{{"N", 4096}, {"D", 1024}};
  CHECK(segment::segmentFusion(*bwd, big, test::descsFor(*bwd, big), CompileOptions{{90, 132}}).segments.size() == 1);
}

TEST_CASE("framework op parameters are checked", "[framework_ops]") {
  CHECK(parseOpParams("") == OpParams{});
  CHECK(parseOpParams(" x = f16 ,eps=1e-6") == OpParams{{"x", "f16"}, {"eps", "1e-6"}});
  CHECK_THROWS_WITH(parseOpParams("x=f16,,eps=1"), Catch::Contains("`` must look like key=value"));
  CHECK_THROWS_WITH(buildFrameworkOp("rms_norm", {{"x", "f16"}, {"b", "f32"}}),
                    Catch::Contains("op `rms_norm` takes no parameter `b`; it takes: eps, rank, stats, w, x"));
  CHECK_THROWS_WITH(buildFrameworkOp("group_norm", {{"x", "f16"}}), Catch::Contains("`groups` (a whole number) is needed"));
  CHECK_THROWS_WITH(buildFrameworkOp("layer_norm", {{"x", "f8"}}), Catch::Contains("x=f8 is not a dtype"));
  CHECK_THROWS_WITH(buildFrameworkOp("instance_norm", {{"x", "f16"}, {"rank", "2"}}),
                    Catch::Contains("op `instance_norm`: rank=2 is not from 3 to 8"));
  CHECK_THROWS_WITH(buildFrameworkOp("layer_norm", {{"x", "f16"}, {"eps", "nan"}}), Catch::Contains("eps=nan is not a number"));
  // 3 groups of C=8: checked when the sizes bind.
  auto g = buildFrameworkOp("group_norm", {{"x", "f16"}, {"groups", "3"}, {"w", "f32"}});
  const Bindings sizes{{"N", 2}, {"C", 8}, {"S", 5}};
  CHECK_THROWS_WITH(evaluateReference(*g, randomInputs(*g, sizes, 1), sizes), Catch::Contains("C/3"));
}

TEST_CASE("framework ops take x in its own rank", "[framework_ops]") {
  // layer norm over the last dim of [N0, N1, D]: statistics [N0, N1, 1]; group norm of
  // [N, C, S0, S1]; batch norm of [N, C]; LayerNorm2d's statistics [N, 1, S0, S1].
  auto ln = buildFrameworkOp("layer_norm", {{"x", "bf16"}, {"w", "f32"}, {"b", "none"}, {"rank", "3"}});
  CHECK(ln->input("x")->typeString() == "bf16[N0, N1, D]");
  CHECK(ln->outputs()[1].value->typeString() == "f32[N0, N1, 1b]");
  auto gn = buildFrameworkOp("group_norm_backward", {{"x", "f16"}, {"groups", "2"}, {"w", "f32"}, {"rank", "4"}});
  CHECK(gn->input("dy")->typeString() == "f16[N, C, S0, S1]");
  auto bn = buildFrameworkOp("batch_norm", {{"x", "f32"}, {"running", "f32"}, {"rank", "2"}, {"inplace", "0"}});
  CHECK(bn->input("x")->typeString() == "f32[N, C]");
  CHECK(bn->outputs()[3].alias == nullptr);
  auto ln2d = buildFrameworkOp("layer_norm_2d_backward", {{"x", "f16"}, {"w", "f32"}, {"rank", "4"}});
  CHECK(ln2d->input("mean")->typeString() == "f32[N, 1, S0, S1]");
  const Bindings sizes{{"N", 2}, {"C", 4}, {"S0", 3}, {"S1", 5}};
  const auto out = evaluateReference(*gn, randomInputs(*gn, sizes, 5), sizes);
  CHECK(out[0].shape() == std::vector<int64_t>{2, 4, 3, 5});
}
