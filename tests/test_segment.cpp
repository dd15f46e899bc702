// CPU-only: how many kernels fusions become, and that every cut carries its reasons.
#include <catch2/catch.hpp>

#include "tests/backward_builtins.h"
#include "tests/compile_test_util.h"

#include <chrono>

#include <fmt/format.h>

#include "compiler/analysis/domains.h"
#include "compiler/segment/segmenter.h"
#include "compiler/segment/split_reductions.h"
#include "reference/compare.h"
#include "runtime/bind_sizes.h"
#include "frontend/internal_api.h"
#include "frontend/parser.h"

using namespace loom;
using loom::test::descsFor;
using loom::test::has;

namespace {
segment::SegmentPlan plan(const ir::Fusion& f, const Bindings& sizes,
                          const std::map<std::string, std::vector<int>>& layouts = {}) {
  return segment::segmentFusion(f, sizes, descsFor(f, sizes, layouts), CompileOptions{{90, 132}});
}
}  // namespace

TEST_CASE("every built-in is one kernel, in both layouts", "[segment]") {
  for (const auto& e : builtinExamples()) {
    if (loom::test::kMultiKernelBuiltins.count(e.name)) continue;  // tests/backward_builtins.h
    auto f = e.buildDefault();
    INFO(e.name);
    CHECK(plan(*f, e.default_sizes).segments.size() == 1);
    if (loom::test::mainInput(*f)->rank() == 4 && !loom::test::kTwoPassChannelsLast.count(e.name))
      CHECK(plan(*f, e.default_sizes, loom::test::channelsLastImages(*f)).segments.size() == 1);
  }
}

TEST_CASE("a kernel the scheduler says is slower than two: its reductions', then a pointwise pass", "[segment]") {
  // Channels-last batch norm backward: the channel sums (dw, db and the means dx reads) in one
  // reduction kernel, then dx pointwise; LOOM_NO_TWO_PASS keeps the one kernel.
  auto f = findExample("batch_norm_backward")->build(DType::F32);
  const Bindings sizes{{"N", 64}, {"C", 256}, {"H", 28}, {"W", 28}};
  auto p = plan(*f, sizes, loom::test::channelsLastImages(*f));
  REQUIRE(p.segments.size() == 2);
  CHECK(p.segments[0].scheduler == "reduction");
  CHECK(p.segments[1].scheduler == "pointwise");
  CHECK(p.segments[0].sub.outputs.size() == 4);  // two means for dx, dw and db
  CHECK(has(p.str(*f), "other plans:\n  - one kernel: vectors of rows over the grid holding 2 loads"));
  CHECK(has(p.json(*f), "\"other_plans\": [\"one kernel: vectors of rows"));
  CompileOptions one{{90, 132}};
  one.tuning.no_two_pass = true;
  auto q = segment::segmentFusion(*f, sizes, descsFor(*f, sizes, loom::test::channelsLastImages(*f)), one);
  CHECK(q.segments.size() == 1);
  // NCHW batch norm backward stays one kernel.
  CHECK(plan(*f, sizes).segments.size() == 1);
  // Groups of blocks taking turns on x and dy: two kernels from 24 MiB of them (f16
  // 64x512x28x28: 51 MB), one below (f16 32x768x14x14: 19 MB).
  auto h = findExample("batch_norm_backward")->build(DType::F16);
  const Bindings big{{"N", 64}, {"C", 512}, {"H", 28}, {"W", 28}}, small{{"N", 32}, {"C", 768}, {"H", 14}, {"W", 14}};
  auto pb = plan(*h, big, loom::test::channelsLastImages(*h));
  CHECK(pb.segments.size() == 2);
  CHECK(has(pb.str(*h), "groups of blocks, their sets meeting at grid barriers: two kernels"));
  CHECK(plan(*h, small, loom::test::channelsLastImages(*h)).segments.size() == 1);
}

