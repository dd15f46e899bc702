// [gpu]: every backward built-in end to end against the float64 reference, in f32, f16 and bf16,
// NCHW and channels-last where it is an image op, at its default sizes and at odd ones (rows of
// 1, 3, 1531 and 65544, sizes no vector width divides, a batch of one); the recurrent cells' one
// kernel (gate gradients stored as their bias sums read them) at batch sizes that do and do not
// split; parameter gradients bitwise the same from run to run, and on two streams at once.
#include <catch2/catch.hpp>

#include "frontend/examples_backward.h"
#include "runtime/device.h"
#include "tests/backward_builtins.h"
#include "tests/gpu_test_util.h"

using namespace loom;

TEST_CASE("every backward built-in in every float dtype and layout matches the reference", "[gpu][backward]") {
  if (!test::haveGpu()) return;
  for (const auto& e : backwardExamples())
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
      auto f = e.build(t);
      for (bool nhwc : {false, true}) {
        if (nhwc && test::mainInput(*f)->rank() != 4) continue;
        INFO(e.name << " " << dtypeName(t) << (nhwc ? " channels-last" : ""));
        test::checkOnGpu(*f, e.default_sizes, nhwc ? test::channelsLastImages(*f) : std::map<std::string, std::vector<int>>{});
      }
    }
}

TEST_CASE("backward built-ins at odd sizes", "[gpu][backward]") {
  if (!test::haveGpu()) return;
  struct Case {
    const char* name;
    DType t;
    Bindings sizes;
    bool nhwc;
  };
  const std::vector<Case> cases = {
      {"layer_norm_backward", DType::F16, {{"N", 3}, {"D", 1531}}, false},
      {"layer_norm_backward", DType::BF16, {{"N", 65544}, {"D", 77}}, false},
      // Column partials in shared memory beside rows in registers, 256 threads a row (5 x 3000)
      // and 512 (300 x 6000); rows of 3 chunks at 512 threads, partials in registers.
      {"layer_norm_backward", DType::F16, {{"N", 5}, {"D", 3000}}, false},
      {"layer_norm_backward", DType::BF16, {{"N", 300}, {"D", 6000}}, false},
      {"layer_norm_backward", DType::F16, {{"N", 37}, {"D", 4100}}, false},
      {"rms_norm_backward", DType::F16, {{"N", 5}, {"D", 8200}}, false},
      // Streamed rows, two blocks of 256 an SM (rows no block count divides, rows of chunks the
      // threads do not divide), and one of 512 (too few rows a block for two).
      {"rms_norm_backward", DType::BF16, {{"N", 1601}, {"D", 16376}}, false},
      {"rms_norm_backward", DType::F16, {{"N", 2000}, {"D", 12296}}, false},
      {"rms_norm_backward", DType::BF16, {{"N", 301}, {"D", 16376}}, false},
      {"rms_norm_backward", DType::F32, {{"N", 1}, {"D", 4099}}, false},
      {"softmax_backward", DType::F16, {{"N", 7}, {"D", 65544}}, false},
      {"group_norm_backward", DType::F16, {{"N", 1}, {"C", 96}, {"H", 7}, {"W", 9}}, false},
      {"group_norm_backward", DType::BF16, {{"N", 3}, {"C", 96}, {"H", 5}, {"W", 11}}, true},
      {"batch_norm_backward", DType::F16, {{"N", 1}, {"C", 3}, {"H", 5}, {"W", 3}}, true},
      {"instance_norm_backward", DType::F32, {{"N", 2}, {"C", 5}, {"H", 13}, {"W", 7}}, true},
      {"layer_norm_2d_backward", DType::F16, {{"N", 3}, {"C", 77}, {"H", 5}, {"W", 6}}, false},
  };
  for (const auto& c : cases) {
    auto f = findExample(c.name)->build(c.t);
    INFO(c.name << " " << dtypeName(c.t) << (c.nhwc ? " channels-last" : ""));
    test::checkOnGpu(*f, c.sizes, c.nhwc ? test::channelsLastImages(*f) : std::map<std::string, std::vector<int>>{});
  }
  // The recurrent cells' one kernel: few and many rows of the batch (split or not over blocks),
  // hidden sizes no vector width divides, a batch of one.
  for (const char* name : {"lstm_cell_backward", "gru_cell_backward"})
    for (DType t : {DType::F32, DType::F16, DType::BF16})
      for (auto sizes : {Bindings{{"B", 256}, {"H", 1024}}, Bindings{{"B", 4096}, {"H", 1024}}, Bindings{{"B", 7}, {"H", 129}},
                         Bindings{{"B", 1}, {"H", 1001}}, Bindings{{"B", 300}, {"H", 64}}}) {
        INFO(name << " " << dtypeName(t) << " B=" << sizes["B"] << " H=" << sizes["H"]);
        test::checkOnGpu(*findExample(name)->build(t), sizes);
      }
}

