// [gpu]: every normalization built-in on the GPU against the CPU reference, both layouts, all
// three float dtypes, odd shapes; the cancellation case.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/gpu_test_util.h"
#include "tests/norm_fusions.h"

#include "frontend/parser.h"

using namespace loom;

TEST_CASE("row normalizations: layer_norm, rms_norm, softmax, log_softmax", "[gpu][norm]") {
  if (!test::haveGpu()) return;
  for (const char* name : {"layer_norm", "rms_norm", "softmax", "log_softmax"}) {
    for (DType t : {DType::F16, DType::BF16, DType::F32}) {
      auto f = findExample(name)->build(t);
      for (int64_t d : {1, 3, 127, 1531, 4096, 65536 + 8, 262144}) {
        for (int64_t n : {1, 7, 300}) {
          if (d * n > (int64_t{1} << 24)) continue;
          INFO(name << " " << dtypeName(t) << " N=" << n << " D=" << d);
          test::checkOnGpu(*f, {{"N", n}, {"D", d}});
        }
      }
    }
  }
}

TEST_CASE("rows of odd length in whole vectors from each row's first aligned element", "[gpu][norm][peel]") {
  if (!test::haveGpu()) return;
  // Registers (257, 4099), shared memory (50257: GPT-2's vocabulary), a cluster (110001); a
  // row, rows whose starts take every alignment, rows split by the outputs' blocks.
  for (const char* name : {"layer_norm", "rms_norm", "softmax", "log_softmax", "softmax_backward", "log_softmax_backward"}) {
    for (DType t : {DType::F16, DType::BF16, DType::F32}) {
      auto f = findExample(name)->build(t);
      for (int64_t d : {257, 4099, 50257, 110001}) {
        for (int64_t n : {1, 9, 64}) {
          if (d * n > (int64_t{1} << 22)) continue;
          INFO(name << " " << dtypeName(t) << " N=" << n << " D=" << d);
          test::checkOnGpu(*f, {{"N", n}, {"D", d}});
        }
      }
    }
  }
  // The middle third of each row: the rows' vectors start 1531 in; the output's rows start
  // elsewhere (stored lane by lane).
  auto sl = parseFusion(R"(fusion softmax_of_slice {
    in x: f16[N, 3*D]
    k: f16[N, D] = slice(x, starts=[0, D], stops=[N, 2*D])
    kf: f32[N, D] = cast(k, to=f32)
    m: f32[N, 1b] = amax(kf, dims=[1], keepdim=true)
    c: f32[N, D] = sub(kf, m)
    e: f32[N, D] = exp(c)
    s: f32[N, 1b] = sum(e, dims=[1], keepdim=true)
    y: f32[N, D] = div(e, s)
    yh: f16[N, D] = cast(y, to=f16)
    out y = yh
  })");
  for (int64_t d : {1531, 50257}) test::checkOnGpu(*sl, {{"N", 33}, {"D", d}});
  // Thread fill (16 and 32 threads a row, several rows a block).
  for (auto [name, d] : {std::pair<const char*, int64_t>{"rms_norm", 517}, {"softmax_backward", 1027}, {"layer_norm", 1027}}) {
    INFO(name << " f16 N=16384 D=" << d);
    test::checkOnGpu(*findExample(name)->build(DType::F16), {{"N", 16384}, {"D", d}});
  }
  // dy and dx at one alignment, y (a slice) at another: the reference is dy's; Welford in
  // shared memory (32771), streamed (65537), registers (1027).
  auto mis = parseFusion(R"(fusion sbw_mis {
    in dy: f16[N, D]
    in yy: f16[N, 2*D]
    y: f16[N, D] = slice(yy, starts=[0, D], stops=[N, 2*D])
    t0: f32[N, D] = cast(dy, to=f32)
    t1: f32[N, D] = cast(y, to=f32)
    t2: f32[N, D] = mul(t0, t1)
    t3: f32[N, 1b] = sum(t2, dims=[1], keepdim=true)
    t4: f32[N, D] = sub(t0, t3)
    t5: f32[N, D] = mul(t1, t4)
    t6: f16[N, D] = cast(t5, to=f16)
    out dx = t6
  })");
  for (int64_t d : {32771, 65537, 1027}) test::checkOnGpu(*mis, {{"N", 5}, {"D", d}});
}