TEST_CASE("one held load over the grid with its rows one axis inside the reduction: two kernels from 64 MiB", "[segment]") {
  // Channels-last batch norm forward at ResNet-50's shapes, batch 128: x of 98 MiB (128 channels
  // over 56x56) is the reduction scheduler's Welford statistics then y pointwise; 49 MiB (64 over
  // 56x56) one kernel. Channels-last instance norm (its images rows outside the reduction) one
  // kernel at 128 MiB; LOOM_NO_TWO_PASS keeps the one kernel.
  auto bn = findExample("batch_norm")->build(DType::F16);
  const Bindings big{{"N", 128}, {"C", 128}, {"H", 56}, {"W", 56}}, small{{"N", 128}, {"C", 64}, {"H", 56}, {"W", 56}};
  auto p = plan(*bn, big, loom::test::channelsLastImages(*bn));
  REQUIRE(p.segments.size() == 2);
  CHECK(p.segments[0].scheduler == "reduction");
  CHECK(p.segments[1].scheduler == "pointwise");
  CHECK(has(p.str(*bn), "holding one load of 98 MiB, the rows one axis inside the reduction"));
  CHECK(plan(*bn, small, loom::test::channelsLastImages(*bn)).segments.size() == 1);
  CompileOptions one{{90, 132}};
  one.tuning.no_two_pass = true;
  CHECK(segment::segmentFusion(*bn, big, descsFor(*bn, big, loom::test::channelsLastImages(*bn)), one).segments.size() == 1);
  auto in = findExample("instance_norm")->build(DType::F16);
  const Bindings images{{"N", 8}, {"C", 64}, {"H", 256}, {"W", 256}};
  CHECK(plan(*in, images, loom::test::channelsLastImages(*in)).segments.size() == 1);
  // Layer norm of column-major rows (var_mean) two kernels; RMS norm's (no var_mean) one.
  auto ln = findExample("layer_norm")->build(DType::F16);
  const Bindings cols{{"N", 4097}, {"D", 12289}};
  CHECK(plan(*ln, cols, {{"x", {1, 0}}}).segments.size() == 2);
  auto rms = findExample("rms_norm")->build(DType::BF16);
  const Bindings square{{"N", 8192}, {"D", 8192}};
  CHECK(plan(*rms, square, {{"x", {1, 0}}}).segments.size() == 1);
}

TEST_CASE("sums over rows of 1024 vectors or more that fill the GPU a block a row: the reduction scheduler's", "[segment]") {
  // LayerNorm2d backward over NCHW, f16 32x768x14x14: dw and db over N, H and W of each channel
  // (6272 elements, 1568 vectors of 4) in registers, not held in shared memory.
  auto f = findExample("layer_norm_2d_backward")->build(DType::F16);
  auto p = plan(*f, {{"N", 32}, {"C", 768}, {"H", 14}, {"W", 14}});
  REQUIRE(p.segments.size() == 2);
  CHECK(p.segments[1].scheduler == "reduction");
  // Rows of 784 elements (196 vectors): the normalization scheduler's, many to a block.
  auto q = plan(*f, {{"N", 4}, {"C", 768}, {"H", 14}, {"W", 14}});
  REQUIRE(q.segments.size() == 2);
  CHECK(q.segments[1].scheduler == "normalization");
}

TEST_CASE("rows strided along their reduction that no tier holds: two kernels past 1 MiB", "[segment]") {
  // Channels-last batch norm backward of 64 channels at 64x64x112x112 and of 3 channels: no
  // row-vector tier holds the channels, so one kernel would read an element a load.
  auto f = findExample("batch_norm_backward")->build(DType::F16);
  for (const Bindings& sizes : {Bindings{{"N", 64}, {"C", 64}, {"H", 112}, {"W", 112}},
                                Bindings{{"N", 8}, {"C", 3}, {"H", 331}, {"W", 313}}}) {
    auto p = plan(*f, sizes, loom::test::channelsLastImages(*f));
    REQUIRE(p.segments.size() == 2);
    CHECK(p.segments[0].scheduler == "reduction");
    CHECK(p.segments[1].scheduler == "pointwise");
    CHECK(has(p.str(*f), "one kernel: rows strided along their reduction that no row-vector tier holds are read a "
                         "load an element"));
    CompileOptions one{{90, 132}};
    one.tuning.no_two_pass = true;
    CHECK(segment::segmentFusion(*f, sizes, descsFor(*f, sizes, loom::test::channelsLastImages(*f)), one)
              .segments.size() == 1);
  }
  // Under 1 MiB of rows: the one kernel.
  const Bindings small{{"N", 1}, {"C", 3}, {"H", 256}, {"W", 256}};
  CHECK(plan(*f, small, loom::test::channelsLastImages(*f)).segments.size() == 1);
}