// Odd shapes for every norm's backward, each in the three float dtypes and, for the
// image norms, both layouts: rows of 1, 3, 1531 and 65544; channels no vector width divides;
// a batch of one.
TEST_CASE("backward built-ins at odd shapes in every float dtype and layout", "[gpu][backward]") {
  if (!test::haveGpu()) return;
  const std::vector<Bindings> rows = {{{"N", 1}, {"D", 4099}}, {{"N", 3}, {"D", 1531}}, {{"N", 1531}, {"D", 203}},
                                      {{"N", 65544}, {"D", 77}}};
  const std::vector<Bindings> images = {{{"N", 1}, {"C", 96}, {"H", 7}, {"W", 9}},
                                        {{"N", 3}, {"C", 160}, {"H", 13}, {"W", 11}},
                                        {{"N", 5}, {"C", 77}, {"H", 5}, {"W", 6}}};
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    for (const char* name : {"layer_norm_backward", "rms_norm_backward", "softmax_backward", "log_softmax_backward"})
      for (const Bindings& sizes : rows) {
        INFO(name << " " << dtypeName(t) << " N=" << sizes.at("N") << " D=" << sizes.at("D"));
        test::checkOnGpu(*findExample(name)->build(t), sizes);
      }
    for (const char* name : {"group_norm_backward", "batch_norm_backward", "instance_norm_backward",
                             "layer_norm_2d_backward"})
      for (const Bindings& sizes : images) {
        if (std::string(name) == "group_norm_backward" && sizes.at("C") % 32 != 0) continue;  // 32 groups
        auto f = findExample(name)->build(t);
        for (bool nhwc : {false, true}) {
          INFO(name << " " << dtypeName(t) << (nhwc ? " channels-last" : "") << " N=" << sizes.at("N")
                    << " C=" << sizes.at("C") << " H=" << sizes.at("H") << " W=" << sizes.at("W"));
          test::checkOnGpu(*f, sizes, nhwc ? test::channelsLastImages(*f) : std::map<std::string, std::vector<int>>{});
        }
      }
  }
}

// The LSTM cell's backward with one incoming gradient left out (PyTorch's undefined grad_hy or
// grad_cy): zero through the same products, one kernel.
TEST_CASE("lstm_cell_backward with dhy or dcy left out matches the reference", "[gpu][backward]") {
  if (!test::haveGpu()) return;
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (bool has_dhy : {false, true}) {
      auto f = test::lstmCellBackwardOneGradient(t, has_dhy);
      for (auto sizes : {Bindings{{"B", 256}, {"H", 1024}}, Bindings{{"B", 7}, {"H", 129}}}) {
        INFO(dtypeName(t) << (has_dhy ? " dhy only" : " dcy only") << " B=" << sizes["B"]);
        test::checkOnGpu(*f, sizes);
      }
    }
}