TEST_CASE("long rows held in shared memory, split over clusters, with two held inputs", "[gpu][norm]") {
  if (!test::haveGpu()) return;
  for (DType t : {DType::F16, DType::BF16, DType::F32}) {
    auto f = test::addLayerNorm(t);
    // 65536 + 8: rows that do not divide over the cluster's threads; 3 * 65536 + 16 and 2^18:
    // clusters of 4 and 8.
    for (int64_t d : {int64_t{40000}, int64_t{65536 + 8}, int64_t{3 * 65536 + 16}, int64_t{1} << 18}) {
      for (int64_t n : {1, 5}) {
        INFO("add_layer_norm " << dtypeName(t) << " N=" << n << " D=" << d);
        test::checkOnGpu(*f, {{"N", n}, {"D", d}});
      }
    }
  }
}

TEST_CASE("rows sliced over every SM: the cooperative grid tier", "[gpu][norm]") {
  if (!test::haveGpu()) return;
  // 2^22 and 2^20 + 8 elements: more than a cluster of 8 holds; a size-1 batch; a set count
  // that is odd (the workspace's two parities).
  for (const char* name : {"layer_norm", "rms_norm", "softmax"}) {
    for (DType t : {DType::F16, DType::BF16, DType::F32}) {
      auto f = findExample(name)->build(t);
      // 5 sets of one row: two grid groups (one walks 3 sets, the other 2).
      for (auto [n, d] : {std::pair<int64_t, int64_t>{1, int64_t{1} << 22}, {3, (int64_t{1} << 20) + 8},
                          {5, (int64_t{1} << 20) + 8}}) {
        INFO(name << " " << dtypeName(t) << " N=" << n << " D=" << d);
        test::checkOnGpu(*f, {{"N", n}, {"D", d}});
      }
    }
  }
  auto f = test::addLayerNorm(DType::BF16);
  test::checkOnGpu(*f, {{"N", 3}, {"D", int64_t{1} << 21}});
  // Many long rows: four and eight grid groups.
  for (auto [name, n] : {std::pair<const char*, int64_t>{"layer_norm", 32}, {"rms_norm", 64}}) {
    INFO(name << " f32 N=" << n << " D=2^19+8");
    test::checkOnGpu(*findExample(name)->build(DType::F32), {{"N", n}, {"D", (int64_t{1} << 19) + 8}});
  }
  // Channels-last groups of 4 channels over 128x128 pixels: 16 groups (128 bytes a pixel) a set
  // are more than a cluster holds; two grid groups take turns by set (N=2: 4 sets), three
  // (N=4: 8 sets, one group walking one fewer).
  for (DType t : {DType::F16, DType::BF16, DType::F32}) {
    for (int64_t n : {2, 4}) {
      INFO("group_norm NHWC " << dtypeName(t) << " N=" << n);
      test::checkOnGpu(*findExample("group_norm")->build(t), {{"N", n}, {"C", 128}, {"H", 128}, {"W", 128}},
                       {{"x", {0, 2, 3, 1}}});
    }
  }
}