TEST_CASE("recurrent cells' backward: one kernel, the gate gradients stored as the bias sums read them", "[segment]") {
  for (const char* name : {"lstm_cell_backward", "gru_cell_backward"}) {
    auto l = findExample(name)->build(DType::F16);
    for (auto sizes : {Bindings{{"B", 256}, {"H", 1024}}, Bindings{{"B", 4096}, {"H", 1024}}, Bindings{{"B", 7}, {"H", 129}}}) {
      INFO(name << " B=" << sizes["B"] << " H=" << sizes["H"]);
      auto lp = plan(*l, sizes);
      REQUIRE(lp.segments.size() == 1);
      CHECK(lp.segments[0].scheduler == "reduction");
      CHECK(has(lp.str(*l), "stores of elements written as they are read"));
      // The gate gradients come out as [B, k*H] matrices of rows (the inputs' order), not transposed.
      const auto& d = lp.segments[0].output_descs[0];
      CHECK(d.strides.back() == 1);
    }
  }
}

// A segment may read no input at all (a sum of a fill): the normalization scheduler's atom order
// came from the largest input and read past an empty list (a crash at 73c25f8).
TEST_CASE("reductions of a fill, beside an input's or alone, are planned", "[segment]") {
  for (bool with_input : {true, false}) {
    auto f = parseFusion(std::string("fusion z {\n") + (with_input ? "  in x: f32[N, D]\n" : "") +
                         "  z: f32[N, D] = full(value=1.5, dtype=f32, shape=[N, D])\n"
                         "  s: f32[N] = sum(z, dims=[1])\n" +
                         (with_input ? "  t: f32[N] = sum(x, dims=[1])\n  out t = t\n" : "") + "  out s = s\n}\n");
    auto p = plan(*f, {{"N", 64}, {"D", 100}});
    INFO(p.str(*f));
    CHECK(p.segments.size() == 1);
  }
}

// With dhy or dcy left out, the cell's gradients still lie on one [B, H] space: no op joins cx
// and cy then (the workspace's gate slices do not unite their sliced dim), but inputs of one
// type are aligned.
TEST_CASE("lstm_cell_backward with dhy or dcy left out is one kernel", "[segment]") {
  for (bool has_dhy : {false, true}) {
    auto f = loom::test::lstmCellBackwardOneGradient(DType::F16, has_dhy);
    INFO((has_dhy ? "dhy only" : "dcy only") << "\n" << plan(*f, {{"B", 7}, {"H", 129}}).str(*f));
    CHECK(plan(*f, {{"B", 7}, {"H", 129}}).segments.size() == 1);
    CHECK(plan(*f, {{"B", 256}, {"H", 1024}}).segments.size() == 1);
  }
}

TEST_CASE("a value beside its own transpose is no kernel's iteration space: pointwise, then its sum", "[segment]") {
  FusionBuilder fb("self_transpose");
  auto x = fb.input("x", DType::F32, {"N", "N"});
  fb.output("y", x + permute(x, {1, 0}));
  fb.output("s", sum(x, {0, 1}));
  auto f = fb.finish();
  for (int64_t n : {64, 4096}) {
    auto p = plan(*f, {{"N", n}});
    INFO(p.str(*f));
    REQUIRE(p.segments.size() == 2);
    CHECK(p.segments[0].scheduler == "pointwise");
    CHECK(has(p.str(*f), "`x` has the same domain (extent N) on dims 0 and 1"));
  }
}

TEST_CASE("layer norm of a slice of a wider matrix: its output is laid out as rows, stored in vectors", "[segment]") {
  auto f = parseFusionFile(std::string(LOOM_SOURCE_DIR) + "/examples/fusions/layer_norm_of_slice.loom");
  auto p = plan(*f, {{"N", 4096}, {"D", 1024}});
  REQUIRE(p.segments.size() == 1);
  CHECK(p.segments[0].output_descs[0].strides == std::vector<int64_t>{1024, 1});
}

TEST_CASE("reductions of the inputs first where that makes fewer kernels; loom segment says which plan lost", "[segment]") {
  // Group norm backward, its sums as written (LOOM_NO_SPLIT_REDUCTIONS): in order, the group
  // statistics with dx, then dw and db (2 kernels); reductions first would take 4. The plan says so.
  auto f = findExample("group_norm_backward")->build(DType::F16);
  const Bindings sizes{{"N", 32}, {"C", 128}, {"H", 64}, {"W", 64}};
  CompileOptions opts{{90, 132}};
  opts.tuning.no_split_reductions = true;
  auto p = segment::segmentFusion(*f, sizes, descsFor(*f, sizes), opts);
  CHECK(p.segments.size() == 2);
  CHECK(has(p.str(*f), "reductions of the inputs first: 4 kernels moving"));
  CHECK(has(p.str(*f), "(not fewer kernels or bytes)"));
}

