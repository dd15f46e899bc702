// CPU-only: normalization kernels with column reductions (RowKernel::columns): which fusions
// get them (layer and RMS norm backward, a layer norm beside column sums, maxima and means),
// which do not and why, and the kernel they compile to: a cooperative grid, the partials in a
// workspace, one grid barrier, a fixed-order combine; ptxas accepts it.
#include <catch2/catch.hpp>

#include <algorithm>

#include "tests/compile_test_util.h"

#include "compiler/compile.h"
#include "compiler/schedule/scheduler.h"

using namespace loom;
using loom::test::descsFor;
using loom::test::has;

namespace {

std::optional<schedule::Planned> planOf(const ir::Fusion& f, const Bindings& sizes, std::vector<std::string>* why,
                                        const CompileOptions& opts = CompileOptions{DeviceInfo{90, 132}}) {
  return schedule::planSegment(f, sizes, descsFor(f, sizes), opts, "k", why);
}

std::string whyNot(const std::vector<std::string>& why) {
  std::string all;
  for (const auto& w : why) all += w + "\n";
  return all;
}

}  // namespace

TEST_CASE("layer and RMS norm backward: dx, dw and db in one cooperative kernel", "[schedule][norm][columns]") {
  for (const char* name : {"layer_norm_backward", "rms_norm_backward"}) {
    for (DType t : {DType::F16, DType::BF16, DType::F32}) {
      for (auto sizes : {Bindings{{"N", 4096}, {"D", 4096}}, Bindings{{"N", 3}, {"D", 1531}},
                         Bindings{{"N", 65544}, {"D", 77}}, Bindings{{"N", 1}, {"D", 4099}}}) {
        auto f = findExample(name)->build(t);
        INFO(name << " " << dtypeName(t) << " N=" << sizes["N"] << " D=" << sizes["D"]);
        std::vector<std::string> why;
        auto p = planOf(*f, sizes, &why);
        REQUIRE(p.has_value());
        CHECK(p->scheduler == "normalization");
        CHECK(p->launch.cooperative);
        CHECK(has(p->reason, "column reduction"));
        CHECK(has(p->reason, "combined in a fixed order"));
        CHECK(p->launch.grid <= 132 * 8);
        CHECK(p->launch.workspace_bytes > 128);
      }
    }
  }
}

TEST_CASE("long rows keep their column partials in shared memory, each thread its own slots", "[schedule][norm][columns]") {
  // D = 16384: the row (4 chunks of 8 a thread, 512 threads) and its 64 partials do not fit
  // registers together: the row is streamed (each pass reads it again, from L2), the partials
  // take slots in shared memory (128 KiB a block for dw and db), one block an SM (RMS norm's dw
  // alone, 64 KiB, over 4096 rows: two an SM, below).
  for (const char* name : {"layer_norm_backward", "rms_norm_backward"}) {
    for (DType t : {DType::F16, DType::BF16, DType::F32}) {
      for (auto sizes : {Bindings{{"N", 4096}, {"D", 16384}}, Bindings{{"N", 77}, {"D", 12296}}}) {
        auto f = findExample(name)->build(t);
        INFO(name << " " << dtypeName(t) << " D=" << sizes["D"]);
        std::vector<std::string> why;
        auto p = planOf(*f, sizes, &why);
        REQUIRE(p.has_value());
        CHECK(p->launch.cooperative);
        CHECK(has(p->reason, "in slots of its own in shared memory"));
        CHECK(p->launch.shared_bytes >= 32 * 1024);
        CHECK(p->launch.grid <= (has(p->reason, "two blocks an SM") ? 264 : 132));
      }
    }
  }
  auto f = findExample("layer_norm_backward")->build(DType::F16);
  const Bindings sizes{{"N", 4096}, {"D", 16384}};
  StageText st;
  auto k = compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}, &st);
  CHECK(k.shared_bytes == 2 * 16384 * 4);
  CHECK(has(st[DumpStage::KIR], "smem.dyn loom_row_smem: 131072 bytes"));
  CHECK(has(st[DumpStage::Kernel], "tier streamed: each pass reads the row again"));
  CHECK(has(st[DumpStage::KIR], "[cfold]"));
  LOOM_CHECK_PTXAS(k.ptx, 90);
  // Where shared memory is smaller (sm_86: 99 KiB a block) the partials do not fit: two kernels.
  std::vector<std::string> why;
  CHECK_FALSE(planOf(*f, sizes, &why, CompileOptions{DeviceInfo{86, 84}}).has_value());
}