TEST_CASE("small channels-last sets split over fewer blocks, several sets at once", "[gpu][norm]") {
  if (!test::haveGpu()) return;
  // Sets of 32 (or 64) channels' rows whose slices over every SM would be small: 16 groups of
  // 16 blocks, 3 of 88, and odd pixel counts (slices of unequal length, the last block's short).
  const std::map<std::string, std::vector<int>> nhwc{{"x", {0, 2, 3, 1}}};
  for (DType t : {DType::F16, DType::BF16, DType::F32}) {
    for (auto sizes : {Bindings{{"N", 16}, {"C", 32}, {"H", 128}, {"W", 128}}, Bindings{{"N", 3}, {"C", 64}, {"H", 67}, {"W", 129}},
                       Bindings{{"N", 5}, {"C", 32}, {"H", 97}, {"W", 33}}}) {
      INFO("instance_norm " << dtypeName(t) << " N=" << sizes["N"] << " C=" << sizes["C"] << " H=" << sizes["H"]
                            << " W=" << sizes["W"]);
      test::checkOnGpu(*findExample("instance_norm")->build(t), sizes, nhwc);
    }
    INFO("batch_norm " << dtypeName(t) << " 16x96x40x40");
    test::checkOnGpu(*findExample("batch_norm")->build(t), {{"N", 16}, {"C", 96}, {"H", 40}, {"W", 40}}, nhwc);
    // One set of 64 channels over every SM, with an odd pixel count.
    INFO("batch_norm " << dtypeName(t) << " 32x64x56x57");
    test::checkOnGpu(*findExample("batch_norm")->build(t), {{"N", 32}, {"C", 64}, {"H", 56}, {"W", 57}}, nhwc);
    INFO("group_norm " << dtypeName(t) << " 3x128x128x131: 6 groups of 66 blocks");
    test::checkOnGpu(*findExample("group_norm")->build(t), {{"N", 3}, {"C", 128}, {"H", 128}, {"W", 131}}, nhwc);
  }
}

TEST_CASE("channels-last groups of channels no power of two of vectors covers: several rows a block", "[gpu][norm]") {
  if (!test::haveGpu()) return;
  // 10, 20, 40 and 6 channels a group (5 or 3 chunks a pixel): each trip takes whole pixels of
  // the block's 2, 4 or 8 rows, the threads past them idle; odd pixel counts, a batch of 1, rows
  // in registers and in shared memory, forward and backward.
  const std::map<std::string, std::vector<int>> nhwc{{"x", {0, 2, 3, 1}}, {"dy", {0, 2, 3, 1}}};
  for (DType t : {DType::F16, DType::BF16, DType::F32}) {
    for (auto sizes : {Bindings{{"N", 8}, {"C", 320}, {"H", 33}, {"W", 35}}, Bindings{{"N", 5}, {"C", 640}, {"H", 16}, {"W", 17}},
                       Bindings{{"N", 7}, {"C", 1280}, {"H", 9}, {"W", 7}}, Bindings{{"N", 9}, {"C", 192}, {"H", 31}, {"W", 3}},
                       Bindings{{"N", 1}, {"C", 320}, {"H", 13}, {"W", 11}}, Bindings{{"N", 8}, {"C", 320}, {"H", 64}, {"W", 64}},
                       Bindings{{"N", 16}, {"C", 320}, {"H", 15}, {"W", 17}}, Bindings{{"N", 25}, {"C", 320}, {"H", 9}, {"W", 11}}}) {
      for (const char* name : {"group_norm", "group_norm_backward"}) {
        INFO(name << " " << dtypeName(t) << " N=" << sizes["N"] << " C=" << sizes["C"] << " H=" << sizes["H"]
                  << " W=" << sizes["W"]);
        test::checkOnGpu(*findExample(name)->build(t), sizes, nhwc);
      }
    }
  }
}

TEST_CASE("image normalizations in NCHW and channels-last", "[gpu][norm]") {
  if (!test::haveGpu()) return;
  for (const char* name : {"group_norm", "instance_norm", "layer_norm_2d", "batch_norm"}) {
    for (DType t : {DType::F16, DType::BF16, DType::F32}) {
      auto f = findExample(name)->build(t);
      for (auto sizes : {Bindings{{"N", 2}, {"C", 64}, {"H", 7}, {"W", 9}},
                         Bindings{{"N", 1}, {"C", 32}, {"H", 1}, {"W", 1}},
                         Bindings{{"N", 3}, {"C", 96}, {"H", 13}, {"W", 3}},
                         Bindings{{"N", 4}, {"C", 128}, {"H", 32}, {"W", 32}},
                         // batch norm rows of 32768: held in shared memory, not registers
                         Bindings{{"N", 8}, {"C", 32}, {"H", 64}, {"W", 64}},
                         // groups of 51200 and 30720: on chip, several groups per cluster
                         // in channels-last (16 groups of 2 channels, 8 of 8)
                         Bindings{{"N", 2}, {"C", 64}, {"H", 160}, {"W", 160}},
                         Bindings{{"N", 2}, {"C", 256}, {"H", 64}, {"W", 60}}}) {
        if (std::string(name) == "batch_norm" && sizes["N"] * sizes["H"] * sizes["W"] == 1) continue;
        for (bool nhwc : {false, true}) {
          INFO(name << " " << dtypeName(t) << " N=" << sizes["N"] << " C=" << sizes["C"] << " H="
                    << sizes["H"] << " W=" << sizes["W"] << (nhwc ? " NHWC" : " NCHW"));
          std::map<std::string, std::vector<int>> lay;
          if (nhwc) lay["x"] = {0, 2, 3, 1};
          test::checkOnGpu(*f, sizes, lay);
        }
      }
    }
  }
}

