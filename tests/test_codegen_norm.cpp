// CPU-only: normalization built-ins schedule as ONE kernel whose PTX passes ptxas, and the
// domain analysis finds group norm's atoms through its reshapes.
#include <catch2/catch.hpp>

#include "tests/backward_builtins.h"
#include "tests/compile_test_util.h"
#include "tests/norm_fusions.h"

#include "compiler/analysis/domains.h"
#include "compiler/codegen/ptxas_check.h"
#include "compiler/compile.h"
#include "frontend/internal_api.h"

using namespace loom;
using loom::test::descsFor;

TEST_CASE("every built-in compiles to one kernel that ptxas accepts", "[ptx][norm]") {
  for (const auto& e : builtinExamples()) {
    if (loom::test::kMultiKernelBuiltins.count(e.name)) continue;  // tests/backward_builtins.h
    auto f = e.buildDefault();
    for (int sm : {80, 90}) {
      for (bool nhwc : {false, true}) {
        if (nhwc && loom::test::mainInput(*f)->rank() != 4) continue;
        std::map<std::string, std::vector<int>> lay;
        if (nhwc) lay = loom::test::channelsLastImages(*f);
        INFO(e.name << " sm_" << sm << (nhwc ? " nhwc" : ""));
        auto k = compileFusion(*f, e.default_sizes, descsFor(*f, e.default_sizes, lay), CompileOptions{{sm, 132}});
        LOOM_CHECK_PTXAS(k.ptx, sm);
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
  auto col = sum(y, {0}, true);
  fb.output("col", sum(y * col, {1}));  // a reduction of the rows reads the column sums
  auto f = fb.finish();
  Bindings sizes{{"N", 8}, {"D", 16}};
  CHECK_THROWS_WITH(compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}),
                    Catch::Contains("cannot share one kernel: their iterated atoms differ, and neither can be the "
                                    "other's column reductions"));
}

TEST_CASE("the schedule says where the row lives", "[norm]") {
  auto f = findExample("layer_norm")->buildDefault();
  // 2^20 + 1 f16 elements: no vector loads, too long for shared memory: streamed twice.
  for (auto [d, where] : {std::pair<int64_t, const char*>{1024, "stays in registers"},
                          {1 << 20, "cooperative grid"},
                          {(1 << 20) + 1, "does not fit in registers"}}) {
    Bindings sizes{{"N", 4}, {"D", d}};
    StageText text;
    compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}, &text);
    INFO(text[DumpStage::Schedule]);
    CHECK(text[DumpStage::Schedule].find(where) != std::string::npos);
  }
}


TEST_CASE("vectors of rows: a residual loaded and an output stored over rows, a row-only output", "[norm][ptx]") {
  auto f = test::layerNorm2dResidual();
  Bindings sizes{{"N", 8}, {"C", 64}, {"H", 56}, {"W", 56}};
  StageText text;
  auto k = compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}, &text);
  INFO(text[DumpStage::Schedule] << text[DumpStage::Kernel]);
  CHECK(text[DumpStage::Schedule].find("in vectors of 8 rows") != std::string::npos);
  const std::string& kern = text[DumpStage::Kernel];
  CHECK(kern.find("load.f32 r[0 + i.[200704, 1, 3136]]  (gather; over rows vector)") != std::string::npos);
  CHECK(kern.find("store.f32 y[i.[200704, 1, 3136]]") != std::string::npos);
  CHECK(kern.find("(gather, once per row)") != std::string::npos);
  LOOM_CHECK_PTXAS(k.ptx, 90);
}

TEST_CASE("short contiguous rows take a chunk per thread", "[norm]") {
  auto f = findExample("layer_norm_2d")->build(DType::F16);
  // Enough rows that none need more threads to fill the GPU.
  Bindings sizes{{"N", 64}, {"C", 128}, {"H", 56}, {"W", 56}};
  StageText text;
  compileFusion(*f, sizes, descsFor(*f, sizes, {{"x", {0, 2, 3, 1}}}), CompileOptions{{90, 132}}, &text);
  INFO(text[DumpStage::Schedule]);
  CHECK(text[DumpStage::Schedule].find("16 threads per row, 1 chunk of 8") != std::string::npos);
}