TEST_CASE("a streamed row with one column reduction: two blocks an SM of half the threads", "[schedule][norm][columns]") {
  auto plan = [](const char* name, DType t, const Bindings& sizes, const CompileOptions& opts) {
    auto f = findExample(name)->build(t);
    std::vector<std::string> why;
    auto p = planOf(*f, sizes, &why, opts);
    REQUIRE(p.has_value());
    return *p;
  };
  const CompileOptions h100{DeviceInfo{90, 132}};
  // RMS norm's dw: 64 KiB of partials a block, so two blocks of 256 fit an SM, each thread 8
  // chunks (unrolled by 4) and 128 registers.
  for (DType t : {DType::F16, DType::BF16}) {
    const auto p = plan("rms_norm_backward", t, {{"N", 2048}, {"D", 16384}}, h100);
    CHECK(p.launch.block == 256);
    CHECK(p.launch.grid == 264);
    CHECK(has(p.reason, "half the threads a row, two blocks an SM, chunk loops unrolled by 4"));
    CHECK(has(p.reason, "threads per row: 256, two blocks an SM"));
  }
  auto f = findExample("rms_norm_backward")->build(DType::BF16);
  const Bindings sizes{{"N", 2048}, {"D", 16384}};
  StageText st;
  auto k = compileFusion(*f, sizes, descsFor(*f, sizes), h100, &st);
  CHECK(has(st[DumpStage::KIR], "unroll 4"));
  LOOM_CHECK_PTXAS(k.ptx, 90);
  // Fewer than 6 rows a block at two an SM: one block of 512, whose partials cost half.
  CHECK(plan("rms_norm_backward", DType::BF16, {{"N", 1024}, {"D", 16384}}, h100).launch.block == 512);
  // Layer norm's dw and db (128 KiB a block) let one block of 256 in: 512 threads, as before.
  const auto ln = plan("layer_norm_backward", DType::F16, {{"N", 4096}, {"D", 16384}}, h100);
  CHECK(ln.launch.block == 512);
  CHECK(ln.launch.grid == 132);
  CHECK_FALSE(has(ln.reason, "two blocks an SM"));
  // A row of 8 chunks at 512 threads would take 16 at 256, more than a thread streams.
  const auto wide = plan("rms_norm_backward", DType::BF16, {{"N", 2048}, {"D", 32768}}, h100);
  CHECK(wide.launch.block == 512);
  // The threads a row set by hand: as set.
  CompileOptions knob = h100;
  knob.tuning.threads_per_row = 512;
  CHECK(plan("rms_norm_backward", DType::BF16, {{"N", 2048}, {"D", 16384}}, knob).launch.block == 512);
}

TEST_CASE("column kernels keep static and dynamic shared memory within a block's, or split", "[schedule][norm][columns]") {
  // Found in review: 3 or 4 column reductions beside long rows, few rows (the combine's static
  // slots grow with the block): one kernel only where ptxas and the launch take its memory.
  for (int ncols : {2, 3, 4, 6})
    for (auto sizes : {Bindings{{"N", 32}, {"D", 16384}}, Bindings{{"N", 4096}, {"D", 12296}}, Bindings{{"N", 64}, {"D", 4096}}}) {
      FusionBuilder fb("cols");
      auto x = fb.input("x", DType::F16, {"N", "D"});
      auto xc = toCompute(x);
      fb.output("y", cast(xc - mean(xc, {1}, true), DType::F16));
      for (int j = 0; j < ncols; ++j) fb.output(fmt::format("s{}", j), sum(xc * static_cast<double>(j + 1), {0}));
      auto f = fb.finish();
      INFO(ncols << " column reductions, N=" << sizes["N"] << " D=" << sizes["D"]);
      auto plan = compilePlan(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}});
      for (const auto& pk : plan.kernels) {
        CHECK(pk.kernel.shared_bytes <= 227 * 1024);
        LOOM_CHECK_PTXAS(pk.kernel.ptx, 90);
      }
    }
}