TEST_CASE("layer norm followed by a sum over the other dim is one kernel; without column reductions two, with reasons",
          "[segment]") {
  FusionBuilder fb("ln_colsum");
  auto x = fb.input("x", DType::F32, {"N", "D"});
  auto y = layer_norm(x, {"D"});
  fb.output("y", y);
  fb.output("colsum", sum(y, {0}));
  auto f = fb.finish();
  const Bindings sizes{{"N", 64}, {"D", 256}};
  auto one = plan(*f, sizes);
  REQUIRE(one.segments.size() == 1);
  CHECK(one.segments[0].scheduler == "normalization");
  CHECK(one.str(*f).find("1 column reduction over {N} beside the rows'") != std::string::npos);
  CompileOptions split{{90, 132}};
  split.tuning.no_columns = true;
  auto p = segment::segmentFusion(*f, sizes, test::descsFor(*f, sizes), split);
  REQUIRE(p.segments.size() == 2);
  CHECK(p.segments[0].scheduler == "normalization");
  REQUIRE_FALSE(p.whole_rejections.empty());
  std::string all = p.str(*f);
  INFO(all);
  CHECK(all.find("column reductions share no kernel with the rows' (LOOM_NO_COLUMNS)") != std::string::npos);
  // Bytes: x (64 x 256 f32) read by both kernels, y written once, the column sums once; one
  // kernel would move x, y and the sums once.
  const uint64_t xb = 64 * 256 * 4, sums = 256 * 4;
  CHECK(p.one_kernel_bytes == 2 * xb + sums);
  CHECK(p.bytes() > p.one_kernel_bytes);
  CHECK(all.find(fmt::format("2 kernels, moving {:.2f} MB", static_cast<double>(p.bytes()) / 1e6)) != std::string::npos);
  CHECK(all.find(fmt::format("one kernel would move {:.2f} MB", static_cast<double>(2 * xb + sums) / 1e6)) !=
        std::string::npos);
  CHECK(all.find("  bytes:   reads ") != std::string::npos);
  CHECK(one.one_kernel_bytes == one.bytes());
  CHECK_FALSE(p.segments[0].rejections.empty());
  // JSON for programs.
  std::string j = p.json(*f);
  CHECK(j.find("\"segments\": [") != std::string::npos);
  CHECK(j.find("\"scheduler\": \"normalization\"") != std::string::npos);
  CHECK(j.find("\"rejections\": [") != std::string::npos);
  CHECK(j.find(fmt::format("\"one_kernel_bytes\": {}", 2 * xb + sums)) != std::string::npos);
  CHECK(j.find("\"bytes_read\": ") != std::string::npos);
  // Graphviz, one color per segment.
  std::string d = p.dot(*f);
  CHECK(d.find("digraph") != std::string::npos);
  CHECK(d.find("(kernel 2)") != std::string::npos);
}

TEST_CASE("two reductions over different atoms feeding one output", "[segment]") {
  FusionBuilder fb("row_plus_col");
  auto x = fb.input("x", DType::F32, {"N", "D"});
  auto rows = sum(x, {1}, true);  // [N, 1b]
  auto cols = sum(x, {0}, true);  // [1b, D]
  fb.output("y", rows + cols);
  auto f = fb.finish();
  auto p = plan(*f, {{"N", 33}, {"D", 70}});
  // The row and column sums in one kernel (the column sums as its column reductions), then the
  // add: an output that varies along the rows cannot read the column sums in their kernel.
  REQUIRE(p.segments.size() == 2);
  CHECK_FALSE(p.whole_rejections.empty());
  CHECK(p.segments[0].scheduler == "normalization");
  CHECK(p.segments[1].scheduler == "pointwise");
  bool said = false;
  for (const auto& r : p.whole_rejections)
    said = said || r.find("reads a column reduction but varies along the rows") != std::string::npos;
  CHECK(said);
}

