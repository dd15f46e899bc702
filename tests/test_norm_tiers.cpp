// CPU-only: the normalization scheduler's tiers (compiler/schedule/tiers.def) as typed
// values: each named once, and each reached by a shape whose schedule dump names it.
#include <catch2/catch.hpp>

#include <set>

#include "tests/compile_test_util.h"

#include "compiler/compile.h"
#include "compiler/schedule/normalization/normalization.h"
#include "compiler/schedule/row_kernel.h"
#include "frontend/examples.h"

using namespace loom;
using loom::test::descsFor;
using schedule::NormTier;

TEST_CASE("every normalization tier has a name and a description of its own", "[norm]") {
  std::set<std::string_view> names, whats;
  for (NormTier t : schedule::normTiers()) {
    CHECK_FALSE(schedule::normTierName(t).empty());
    CHECK_FALSE(schedule::normTierWhat(t).empty());
    names.insert(schedule::normTierName(t));
    whats.insert(schedule::normTierWhat(t));
  }
  CHECK(names.size() == schedule::normTiers().size());
  CHECK(whats.size() == schedule::normTiers().size());
}

TEST_CASE("each tier is reached, and the schedule dump names it", "[norm]") {
  struct Case {
    const char* example;
    DType t;
    Bindings sizes;  // empty: the example's own
    std::vector<int> order;  // x's memory order; empty: the default
    NormTier tier;
    int sm = 90;
    bool no_peel = false;  // rows of odd length read one element a chunk (LOOM_NO_PEEL)
  };
  const std::vector<int> nhwc = {0, 2, 3, 1};
  const Case cases[] = {
      {"layer_norm", DType::F16, {}, {}, NormTier::Registers},
      {"layer_norm", DType::BF16, {{"N", 9001}, {"D", 256}}, {}, NormTier::ThreadFill},
      {"layer_norm", DType::F64, {{"N", 1024}, {"D", 16384}}, {}, NormTier::SharedMemory},
      {"group_norm", DType::F16, {{"N", 2}, {"C", 512}, {"H", 64}, {"W", 61}}, nhwc, NormTier::Cluster},
      {"group_norm", DType::F16, {{"N", 3}, {"C", 128}, {"H", 127}, {"W", 129}}, nhwc, NormTier::Grid},
      {"layer_norm", DType::F16, {}, {1, 0}, NormTier::RowVectors},
      {"layer_norm_2d", DType::F16, {{"N", 3}, {"C", 96}, {"H", 57}, {"W", 55}}, {}, NormTier::RowPieces},
      {"softmax", DType::F16, {{"N", 2201}, {"D", 4096}}, {1, 0}, NormTier::RowVectorsLargeBlock},
      {"batch_norm", DType::F16, {}, nhwc, NormTier::RowVectorsGrid},
      {"instance_norm", DType::F16, {{"N", 8}, {"C", 33}, {"H", 96}, {"W", 96}}, nhwc, NormTier::RowGridCutShort},
      {"softmax", DType::BF16, {{"N", 33}, {"D", 65537}}, {}, NormTier::SharedWelford, 90, true},
      {"layer_norm", DType::F16, {{"N", 5}, {"D", 262147}}, {}, NormTier::Streamed, 90, true},
  };
  std::set<NormTier> reached;
  for (const Case& c : cases) {
    const Example* e = findExample(c.example);
    REQUIRE(e);
    auto f = e->build(c.t);
    const Bindings sizes = c.sizes.empty() ? e->default_sizes : c.sizes;
    std::map<std::string, std::vector<int>> lay;
    if (!c.order.empty()) lay["x"] = c.order;
    std::string why;
    CompileOptions opts{{c.sm, 132}};
    opts.tuning.no_peel = c.no_peel;
    auto k = schedule::scheduleNormalization(*f, sizes, descsFor(*f, sizes, lay), opts, &why);
    REQUIRE(k);
    INFO(c.example << " " << dtypeName(c.t) << ": " << k->reason);
    CHECK(k->tier == c.tier);
    CHECK(k->reason.find(fmt::format("; tier {}: ", schedule::normTierName(c.tier))) != std::string::npos);
    reached.insert(k->tier);
  }
  CHECK(reached.size() == schedule::normTiers().size());
}

