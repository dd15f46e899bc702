// CPU-only: the PTX of pointwise fusions passes ptxas for sm_80 and sm_90 and uses vector
// loads where the schedule says so.
#include <catch2/catch.hpp>

#include "tests/compile_test_util.h"

#include "compiler/codegen/ptxas_check.h"
#include "compiler/compile.h"
#include "compiler/schedule/pointwise/pointwise.h"
#include "frontend/internal_api.h"
#include "tests/pointwise_fusions.h"

using namespace loom;
using loom::test::descsFor;

namespace {

std::string ptxOf(const ir::Fusion& f, const Bindings& sizes, int sm,
                  const std::map<std::string, std::vector<int>>& layouts = {}) {
  return compileFusion(f, sizes, descsFor(f, sizes, layouts), CompileOptions{{sm, 132}}).ptx;
}

void requirePtxas(const std::string& ptx, int sm) {
  std::string err = loom::test::ptxasErrors(ptx, sm);
  INFO(err);
  REQUIRE(err.empty());
}

}  // namespace

TEST_CASE("pointwise built-ins compile to PTX that ptxas accepts, with vector loads", "[ptx][pointwise]") {
  for (const char* name : {"add", "lstm_cell", "gru_cell", "bias_gelu"}) {
    const Example* e = findExample(name);
    REQUIRE(e != nullptr);
    auto f = e->buildDefault();
    for (int sm : {80, 90}) {
      INFO(name << " sm_" << sm);
      std::string ptx = ptxOf(*f, e->default_sizes, sm);
      CHECK(ptx.find(".entry loom_" + std::string(name)) != std::string::npos);
      CHECK(ptx.find(fmt::format(".target sm_{}", sm)) != std::string::npos);
      // The cells read 17 and 13 streams: two f16 lanes (32-bit accesses) a thread, not 8.
      const bool cell = std::string(name) == "lstm_cell" || std::string(name) == "gru_cell";
      CHECK(ptx.find(cell ? "ld.global.nc.u32" : "ld.global.nc.v4") != std::string::npos);
      CHECK(ptx.find(cell ? "st.global.b32" : "st.global.v4") != std::string::npos);
      if (cell) CHECK(ptx.find("ld.global.nc.v4") == std::string::npos);
      requirePtxas(ptx, sm);
    }
  }
}

TEST_CASE("fusions that read many streams take narrower vectors and more threads", "[pointwise]") {
  struct Case {
    const char* name;
    DType t;
    Bindings sizes;
    const char* expect;
  };
  for (const Case& c : {Case{"lstm_cell", DType::F16, {{"B", 256}, {"H", 1024}}, "131072 chunks of 2"},
                        Case{"lstm_cell", DType::F32, {{"B", 256}, {"H", 1024}}, "131072 chunks of 2"},
                        Case{"gru_cell", DType::BF16, {{"B", 512}, {"H", 2048}}, "524288 chunks of 2"},
                        Case{"bias_gelu", DType::BF16, {{"N", 4096}, {"D", 1024}}, "524288 chunks of 8"},
                        Case{"add", DType::F16, {{"N", 1 << 20}}, "131072 chunks of 8"}}) {
    auto f = findExample(c.name)->build(c.t);
    StageText text;
    compileFusion(*f, c.sizes, descsFor(*f, c.sizes), CompileOptions{{90, 132}}, &text);
    INFO(c.name << " " << dtypeName(c.t) << "\n" << text[DumpStage::Schedule]);
    CHECK(text[DumpStage::Schedule].find(c.expect) != std::string::npos);
    // Narrowed kernels take blocks of 128.
    const bool narrow = std::string(c.expect).find("of 2") != std::string::npos;
    CHECK(text[DumpStage::Schedule].find(narrow ? "128 threads" : "256 threads") != std::string::npos);
  }
}

TEST_CASE("every pointwise op in every dtype passes ptxas", "[ptx][pointwise]") {
  for (const auto& f : test::everyPointwiseOp()) {
    INFO(f->name());
    requirePtxas(ptxOf(*f, {{"N", 1024}}, 90), 90);
  }
}

