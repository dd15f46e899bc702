// CPU-only: a normalization kernel's batched reductions (one pass and one combine for a row's
// independent sums and means) and its sub-row reductions, in the kernel IR, through ptxas.
#include <regex>

#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "tests/compile_test_util.h"

#include "compiler/compile.h"
#include "compiler/segment/segmenter.h"
#include "compiler/segment/split_reductions.h"
#include "frontend/internal_api.h"

using namespace loom;
using loom::test::descsFor;
using loom::test::has;

TEST_CASE("a row's independent sums and means share one pass and one combine", "[norm][ptx]") {
  // Batch norm backward over NCHW: the two means dx reads and the sums dw and db, one pass, one
  // combine of all four.
  auto f = findExample("batch_norm_backward")->build(DType::F32);
  const Bindings sizes{{"N", 64}, {"C", 256}, {"H", 28}, {"W", 28}};
  for (bool batched : {true, false}) {
    CompileOptions opts{{90, 132}};
    opts.tuning.no_batched_reductions = !batched;
    StageText text;
    const CompiledKernel k = compileFusion(*f, sizes, descsFor(*f, sizes), opts, &text);
    const std::string& kir = text[DumpStage::KIR];
    INFO(kir.substr(0, 6000));
    CHECK(has(kir, "let (row_sum0, row_sum1, row_sum2, row_sum3): f32 = combine.sum(") == batched);
    CHECK(has(kir, "let row_sum3: f32 = combine.sum(") == !batched);
    LOOM_CHECK_PTXAS(k.ptx, 90);
  }
}

TEST_CASE("sub-row reductions: each position's sum from whole runs of chunks, stored by one thread", "[norm][ptx]") {
  // Group norm backward's first kernel once its dw and db are split (C/G = 4 channels a group):
  // the rows' two means and the 4 + 4 channel sums in one pass per channel's run of chunks,
  // one combine of all ten, and 8 scalar stores.
  auto f = findExample("group_norm_backward")->build(DType::F16);
  const Bindings sizes{{"N", 32}, {"C", 128}, {"H", 256}, {"W", 256}};
  StageText text;
  const CompiledPlan plan = compilePlan(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}, &text);
  REQUIRE(plan.kernels.size() == 2);
  const std::string& kir = text[DumpStage::KIR];
  INFO(kir.substr(0, 8000));
  CHECK(has(kir, "let (row_sum0, row_sum1, row_sum2, row_sum3, row_sum4, row_sum5, row_sum6, row_sum7, row_sum8, row_sum9)"));
  const size_t end = kir.find("after pass `unroll`");
  size_t stores = 0;
  for (size_t at = kir.find("store.gather t2"); at != std::string::npos && at < end; at = kir.find("store.gather t2", at + 1))
    ++stores;
  CHECK(stores == 8);
  for (const auto& pk : plan.kernels) LOOM_CHECK_PTXAS(pk.kernel.ptx, 90);
}

TEST_CASE("what sub-row reductions and batches leave alone", "[norm][segment]") {
  const CompileOptions opts{{90, 132}};
  auto kir = [&](const ir::Fusion& f, const Bindings& sizes) {
    StageText text;
    compilePlan(f, sizes, descsFor(f, sizes), opts, &text);
    return text[DumpStage::KIR];
  };
  // A sub-row maximum is combined as a maximum, on its own.
  auto mx = parseFusion(
      "fusion mx {\n  in x: f32[N, G, K, H, W]\n  m: f32[N, G, 1b, 1b, 1b] = mean(x, dims=[2, 3, 4], keepdim=true)\n"
      "  y: f32[N, G, K, H, W] = sub(x, m)\n  a: f32[N, G, K, 1b, 1b] = amax(x, dims=[3, 4], keepdim=true)\n"
      "  out y = y\n  out a = a\n}\n");
  const std::string k = kir(*mx, {{"N", 8}, {"G", 32}, {"K", 4}, {"H", 16}, {"W", 16}});
  CHECK(has(k, "combine.max("));
  // Sums in two accumulator dtypes: a batch each.
  auto d = parseFusion(
      "fusion d {\n  in x: f32[N, D]\n  t0: f32[N, 1b] = mean(x, dims=[1], keepdim=true)\n  t1: f32[N, D] = sub(x, t0)\n"
      "  t2: f64[N, D] = cast(x, to=f64)\n  t3: f64[N] = sum(t2, dims=[1], keepdim=false)\n  out y = t1\n  out s = t3\n}\n");
  CHECK(has(kir(*d, {{"N", 1024}, {"D", 1024}}), "combine.sum("));
  // A sum over broadcast dims only reduces none of the rows' atoms: no sub-row reduction.
  auto e = parseFusion(
      "fusion e3 {\n  in x: f32[N, C, H, W]\n  in z: f32[N, C, 1b, 1b]\n  a: f32[N, C, H, W] = add(x, z)\n"
      "  t0: f32[N, C, 1b, 1b] = mean(a, dims=[2, 3], keepdim=true)\n  t1: f32[N, C, H, W] = sub(a, t0)\n"
      "  t2: f32[N, C] = sum(z, dims=[2, 3], keepdim=false)\n  t3: f32[N, C, H, 1b] = sum(a, dims=[3], keepdim=true)\n"
      "  out y = t1\n  out s = t2\n  out h = t3\n}\n");
  const Bindings es{{"N", 4}, {"C", 8}, {"H", 16}, {"W", 16}};
  CHECK(segment::segmentFusion(*e, es, descsFor(*e, es), opts).segments.size() > 1);
}

