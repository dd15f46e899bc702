// CPU-only: the grid tiers of the normalization scheduler (rows or vectors of rows too long for
// one block, split over a cooperative grid): their schedules, dumps and PTX (ptxas-checked).
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

TEST_CASE("vectors of rows too long for a block: sets of rows split over the grid", "[norm][ptx]") {
  struct Case {
    const char* fusion;
    DType t;
    Bindings sizes;
    const char* expect;
    unsigned grid_sm90;  // sm_80 (164 KiB an SM) may take fewer blocks
    bool vector_stats;   // statistics read by vectors of rows (not rows a thread holds in registers)
  };
  const Case cases[] = {
      // 64 channels of a sample a set (128 bytes a pixel): on sm_90 three groups of 88 blocks
      // (two an SM), on sm_80 two of 132
      {"instance_norm", DType::F16, {{"N", 8}, {"C", 64}, {"H", 256}, {"W", 256}},
       "8 sets of 64 rows, each split over", 3 * 88, true},
      // batch norm training: 256 channels in 4 sets, vectors of 4 f32 rows, running statistics
      {"batch_norm", DType::F32, {{"N", 64}, {"C", 256}, {"H", 28}, {"W", 28}},
       "4 sets of 64 rows, each split over 132 blocks of a cooperative grid", 2 * 132, true},
      // 96 channels: 3 sets of 32 (1.6 MB), 24 KiB a block over 132 blocks: over 88 each
      // instead, all three at once
      {"batch_norm", DType::BF16, {{"N", 16}, {"C", 96}, {"H", 40}, {"W", 40}},
       "3 sets of 32 rows, each split over 88 blocks", 3 * 88, false},
      // 16 sets of 1 MiB (8 KiB a block over 132): 16 groups of 16 blocks, every set at once
      {"instance_norm", DType::BF16, {{"N", 16}, {"C", 32}, {"H", 128}, {"W", 128}},
       "16 sets of 32 rows, each split over 16 blocks of a cooperative grid (2 per SM)", 16 * 16, true},
  };
  for (const Case& c : cases) {
    auto f = findExample(c.fusion)->build(c.t);
    for (int sm : {80, 90}) {
      StageText text;
      auto k = compileFusion(*f, c.sizes, descsFor(*f, c.sizes, {{"x", {0, 2, 3, 1}}}), CompileOptions{{sm, 132}}, &text);
      const std::string& sched = text[DumpStage::Schedule];
      INFO(c.fusion << " " << dtypeName(c.t) << " sm_" << sm << "\n" << sched);
      CHECK(sched.find("in vectors of") != std::string::npos);
      CHECK(sched.find(c.expect) != std::string::npos);
      if (sm == 90) CHECK(k.grid == c.grid_sm90);
      CHECK(k.cooperative);
      CHECK(text[DumpStage::Kernel].find("over rows vector") != std::string::npos);
      CHECK((k.ptx.find("rowvec_stats") != std::string::npos) == c.vector_stats);
      // The last block out zeroes the group's barrier counters: no memset before a launch.
      CHECK(k.ptx.find("atom.add.acq_rel.gpu.global.u32") != std::string::npos);
      CHECK(k.ptx.find("st.relaxed.gpu.global.u32") != std::string::npos);
      LOOM_CHECK_PTXAS(k.ptx, sm);
    }
  }
}

