// CPU-only: which fusions the reduction scheduler takes (outputs that are values of the row,
// reductions in one pass), its layouts and splits, and the kernel it writes: a workspace of
// partials, an acquire-release counter, the last block combining in block order; ptxas accepts it.
#include <catch2/catch.hpp>

#include <regex>

#include "tests/compile_test_util.h"
#include "tests/reduction_fusions.h"

#include "compiler/compile.h"
#include "compiler/schedule/reduction/reduction.h"
#include "compiler/schedule/scheduler.h"

using namespace loom;
using loom::test::has;
using loom::test::descsFor;

namespace {

std::optional<schedule::Planned> planOf(const ir::Fusion& f, const Bindings& sizes, std::vector<std::string>* why,
                                        const std::map<std::string, std::vector<int>>& layouts = {}) {
  return schedule::planSegment(f, sizes, descsFor(f, sizes, layouts), CompileOptions{DeviceInfo{90, 132}}, "k", why);
}


}  // namespace

TEST_CASE("reduction scheduler: a full sum splits over the grid, a column sum tiles the columns", "[schedule][reduction]") {
  FusionBuilder fb("full");
  auto x = fb.input("x", DType::F32, {"N"});
  fb.output("s", sum(x, {0}));
  auto f = fb.finish();
  std::vector<std::string> why;
  auto p = planOf(*f, {{"N", int64_t{1} << 26}}, &why);
  REQUIRE(p.has_value());
  CHECK(p->scheduler == "reduction");
  CHECK(has(p->reason, "inner layout"));
  CHECK(has(p->reason, "split over 528 blocks"));
  CHECK(p->launch.grid == 528);
  CHECK(!p->launch.cooperative);
  CHECK(p->launch.workspace_bytes > 0);

  FusionBuilder fc("cols");
  auto y = fc.input("x", DType::F16, {"M", "D"});
  fc.output("s", sum(toCompute(y), {0}));
  auto g = fc.finish();
  auto q = planOf(*g, {{"M", 65536}, {"D", 1024}}, &why);
  REQUIRE(q.has_value());
  CHECK(q->scheduler == "reduction");
  CHECK(has(q->reason, "outer layout: tiles of 64 neighbouring rows"));
  CHECK(has(q->reason, "vectors of 8"));
  // Many columns: as many tiles as the GPU needs, fewer blocks a tile.
  auto wide = planOf(*g, {{"M", 1024}, {"D", 65536}}, &why);
  REQUIRE(wide.has_value());
  CHECK(has(wide->reason, "1024 tiles, one block each"));
}

TEST_CASE("reduction scheduler: var_mean down tall, narrow columns as Welford partials over the grid", "[schedule][reduction]") {
  // BatchNorm1d's statistics of [1048576, 64] f16: one tile of 64 columns, split over the GPU
  // (it was one block a column, a load an element, in the normalization scheduler).
  auto f = test::varMean(DType::F16, 0, 0);
  std::vector<std::string> why;
  auto p = planOf(*f, {{"M", 1048576}, {"D", 64}}, &why);
  REQUIRE(p.has_value());
  CHECK(p->scheduler == "reduction");
  CHECK(has(p->reason, "outer layout: tiles of 64 neighbouring rows"));
  CHECK(has(p->reason, "vectors of 8"));
  CHECK(has(p->reason, "Welford statistics"));
  CHECK(p->launch.grid >= 132);
  // A workspace of three values (count, mean, M2) a column a block, beside the counter.
  const int64_t split = p->launch.grid;
  CHECK(p->launch.workspace_bytes == 128 + 3 * split * 64 * 8);
  // Columns no vector divides: an element a lane.
  auto odd = planOf(*f, {{"M", 100003}, {"D", 771}}, &why);
  REQUIRE(odd.has_value());
  CHECK(odd->scheduler == "reduction");
  CHECK(has(odd->reason, "vectors of 1"));
  // Long rows along memory (dim 1): the inner layout, split.
  auto g = test::varMean(DType::F32, 1, 1);
  auto q = planOf(*g, {{"M", 4}, {"D", 1 << 22}}, &why);
  REQUIRE(q.has_value());
  CHECK(q->scheduler == "reduction");
  CHECK(has(q->reason, "inner layout"));
  CHECK(has(q->reason, "Welford statistics"));
}