TEST_CASE("rows strided along their reduction but side by side in memory: vectors of rows", "[norm][ptx]") {
  struct Case {
    const char* fusion;
    DType t;
    Bindings sizes;
    bool nhwc;
    int row_vec;       // 0: not this tier
    const char* rows;  // rows per block, threads per row
    int align = 16;    // the inputs' alignment in bytes
  };
  const Case cases[] = {
      // LayerNorm2d NCHW: a pixel's channels are H*W apart, neighbouring pixels' rows adjacent
      {"layer_norm_2d", DType::F16, {{"N", 64}, {"C", 128}, {"H", 56}, {"W", 56}}, false, 8, "64 rows per block of 256"},
      {"layer_norm_2d", DType::F32, {{"N", 64}, {"C", 128}, {"H", 56}, {"W", 56}}, false, 4, "64 rows per block of 256"},
      // 60 pixels: vectors of 4 f16 rows; 1000 channels: 16 rows a block, 32 threads a row (3
      // blocks leave the SMs nearly empty: threads a row up to 32)
      // (180 rows: 16 a block, the fewest that read a 32-byte sector of each element)
      {"layer_norm_2d", DType::F16, {{"N", 3}, {"C", 5}, {"H", 6}, {"W", 10}}, false, 4, "16 rows per block"},
      {"layer_norm_2d", DType::BF16, {{"N", 2}, {"C", 1000}, {"H", 4}, {"W", 6}}, false, 8, "32 threads per row"},
      // channels-last instance norm: a channel's pixels are C apart, channels adjacent
      {"instance_norm", DType::F16, {{"N", 2}, {"C", 64}, {"H", 7}, {"W", 9}}, true, 8, "16 rows per block"},
      // 63 pixels of 7 x 9: no vector of rows fits, so a row's element a piece (f16: by loads
      // and stores; f32: with cp.async of 4 bytes), where 252 blocks of 16 rows (f32: 504 of 8)
      // fill the SMs (f16: under 2 blocks an SM, so 32 threads a row, blocks of 512) ...
      {"layer_norm_2d", DType::F16, {{"N", 64}, {"C", 64}, {"H", 7}, {"W", 9}}, false, 1, "32 threads per row, 2 chunks of 1 each, 16 rows per block of 512"},
      {"layer_norm_2d", DType::F32, {{"N", 64}, {"C", 64}, {"H", 7}, {"W", 9}}, false, 1, "8 rows per block of 256"},
      // ... and rows aligned to one element only, 4 x 4096 pixels: 512 blocks of 32 rows each
      {"layer_norm_2d", DType::F32, {{"N", 4}, {"C", 64}, {"H", 64}, {"W", 64}}, false, 1, "32 rows per block of 256", 4},
      {"layer_norm_2d", DType::F16, {{"N", 4}, {"C", 64}, {"H", 64}, {"W", 64}}, false, 1, "32 rows per block of 256", 2},
      // ... but not where 8 blocks would leave most SMs idle
      {"layer_norm_2d", DType::F16, {{"N", 2}, {"C", 64}, {"H", 7}, {"W", 9}}, false, 0, ""},
      // rows contiguous along the reduction: never
      {"layer_norm_2d", DType::F16, {{"N", 64}, {"C", 128}, {"H", 56}, {"W", 56}}, true, 0, ""},
      {"group_norm", DType::F16, {{"N", 2}, {"C", 64}, {"H", 16}, {"W", 16}}, true, 0, ""},
      // channels-last instance norm of 4096 pixels: 16 rows are more than 40 KiB, so sets of 64
      // rows are split over the grid
      {"instance_norm", DType::F16, {{"N", 2}, {"C", 64}, {"H", 64}, {"W", 64}}, true, 8, "2 sets of 64 rows, each split over 132 blocks"},
  };
  for (const Case& c : cases) {
    auto f = findExample(c.fusion)->build(c.t);
    std::map<std::string, std::vector<int>> lay;
    if (c.nhwc) lay["x"] = {0, 2, 3, 1};
    for (int sm : {80, 90}) {
      StageText text;
      auto descs = descsFor(*f, c.sizes, lay);
      for (auto& d : descs) d.align_bytes = std::min(d.align_bytes, c.align);
      auto k = compileFusion(*f, c.sizes, descs, CompileOptions{{sm, 132}}, &text);
      INFO(c.fusion << " " << dtypeName(c.t) << " sm_" << sm << "\n" << text[DumpStage::Schedule]);
      const std::string& sched = text[DumpStage::Schedule];
      CHECK((sched.find("rows side by side in memory") != std::string::npos) == (c.row_vec > 0));
      if (c.row_vec > 1) {
        CHECK(sched.find(fmt::format("in vectors of {} rows", c.row_vec)) != std::string::npos);
        CHECK(text[DumpStage::Kernel].find("over rows vector") != std::string::npos);
        CHECK(k.ptx.find("cp.async") != std::string::npos);
      }
      if (c.row_vec == 1) {
        CHECK(sched.find("a row's element at a time") != std::string::npos);
        // cp.async copies 4 bytes or more: 2-byte pieces are loaded and stored
        CHECK((k.ptx.find("cp.async") != std::string::npos) == (c.t == DType::F32));
        CHECK((k.ptx.find("st.shared.b16") != std::string::npos) == (c.t != DType::F32));
      }
      if (c.row_vec > 0) {
        CHECK(sched.find(c.rows) != std::string::npos);
        CHECK(k.shared_bytes <= 40u * 1024);
      }
      LOOM_CHECK_PTXAS(k.ptx, sm);
    }
  }
}