TEST_CASE("short rows held in shared memory by their own threads", "[gpu][norm]") {
  if (!test::haveGpu()) return;
  // Thread fill: 8 threads a row of 256 (16 rows a block, 9001 rows: the last block's rows past
  // the end), 16 a row of 256 f32, 32 a row of 1024 16-bit values; two held inputs.
  for (DType t : {DType::F16, DType::BF16, DType::F32}) {
    // (384 and 768: rows of four chunks a thread for 12 or 24 threads, which stay in registers)
    for (Bindings sizes : {Bindings{{"N", 9001}, {"D", 256}}, Bindings{{"N", 2113}, {"D", 1024}},
                           Bindings{{"N", 9001}, {"D", 384}}, Bindings{{"N", 3001}, {"D", 768}}}) {
      for (const char* name : {"layer_norm", "rms_norm"}) {
        INFO(name << " " << dtypeName(t) << " N=" << sizes["N"] << " D=" << sizes["D"]);
        test::checkOnGpu(*findExample(name)->build(t), sizes);
      }
    }
    INFO("add_layer_norm " << dtypeName(t));
    test::checkOnGpu(*test::addLayerNorm(t), {{"N", 9001}, {"D", 256}});
  }
}

TEST_CASE("rows strided along their reduction: read and written in vectors of rows", "[gpu][norm]") {
  if (!test::haveGpu()) return;
  struct Case {
    const char* fusion;
    Bindings sizes;
    bool nhwc;
  };
  // LayerNorm2d NCHW: vectors of 8 rows (64 x 56 x 56), of 4 (60 and 196 pixels), a block's
  // last rows past the end (180 and 980 rows), 16 threads a row of 1000 channels; channels-
  // last instance norm and batch norm (channels in vectors, running statistics in place).
  const Case cases[] = {{"layer_norm_2d", {{"N", 8}, {"C", 128}, {"H", 56}, {"W", 56}}, false},
                        {"layer_norm_2d", {{"N", 3}, {"C", 5}, {"H", 6}, {"W", 10}}, false},
                        {"layer_norm_2d", {{"N", 5}, {"C", 96}, {"H", 14}, {"W", 14}}, false},
                        {"layer_norm_2d", {{"N", 2}, {"C", 1000}, {"H", 4}, {"W", 6}}, false},
                        {"instance_norm", {{"N", 3}, {"C", 96}, {"H", 13}, {"W", 8}}, true},
                        {"batch_norm", {{"N", 4}, {"C", 64}, {"H", 5}, {"W", 6}}, true}};
  for (const Case& c : cases) {
    for (DType t : {DType::F16, DType::BF16, DType::F32}) {
      INFO(c.fusion << " " << dtypeName(t) << " N=" << c.sizes.at("N") << " C=" << c.sizes.at("C") << " H="
                    << c.sizes.at("H") << " W=" << c.sizes.at("W") << (c.nhwc ? " NHWC" : " NCHW"));
      std::map<std::string, std::vector<int>> lay;
      if (c.nhwc) lay["x"] = {0, 2, 3, 1};
      test::checkOnGpu(*findExample(c.fusion)->build(t), c.sizes, lay);
    }
  }
  // Rows too long for a block: sets of rows split over the grid. Channels-last instance norm
  // (2 sets of 64 rows; 5 sets over 2 groups of blocks, 61x61 pixels not dividing over the
  // blocks' runs) and batch norm (sets of 32 of 96 channels, running statistics in place).
  const Case grid_cases[] = {{"instance_norm", {{"N", 2}, {"C", 64}, {"H", 64}, {"W", 64}}, true},
                             {"instance_norm", {{"N", 5}, {"C", 64}, {"H", 61}, {"W", 61}}, true},
                             {"batch_norm", {{"N", 16}, {"C", 96}, {"H", 40}, {"W", 40}}, true}};
  for (const Case& c : grid_cases) {
    for (DType t : {DType::F16, DType::BF16, DType::F32}) {
      INFO(c.fusion << " " << dtypeName(t) << " N=" << c.sizes.at("N") << " C=" << c.sizes.at("C") << " H="
                    << c.sizes.at("H") << " W=" << c.sizes.at("W") << " NHWC, split over the grid");
      test::checkOnGpu(*findExample(c.fusion)->build(t), c.sizes, {{"x", {0, 2, 3, 1}}});
    }
  }
  // Rows too long for 40 KiB whose count is no multiple of a grid set's (3520 and 2200 rows,
  // 16 a set): blocks past 48 KiB of shared memory, one an SM. (f32's sets of 8 divide them:
  // the grid tier.)
  const Case big_cases[] = {{"instance_norm", {{"N", 40}, {"C", 88}, {"H", 48}, {"W", 48}}, true}};
  for (const Case& c : big_cases)
    for (DType t : {DType::F16, DType::BF16, DType::F32}) {
      INFO(c.fusion << " " << dtypeName(t) << " N=40 C=88 H=48 W=48 NHWC, blocks past 48 KiB");
      test::checkOnGpu(*findExample(c.fusion)->build(t), c.sizes, {{"x", {0, 2, 3, 1}}});
    }
  for (DType t : {DType::F16, DType::BF16}) {
    INFO("softmax " << dtypeName(t) << " 2200 x 4096, rows strided (D outer), blocks past 48 KiB");
    test::checkOnGpu(*findExample("softmax")->build(t), {{"N", 2200}, {"D", 4096}}, {{"x", {1, 0}}});
  }
  // No vector of rows fits (an odd row axis): a row's element a piece, 2-byte pieces loaded and
  // stored, 4-byte ones copied with cp.async. LayerNorm2d over 7 x 9 and 7 x 7 pixels (735
  // rows: the last block's past the end), channels-last instance norm of 33 channels (1320
  // rows; and 264 rows of 9216 pixels: sets of the grid, the last cut short), and softmax of
  // 2201 rows with D outer (blocks past 48 KiB).
  const Case piece_cases[] = {{"layer_norm_2d", {{"N", 64}, {"C", 64}, {"H", 7}, {"W", 9}}, false},
                              {"layer_norm_2d", {{"N", 15}, {"C", 768}, {"H", 7}, {"W", 7}}, false},
                              {"instance_norm", {{"N", 40}, {"C", 33}, {"H", 12}, {"W", 12}}, true},
                              {"instance_norm", {{"N", 8}, {"C", 33}, {"H", 96}, {"W", 96}}, true}};
  for (const Case& c : piece_cases)
    for (DType t : {DType::F16, DType::BF16, DType::F32}) {
      INFO(c.fusion << " " << dtypeName(t) << " N=" << c.sizes.at("N") << " C=" << c.sizes.at("C") << " H="
                    << c.sizes.at("H") << " W=" << c.sizes.at("W") << (c.nhwc ? " NHWC" : " NCHW") << ", pieces");
      std::map<std::string, std::vector<int>> lay;
      if (c.nhwc) lay["x"] = {0, 2, 3, 1};
      test::checkOnGpu(*findExample(c.fusion)->build(t), c.sizes, lay);
    }
  for (DType t : {DType::F16, DType::BF16}) {
    INFO("softmax " << dtypeName(t) << " 2201 x 4096, rows strided (D outer), pieces, blocks past 48 KiB");
    test::checkOnGpu(*findExample("softmax")->build(t), {{"N", 2201}, {"D", 4096}}, {{"x", {1, 0}}});
  }
  {
    INFO("layer_norm_2d_of_sum N=15 C=96 H=7 W=7: f16 pieces loaded and stored, f32 ones copied");
    test::checkOnGpu(*test::layerNorm2dOfSum(), {{"N", 15}, {"C", 96}, {"H", 7}, {"W", 7}});
  }
  // Vectors of rows whose grid sets do not divide the row axis, the last set cut short:
  // softmax of 1000 rows with D outer (16 sets of 64; f32's sets of 8 divide it), channels-last
  // batch norm of 100 channels (running statistics in place, 2 sets of 64; and 64x100x28x28 in
  // bf16, whose 48 chunks a thread take the statistics by vectors of rows).
  for (DType t : {DType::F16, DType::BF16, DType::F32}) {
    INFO("softmax " << dtypeName(t) << " 1000 x 4096 D outer, grid sets cut short");
    test::checkOnGpu(*findExample("softmax")->build(t), {{"N", 1000}, {"D", 4096}}, {{"x", {1, 0}}});
    INFO("batch_norm " << dtypeName(t) << " 4x100x28x28 NHWC, grid sets cut short");
    test::checkOnGpu(*findExample("batch_norm")->build(t), {{"N", 4}, {"C", 100}, {"H", 28}, {"W", 28}},
                     {{"x", {0, 2, 3, 1}}});
  }
  {
    INFO("batch_norm bf16 64x100x28x28 NHWC, grid sets cut short, statistics by vectors of rows");
    test::checkOnGpu(*findExample("batch_norm")->build(DType::BF16), {{"N", 64}, {"C", 100}, {"H", 28}, {"W", 28}},
                     {{"x", {0, 2, 3, 1}}});
  }
  // An f32 residual read and an f32 output written in vectors of rows (or, over 7 x 7 pixels,
  // pieces: the f16 input's loaded and stored, the f32 residual's copied), and a per-pixel mean.
  auto f = test::layerNorm2dResidual();
  for (Bindings sizes : {Bindings{{"N", 8}, {"C", 64}, {"H", 56}, {"W", 56}}, Bindings{{"N", 3}, {"C", 5}, {"H", 6}, {"W", 10}},
                         Bindings{{"N", 16}, {"C", 64}, {"H", 7}, {"W", 7}}}) {
    INFO("layer_norm_2d_residual N=" << sizes["N"] << " C=" << sizes["C"] << " H=" << sizes["H"] << " W=" << sizes["W"]);
    test::checkOnGpu(*f, sizes);
  }
}