TEST_CASE("channels-last batch norm of long channels: the statistics split over the grid, then a pointwise pass",
          "[schedule][reduction]") {
  // ResNet-50's first batch norm (64 channels over 128 x 112 x 112): the running statistics are
  // values of the channels, computed beside the statistics; y is the pointwise pass.
  auto f = findExample("batch_norm")->build(DType::F16);
  const Bindings sizes{{"N", 128}, {"C", 64}, {"H", 112}, {"W", 112}};
  auto plan = compilePlan(*f, sizes, descsFor(*f, sizes, {{"x", {0, 2, 3, 1}}}), CompileOptions{DeviceInfo{90, 132}});
  REQUIRE(plan.kernels.size() == 2);
  CHECK(has(plan.segments, "segment 1: reduction scheduler"));
  CHECK(has(plan.segments, "segment 2: pointwise scheduler"));
  CHECK(has(plan.segments, "read a load an element: two kernels"));
  CHECK(plan.kernels[0].kernel.grid >= 132);
}

TEST_CASE("reduction scheduler: what it leaves to the normalization scheduler, and why", "[schedule][reduction]") {
  std::vector<std::string> why;
  // Outputs along the row (layer norm): the row is read again.
  auto ln = findExample("layer_norm")->buildDefault();
  auto p = planOf(*ln, findExample("layer_norm")->default_sizes, &why);
  REQUIRE(p.has_value());
  CHECK(p->scheduler == "normalization");
  // A reduction of a reduction (logsumexp): two passes.
  FusionBuilder fb("lse");
  auto x = fb.input("x", DType::F32, {"N", "D"});
  auto m = amax(x, {1}, true);
  fb.output("lse", log(sum(exp(x - m), {1})));
  auto f = fb.finish();
  why.clear();
  auto q = planOf(*f, {{"N", 4}, {"D", 1 << 20}}, &why);
  REQUIRE(q.has_value());
  CHECK(q->scheduler == "normalization");
  // Many rows of a sum: one block a row already fills the GPU.
  FusionBuilder fr("rows");
  auto r = fr.input("x", DType::F32, {"N", "D"});
  fr.output("s", sum(r, {1}));
  auto g = fr.finish();
  why.clear();
  auto rows = planOf(*g, {{"N", 65536}, {"D", 1024}}, &why);
  REQUIRE(rows.has_value());
  CHECK(rows->scheduler == "normalization");
  // ... unless the rows are long and read in vectors: one block a row folds in registers, no
  // row held on chip (layer_norm_2d_backward's dw and db over N, H, W of 64 x 768 x 14 x 14).
  auto wide = planOf(*g, {{"N", 768}, {"D", 12544}}, &why);
  REQUIRE(wide.has_value());
  CHECK(wide->scheduler == "reduction");
  CHECK(has(wide->reason, "one block each"));
  CHECK(wide->launch.grid == 768);
  CHECK(wide->launch.workspace_bytes == 0);
  // Rows read an element at a time (7 x 7 images, 49 contiguous elements) stay there.
  FusionBuilder fi("img");
  auto xi = fi.input("x", DType::F16, {"N", "C", 7, 7});
  fi.output("s", sum(toCompute(xi), {0, 2, 3}));
  auto h = fi.finish();
  auto img = planOf(*h, {{"N", 64}, {"C", 1024}}, &why);
  REQUIRE(img.has_value());
  CHECK(img->scheduler == "normalization");
}