TEST_CASE("pieces of rows from an f16 and an f32 input: one loaded and stored, one copied", "[norm][ptx]") {
  auto f = loom::test::layerNorm2dOfSum();
  const Bindings sizes{{"N", 15}, {"C", 96}, {"H", 7}, {"W", 7}};
  for (int sm : {80, 90}) {
    StageText text;
    auto k = compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{sm, 132}}, &text);
    const std::string& sched = text[DumpStage::Schedule];
    INFO("sm_" << sm << "\n" << sched);
    CHECK(sched.find("a row's element at a time, by loads and stores below 4 bytes, with cp.async from 4") !=
          std::string::npos);
    CHECK(k.ptx.find("st.shared.b16") != std::string::npos);
    CHECK(k.ptx.find("cp.async.ca.shared.global") != std::string::npos);
    CHECK(k.ptx.find("cp.async.wait_all") != std::string::npos);
    LOOM_CHECK_PTXAS(k.ptx, sm);
  }
}

TEST_CASE("held loads contiguous along the reduction beside strided ones: the dump says so", "[norm][ptx]") {
  // x in NCHW (a pixel's channels H*W apart), r channels-last (contiguous): no tier of rows
  // side by side fits both.
  auto f = loom::test::layerNorm2dOfSum();
  const Bindings sizes{{"N", 4}, {"C", 96}, {"H", 14}, {"W", 14}};
  StageText text;
  compileFusion(*f, sizes, descsFor(*f, sizes, {{"r", {0, 2, 3, 1}}}), CompileOptions{{90, 132}}, &text);
  INFO(text[DumpStage::Schedule]);
  CHECK(text[DumpStage::Schedule].find("so each element is a load of its own: some of the loads held on chip are "
                                       "contiguous along the reduction, others strided") != std::string::npos);
}