TEST_CASE("a load constant along a reduced axis is read from cache, not held in shared memory", "[norm]") {
  // Group norm backward's dx in channels-last: the per-channel weight under the reductions is
  // the same C/G values at every pixel of a row. Holding it beside x and dy took half the
  // block's shared memory (f32 against f16) for a row of 512 bytes.
  auto f = parseFusion(R"(fusion gn_dx {
  in dy: f16[N, C, H, W]
  in x: f16[N, C, H, W]
  in mean: f32[N, 32]
  in rstd: f32[N, 32]
  in w: f32[C]
  t0: f32[N, 32, 1b, 1b, 1b] = broadcast(mean, new=[false, false, true, true, true])
  t1: f32[N, 32, 1b, 1b, 1b] = broadcast(rstd, new=[false, false, true, true, true])
  t2: f32[N, C, H, W] = cast(x, to=f32)
  t3: f32[N, C, H, W] = cast(dy, to=f32)
  t4: f32[N, 32, C/32, H, W] = reshape(t2, shape=[N, 32, C/32, H, W])
  t5: f32[N, 32, C/32, H, W] = sub(t4, t0)
  t6: f32[N, 32, C/32, H, W] = mul(t5, t1)
  t7: f32[1b, C, 1b, 1b] = broadcast(w, new=[true, false, true, true])
  t8: f32[N, C, H, W] = mul(t3, t7)
  t9: f32[N, 32, C/32, H, W] = reshape(t8, shape=[N, 32, C/32, H, W])
  t10: f32[N, 32, C/32, H, W] = mul(t9, t6)
  t11: f32[N, 32, 1b, 1b, 1b] = mean(t10, dims=[2, 3, 4], keepdim=true)
  t12: f32[N, 32, C/32, H, W] = mul(t6, t11)
  t13: f32[N, 32, 1b, 1b, 1b] = mean(t9, dims=[2, 3, 4], keepdim=true)
  t14: f32[N, 32, C/32, H, W] = sub(t9, t13)
  t15: f32[N, 32, C/32, H, W] = sub(t14, t12)
  t16: f32[N, 32, C/32, H, W] = mul(t1, t15)
  t17: f32[N, C, H, W] = reshape(t16, shape=[N, C, H, W])
  t18: f16[N, C, H, W] = cast(t17, to=f16)
  out dx = t18
})");
  const std::vector<int> nhwc = {0, 2, 3, 1};
  for (const Bindings& sizes : {Bindings{{"N", 32}, {"C", 128}, {"H", 256}, {"W", 256}},
                                Bindings{{"N", 2}, {"C", 128}, {"H", 61}, {"W", 67}}}) {
    std::string why;
    auto k = schedule::scheduleNormalization(*f, sizes, descsFor(*f, sizes, {{"x", nhwc}, {"dy", nhwc}}),
                                             CompileOptions{{90, 132}}, &why);
    REQUIRE(k);
    INFO(k->reason);
    std::set<int> held;
    for (const auto& l : k->smem_leaves) held.insert(l.input);
    CHECK(held.count(4) == 0);  // w from cache
    if (k->tier == NormTier::Grid) CHECK(held == std::set<int>{0, 1});  // dy and x
  }
}

TEST_CASE("rows split over a cluster holding two loads in runs take up to 16 chunks a thread", "[norm]") {
  // Batch norm backward over NCHW: x and dy held, each channel's row in runs of H*W; blocks of
  // 128 threads with 13 chunks each, not 256 with 7 (bench/results/2026-11-26-h200-cluster-chunks.md).
  auto bn = findExample("batch_norm_backward")->build(DType::F32);
  const Bindings bs{{"N", 64}, {"C", 256}, {"H", 28}, {"W", 28}};
  StageText st;
  compileFusion(*bn, bs, test::descsFor(*bn, bs), CompileOptions{{90, 132}}, &st);
  CHECK(test::has(st[DumpStage::Schedule], "(128 per block), 13 chunks of 4 each"));
  CHECK(test::has(st[DumpStage::Schedule], "tier cluster"));
  // One held load (batch norm forward), or rows one dense run (group norm's): 8 at most.
  auto gn = findExample("group_norm")->build(DType::F16);
  const Bindings gs{{"N", 32}, {"C", 128}, {"H", 256}, {"W", 256}};
  StageText gst;
  compileFusion(*gn, gs, test::descsFor(*gn, gs), CompileOptions{{90, 132}}, &gst);
  CHECK(test::has(gst[DumpStage::Schedule], "8 chunks of 8 each"));
  // The knob sets it.
  CompileOptions o{{90, 132}};
  o.tuning.cluster_chunks = 8;
  StageText kst;
  compileFusion(*bn, bs, test::descsFor(*bn, bs), o, &kst);
  CHECK(test::has(kst[DumpStage::Schedule], "(256 per block), 7 chunks of 4 each"));
}