TEST_CASE("layer_norm_2d_backward NCHW: dw and db by the reduction scheduler where rows are long", "[schedule][reduction]") {
  auto f = findExample("layer_norm_2d_backward")->build(DType::F16);
  auto plan = compilePlan(*f, {{"N", 64}, {"C", 768}, {"H", 14}, {"W", 14}},
                          descsFor(*f, {{"N", 64}, {"C", 768}, {"H", 14}, {"W", 14}}), CompileOptions{DeviceInfo{90, 132}});
  REQUIRE(plan.kernels.size() == 2);
  CHECK(has(plan.segments, "segment 2: reduction scheduler"));
  CHECK(plan.kernels[1].kernel.grid == 768);
  // dx: the rows (over N, H, W) side by side and strided along C take a row-vector tier; the
  // weight over C under its reductions, the same for every row, is read from cache, not copied
  // with the rows (it kept the kernel a row a block, each element a load of its own).
  CHECK(has(plan.segments, "vectors of rows"));
  CHECK_FALSE(has(plan.segments, "each element is a load of its own"));
}

TEST_CASE("reduction scheduler: the kernel publishes partials and the last block combines them", "[ptx][reduction]") {
  FusionBuilder fb("stats");
  auto x = fb.input("x", DType::BF16, {"N", "C", "H", "W"});
  auto xc = toCompute(x);
  fb.output("s", sum(xc, {0, 2, 3}));
  fb.output("mx", amax(xc, {0, 2, 3}));
  auto f = fb.finish();
  const Bindings sizes{{"N", 64}, {"C", 96}, {"H", 28}, {"W", 27}};
  for (bool nhwc : {false, true}) {
    INFO((nhwc ? "nhwc" : "nchw"));
    std::map<std::string, std::vector<int>> lay;
    if (nhwc) lay["x"] = {0, 2, 3, 1};
    StageText stages;
    auto k = compileFusion(*f, sizes, descsFor(*f, sizes, lay), CompileOptions{{90, 132}}, &stages);
    const std::string& kir = stages[DumpStage::KIR];
    CHECK(has(kir, nhwc ? "outer layout" : "inner layout") == false);  // the layout is the schedule's word
    CHECK(has(stages[DumpStage::Schedule], nhwc ? "outer layout" : "inner layout"));
    CHECK(has(kir, "atom.add.acq_rel.gpu"));
    CHECK(has(kir, "ld.relaxed.gpu"));
    CHECK(has(kir, "[last_block, uniform]"));
    CHECK(k.workspace_bytes > 0);
    CHECK(!k.cooperative);
    CHECK(has(k.ptx, "atom.add.acq_rel.gpu.global.u32"));
    LOOM_CHECK_PTXAS(k.ptx, 90);
  }
}

TEST_CASE("reduction scheduler: column partials fit a block's 48 KiB of static shared memory", "[ptx][reduction]") {
  // Three f32 column reductions of f16 once took 48 KiB + 4 bytes (nvJitLink refused them; the
  // GPU tests' colsum): each reduction's partials are held once, for as many rows of threads as
  // fit, never fewer rows of threads than a vector has lanes (each row of a tile is finished by
  // a thread of its own: 6 reductions at D = 262144 once had 128 threads for 256 rows).
  for (int64_t D : {int64_t{1024}, int64_t{262144}})
  for (DType t : {DType::F16, DType::F32, DType::F64})
    for (int n : {3, 6}) {
      FusionBuilder fb("cols");
      auto x = fb.input("x", t, {"M", "D"});
      auto xc = toCompute(x);
      // Distinct reductions (equal ones would be computed once).
      const std::vector<Tensor> all = {sum(xc, {0}), amax(xc, {0}), mean(xc * xc, {0}),
                                       amin(xc, {0}), mean(xc, {0}), sum(xc * xc, {0})};
      for (int i = 0; i < n; ++i) fb.output(fmt::format("r{}", i), all[static_cast<size_t>(i)]);
      auto f = fb.finish();
      const Bindings sizes{{"M", D == 1024 ? 65536 : 64}, {"D", D}};
      INFO(dtypeName(t) << ", " << n << " reductions, D=" << D);
      StageText stages;
      auto k = compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}, &stages);
      const std::string& sched = stages[DumpStage::Schedule];
      INFO(sched);
      CHECK(has(sched, "outer layout"));
      // "tiles of R neighbouring rows ..., grid G of T threads": T >= R.
      std::smatch m;
      REQUIRE(std::regex_search(sched, m, std::regex("tiles of ([0-9]+) neighbouring rows")));
      const long rows = std::stol(m[1]);
      REQUIRE(std::regex_search(sched, m, std::regex("grid [0-9]+ of ([0-9]+) threads")));
      CHECK(std::stol(m[1]) >= rows);
      CHECK(k.block >= static_cast<unsigned>(rows));
      LOOM_CHECK_PTXAS(k.ptx, 90);
    }
}

