// [gpu]: the reduction scheduler (compiler/schedule/reduction/reduction.h) end to end against the CPU
// reference: full reductions, column sums with few and many columns, batch statistics in both
// memory orders (sums, and var_mean's Welford statistics), every reduction kind and float dtype,
// odd and size-1 sizes; and bitwise equal results from run to run however the blocks finish.
#include <catch2/catch.hpp>

#include <cstring>

#include "tests/gpu_test_util.h"
#include "tests/reduction_fusions.h"

using namespace loom;

namespace {

std::unique_ptr<ir::Fusion> fullReduce(DType t, const char* op) {
  FusionBuilder fb(std::string("full_") + op);
  auto x = fb.input("x", t, {"N"});
  auto xc = toCompute(x);
  const std::string o = op;
  fb.output("r", o == "sum" ? sum(xc, {0}) : o == "mean" ? mean(xc, {0}) : o == "amax" ? amax(xc, {0}) : amin(xc, {0}));
  return fb.finish();
}

std::unique_ptr<ir::Fusion> colSums(DType t) {
  FusionBuilder fb("colsum");
  auto x = fb.input("x", t, {"M", "D"});
  auto xc = toCompute(x);
  fb.output("s", sum(xc, {0}));
  fb.output("m", cast(amax(xc, {0}), t));
  fb.output("sq", mean(xc * xc, {0}));
  return fb.finish();
}

// Per-channel statistics of an image as sums (batch norm's, without Welford), and a running
// mean updated from them in place.
std::unique_ptr<ir::Fusion> channelSums(DType t) {
  FusionBuilder fb("channel_sums");
  auto x = fb.input("x", t, {"N", "C", "H", "W"});
  auto rm = fb.input("running_mean", DType::F32, {"C"});
  auto xc = toCompute(x);
  auto m = mean(xc, {0, 2, 3});
  fb.output("sumsq", sum(xc * xc, {0, 2, 3}));
  fb.output("new_running_mean", rm * 0.9 + m * 0.1, rm);
  return fb.finish();
}

// Outputs of every element beside the reductions that read them (schedule/reduction/reduction.h's element
// stores): test::biasGrad (columns, the outer layout), and a scaled copy beside row sums (the
// inner layout).
std::unique_ptr<ir::Fusion> scaleAndSum(DType t) {
  FusionBuilder fb("scale_and_sum");
  auto x = fb.input("x", t, {"N", "D"});
  fb.output("y", cast(toCompute(x) * 2.0, t));
  fb.output("s", sum(toCompute(x), {1}));
  return fb.finish();
}

// An element output laid out across the reduced axis (o takes b's order, the first input: lanes
// along D stored 4 apart) beside row sums of a; with `swap` the other input first.
std::unique_ptr<ir::Fusion> transposedSum(bool swap) {
  FusionBuilder fb("transposed_sum");
  auto b = swap ? fb.input("b", DType::F32, {"D", "N"}) : Tensor{};
  auto a = fb.input("a", DType::F32, {"N", "D"});
  if (!swap) b = fb.input("b", DType::F32, {"D", "N"});
  fb.output("o", a + permute(b, {1, 0}));
  fb.output("s", sum(a, {1}));
  return fb.finish();
}

// A value with its own transpose: one atom on both of x's dims (the reduction and normalization
// schedulers refuse it; a pointwise kernel writes y, a reduction kernel s).
std::unique_ptr<ir::Fusion> selfTranspose() {
  FusionBuilder fb("self_transpose");
  auto x = fb.input("x", DType::F32, {"N", "N"});
  fb.output("y", x + permute(x, {1, 0}));
  fb.output("s", sum(x, {0, 1}));
  return fb.finish();
}

}  // namespace