TEST_CASE("conflicting splits of one domain cannot share a kernel", "[segment]") {
  FusionBuilder fb("conflict");
  auto x = fb.input("x", DType::F32, {"N", 12});
  fb.output("a", sum(reshape(x, {"N", 2, 6}), {2}));
  fb.output("b", sum(reshape(x, {"N", 3, 4}), {2}));
  auto f = fb.finish();
  auto p = plan(*f, {{"N", 8}});
  CHECK(p.segments.size() == 2);
  std::string all = p.str(*f);
  INFO(all);
  CHECK(all.find("split two incompatible ways") != std::string::npos);
}

TEST_CASE("sums of the same shape over independent inputs share a kernel, unless that would conflict", "[segment]") {
  FusionBuilder fb("two_sums");
  auto a = fb.input("a", DType::F32, {"N", "C"});
  auto b = fb.input("b", DType::F16, {"N", "C"});
  fb.output("s", sum(a, {0}));
  fb.output("t", amax(b, {0}));
  fb.output("rows", sum(b, {1}));  // the other dims: a kernel of its own
  auto f = fb.finish();
  auto p = plan(*f, {{"N", 300}, {"C", 70}});
  INFO(p.str(*f));
  REQUIRE(p.segments.size() == 2);
  CHECK(p.segments[0].ops.size() == 2);
  CHECK(p.segments[0].scheduler == "reduction");
  auto d = analysis::domainsOf(*f);
  CHECK(d->conflicts().empty());
  CHECK(d->axisAtoms(a.value(), 0) == d->axisAtoms(b.value(), 0));
  CHECK(d->axisAtoms(a.value(), 1) == d->axisAtoms(b.value(), 1));
  // b stored transposed: one kernel would read one of them across its layout, so a kernel each
  // (b's row and column reductions together).
  auto t = plan(*f, {{"N", 300}, {"C", 70}}, {{"b", {1, 0}}});
  REQUIRE(t.segments.size() == 2);
  CHECK(t.segments[0].ops.size() == 1);
  CHECK(has(t.str(*f), "parts of it that share no value lay out their dims in different orders"));

  // Aligned, a's C would be split both as (2, C/2) and as (4, C/4): left apart, no conflict.
  FusionBuilder cb("apart");
  auto x = cb.input("x", DType::F32, {"N", 8});
  auto y = cb.input("y", DType::F32, {"N", 8});
  cb.output("sx", sum(x, {0}));
  cb.output("sy", sum(y, {0}));
  cb.output("rx", reshape(x, {"N", 2, 4}));
  cb.output("ry", reshape(y, {"N", 4, 2}));
  auto g = cb.finish();
  auto dg = analysis::domainsOf(*g);
  CHECK(dg->conflicts().empty());
  CHECK(dg->axisAtoms(x.value(), 1) != dg->axisAtoms(y.value(), 1));
}

TEST_CASE("a row too long for registers stays one kernel and the schedule says where it lives", "[segment]") {
  auto f = findExample("layer_norm")->buildDefault();
  // 2^22 f16 elements: slices in every SM's shared memory (the grid tier); one more element
  // rules out vector loads, so the row streams.
  for (auto [d, where] : {std::pair<int64_t, const char*>{1 << 22, "cooperative grid"},
                          {(1 << 22) + 1, "does not fit in registers"}}) {
    auto p = plan(*f, {{"N", 2}, {"D", d}});
    REQUIRE(p.segments.size() == 1);
    INFO(p.segments[0].params);
    CHECK(p.segments[0].params.find(where) != std::string::npos);
  }
}

TEST_CASE("a chain of 200 pointwise ops is one kernel, segmented quickly", "[segment]") {
  FusionBuilder fb("chain200");
  auto x = fb.input("x", DType::F32, {"N", "D"});
  auto b = fb.input("b", DType::F32, {"D"});
  Tensor t = x;
  for (int i = 0; i < 200; ++i) t = (i % 3 == 0) ? t * 1.0001 : (i % 3 == 1) ? t + b : tanh(t);
  fb.output("y", t);
  auto f = fb.finish();
  REQUIRE(f->ops().size() >= 200);
  auto t0 = std::chrono::steady_clock::now();
  auto p = plan(*f, {{"N", 1024}, {"D", 1024}});
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  CHECK(p.segments.size() == 1);
  WARN("200-op fusion segmented in " << ms << " ms");
  CHECK(ms < 1000);  // generous for a loaded CI machine; docs/performance.md#segment-time has the figure
}