TEST_CASE("channels-last sub-row sums: lane k of a chunk in channel k of the group", "[norm][ptx]") {
  // Group norm backward over NHWC, 4 channels a group read in vectors of 4: each sum adds lane k
  // of every chunk into channel k's accumulator (no fold, no select), for rows in registers and
  // for rows split over the grid, whose ten values (two means, 4 + 4 channel sums) meet at one
  // grid barrier a set.
  auto gn = findExample("group_norm_backward")->build(DType::F16);
  const CompileOptions opts{{90, 132}};
  const std::map<std::string, std::vector<int>> nhwc{{"x", {0, 2, 3, 1}}, {"dy", {0, 2, 3, 1}}};
  for (const Bindings& sizes : {Bindings{{"N", 256}, {"C", 128}, {"H", 16}, {"W", 16}},
                                Bindings{{"N", 32}, {"C", 128}, {"H", 256}, {"W", 256}}}) {
    StageText text;
    const CompiledPlan plan = compilePlan(*gn, sizes, descsFor(*gn, sizes, nhwc), opts, &text);
    REQUIRE(plan.kernels.size() == 2);
    const std::string& kir = text[DumpStage::KIR];
    const size_t end = kir.find("loom_group_norm_backward_s2");
    const std::string first = kir.substr(0, end);
    INFO(first.substr(0, 8000));
    CHECK(has(first, "let (row_sum0, row_sum1, row_sum2, row_sum3, row_sum4, row_sum5, row_sum6, row_sum7, row_sum8, row_sum9)"));
    // In the rows' pass (before the combine of all ten): the two means fold their chunks, the
    // eight channel sums take one lane each, lane k of one product into channel k's sum.
    const size_t pass_end = first.find("let (row_sum0");
    REQUIRE(pass_end != std::string::npos);
    const std::string pass = first.substr(0, pass_end);
    auto count = [&](const std::string& what) {
      size_t n = 0;
      for (size_t at = pass.find(what); at != std::string::npos; at = pass.find(what, at + 1)) ++n;
      return n;
    };
    // (Per chunk, unrolled or not: 2 folds, 8 lanes.)
    CHECK(count("fold.sum(") > 0);
    CHECK(count(": f32 = lane(") == 4 * count("fold.sum("));
    std::smatch m;
    REQUIRE(std::regex_search(pass, m, std::regex(R"(: f32 = lane\((t[0-9]+), 0\))")));
    for (int lane = 1; lane < 4; ++lane)
      CHECK(has(pass, fmt::format(": f32 = lane({}, {})", m[1].str(), lane)));
    const bool grid = sizes.at("H") == 256;
    const size_t lowered = first.rfind("after pass `lower-combines`");
    REQUIRE(lowered != std::string::npos);
    size_t barriers = 0;
    for (size_t at = first.find("barrier.grid:", lowered); at != std::string::npos; at = first.find("barrier.grid:", at + 1))
      ++barriers;
    CHECK(barriers == (grid ? 1u : 0u));
    for (const auto& pk : plan.kernels) LOOM_CHECK_PTXAS(pk.kernel.ptx, 90);
  }
}

TEST_CASE("channels-last sub-row sums whose positions are not a chunk's lanes keep the sums as written", "[norm][segment]") {
  // f64 group norm backward over NHWC, 4 channels a group read in vectors of 2: no schedule for
  // the sums beside the rows (the split plan's rows kernel goes without them), the plan as written.
  auto gn = findExample("group_norm_backward")->build(DType::F64);
  const Bindings sizes{{"N", 4}, {"C", 128}, {"H", 128}, {"W", 128}};
  const auto p = segment::segmentFusion(*gn, sizes, descsFor(*gn, sizes, {{"x", {0, 2, 3, 1}}, {"dy", {0, 2, 3, 1}}}),
                                        CompileOptions{{90, 132}});
  const std::map<std::string, std::vector<int>> nhwc{{"x", {0, 2, 3, 1}}, {"dy", {0, 2, 3, 1}}};
  CHECK_FALSE(p.rewritten);
  CHECK(p.segments.size() == 2);
  CHECK(has(p.str(*gn), "in two steps (that part first): 3 kernels moving"));
  auto split = segment::splitReductions(*gn);
  REQUIRE(split);
  const auto sp = segment::segmentFusion(*split, sizes, descsFor(*split, sizes, nhwc), CompileOptions{{90, 132}});
  REQUIRE_FALSE(sp.segments.empty());
  CHECK(sp.segments[0].scheduler == "normalization");
  CHECK_FALSE(has(sp.segments[0].params, "sub-row reductions"));
}