TEST_CASE("channels-last instance norm: sets in a block where the grid would pair blocks; padded pitches", "[norm]") {
  auto in = findExample("instance_norm")->build(DType::F16);
  auto bn = findExample("batch_norm")->build(DType::F16);
  auto schedule = [&](const ir::Fusion& f, Bindings sizes, bool no_padded = false) {
    CompileOptions opts{{90, 132}};
    opts.tuning.no_padded_sets = no_padded;
    std::string why;
    auto k = schedule::scheduleNormalization(f, sizes, descsFor(f, sizes, {{"x", {0, 2, 3, 1}}}), opts, &why);
    INFO(why);
    REQUIRE(k);
    return *k;
  };
  // Sets that two blocks of the grid would share (the backward's first kernel): one block a set
  // (or part of one) instead.
  auto ib = findExample("instance_norm_backward")->build(DType::F16);
  const Bindings ib_sizes{{"N", 64}, {"C", 512}, {"H", 28}, {"W", 28}};
  StageText text;
  compilePlan(*ib, ib_sizes, descsFor(*ib, ib_sizes, {{"x", {0, 2, 3, 1}}, {"dy", {0, 2, 3, 1}}}),
              CompileOptions{{90, 132}}, &text);
  INFO(text[DumpStage::Schedule]);
  CHECK(text[DumpStage::Schedule].find("tier vectors of rows in a large block") != std::string::npos);
  CHECK(text[DumpStage::Schedule].find("just two blocks") != std::string::npos);
  // Sets over 4 blocks at a pitch of 64 f16 rows (8-way bank conflicts): over 5 at 72.
  auto padded = schedule(*in, {{"N", 64}, {"C", 256}, {"H", 56}, {"W", 56}});
  auto plain = schedule(*in, {{"N", 64}, {"C", 256}, {"H", 56}, {"W", 56}}, true);
  CHECK(padded.tier == NormTier::RowVectorsGrid);
  CHECK(padded.row_pitch == 72);
  CHECK(padded.split == 5);
  CHECK(plain.row_pitch == 64);
  CHECK(plain.split == 4);
  // 16 sets: 16 groups of 16 blocks take them at once; padded, 15 groups would take two turns.
  auto bn_sets = schedule(*bn, {{"N", 64}, {"C", 1024}, {"H", 14}, {"W", 14}});
  CHECK(bn_sets.row_pitch == 64);
  CHECK(bn_sets.split == 16);
}

TEST_CASE("the row-vector grid tier's blocks fit the SM together: two groups over every SM at half its memory", "[norm]") {
  // Two or three sets: one group of the loop, which gridShape turns into two groups of a block
  // on every SM; the pitch was once chosen for one block an SM (120 KiB each: not resident).
  struct Case {
    const char* example;
    DType t;
    Bindings sizes;
  };
  for (const Case& c : {Case{"batch_norm", DType::F16, {{"N", 64}, {"C", 96}, {"H", 56}, {"W", 56}}},
                        Case{"batch_norm", DType::BF16, {{"N", 16}, {"C", 96}, {"H", 112}, {"W", 112}}},
                        Case{"instance_norm", DType::F16, {{"N", 1}, {"C", 128}, {"H", 256}, {"W", 429}}}}) {
    auto f = findExample(c.example)->build(c.t);
    std::string why;
    auto k = schedule::scheduleNormalization(*f, c.sizes, descsFor(*f, c.sizes, {{"x", {0, 2, 3, 1}}}),
                                             CompileOptions{{90, 132}}, &why);
    REQUIRE(k);
    INFO(c.example << ": " << k->reason);
    CHECK(k->tier == NormTier::RowVectorsGrid);
    const int64_t per_sm = (k->grid + 131) / 132;
    CHECK(per_sm * (k->smem_bytes + 5 * 1024) <= 228 * 1024);
  }
}