TEST_CASE("misaligned and strided inputs fall back from vector loads", "[ptx][pointwise]") {
  auto f = findExample("add")->buildDefault();
  Bindings sizes{{"N", 4096}};
  auto d = descsFor(*f, sizes);
  d[0].align_bytes = 2;  // x starts one f16 past a 16-byte boundary
  StageText text;
  compileFusion(*f, sizes, d, CompileOptions{{90, 132}}, &text);
  CHECK(text[DumpStage::Kernel].find("load.f16 x[0 + i.[1]]  (gather)") != std::string::npos);
  CHECK(text[DumpStage::Kernel].find("load.f16 y[0 + i.[1]]  (vector)") != std::string::npos);
  requirePtxas(text[DumpStage::PTX], 90);
}

TEST_CASE("channels-last input makes a channels-last iteration", "[ptx][pointwise]") {
  FusionBuilder fb("bias_relu_nchw");
  auto x = fb.input("x", DType::F16, {"N", "C", "H", "W"});
  auto b = fb.input("b", DType::F16, {"C"});
  fb.output("y", relu(x + broadcast(b, {true, false, true, true})));
  auto f = fb.finish();
  Bindings sizes{{"N", 2}, {"C", 64}, {"H", 7}, {"W", 9}};
  auto d = descsFor(*f, sizes, {{"x", {0, 2, 3, 1}}});
  StageText text;
  auto k = compileFusion(*f, sizes, d, CompileOptions{{90, 132}}, &text);
  INFO(text[DumpStage::Kernel]);
  // The output follows x's NHWC order; the whole thing collapses to one contiguous axis for x
  // and the output, and b is read with stride 1 along C (the innermost axis now).
  CHECK(k.outputs[0].strides == std::vector<int64_t>{64 * 7 * 9, 1, 9 * 64, 64});
  CHECK(text[DumpStage::Kernel].find("order [0, 2, 3, 1]") != std::string::npos);
  requirePtxas(text[DumpStage::PTX], 90);
}

TEST_CASE("a fusion with a reduction is refused by the pointwise scheduler with a reason", "[pointwise]") {
  auto f = findExample("layer_norm")->buildDefault();
  Bindings sizes{{"N", 4}, {"D", 64}};
  std::string why;
  auto k = schedule::schedulePointwise(*f, sizes, descsFor(*f, sizes), CompileOptions{}, &why);
  CHECK_FALSE(k.has_value());
  CHECK(why.find("is a reduction") != std::string::npos);
}

TEST_CASE("a pointwise grid takes one chunk per thread; its index is wide enough to pass the end",
          "[pointwise]") {
  struct Case {
    DType dt;
    int64_t n;
    const char* expect;
  };
  const Case cases[] = {
      {DType::F16, int64_t{1} << 28, "33554432 chunks of 8 (32-bit indexing); 256 threads x 1 chunk per trip, grid 131072 (one trip)"},
      {DType::F32, 1000003, "1000003 chunks of 1 (32-bit indexing); 256 threads x 1 chunk per trip, grid 3907 (one trip)"},
      // 2^30 + 1 chunks: the chunk after the last trip is past 2^31
      {DType::F32, (int64_t{1} << 30) + 1, "1073741825 chunks of 1 (64-bit indexing)"},
  };
  for (const Case& c : cases) {
    auto f = findExample("add")->build(c.dt);
    Bindings sizes{{"N", c.n}};
    StageText text;
    compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}, &text);
    INFO(text[DumpStage::Schedule]);
    CHECK(text[DumpStage::Schedule].find(c.expect) != std::string::npos);
  }
  // The sweep override: a grid-stride loop over 8 blocks per SM, 4 chunks a trip.
  auto f = findExample("add")->build(DType::F16);
  Bindings sizes{{"N", int64_t{1} << 28}};
  CompileOptions opts{{90, 132}};
  opts.tuning.pw_blocks_per_sm = 8;
  opts.tuning.pw_unroll = 4;
  StageText text;
  compileFusion(*f, sizes, descsFor(*f, sizes), opts, &text);
  CHECK(text[DumpStage::Schedule].find("256 threads x 4 chunks per trip, grid 1056 (grid-stride)") != std::string::npos);
}