TEST_CASE("rows the grid's whole sets cannot take: large blocks, sets cut short, or a row a block and the dump says why", "[norm][ptx]") {
  enum class Tier { Big, CutShort, RowABlock };
  struct Case {
    const char* fusion;
    DType t;
    Bindings sizes;
    std::vector<int> order;  // x's memory order, outer to inner
    Tier tier;
    const char* expect;  // in the schedule dump: the grid's sets, or why each element is a load of its own
    bool whole_sets_only = false;  // LOOM_NO_PARTIAL_SETS
  };
  const Case cases[] = {
      // 3520 and 2200 rows: no multiple of 16 rows a set, rows of 2304 and 4096 elements
      // (72 KiB and 128 KiB for 16 rows), 220 and 138 blocks of 16 rows past 40 KiB
      {"instance_norm", DType::F16, {{"N", 40}, {"C", 88}, {"H", 48}, {"W", 48}}, {0, 2, 3, 1}, Tier::Big, ""},
      {"softmax", DType::BF16, {{"N", 2200}, {"D", 4096}}, {1, 0}, Tier::Big, ""},
      // 120 and 1000 rows: 8 and 63 such blocks would leave SMs idle; sets of 64 rows over the
      // grid, the last cut short
      {"instance_norm", DType::F16, {{"N", 3}, {"C", 40}, {"H", 48}, {"W", 48}}, {0, 2, 3, 1}, Tier::CutShort,
       "2 sets of 64 rows (the last cut short to 56), each split over 132 blocks"},
      {"softmax", DType::BF16, {{"N", 1000}, {"D", 4096}}, {1, 0}, Tier::CutShort, "16 sets of 64 rows (the last cut short to 40), each split over 16 blocks"},
      {"softmax", DType::BF16, {{"N", 1000}, {"D", 4096}}, {1, 0}, Tier::RowABlock,
       "blocks of 16 rows would be 63, fewer than the 132 SMs, and the grid's sets of 16 rows or more do not divide "
       "1000 (and LOOM_NO_PARTIAL_SETS is set)", true},
      // 16 rows of 65536 elements fit no block, and 33000 rows divide by no set of 16
      {"softmax", DType::BF16, {{"N", 33000}, {"D", 65536}}, {1, 0}, Tier::CutShort, "516 sets of 64 rows (the last cut short to 40), each split over"},
      // channels-last batch norm of 100 channels, 160 000 elements: too few for sets cut short
      {"batch_norm", DType::BF16, {{"N", 4}, {"C", 100}, {"H", 20}, {"W", 20}}, {0, 2, 3, 1}, Tier::RowABlock,
       "blocks of 16 rows would be 7, fewer than the 132 SMs, and the grid's sets of 16 rows or more do not divide "
       "100, and so few elements take no sets cut short"},
      // LayerNorm2d over the 49 pixels of 7 x 7, a row's element a piece: 13 blocks of 16 rows
      {"layer_norm_2d", DType::BF16, {{"N", 4}, {"C", 768}, {"H", 7}, {"W", 7}}, {0, 1, 2, 3}, Tier::RowABlock,
       "blocks of 16 rows would be 13, fewer than a quarter of the 132 SMs, and so few rows' pieces are not split "
       "over the grid"},
      // 490 rows of 768 (376 320 elements, past 2048 an SM): still pieces too few for the grid
      {"layer_norm_2d", DType::BF16, {{"N", 10}, {"C", 768}, {"H", 7}, {"W", 7}}, {0, 1, 2, 3}, Tier::RowABlock,
       "blocks of 16 rows would be 31, fewer than a quarter of the 132 SMs, and so few rows' pieces are not split "
       "over the grid"},
  };
  for (const Case& c : cases) {
    auto f = findExample(c.fusion)->build(c.t);
    for (int sm : {80, 90}) {
      StageText text;
      CompileOptions opts{{sm, 132}};
      opts.tuning.no_partial_sets = c.whole_sets_only;
      auto k = compileFusion(*f, c.sizes, descsFor(*f, c.sizes, {{"x", c.order}}), opts, &text);
      const std::string& sched = text[DumpStage::Schedule];
      INFO(c.fusion << " " << dtypeName(c.t) << " sm_" << sm << "\n" << sched);
      CHECK((sched.find("rows side by side in memory") != std::string::npos) == (c.tier != Tier::RowABlock));
      CHECK((sched.find("so each element is a load of its own") != std::string::npos) == (c.tier == Tier::RowABlock));
      CHECK(sched.find(c.expect) != std::string::npos);
      if (c.tier == Tier::Big) {
        // (16 threads a row, then 32: these 220 and 138 blocks of one an SM leave the SMs under
        // 640 threads)
        CHECK(sched.find("32 threads per row") != std::string::npos);
        CHECK(sched.find("16 rows per block of 512") != std::string::npos);
        CHECK(k.shared_bytes > 40u * 1024);
      }
      if (c.tier != Tier::RowABlock) CHECK(k.ptx.find("cp.async") != std::string::npos);
      LOOM_CHECK_PTXAS(k.ptx, sm);
    }
  }
}