TEST_CASE("column reductions: the kernel IR and PTX", "[schedule][norm][columns]") {
  auto f = findExample("layer_norm_backward")->build(DType::BF16);
  const Bindings sizes{{"N", 8192}, {"D", 4096}};
  StageText stages;
  auto k = compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}, &stages);
  const std::string& kir = stages[DumpStage::KIR];
  CHECK(k.cooperative);
  // Two column reductions (dw, db): 264 partials of 4096 f32 each, past 128 bytes of counters.
  CHECK(has(stages[DumpStage::Schedule], "grid of 264 blocks (2 per SM)"));
  CHECK(k.workspace_bytes == 128 + 2 * 264 * 4096 * 4);
  CHECK(has(kir, "barrier.grid: counter *workspace reaches 264"));
  CHECK(has(kir, "ld.relaxed.gpu"));
  CHECK(has(kir, "shfl.bfly"));
  CHECK(has(kir, "[tile, uniform]"));  // 256 tiles over 264 blocks: one trip, under a condition
  CHECK(has(kir, "[gexit]"));
  CHECK(has(k.ptx, "ld.relaxed.gpu.global.v4.f32"));
  CHECK(has(k.ptx, "atom.add.release.gpu.global.u32"));
  // Two blocks an SM hold 128 registers a thread: the row's 2 chunks of x, dy and w, and the
  // next row's x and dy (the partials in shared memory); ptxas spills a few bytes at most.
  int spills = -1;
  LOOM_CHECK_PTXAS(k.ptx, 90, &spills);
  CHECK(spills >= 0);
  CHECK(spills <= 32);
}

TEST_CASE("column kernels load the next row's x and dy a row ahead where registers allow", "[schedule][norm][columns]") {
  auto carried = [](const std::string& name, DType t, const Bindings& sizes, std::optional<int> knob) {
    auto f = findExample(name)->build(t);
    CompileOptions opts{{90, 132}};
    opts.tuning.row_prefetch = knob;
    StageText stages;
    auto k = compileFusion(*f, sizes, descsFor(*f, sizes), opts, &stages);
    LOOM_CHECK_PTXAS(k.ptx, 90);
    const std::string& kir = stages[DumpStage::KIR];
    const size_t at = kir.find("carrying (");
    REQUIRE(at != std::string::npos);
    const std::string line = kir.substr(at, kir.find('\n', at) - at);
    return static_cast<int>(std::count(line.begin(), line.end(), '='));
  };
  // RMS norm backward, bf16, 2 chunks a thread: dw's 2 partials, then x and dy of 2 chunks ahead.
  const Bindings rms{{"N", 8192}, {"D", 4096}};
  CHECK(carried("rms_norm_backward", DType::BF16, rms, std::nullopt) == 6);
  CHECK(carried("rms_norm_backward", DType::BF16, rms, 0) == 2);
  // Layer norm backward at D = 4096 holds 96 values a thread with them: none ahead (they spill);
  // f32 rows neither; the knob forces them.
  const Bindings ln{{"N", 4096}, {"D", 4096}};
  CHECK(carried("layer_norm_backward", DType::F16, ln, std::nullopt) == 4);
  CHECK(carried("layer_norm_backward", DType::F16, ln, 1) == 8);
  CHECK(carried("layer_norm_backward", DType::F32, {{"N", 8192}, {"D", 1024}}, std::nullopt) == 2);
}