TEST_CASE("element outputs stored as the reductions read them", "[gpu][reduction]") {
  if (!test::haveGpu()) return;
  for (DType t : {DType::F16, DType::BF16, DType::F32}) {
    for (auto s : {Bindings{{"M", 256}, {"D", 4096}}, Bindings{{"M", 65544}, {"D", 3}}, Bindings{{"M", 1531}, {"D", 77}},
                   Bindings{{"M", 1}, {"D", 4096}}, Bindings{{"M", 8192}, {"D", 1024}}}) {
      INFO("bias_grad " << dtypeName(t) << " M=" << s.at("M") << " D=" << s.at("D"));
      test::checkOnGpu(*test::biasGrad(t), s);
    }
    for (auto s : {Bindings{{"N", 4}, {"D", 1 << 20}}, Bindings{{"N", 3}, {"D", 100003}}, Bindings{{"N", 1}, {"D", 65536}}}) {
      INFO("scale_and_sum " << dtypeName(t) << " N=" << s.at("N") << " D=" << s.at("D"));
      test::checkOnGpu(*scaleAndSum(t), s);
    }
  }
  for (bool swap : {false, true})
    for (auto s : {Bindings{{"N", 4}, {"D", 65536}}, Bindings{{"N", 3}, {"D", 65544}}, Bindings{{"N", 5}, {"D", 1001}}}) {
      INFO("transposed_sum swap=" << swap << " N=" << s.at("N") << " D=" << s.at("D"));
      test::checkOnGpu(*transposedSum(swap), s);
    }
  for (int64_t n : {64, 4096, 77}) {
    INFO("self_transpose N=" << n);
    test::checkOnGpu(*selfTranspose(), {{"N", n}});
  }
}

TEST_CASE("reductions to one value run split over the grid", "[gpu][reduction]") {
  if (!test::haveGpu()) return;
  for (const char* op : {"sum", "mean", "amax", "amin"})
    for (DType t : {DType::F32, DType::F16, DType::BF16})
      for (int64_t n : {int64_t{100003}, int64_t{1} << 22}) {
        INFO(op << " " << dtypeName(t) << " N=" << n);
        test::checkOnGpu(*fullReduce(t, op), {{"N", n}});
      }
  test::checkOnGpu(*fullReduce(DType::F32, "sum"), {{"N", int64_t{1} << 26}});
  test::checkOnGpu(*fullReduce(DType::F64, "sum"), {{"N", 1000001}});
}

TEST_CASE("column reductions with few and many columns", "[gpu][reduction]") {
  if (!test::haveGpu()) return;
  for (DType t : {DType::F16, DType::BF16, DType::F32})
    for (auto s : {Bindings{{"M", 65536}, {"D", 1024}}, Bindings{{"M", 1024}, {"D", 65536}},
                   Bindings{{"M", 1531}, {"D", 77}}, Bindings{{"M", 65544}, {"D", 3}}, Bindings{{"M", 1}, {"D", 4096}},
                   Bindings{{"M", 3}, {"D", 1000}}}) {
      INFO(dtypeName(t) << " M=" << s.at("M") << " D=" << s.at("D"));
      test::checkOnGpu(*colSums(t), s);
    }
}

TEST_CASE("channel statistics as sums in NCHW and channels-last", "[gpu][reduction]") {
  if (!test::haveGpu()) return;
  for (DType t : {DType::F16, DType::F32})
    for (auto s : {Bindings{{"N", 64}, {"C", 256}, {"H", 28}, {"W", 28}}, Bindings{{"N", 1}, {"C", 3}, {"H", 17}, {"W", 9}}})
      for (bool nhwc : {false, true}) {
        INFO(dtypeName(t) << (nhwc ? " nhwc" : " nchw") << " C=" << s.at("C"));
        std::map<std::string, std::vector<int>> layouts;
        if (nhwc) layouts["x"] = {0, 2, 3, 1};
        test::checkOnGpu(*channelSums(t), s, layouts);
      }
}

TEST_CASE("var_mean down long columns and along long rows: Welford partials over the grid", "[gpu][reduction]") {
  if (!test::haveGpu()) return;
  // Columns of 1, 3 and 65537 (no vector divides the last two), 771; rows of 1 and of 3.
  for (DType t : {DType::F16, DType::BF16, DType::F32})
    for (auto s : {Bindings{{"M", 1048576}, {"D", 64}}, Bindings{{"M", 100003}, {"D", 771}}, Bindings{{"M", 65536}, {"D", 1}},
                   Bindings{{"M", 4099}, {"D", 3}}, Bindings{{"M", 1}, {"D", 65537}}, Bindings{{"M", 3}, {"D", 65537}}}) {
      INFO("columns " << dtypeName(t) << " M=" << s.at("M") << " D=" << s.at("D"));
      test::checkOnGpu(*test::varMean(t, 0, 0), s);
    }
  for (DType t : {DType::F16, DType::F32})
    for (auto s : {Bindings{{"M", 4}, {"D", 1 << 22}}, Bindings{{"M", 3}, {"D", 1000003}}, Bindings{{"M", 1}, {"D", 65536}}}) {
      INFO("rows " << dtypeName(t) << " M=" << s.at("M") << " D=" << s.at("D"));
      test::checkOnGpu(*test::varMean(t, 1, 1), s);
    }
  // Far from zero, where a sum of squares in f32 would lose the variance to cancellation.
  test::checkOnGpu(*test::varMean(DType::F32, 0, 1), {{"M", 500000}, {"D", 64}}, {}, 3, 1000.0, 1001.0);
  test::checkOnGpu(*test::varMean(DType::F32, 1, 0), {{"M", 2}, {"D", 1 << 21}}, {}, 4, 1000.0, 1001.0);
}