TEST_CASE("short rows that fit registers are held in shared memory by their own threads", "[norm][ptx]") {
  struct Case {
    std::unique_ptr<ir::Fusion> f;
    Bindings sizes;
    const char* expect;  // threads and rows per block; nullptr: the registers
    int64_t smem;        // bytes per block
  };
  Case cases[] = {
      {findExample("layer_norm")->build(DType::BF16), {{"N", 32768}, {"D", 256}}, "8 threads per row, 4 chunks of 8 each, 16 rows per block of 128", 8192},
      {findExample("rms_norm")->build(DType::F16), {{"N", 9001}, {"D", 256}}, "8 threads per row, 4 chunks of 8 each, 16 rows per block of 128", 8192},
      {findExample("layer_norm")->build(DType::F32), {{"N", 32768}, {"D", 256}}, "16 threads per row, 4 chunks of 4 each, 16 rows per block of 256", 16384},
      {findExample("layer_norm")->build(DType::F16), {{"N", 4096}, {"D", 1024}}, "32 threads per row, 4 chunks of 8 each, 8 rows per block of 256", 16384},
      // two held inputs: both copied
      {test::addLayerNorm(DType::BF16), {{"N", 9001}, {"D", 256}}, "8 threads per row, 4 chunks of 8 each, 16 rows per block of 128", 16384},
      // exp on every element, which each pass from shared memory would evaluate again
      {findExample("softmax")->build(DType::BF16), {{"N", 32768}, {"D", 256}}, nullptr, 0},
      // under a quarter of the GPU's thread slots (4096 rows x 16 threads)
      {findExample("rms_norm")->build(DType::BF16), {{"N", 4096}, {"D", 512}}, nullptr, 0},
      // 33 chunks of 8 a row: not four per thread
      {findExample("layer_norm")->build(DType::F16), {{"N", 32768}, {"D", 264}}, nullptr, 0},
      // 48 and 96 chunks: four each for 12 or 24 threads, whose rows would straddle warps
      {findExample("layer_norm")->build(DType::F16), {{"N", 32768}, {"D", 384}}, nullptr, 0},
      {findExample("rms_norm")->build(DType::BF16), {{"N", 32768}, {"D", 768}}, nullptr, 0},
  };
  for (const Case& c : cases) {
    for (int sm : {80, 90}) {
      StageText text;
      auto k = compileFusion(*c.f, c.sizes, descsFor(*c.f, c.sizes), CompileOptions{{sm, 132}}, &text);
      const std::string& sched = text[DumpStage::Schedule];
      INFO(c.f->name() << " sm_" << sm << "\n" << sched);
      CHECK((sched.find("reads back only those (no block barrier)") != std::string::npos) == (c.expect != nullptr));
      if (c.expect) {
        CHECK(sched.find(c.expect) != std::string::npos);
        CHECK(k.shared_bytes == static_cast<unsigned>(c.smem));
        CHECK(k.ptx.find("cp.async") != std::string::npos);
        CHECK(k.ptx.find("bar.sync") == std::string::npos);  // rows within a warp: shuffles only
      } else {
        CHECK(sched.find("the row stays in registers") != std::string::npos);
      }
      LOOM_CHECK_PTXAS(k.ptx, sm);
    }
  }
  // Turned off: the registers.
  auto f = findExample("layer_norm")->build(DType::BF16);
  Bindings sizes{{"N", 32768}, {"D", 256}};
  StageText text;
  CompileOptions opts{{90, 132}};
  opts.tuning.no_thread_fill = true;
  compileFusion(*f, sizes, descsFor(*f, sizes), opts, &text);
  CHECK(text[DumpStage::Schedule].find("the row stays in registers") != std::string::npos);
}