TEST_CASE("vectors of rows over the grid: their statistics by vectors for any threads per row", "[norm][ptx]") {
  // Threads per vector of rows W = T * row_vec below a warp, a warp, several warps, and rows
  // of a warp or more (f32: vectors of 4 rows); each compiles with the exchange through
  // shared memory, and without it where the schedule says so.
  struct Case {
    DType t;
    Bindings sizes;
    std::vector<int> threads;
  };
  const Case cases[] = {
      {DType::F16, {{"N", 32}, {"C", 64}, {"H", 56}, {"W", 57}}, {1, 2, 4, 8, 16}},
      {DType::F32, {{"N", 16}, {"C", 16}, {"H", 100}, {"W", 100}}, {1, 4, 16, 32}},
  };
  auto f = findExample("batch_norm");
  for (const Case& c : cases) {
    auto bn = f->build(c.t);
    for (int t : c.threads) {
      CompileOptions opts{{90, 132}};
      opts.tuning.threads_per_row = t;
      StageText text;
      auto k = compileFusion(*bn, c.sizes, descsFor(*bn, c.sizes, {{"x", {0, 2, 3, 1}}}), opts, &text);
      INFO(dtypeName(c.t) << " T=" << t << "\n" << text[DumpStage::Schedule]);
      CHECK(k.cooperative);
      CHECK(k.ptx.find("rowvec_stats") != std::string::npos);
      LOOM_CHECK_PTXAS(k.ptx, 90);
    }
  }
  auto bn = f->build(DType::F16);
  Bindings sizes{{"N", 32}, {"C", 64}, {"H", 56}, {"W", 57}};
  CompileOptions opts{{90, 132}};
  opts.tuning.rowvec_stats = 0;
  auto k = compileFusion(*bn, sizes, descsFor(*bn, sizes, {{"x", {0, 2, 3, 1}}}), opts);
  CHECK(k.ptx.find("rowvec_stats") == std::string::npos);
}

TEST_CASE("small sets of neighbouring rows go over fewer blocks each, more sets at once", "[norm]") {
  auto gn = findExample("group_norm")->build(DType::F16);
  struct Case {
    Bindings sizes;
    unsigned split, groups, per_sm;
  };
  // Channels-last group norm, sets of 16 groups (128 bytes a pixel): 8 sets of 2 MiB would
  // leave 132 blocks 15.5 KiB each; 32x128x256x256's 8 MiB sets fill them.
  for (const Case& c : {Case{{{"N", 4}, {"C", 128}, {"H", 128}, {"W", 128}}, 49, 8, 3},
                        Case{{{"N", 32}, {"C", 128}, {"H", 256}, {"W", 256}}, 132, 3, 3}}) {
    StageText text;
    auto k = compileFusion(*gn, c.sizes, descsFor(*gn, c.sizes, {{"x", {0, 2, 3, 1}}}), CompileOptions{{90, 132}}, &text);
    const std::string& sched = text[DumpStage::Schedule];
    INFO(sched);
    CHECK(k.cooperative);
    CHECK(k.grid == c.split * c.groups);
    CHECK(sched.find(fmt::format("each split over {} blocks of a cooperative grid ({} per SM)", c.split, c.per_sm)) !=
          std::string::npos);
    CHECK(sched.find(fmt::format("{} independent groups of {} blocks", c.groups, c.split)) != std::string::npos);
    CHECK(sched.find(c.split < 132 ? "a set each, all at once" : "take turns by set") != std::string::npos);
    CHECK(k.ptx.find(fmt::format(".minnctapersm {}", c.per_sm)) != std::string::npos);
    LOOM_CHECK_PTXAS(k.ptx, 90);
  }
}

TEST_CASE("GPUs of any SM count: a grid set takes two blocks or more, one SM none", "[norm][ptx]") {
  // Channels-last instance norm whose sets of 16 rows one block of 512 threads holds: with 108
  // SMs (an A100) or 46, each set once went to a grid group of ONE block, and the emitter
  // crashed (scripts/fuzz_compile.py, seeds 3 to 5). With one SM there is no grid tier at all.
  auto in = findExample("instance_norm")->build(DType::BF16);
  const Bindings img{{"N", 16}, {"C", 128}, {"H", 28}, {"W", 56}};
  auto rn = findExample("rms_norm")->build(DType::F32);
  const Bindings rows{{"N", 5}, {"D", (int64_t{1} << 19) + 8}};
  for (int sm : {80, 90}) {
    for (int sms : {1, 2, 3, 46, 108, 114, 132}) {
      for (int which = 0; which < 2; ++which) {
        const ir::Fusion& f = which == 0 ? *in : *rn;
        const Bindings& sizes = which == 0 ? img : rows;
        auto descs = which == 0 ? descsFor(f, sizes, {{"x", {3, 2, 1, 0}}}) : descsFor(f, sizes);
        INFO(f.name() << " sm_" << sm << ", " << sms << " SMs");
        StageText text;
        auto k = compileFusion(f, sizes, descs, CompileOptions{{sm, sms}}, &text);
        INFO(text[DumpStage::Schedule]);
        if (sms == 1) CHECK_FALSE(k.cooperative);
        if (k.cooperative) {
          CHECK(text[DumpStage::Schedule].find("each split over 1 block") == std::string::npos);
          CHECK(k.grid >= 2u);
        }
        LOOM_CHECK_PTXAS(k.ptx, sm);
      }
    }
  }
}