// dw and db are sums split over blocks (grid partials, cluster partials, a second step over N):
// combined in a fixed order, so every run gives the same bits.
TEST_CASE("the norms' parameter gradients are bitwise the same from run to run", "[gpu][backward]") {
  if (!test::haveGpu()) return;
  struct Case {
    const char* name;
    Bindings sizes;
  };
  for (const Case& c : {Case{"layer_norm_backward", {{"N", 4096}, {"D", 4096}}},
                        Case{"rms_norm_backward", {{"N", 2048}, {"D", 16384}}},
                        Case{"group_norm_backward", {{"N", 8}, {"C", 128}, {"H", 64}, {"W", 64}}},
                        Case{"batch_norm_backward", {{"N", 64}, {"C", 64}, {"H", 28}, {"W", 28}}},
                        Case{"instance_norm_backward", {{"N", 8}, {"C", 64}, {"H", 64}, {"W", 64}}},
                        Case{"layer_norm_2d_backward", {{"N", 16}, {"C", 192}, {"H", 28}, {"W", 28}}}}) {
    auto f = findExample(c.name)->build(DType::F16);
    for (bool nhwc : {false, true}) {
      if (nhwc && test::mainInput(*f)->rank() != 4) continue;
      INFO(c.name << (nhwc ? " channels-last" : ""));
      test::checkBitwiseRepeatable(*f, c.sizes, 21,
                                   nhwc ? test::channelsLastImages(*f) : std::map<std::string, std::vector<int>>{});
    }
  }
}

TEST_CASE("the recurrent cells' bias gradients are bitwise the same from run to run", "[gpu][backward]") {
  if (!test::haveGpu()) return;
  for (const char* name : {"lstm_cell_backward", "gru_cell_backward"}) {
    auto f = findExample(name)->build(DType::F16);
    const Bindings sizes{{"B", 4096}, {"H", 1024}};
    INFO(name);
    test::checkBitwiseRepeatable(*f, sizes, 11);
  }
}

// Launches of one plan on two streams may run at once: each stream's launches get their own
// intermediates and workspace (grid barrier counters, column partials). Both plans' results must
// be bitwise those of a lone run: a shared workspace mixes the two grids' partials or counters,
// shared intermediates one stream's first kernel into the other's second.
TEST_CASE("one plan run on two streams at once keeps each stream's scratch apart", "[gpu][backward]") {
  if (!test::haveGpu()) return;
  struct Case {
    const char* name;
    Bindings sizes;
  };
  // Cooperative grids with column partials (in registers, in shared memory); a two-kernel plan
  // with intermediates. Small enough that the two streams' grids fit the GPU side by side.
  for (const Case& c : {Case{"layer_norm_backward", {{"N", 64}, {"D", 1024}}},
                        Case{"layer_norm_backward", {{"N", 48}, {"D", 4096}}},
                        Case{"group_norm_backward", {{"N", 2}, {"C", 64}, {"H", 8}, {"W", 8}}}}) {
    auto f = findExample(c.name)->build(DType::F16);
    INFO(c.name);
    Executor ex(*f);
    const std::vector<std::vector<DeviceTensor>> ins = {test::randomDeviceInputs(*f, c.sizes, 100),
                                                         test::randomDeviceInputs(*f, c.sizes, 150)};
    REQUIRE(ex.planFor(ins[0], c.sizes).kernels.size() >= 1);
    std::vector<std::vector<std::vector<char>>> alone;
    for (int s = 0; s < 2; ++s) {
      auto outs = ex.allocateOutputs(ins[s], c.sizes, /*poison=*/true);
      ex.runInto(ins[s], outs, c.sizes);
      runtime::Device::get().synchronize();
      alone.push_back(test::outputBytes(outs));
    }
    // Outputs made (and poisoned, on the legacy stream) first: then only launches go to the two
    // streams, which do not wait for each other.
    std::vector<std::vector<std::vector<DeviceTensor>>> outs(2);
    for (int round = 0; round < 32; ++round)
      for (int s = 0; s < 2; ++s) outs[s].push_back(ex.allocateOutputs(ins[s], c.sizes, /*poison=*/true));
    runtime::Device::get().synchronize();
    runtime::Stream streams[2];
    for (int round = 0; round < 32; ++round)
      for (int s = 0; s < 2; ++s) {
        ex.setStream(streams[s].handle());
        ex.runInto(ins[s], outs[s][static_cast<size_t>(round)], c.sizes);
      }
    for (auto& st : streams) st.synchronize();
    for (int s = 0; s < 2; ++s)
      for (size_t round = 0; round < outs[s].size(); ++round) {
        INFO("stream " << s << " round " << round);
        CHECK(test::outputBytes(outs[s][round]) == alone[s]);
      }
  }
}