TEST_CASE("exp is ex2.approx only where every output is 16-bit", "[norm][ptx]") {
  for (DType t : {DType::F16, DType::BF16, DType::F32}) {
    auto f = findExample("softmax")->build(t);
    Bindings sizes{{"N", 8}, {"D", 4096}};
    auto k = compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}});
    INFO(dtypeName(t));
    // libdevice's expf rounds toward -inf once per call (fma.rm); the fast form never does.
    CHECK((k.ptx.find("fma.rm.f32") != std::string::npos) == (t == DType::F32));
    CHECK(k.ptx.find("ex2.approx") != std::string::npos);
  }
}

TEST_CASE("f64 math: blocks of at most 512 threads, two registers a held value, no spills", "[norm][ptx]") {
  struct Case {
    const char* example;
    Bindings sizes;
  };
  // Each spilled 68 to 180 bytes at sm_90 in blocks of 1024 threads (64 registers a thread).
  for (const Case& c : {Case{"group_norm", {{"N", 4}, {"C", 64}, {"H", 32}, {"W", 32}}},
                        Case{"rms_norm", {{"N", 512}, {"D", 8192}}},
                        Case{"layer_norm", {{"N", 1024}, {"D", 16384}}},
                        Case{"softmax", {{"N", 64}, {"D", 3 * 4099}}},
                        Case{"batch_norm", {{"N", 8}, {"C", 64}, {"H", 14}, {"W", 14}}}}) {
    for (int sm : {80, 90}) {
      auto f = findExample(c.example)->build(DType::F64);
      StageText text;
      auto k = compileFusion(*f, c.sizes, descsFor(*f, c.sizes), CompileOptions{{sm, 132}}, &text);
      INFO(c.example << " sm_" << sm << ": " << text[DumpStage::Schedule]);
      CHECK(k.block <= 512u);
      // The dump counts a held f64 value as two registers.
      CHECK(text[DumpStage::Schedule].find("f64 values per thread") != std::string::npos);
      int spill = -1;
      LOOM_CHECK_PTXAS(k.ptx, sm, &spill);
      CHECK(spill == 0);
    }
  }
  // An f32 kernel keeps blocks of 1024 threads where it wants them.
  auto f = findExample("rms_norm")->build(DType::F32);
  Bindings sizes{{"N", 512}, {"D", 8192}};
  CHECK(compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}).block == 1024u);
}