TEST_CASE("a 200-op fusion that must be cut segments in well under a second", "[segment]") {
  // 50 alternating row and column reductions: every neighbour pair conflicts.
  FusionBuilder fb("alternating");
  auto x = fb.input("x", DType::F32, {"N", "D"});
  Tensor t = x;
  for (int i = 0; i < 50; ++i) {
    t = t - (i % 2 ? sum(t, {0}, true) : sum(t, {1}, true)) * 0.01;
    t = tanh(t);
  }
  fb.output("y", t);
  auto f = fb.finish();
  auto t0 = std::chrono::steady_clock::now();
  auto p = plan(*f, {{"N", 64}, {"D", 64}});
  double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  WARN(f->ops().size() << "-op fusion cut into " << p.segments.size() << " kernels in " << ms << " ms");
  CHECK(p.segments.size() >= 2);
  CHECK(p.segments.size() <= 51);
  CHECK(ms < 5000);
}

TEST_CASE("broadcasts and casts never force a cut by themselves", "[segment]") {
  FusionBuilder fb("mixed_views");
  auto x = fb.input("x", DType::F16, {"N", "C", "H", "W"});
  auto b = fb.input("b", DType::F32, {"C"});
  auto t = fb.input("t", DType::BF16, {"W", "H"});
  auto y = toCompute(x) * broadcast(b, {true, false, true, true}) +
           broadcastToRank(cast(permute(t, {1, 0}), DType::F32), 4);
  fb.output("y", cast(silu(y), DType::F16));
  fb.output("s", b * 2.0);  // another shape: the one real reason for a second kernel
  auto f = fb.finish();
  auto p = plan(*f, {{"N", 2}, {"C", 24}, {"H", 5}, {"W", 7}});
  INFO(p.str(*f));
  REQUIRE(p.segments.size() == 2);
  CHECK(p.segments[0].ops.size() == 9);
}

TEST_CASE("a normalization of a slice iterates the slice's rows, not the whole matrix's", "[segment][norm]") {
  // Layer norm of the middle third of a [N, 3*D] matrix (a q of a packed qkv): the matrix's
  // 3*D axis is an atom no access moves along. It used to be iterated too: N * 3D rows, each
  // normalizing the same row again (scripts/fuzz_fusions.py found it).
  FusionBuilder fb("ln_q");
  auto x = fb.input("x", DType::F16, {"N", Dim(Extent::symbol("D") * 3)});
  auto q = slice(x, 1, "D", Dim(Extent::symbol("D") * 2));
  fb.output("y", layer_norm(q, {"D"}));
  auto f = fb.finish();
  const Bindings sizes{{"N", 4096}, {"D", 1024}};
  auto p = plan(*f, sizes);
  REQUIRE(p.segments.size() == 1);
  INFO(p.segments[0].params);
  CHECK_THAT(p.segments[0].params, Catch::StartsWith("4096 rows over {N} x 1024 elements over {D}"));
  // A whole reduction of a slice is one row.
  FusionBuilder fb2("amax_q");
  auto x2 = fb2.input("x", DType::F32, {"N", Dim(Extent::symbol("D") * 3)});
  fb2.output("m", amax(slice(x2, 1, "D", Dim(Extent::symbol("D") * 2)), {0, 1}));
  auto f2 = fb2.finish();
  auto p2 = plan(*f2, {{"N", 64}, {"D", 256}});
  REQUIRE(p2.segments.size() == 1);
  CHECK_THAT(p2.segments[0].params, Catch::StartsWith("1 rows over {}"));
}

TEST_CASE("ops no output needs are in no kernel, and the plan says so", "[segment]") {
  FusionBuilder fb("dead");
  auto x = fb.input("x", DType::F32, {"N", Dim(Extent::symbol("D") * 2)});
  auto a = slice(x, 1, 0, "D");
  auto b = slice(x, 1, "D", Dim(Extent::symbol("D") * 2));
  auto unused = exp(a) * 2.0;  // read by nothing
  (void)unused;
  fb.output("y", amax(b, {1}, true));
  auto f = fb.finish();
  auto p = plan(*f, {{"N", 64}, {"D", 256}});
  REQUIRE(p.segments.size() == 1);
  CHECK(p.unused.size() == 3);  // the slice a, exp, mul
  for (const ir::Op* op : p.unused)
    CHECK(std::find(p.segments[0].ops.begin(), p.segments[0].ops.end(), op) == p.segments[0].ops.end());
  const std::string text = p.str(*f);
  CHECK(text.find("not computed, as no output needs them: slice") != std::string::npos);
  CHECK_THAT(p.segments[0].params, Catch::StartsWith("64 rows over {N} x 256 elements over {D}"));
  CHECK(p.json(*f).find("\"unused\": [") != std::string::npos);
}