TEST_CASE("column partials in shared memory beside rows in registers, where that lets the next row's loads in",
          "[schedule][norm][columns]") {
  const Bindings sizes{{"N", 4096}, {"D", 4096}};
  auto f = findExample("layer_norm_backward")->build(DType::F16);
  StageText stages;
  auto k = compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}}, &stages);
  const std::string& kir = stages[DumpStage::KIR];
  CHECK(has(stages[DumpStage::Schedule], "the row stays in registers"));
  CHECK(has(stages[DumpStage::Schedule], "in slots of its own in shared memory (32 KiB a block), the row in registers"));
  CHECK(has(stages[DumpStage::Schedule], "grid of 264 blocks (2 per SM)"));  // as many as with the partials in registers
  // Each thread's slots: 2 chunks of 8 f32 lanes, of dw and db, for 256 threads.
  CHECK(k.shared_bytes == 2 * 8 * 4 * 2 * 256);
  CHECK(has(kir, "= loom_row_smem[byte"));  // the slots read and written in the rows' loop
  // The loop carries no partials: only the next row's x and dy (2 chunks each).
  const size_t at = kir.find("carrying (");
  REQUIRE(at != std::string::npos);
  const std::string line = kir.substr(at, kir.find('\n', at) - at);
  CHECK(std::count(line.begin(), line.end(), '=') == 4);
  // Without the partials' 32 registers, the next row's loads fit: nothing spills.
  int spills = -1;
  LOOM_CHECK_PTXAS(k.ptx, 90, &spills);
  CHECK(spills == 0);
  auto placed = [&](const char* name, DType t, const Bindings& at, std::optional<int> knob) {
    auto g = findExample(name)->build(t);
    CompileOptions opts{{90, 132}};
    opts.tuning.column_smem = knob;
    StageText st;
    compileFusion(*g, at, descsFor(*g, at), opts, &st);
    return has(st[DumpStage::Schedule], "in slots of its own in shared memory") ? "smem" : "registers";
  };
  // Where the loads already go ahead beside the partials (RMS norm: one column reduction), f32
  // rows (never ahead), and rows a block shares (D = 1024: 128 threads a row): registers.
  CHECK(placed("rms_norm_backward", DType::BF16, {{"N", 8192}, {"D", 4096}}, std::nullopt) == std::string("registers"));
  CHECK(placed("layer_norm_backward", DType::F32, sizes, std::nullopt) == std::string("registers"));
  CHECK(placed("layer_norm_backward", DType::F16, {{"N", 4096}, {"D", 1024}}, 1) == std::string("registers"));
  // Where the loads ahead fit beside neither (4 chunks a thread at D = 8192): 512 threads a row,
  // 2 chunks each, the partials in shared memory; f32 rows (never ahead) keep theirs in registers.
  auto threads = [&](DType t, std::optional<int> knob) {
    auto g = findExample("layer_norm_backward")->build(t);
    const Bindings wide{{"N", 4096}, {"D", 8192}};
    CompileOptions opts{{90, 132}};
    opts.tuning.column_smem = knob;
    StageText st;
    auto kw = compileFusion(*g, wide, descsFor(*g, wide), opts, &st);
    LOOM_CHECK_PTXAS(kw.ptx, 90);
    return std::string(has(st[DumpStage::Schedule], "512 threads per row, 2 chunks") ? "512" : "other") +
           (has(st[DumpStage::Schedule], "in slots of its own in shared memory") ? " smem" : " registers");
  };
  CHECK(threads(DType::F16, std::nullopt) == "512 smem");
  CHECK(threads(DType::BF16, std::nullopt) == "512 smem");
  CHECK(threads(DType::F16, 0) == "other registers");
  CHECK(threads(DType::F32, std::nullopt) == "other registers");
  // The knob: never, or always where one row fills a block.
  CHECK(placed("layer_norm_backward", DType::F16, sizes, 0) == std::string("registers"));
  CHECK(placed("rms_norm_backward", DType::BF16, {{"N", 8192}, {"D", 4096}}, 1) == std::string("smem"));
}