TEST_CASE("channels-last groups of few channels: several rows a block while the blocks fill the SMs", "[norm]") {
  // 10 channels a group in vectors of 2: 5 chunks a pixel, no power of two. The rows go two (or
  // more) a block in shared memory, also where registers would hold them, but not where the
  // blocks would leave over a quarter of the SMs idle, nor in blocks of under 512 threads.
  auto f = findExample("group_norm")->build(DType::F16);
  const std::vector<int> nhwc = {0, 2, 3, 1};
  struct Case {
    Bindings sizes;
    NormTier tier;
    int rows_per_block;
  };
  const Case cases[] = {
      {{{"N", 8}, {"C", 320}, {"H", 32}, {"W", 32}}, NormTier::SharedMemory, 2},  // registers would hold it
      {{{"N", 8}, {"C", 320}, {"H", 64}, {"W", 64}}, NormTier::SharedMemory, 2},
      {{{"N", 25}, {"C", 320}, {"H", 9}, {"W", 11}}, NormTier::SharedMemory, 8},
      {{{"N", 2}, {"C", 320}, {"H", 64}, {"W", 64}}, NormTier::SharedMemory, 1},  // 32 blocks of 2 rows: too few
      {{{"N", 8}, {"C", 1280}, {"H", 8}, {"W", 8}}, NormTier::Registers, 1},      // 2 rows: 128 threads a block
  };
  for (const Case& c : cases) {
    std::string why;
    auto k = schedule::scheduleNormalization(*f, c.sizes, descsFor(*f, c.sizes, {{"x", nhwc}}), CompileOptions{{90, 132}}, &why);
    REQUIRE(k);
    INFO(k->reason);
    CHECK(k->tier == c.tier);
    CHECK(k->rows_per_block == c.rows_per_block);
    if (c.sizes.at("N") == 2) CHECK(test::has(k->reason, "would leave more than a quarter of the 132 SMs idle"));
    // The ragged fill and stores lower and compile.
    StageText st;
    CHECK_NOTHROW(compileFusion(*f, c.sizes, descsFor(*f, c.sizes, {{"x", nhwc}}), CompileOptions{{90, 132}}, &st));
  }
  // Rows no block holds: the grid's sets of one row, in as many groups as before (4).
  {
    const Bindings huge{{"N", 4}, {"C", 320}, {"H", 512}, {"W", 512}};
    std::string why;
    auto g = schedule::scheduleNormalization(*f, huge, descsFor(*f, huge, {{"x", nhwc}}), CompileOptions{{90, 132}}, &why);
    REQUIRE(g);
    INFO(g->reason);
    CHECK(g->tier == NormTier::Grid);
    CHECK(g->grid_groups == 4);
    CHECK(g->rows_per_block == 1);
  }
  // Runs of a power of two of chunks (16 channels a group) keep their rows in registers.
  {
    const Bindings vae{{"N", 8}, {"C", 512}, {"H", 32}, {"W", 32}};
    std::string why;
    auto r = schedule::scheduleNormalization(*f, vae, descsFor(*f, vae, {{"x", nhwc}}), CompileOptions{{90, 132}}, &why);
    REQUIRE(r);
    CHECK(r->tier == NormTier::Registers);
  }
  // The switch keeps rows that fit registers there.
  CompileOptions o{{90, 132}};
  o.tuning.no_line_fill = true;
  const Bindings s{{"N", 8}, {"C", 320}, {"H", 32}, {"W", 32}};
  std::string why;
  auto k = schedule::scheduleNormalization(*f, s, descsFor(*f, s, {{"x", nhwc}}), o, &why);
  REQUIRE(k);
  CHECK(k->tier == NormTier::Registers);
  CHECK(k->rows_per_block == 1);
}