TEST_CASE("reduction scheduler: outputs of every element written as they are read, beside the sums",
          "[schedule][reduction]") {
  std::vector<std::string> why;
  auto f = test::biasGrad(DType::F16);
  auto p = planOf(*f, {{"M", 256}, {"D", 4096}}, &why);
  REQUIRE(p.has_value());
  CHECK(p->scheduler == "reduction");
  CHECK(has(p->reason, "outer layout"));
  CHECK(has(p->reason, "vectors of 8"));
  CHECK(has(p->reason, "1 stores of elements written as they are read"));
  // dx allocated as the inputs are laid out (rows of D), stored as 16-byte vectors.
  CHECK(p->outputs[0].strides == std::vector<int64_t>{4096, 1});
  std::string kir = p->detail();
  INFO(kir);
  CHECK(std::regex_search(kir, std::regex(R"(store\.f16 dx\[.*\(vector\))")));
  // The inner layout (rows of one long reduction): the elements stored along the row.
  FusionBuilder fi("scale_and_sum");
  auto x = fi.input("x", DType::F32, {"N", "D"});
  fi.output("y", x * 2.0);
  fi.output("s", sum(x, {1}));
  auto g = fi.finish();
  auto q = planOf(*g, {{"N", 4}, {"D", 1 << 20}}, &why);
  REQUIRE(q.has_value());
  CHECK(q->scheduler == "reduction");
  CHECK(has(q->reason, "inner layout"));
  CHECK(has(q->reason, "1 stores of elements"));
}

TEST_CASE("reduction scheduler: element outputs it leaves to the normalization scheduler, and why", "[schedule][reduction]") {
  const Bindings sizes{{"M", 256}, {"D", 4096}};
  // Written over an input: another element's thread may still read it.
  {
    FusionBuilder fb("in_place");
    auto x = fb.input("x", DType::F32, {"M", "D"});
    fb.output("y", x * 2.0, x);
    fb.output("s", sum(x, {0}));
    auto f = fb.finish();
    std::string why;
    CHECK_FALSE(schedule::scheduleReduction(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}, &why));
    CHECK(has(why, "output 1 varies along the reduced atoms {M} and is written over an input"));
  }
  // Not along every axis: the same element from every column's thread.
  {
    FusionBuilder fb("row_values");
    auto x = fb.input("x", DType::F32, {"M", "D"});
    auto v = fb.input("v", DType::F32, {"M"});
    fb.output("w", v * 3.0);
    fb.output("s", sum(x * unsqueeze(v, 1), {0}));
    auto f = fb.finish();
    std::string why;
    CHECK_FALSE(schedule::scheduleReduction(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}, &why));
    INFO(why);
    CHECK(has(why, "its elements would be written by several threads"));
  }
  // Reading a reduction (x minus its column mean): a second pass.
  {
    FusionBuilder fb("centered");
    auto x = fb.input("x", DType::F32, {"M", "D"});
    fb.output("c", x - mean(x, {0}, true));
    auto f = fb.finish();
    std::string why;
    CHECK_FALSE(schedule::scheduleReduction(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}, &why));
    CHECK(has(why, "and reads a reduction: rows are read again"));
  }
}