TEST_CASE("column kernels take fewer blocks an SM where that shortens the rows' tail", "[schedule][norm][columns]") {
  auto grid = [](const Bindings& sizes, bool symbolic) {
    auto f = findExample("layer_norm_backward")->build(DType::F16);
    CompileOptions opts{{90, 132}};
    opts.tuning.symbolic = symbolic;
    StageText st;
    compileFusion(*f, sizes, descsFor(*f, sizes), opts, &st);
    const std::string& s = st[DumpStage::Schedule];
    const size_t at = s.find("cooperative grid of ");
    return at == std::string::npos ? std::string() : s.substr(at + 20, s.find(" per SM", at) - at - 13);
  };
  // 2048 sets of 2 rows: 6 trips of 396 blocks (3 an SM) against 8 of 264, 11% less.
  CHECK(grid({{"N", 4096}, {"D", 1024}}, false) == "264 blocks (2 per SM");
  // 16384 sets: 42 trips of 396 against 63 of 264, a tie: the blocks the registers allow.
  CHECK(grid({{"N", 32768}, {"D", 1024}}, false) == "396 blocks (3 per SM");
  // 1600 sets: 1 block an SM would take 13 trips against 5 of 3 (15 set-times), but the rule
  // goes one block down at most (to 2: 7 trips, 14 set-times, not 10% less).
  CHECK(grid({{"N", 3200}, {"D", 1024}}, false) == "396 blocks (3 per SM");
  // A kernel serving many row counts keeps them too.
  CHECK(grid({{"N", 4096}, {"D", 1024}}, true) == "396 blocks (3 per SM");
}

TEST_CASE("column sums, maxima and means beside a layer norm: one kernel, any of them", "[schedule][norm][columns]") {
  FusionBuilder fb("ln_cols");
  auto x = fb.input("x", DType::F16, {"N", "D"});
  auto y = layer_norm(toCompute(x), {"D"});
  fb.output("y", cast(y, DType::F16));
  fb.output("s", sum(y, {0}));
  fb.output("m", amax(y, {0}));
  fb.output("lo", amin(y, {0}));
  fb.output("avg", mean(y * y, {0}));
  auto f = fb.finish();
  for (auto sizes : {Bindings{{"N", 1000}, {"D", 1024}}, Bindings{{"N", 7}, {"D", 3}}}) {
    std::vector<std::string> why;
    auto p = planOf(*f, sizes, &why);
    INFO(whyNot(why));
    REQUIRE(p.has_value());
    CHECK(has(p->reason, "4 column reductions over {N}"));
    auto k = compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}});
    LOOM_CHECK_PTXAS(k.ptx, 90);
    LOOM_CHECK_PTXAS(compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{80, 108}}).ptx, 80);
  }
}

TEST_CASE("column reductions refused: statistics, strided rows, outputs along the rows, the knob",
          "[schedule][norm][columns]") {
  const Bindings sizes{{"N", 256}, {"D", 512}};
  auto refuse = [&](const ir::Fusion& f, const std::string& reason, const CompileOptions& opts) {
    std::vector<std::string> why;
    CHECK_FALSE(planOf(f, sizes, &why, opts).has_value());
    INFO(whyNot(why));
    CHECK(has(whyNot(why), reason));
  };
  const CompileOptions opts{DeviceInfo{90, 132}};
  {
    FusionBuilder fb("colstats");
    auto x = fb.input("x", DType::F32, {"N", "D"});
    auto y = layer_norm(x, {"D"});
    fb.output("y", y);
    fb.output("v", var_mean(y, {0}).var);
    refuse(*fb.finish(), "neither can be the other's column reductions", opts);
  }
  {
    FusionBuilder fb("strided");
    auto x = fb.input("x", DType::F32, {"D", "N"});
    auto xt = permute(x, {1, 0});  // [N, D] with D outermost in memory: rows strided along D
    fb.output("rows", sum(xt, {1}));
    fb.output("cols", sum(xt, {0}));
    refuse(*fb.finish(), "beside rows strided along their reduction", opts);
  }
  {
    FusionBuilder fb("along");
    auto x = fb.input("x", DType::F32, {"N", "D"});
    fb.output("y", sum(x, {1}, true) + sum(x, {0}, true));
    refuse(*fb.finish(), "reads a column reduction but varies along the rows", opts);
  }
  {
    auto f = findExample("layer_norm_backward")->build(DType::F16);
    CompileOptions off = opts;
    off.tuning.no_columns = true;
    refuse(*f, "(LOOM_NO_COLUMNS)", off);
  }
}