TEST_CASE("long rows: copied to shared memory with cp.async, split over a cluster on sm_90", "[norm][ptx]") {
  struct Case {
    const char* what;
    int sm;
    int64_t d;
    DType t;
    int cluster;  // 0: not the cp.async tier; -1: the grid tier
  };
  // Two held inputs: a row of D elements takes 2 * D * bytes of shared memory.
  for (const Case& c : {Case{"bf16 65536 on sm_90: 4 blocks of 64 KiB", 90, 65536, DType::BF16, 4},
                        Case{"bf16 32768 on sm_80: no clusters", 80, 32768, DType::BF16, 1},
                        Case{"f32 65536 + 8 on sm_90", 90, 65536 + 8, DType::F32, 8},
                        Case{"f32 2^17 on sm_90: 8 blocks of 128 KiB", 90, 1 << 17, DType::F32, 8},
                        Case{"f32 2^18: too long for any cluster: the grid tier", 90, 1 << 18, DType::F32, -1},
                        Case{"f32 2^20 on sm_80 (no clusters): the grid tier", 80, 1 << 20, DType::F32, -1},
                        Case{"f64 2^18: the grid tier, (count, mean, M2) unpacked", 90, 1 << 18, DType::F64, -1},
                        Case{"f16 rows of odd length, peeled: whole vectors over 8 blocks", 90, 3 * 40001, DType::F16, 8},
                        Case{"f16 rows of odd length unpeeled: no 4-byte pieces", 90, 3 * 40001, DType::F16, 0}}) {
    INFO(c.what);
    auto f = test::addLayerNorm(c.t);
    Bindings sizes{{"N", 4}, {"D", c.d}};
    StageText text;
    CompileOptions opts{{c.sm, 132}};
    opts.tuning.no_peel = std::string_view(c.what).find("unpeeled") != std::string_view::npos;
    auto k = compileFusion(*f, sizes, descsFor(*f, sizes), opts, &text);
    INFO(text[DumpStage::Schedule]);
    const bool tier = text[DumpStage::Schedule].find("with cp.async") != std::string::npos;
    CHECK(tier == (c.cluster != 0));
    CHECK(k.cluster == static_cast<unsigned>(std::max(1, c.cluster)));
    CHECK(k.cooperative == (c.cluster < 0));
    CHECK((k.workspace_bytes > 0) == (c.cluster < 0));
    if (c.cluster < 0) {
      CHECK(k.grid == 264u);  // one block per SM in each of two groups (4 sets)
      CHECK(k.ptx.find(".minnctapersm 2") != std::string::npos);
      CHECK(k.ptx.find("atom.add.release.gpu") != std::string::npos);
      CHECK(k.ptx.find("fence.acq_rel.gpu") != std::string::npos);
      CHECK(k.ptx.find("ld.relaxed.gpu") != std::string::npos);
      CHECK(k.ptx.find("ld.volatile") == std::string::npos);
    }
    if (c.cluster > 0) CHECK(k.grid == 4u * k.cluster);
    if (c.cluster != 0) {
      CHECK(k.ptx.find("cp.async") != std::string::npos);
      CHECK(k.shared_bytes <= 227u * 1024);
      // Two held inputs: two regions of shared memory per block.
      const int64_t blocks_per_row = c.cluster < 0 ? k.grid : k.cluster;
      CHECK(k.shared_bytes >= 2 * static_cast<unsigned>(c.d / blocks_per_row * dtypeBytes(c.t)));
    }
    CHECK((k.ptx.find("mapa") != std::string::npos) == (c.cluster > 1));
    CHECK((k.ptx.find("barrier.cluster") != std::string::npos) == (c.cluster > 1));
    LOOM_CHECK_PTXAS(k.ptx, c.sm);
  }
}

TEST_CASE("a row within a block's shared memory only before padding: a cluster, not the grid tier", "[norm][ptx]") {
  // Batch norm backward over NCHW, f16 64x512x28x28: x and dy of a channel take 196 KiB, but
  // 1024 threads of 7 chunks of 8 would take 224 KiB, past the block's 223.
  auto f = findExample("batch_norm_backward")->build(DType::F16);
  const Bindings sizes{{"N", 64}, {"C", 512}, {"H", 28}, {"W", 28}};
  StageText text;
  auto k = compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}, &text);
  INFO(text[DumpStage::Schedule]);
  CHECK(test::has(text[DumpStage::Schedule], "tier cluster"));
  CHECK(test::has(text[DumpStage::Schedule], "1 row of 196 KiB, 224 KiB as one block's threads take it"));
  CHECK(k.cluster == 4u);
  CHECK_FALSE(k.cooperative);
  LOOM_CHECK_PTXAS(k.ptx, 90);
  // On sm_80 (no clusters): the grid tier, as before.
  auto k80 = compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{80, 108}});
  CHECK(k80.cooperative);
}