TEST_CASE("the grid tier takes more groups for more long rows", "[norm]") {
  auto f = findExample("rms_norm")->build(DType::F32);
  // Rows of 2^19 + 8 f32 (2 MiB: more than a cluster holds), one a set; a group walks 4+ sets.
  for (auto [n, groups] : {std::pair<int64_t, int>{1, 1}, {3, 1}, {5, 2}, {16, 4}, {64, 8}, {1000, 8}}) {
    Bindings sizes{{"N", n}, {"D", (int64_t{1} << 19) + 8}};
    StageText text;
    auto k = compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}, &text);
    INFO(text[DumpStage::Schedule]);
    CHECK(k.cooperative);
    CHECK(k.grid == 132u * static_cast<unsigned>(groups));
    CHECK((text[DumpStage::Schedule].find(fmt::format("{} independent groups", groups)) != std::string::npos) ==
          (groups > 1));
  }
}

TEST_CASE("blocks sharing an SM in the grid tier leave room for the driver's and the scratch's shared memory",
          "[norm]") {
  // rms_norm bf16 rows of 1850002 (pieces of 4 bytes): 8 groups would need 8 x 27.5 KiB of
  // row data plus 8 x (1 KiB reserved + scratch), more than an SM's 228 KiB: 4 groups.
  auto f = findExample("rms_norm")->build(DType::BF16);
  Bindings sizes{{"N", 64}, {"D", 1850002}};
  auto k = compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}});
  CHECK(k.cooperative);
  CHECK(k.grid == 4u * 132u);
  CHECK(4 * (k.shared_bytes + 1024) <= 228u * 1024);
}

TEST_CASE("the grid tier with two fill buffers copies the next set while it works on this one", "[norm][ptx]") {
  // A sweep option (LOOM_TUNE_GRID_PREFETCH): twice the shared memory per block, the first set
  // copied before the loop, one cp.async group committed per set and all but the newest awaited.
  CompileOptions opts{{90, 132}};
  opts.tuning.grid_prefetch = true;
  struct Case {
    std::unique_ptr<ir::Fusion> f;
    Bindings sizes;
  };
  Case cases[] = {
      {findExample("group_norm")->build(DType::F16), {{"N", 4}, {"C", 128}, {"H", 128}, {"W", 128}}},
      {findExample("batch_norm")->build(DType::F32), {{"N", 64}, {"C", 256}, {"H", 28}, {"W", 28}}},
  };
  for (const Case& c : cases) {
    INFO(c.f->name());
    StageText text;
    auto k = compileFusion(*c.f, c.sizes, descsFor(*c.f, c.sizes, {{"x", {0, 2, 3, 1}}}), opts, &text);
    const std::string& sched = text[DumpStage::Schedule];
    INFO(sched);
    CHECK(sched.find("cooperative grid") != std::string::npos);
    CHECK(sched.find("two fill buffers") != std::string::npos);
    CHECK(k.ptx.find("cp.async.commit_group") != std::string::npos);
    CHECK(k.ptx.find("cp.async.wait_group 1") != std::string::npos);
    CHECK(k.ptx.find("cp.async.wait_all") == std::string::npos);
    LOOM_CHECK_PTXAS(k.ptx, 90);
  }
}