TEST_CASE("f64 normalizations: blocks of 512 threads in every tier", "[gpu][norm]") {
  if (!test::haveGpu()) return;
  // Registers (rows of 1 to 8192), shared memory (16384 + 3), the grid tier (2^20 + 8), and the
  // image normalizations in both layouts, where blocks of 1024 threads once spilled.
  for (const char* name : {"layer_norm", "rms_norm", "softmax"}) {
    auto f = findExample(name)->build(DType::F64);
    for (auto [n, d] : {std::pair<int64_t, int64_t>{7, 1}, {300, 1531}, {64, 8192}, {33, 16384 + 3}, {3, (int64_t{1} << 20) + 8}}) {
      INFO(name << " f64 N=" << n << " D=" << d);
      test::checkOnGpu(*f, {{"N", n}, {"D", d}});
    }
  }
  for (const char* name : {"group_norm", "instance_norm", "batch_norm", "layer_norm_2d"}) {
    auto f = findExample(name)->build(DType::F64);
    for (bool nhwc : {false, true}) {
      INFO(name << " f64 " << (nhwc ? "NHWC" : "NCHW"));
      test::checkOnGpu(*f, {{"N", 4}, {"C", 64}, {"H", 33}, {"W", 31}},
                       nhwc ? std::map<std::string, std::vector<int>>{{"x", {0, 2, 3, 1}}}
                            : std::map<std::string, std::vector<int>>{});
    }
  }
}