TEST_CASE("batch norm training at ResNet's first shape and at odd ones, both memory orders", "[gpu][reduction]") {
  if (!test::haveGpu()) return;
  // Channels-last: the channel statistics split over the grid, then a pointwise pass.
  const auto bn = findExample("batch_norm");
  for (DType t : {DType::F16, DType::BF16})
    for (auto s : {Bindings{{"N", 32}, {"C", 64}, {"H", 112}, {"W", 112}}, Bindings{{"N", 1}, {"C", 3}, {"H", 223}, {"W", 225}},
                   Bindings{{"N", 7}, {"C", 771}, {"H", 13}, {"W", 11}}, Bindings{{"N", 1}, {"C", 1}, {"H", 300}, {"W", 301}}})
      for (bool nhwc : {false, true}) {
        INFO(dtypeName(t) << (nhwc ? " nhwc" : " nchw") << " N=" << s.at("N") << " C=" << s.at("C"));
        std::map<std::string, std::vector<int>> layouts;
        if (nhwc) layouts["x"] = {0, 2, 3, 1};
        test::checkOnGpu(*bn->build(t), s, layouts);
      }
}

TEST_CASE("norm backward of long rows: dw and db from partials in shared memory", "[gpu][reduction][columns]") {
  if (!test::haveGpu()) return;
  // One kernel whose threads keep their column partials in shared memory (D past what registers
  // hold beside the row): every float dtype, a whole and a cut-short last chunk, few rows.
  for (const char* name : {"layer_norm_backward", "rms_norm_backward"})
    for (DType t : {DType::F16, DType::BF16, DType::F32})
      for (auto sizes : {Bindings{{"N", 300}, {"D", 16384}}, Bindings{{"N", 77}, {"D", 12296}}, Bindings{{"N", 1}, {"D", 16384}}}) {
        INFO(name << " " << dtypeName(t) << " N=" << sizes["N"] << " D=" << sizes["D"]);
        test::checkOnGpu(*findExample(name)->build(t), sizes);
      }
}

TEST_CASE("split reductions are bitwise the same from run to run", "[gpu][reduction]") {
  if (!test::haveGpu()) return;
  // The third to fifth: layer and RMS norm backward's dw (and db), column reductions of their one
  // kernel (the partials in registers, then in shared memory, then two blocks an SM of them).
  for (int which = 0; which < 7; ++which) {
    if (which >= 5) {  // var_mean's Welford partials: columns (the outer layout), rows (the inner)
      test::checkBitwiseRepeatable(*test::varMean(DType::F16, which == 5 ? 0 : 1, 0),
                                   which == 5 ? Bindings{{"M", 1048576}, {"D", 64}} : Bindings{{"M", 4}, {"D", 1 << 22}}, 9);
      continue;
    }
    auto f = which == 0   ? fullReduce(DType::F32, "sum")
             : which == 1 ? colSums(DType::F16)
             : which == 2 ? findExample("layer_norm_backward")->build(DType::F32)
             : which == 3 ? findExample("layer_norm_backward")->build(DType::F16)
                          : findExample("rms_norm_backward")->build(DType::BF16);
    const Bindings sizes = which == 0   ? Bindings{{"N", int64_t{1} << 24}}
                           : which == 1 ? Bindings{{"M", 65536}, {"D", 1024}}
                           : which == 2 ? Bindings{{"N", 8195}, {"D", 1000}}
                           : which == 3 ? Bindings{{"N", 4096}, {"D", 16384}}
                                        : Bindings{{"N", 2048}, {"D", 16384}};
    test::checkBitwiseRepeatable(*f, sizes, 7);
  }
}