namespace {
// A per-group scale over an image: y = x * s[n, g], computed in the grouped shape
// [N, G, C/G, H, W] and written as [N, C, H, W] (group norm backward's dx in PyTorch's form).
std::unique_ptr<ir::Fusion> groupScale(DType t) {
  FusionBuilder fb("group_scale");
  auto x = fb.input("x", t, {"N", "C", "H", "W"});
  auto s = fb.input("s", DType::F32, {Dim("N"), Dim(32)});
  auto xg = reshape(toCompute(x), {x.size(0), Extent(32), x.size(1) / Extent(32), x.size(2), x.size(3)});
  auto sg = broadcast(s, {false, false, true, true, true});
  fb.output("y", reshape(cast(xg * sg, t), {x.size(0), x.size(1), x.size(2), x.size(3)}));
  return fb.finish();
}
}  // namespace

TEST_CASE("an output reshaped from a grouped computation is written through its reshape", "[ptx][pointwise]") {
  // Reading the per-group scale through the reshape would merge G and C/G, unevenly spaced
  // (strides 1 and 0): the kernel iterates over the grouped shape and stores through the reshape.
  auto f = groupScale(DType::F16);
  const Bindings sizes{{"N", 3}, {"C", 96}, {"H", 7}, {"W", 9}};
  for (bool nhwc : {false, true}) {
    INFO((nhwc ? "channels-last" : "NCHW"));
    std::map<std::string, std::vector<int>> lay;
    if (nhwc) lay["x"] = {0, 2, 3, 1};
    StageText st;
    auto k = compileFusion(*f, sizes, descsFor(*f, sizes, lay), CompileOptions{{90, 132}}, &st);
    CHECK(st[DumpStage::Schedule].find("pointwise:") == 0);
    REQUIRE(k.outputs.size() == 1);
    CHECK(k.outputs[0].shape == std::vector<int64_t>{3, 96, 7, 9});
    // The output follows x's memory order.
    CHECK(k.outputs[0].strides == (nhwc ? std::vector<int64_t>{6048, 1, 864, 96} : std::vector<int64_t>{6048, 63, 9, 1}));
    requirePtxas(k.ptx, 90);
  }
}

TEST_CASE("one axis whose length the vector does not divide: whole vectors and a tail", "[pointwise][peel]") {
  struct Case {
    DType t;
    int64_t n;
    int vec, tail;
  };
  for (const Case& c : {Case{DType::F16, 1000001, 8, 1}, Case{DType::F32, 4099, 4, 3}, Case{DType::F64, 65537, 2, 1},
                        Case{DType::F16, 255, 1, 0}}) {  // (fewer than 32 vectors: the widest dividing)
    auto f = findExample("add")->build(c.t);
    const Bindings sizes{{"N", c.n}};
    INFO(dtypeName(c.t) << " " << c.n);
    std::string why;
    auto k = schedule::schedulePointwise(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}, &why);
    REQUIRE(k);
    INFO(k->reason);
    CHECK(k->vec == c.vec);
    CHECK(k->tail == (c.tail > 0));
    for (const auto& s : k->stores) CHECK(s.access == (c.vec > 1 ? kir::Access::Vector : kir::Access::Gather));
    if (c.tail > 0) {
      CHECK(k->reason.find(fmt::format("a tail of {} one at a time", c.tail)) != std::string::npos);
      const std::string ptx = ptxOf(*f, sizes, 90);
      requirePtxas(ptx, 90);
      // LOOM_NO_PEEL: the widest vector dividing the axis; LOOM_TUNE_SYMBOLIC: the size at run
      // time, the tail's elements tested against it (one kernel for every size, as before).
      CompileOptions no;
      no.tuning.no_peel = true;
      CHECK(schedule::schedulePointwise(*f, sizes, descsFor(*f, sizes), no, &why)->vec == 1);
      CompileOptions sym{{90, 132}};
      sym.tuning.symbolic = true;
      auto ks = schedule::schedulePointwise(*f, sizes, descsFor(*f, sizes), sym, &why);
      CHECK(ks->size_symbol == "N");
      CHECK(ks->tail);
      CHECK(ks->vec == c.vec);
      requirePtxas(compileFusion(*f, sizes, descsFor(*f, sizes), sym).ptx, 90);
    }
  }
}