TEST_CASE("cancellation: 1e4 + U(0,1) in f32 normalizes to mean 0, std 1", "[gpu][norm]") {
  if (!test::haveGpu()) return;
  // layer_norm of 9001 x 256: held in shared memory by the rows' own threads.
  const std::pair<const char*, Bindings> cases[] = {{"layer_norm", {{"N", 16}, {"D", 4096}}},
                                                    {"layer_norm", {{"N", 9001}, {"D", 256}}},
                                                    {"layer_norm", {{"N", 16}, {"D", 4099}}},  // (peeled)
                                                    {"group_norm", {{"N", 2}, {"C", 64}, {"H", 16}, {"W", 16}}}};
  for (const auto& [name, sizes] : cases) {
    auto f = findExample(name)->build(DType::F32);
    std::vector<HostTensor> host;
    for (const ir::Value* v : f->inputs()) {
      auto shape = evalShape(v, sizes);
      if (v->name() == "x") host.push_back(HostTensor::random(DType::F32, shape, 5, 1e4, 1e4 + 1));
      else if (v->name() == "w") host.push_back(HostTensor::fromValues(DType::F32, shape, std::vector<double>(static_cast<size_t>(shape[0]), 1.0)));
      else host.push_back(HostTensor::fromValues(DType::F32, shape, std::vector<double>(static_cast<size_t>(shape[0]), 0.0)));
    }
    std::vector<DeviceTensor> dev;
    for (const auto& h : host) dev.push_back(DeviceTensor::fromHost(h));
    Executor ex(*f);
    HostTensor y = ex.run(dev)[0].toHost();
    double s = 0, sq = 0;
    for (int64_t i = 0; i < y.numel(); ++i) s += y.getLinear(i);
    double mean = s / static_cast<double>(y.numel());
    for (int64_t i = 0; i < y.numel(); ++i) sq += (y.getLinear(i) - mean) * (y.getLinear(i) - mean);
    double sd = std::sqrt(sq / static_cast<double>(y.numel()));
    INFO(name << ": mean " << mean << " std " << sd);
    CHECK(std::abs(mean) < 1e-3);
    CHECK(std::abs(sd - 1.0) < 1e-3);
  }
}