TEST_CASE("sums split in two steps where the rows' kernel takes the first: less moved, said why", "[segment]") {
  auto gn = findExample("group_norm_backward")->build(DType::F16);
  // Group norm backward, C/G = 4 channels a group, rows of 256 x 256: dw and db summed over H and
  // W of each channel beside the rows (sub-row reductions: x and dy read once), then over N.
  const Bindings big{{"N", 32}, {"C", 128}, {"H", 256}, {"W", 256}};
  auto p = plan(*gn, big);
  REQUIRE(p.segments.size() == 2);  // the rows' kernel, then both sums over N in one
  REQUIRE(p.rewritten);
  CHECK(p.segments[0].scheduler == "normalization");
  CHECK(p.segments[0].sub.outputs.size() == 3);  // dx, and the sums of each (n, c)
  CHECK(has(p.segments[0].params, "sub-row reductions"));
  CHECK(p.bytes() < p.one_kernel_bytes + (uint64_t{1} << 20));
  CHECK(has(p.str(*gn), "as written: 2 kernels moving 2684.37 MB (this plan"));
  // The plan's dot graph is the rewritten fusion's.
  CHECK(has(p.dot(*gn), "(kernel 2)"));
  CHECK_FALSE(has(p.dot(*gn), "(kernel 3)"));
  REQUIRE(p.segments[1].ops.size() == 2);
  // Small images: the split plan is as many kernels and moves less, but not a kernel's weight
  // less: as written.
  auto small = plan(*gn, {{"N", 8}, {"C", 64}, {"H", 32}, {"W", 32}});
  CHECK(small.segments.size() == 2);
  CHECK_FALSE(small.rewritten);
  CHECK(has(small.str(*gn), "in two steps (that part first): 2 kernels moving"));
  // Channels-last: a chunk's lanes are the channels each sum keeps (lane k in channel k of the
  // group), the rows split over the grid: split too.
  auto nhwc = plan(*gn, big, {{"x", {0, 2, 3, 1}}, {"dy", {0, 2, 3, 1}}});
  REQUIRE(nhwc.segments.size() == 2);
  CHECK(nhwc.rewritten);
  CHECK(has(nhwc.segments[0].params, "tier grid"));
  CHECK(has(nhwc.segments[0].params, "sub-row reductions"));
  CHECK(nhwc.bytes() < nhwc.one_kernel_bytes + (uint64_t{1} << 20));
  // Instance norm backward: the first step is the rows' own sum (per image and channel).
  auto in = findExample("instance_norm_backward")->build(DType::F16);
  auto ip = plan(*in, {{"N", 32}, {"C", 64}, {"H", 128}, {"W", 128}});
  REQUIRE(ip.segments.size() == 2);
  CHECK(ip.bytes() < ip.one_kernel_bytes + (uint64_t{1} << 20));
  // Layer norm backward's dw and db reduce none of the rows' atoms: nothing to split.
  auto ln = findExample("layer_norm_backward")->build(DType::F16);
  CHECK(segment::splitReductions(*ln) == nullptr);
}

TEST_CASE("a sum split in two steps computes the same values", "[segment]") {
  auto f = findExample("group_norm_backward")->build(DType::F32);
  auto g = segment::splitReductions(*f);
  REQUIRE(g);
  CHECK(g->outputs().size() == f->outputs().size());
  const Bindings sizes{{"N", 3}, {"C", 64}, {"H", 5}, {"W", 7}};
  std::vector<HostTensor> in;
  uint64_t seed = 3;
  for (const ir::Value* v : f->inputs()) in.push_back(HostTensor::random(v->dtype(), evalShape(v, sizes), seed++, -1, 1));
  const auto a = evaluateReference(*f, in, sizes), b = evaluateReference(*g, in, sizes);
  REQUIRE(a.size() == b.size());
  const auto cs = compareOutputs(*f, in, sizes, b, a);
  for (size_t i = 0; i < cs.size(); ++i) {
    INFO("output " << i << ": " << cs[i].str());
    CHECK(cs[i].ok);
  }
}