TEST_CASE("channels-last group norm: neighbouring groups share a block's whole-line loads", "[norm][ptx]") {
  auto f = findExample("group_norm")->build(DType::F16);
  struct Case {
    Bindings sizes;
    const char* rows;  // rows per block in the schedule
  };
  for (const Case& c : {Case{{{"N", 16}, {"C", 512}, {"H", 64}, {"W", 64}}, "4 rows per block"},
                        // 2-channel groups want 32 per block (128 bytes): too many for a
                        // cluster, so the grid tier takes sets of 32
                        Case{{{"N", 2}, {"C", 64}, {"H", 160}, {"W", 160}}, "32 rows per block"},
                        // sets of 16 (128 bytes), two grid groups taking turns
                        Case{{{"N", 32}, {"C", 128}, {"H", 256}, {"W", 256}}, "16 rows per block"}}) {
    for (bool nhwc : {false, true}) {
      std::map<std::string, std::vector<int>> lay;
      if (nhwc) lay["x"] = {0, 2, 3, 1};
      StageText text;
      auto k = compileFusion(*f, c.sizes, descsFor(*f, c.sizes, lay), CompileOptions{{90, 132}}, &text);
      INFO(text[DumpStage::Schedule]);
      CHECK(text[DumpStage::Schedule].find("with cp.async") != std::string::npos);
      // NCHW groups are contiguous: one per block.
      CHECK(text[DumpStage::Schedule].find(nhwc ? c.rows : "1 row per block") != std::string::npos);
      // Three groups of 16-row sets (64 KiB blocks of 512 threads, three per SM, 40 registers).
      if (nhwc && c.sizes.at("N") == 32) {
        CHECK(text[DumpStage::Schedule].find("3 independent groups") != std::string::npos);
        CHECK(k.grid == 3u * 132u);
        CHECK(k.block == 512u);
      }
      CHECK(k.shared_bytes <= 227u * 1024);
      LOOM_CHECK_PTXAS(k.ptx, 90);
    }
  }
}

TEST_CASE("softmax divides by its row's sum with one reciprocal per row, not per element", "[norm][ptx]") {
  // Rows in registers, in shared memory, and over the grid: no element's division remains.
  auto f = findExample("softmax")->build(DType::BF16);
  for (int64_t d : {int64_t{1024}, int64_t{65536}, int64_t{1} << 22}) {
    INFO("D=" << d);
    Bindings sizes{{"N", 5}, {"D", d}};
    auto k = compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}});
    CHECK(k.ptx.find("div.rn.f32") == std::string::npos);
    CHECK(k.ptx.find("rcp.rn.f32") != std::string::npos);
  }
}

TEST_CASE("chunk loops are unrolled where one block holds whole rows in shared memory, or vectors of rows over the grid", "[norm][ptx]") {
  struct Case {
    std::unique_ptr<ir::Fusion> f;
    Bindings sizes;
    bool nhwc;
    bool unrolled;
  };
  Case cases[] = {
      {findExample("layer_norm")->build(DType::BF16), {{"N", 64}, {"D", 65536}}, false, true},
      {findExample("instance_norm")->build(DType::F16), {{"N", 8}, {"C", 64}, {"H", 256}, {"W", 256}}, false, true},
      // each thread copies its own chunks of a short row: more registers, fewer rows in flight
      {findExample("layer_norm")->build(DType::BF16), {{"N", 32768}, {"D", 256}}, false, false},
      // a row split over a cluster, and over the grid
      {findExample("group_norm")->build(DType::F16), {{"N", 32}, {"C", 128}, {"H", 256}, {"W", 256}}, false, false},
      // vectors of rows over the grid: their statistics' loop over 16-byte pieces, by 2
      {findExample("instance_norm")->build(DType::F16), {{"N", 8}, {"C", 64}, {"H", 256}, {"W", 256}}, true, true},
  };
  for (const Case& c : cases) {
    std::map<std::string, std::vector<int>> lay;
    if (c.nhwc) lay["x"] = {0, 2, 3, 1};
    std::vector<TensorDesc> descs = descsFor(*c.f, c.sizes, lay);
    INFO(c.f->name() << (c.nhwc ? " nhwc" : ""));
    auto k = compileFusion(*c.f, c.sizes, descs, CompileOptions{{90, 132}});
    CompileOptions plain{{90, 132}};
    plain.tuning.chunk_unroll = 1;
    const std::string loop = compileFusion(*c.f, c.sizes, descs, plain).ptx;
    CHECK((k.ptx != loop) == c.unrolled);
    LOOM_CHECK_PTXAS(k.ptx, 90);
  }
}