TEST_CASE("batch norm training updates the running statistics in place", "[gpu][norm]") {
  if (!test::haveGpu()) return;
  auto f = findExample("batch_norm")->buildDefault();
  // Channels in registers, over a cluster (2^18 f32 each), over the whole grid (2^20 each).
  for (Bindings sizes : {Bindings{{"N", 4}, {"C", 16}, {"H", 5}, {"W", 6}},
                         Bindings{{"N", 16}, {"C", 4}, {"H", 128}, {"W", 128}},
                         Bindings{{"N", 64}, {"C", 3}, {"H", 128}, {"W", 128}}}) {
    INFO("N=" << sizes["N"] << " C=" << sizes["C"] << " H=" << sizes["H"] << " W=" << sizes["W"]);
    std::vector<HostTensor> host;
    uint64_t seed = 11;
    for (const ir::Value* v : f->inputs())
      host.push_back(HostTensor::random(v->dtype(), evalShape(v, sizes), seed++, v->name() == "running_var" ? 0.5 : -1, 1));
    std::vector<DeviceTensor> dev;
    for (const auto& h : host) dev.push_back(DeviceTensor::fromHost(h));
    Executor ex(*f);
    auto outs = ex.run(dev);
    auto ref = evaluateReference(*f, host);
    // The aliased outputs are the caller's running_mean / running_var buffers.
    CHECK(outs[1].ptr() == dev[1].ptr());
    CHECK(outs[2].ptr() == dev[2].ptr());
    std::vector<HostTensor> got;
    for (const auto& o : outs) got.push_back(o.toHost());
    const auto cs = compareOutputs(*f, host, {}, got, ref);
    for (size_t i = 0; i < cs.size(); ++i) {
      INFO(f->outputs()[i].name << ": " << cs[i].str());
      CHECK(cs[i].ok);
    }
  }
}
