// [gpu]: pointwise fusions on the GPU against the CPU reference. Each skips with a message
// where no GPU is found.
#include <catch2/catch.hpp>

#include <cstring>

#include "ir/half.h"

#include "runtime/device.h"
#include "tests/gpu_test_util.h"
#include "tests/pointwise_fusions.h"

using namespace loom;

TEST_CASE("every pointwise op in every dtype matches the reference", "[gpu][pointwise]") {
  if (!test::haveGpu()) return;
  for (const auto& f : test::everyPointwiseOp()) {
    bool ints = f->input("x")->dtype() == DType::I32 || f->input("x")->dtype() == DType::I64;
    for (int64_t n : {1, 3, 1531, 65536 + 8, 100003}) {  // (1531, 100003: whole vectors and a tail)
      INFO(f->name() << " N=" << n);
      test::checkOnGpu(*f, {{"N", n}}, {}, 7, ints ? -100 : -2, ints ? 100 : 2);
    }
  }
}

TEST_CASE("special float values: NaN, inf, -0 flow like the reference", "[gpu][pointwise]") {
  if (!test::haveGpu()) return;
  for (const auto& f : test::everyPointwiseOp()) {
    DType t = f->input("x")->dtype();
    if (!isFloat(t)) continue;
    std::vector<double> xv = {NAN, INFINITY, -INFINITY, -0.0, 0.0, 1.0, -1.0, 0.5, 2.5, -2.5, 1e-3, 100};
    std::vector<double> yv = {1.0, INFINITY, 2.0, 0.0, -0.0, NAN, 3.0, -0.5, 2.0, 2.0, 0.0, -7};
    int64_t n = static_cast<int64_t>(xv.size());
    std::vector<HostTensor> host;
    for (const ir::Value* v : f->inputs()) {
      if (v->name() == "c") host.push_back(HostTensor::random(DType::Bool, {n}, 3));
      else host.push_back(HostTensor::fromValues(t, {n}, v->name() == "x" ? xv : yv));
    }
    std::vector<DeviceTensor> dev;
    for (const auto& h : host) dev.push_back(DeviceTensor::fromHost(h));
    Executor ex(*f);
    auto outs = ex.run(dev);
    auto ref = evaluateReference(*f, host);
    for (size_t i = 0; i < outs.size(); ++i) {
      auto c = compareToReference(outs[i].toHost(), ref[i], elementTolerance(*f, ref[i].dtype()));
      INFO(f->name() << " " << f->outputs()[i].name << ": " << c.str());
      CHECK(c.bad_nonfinite == 0);
    }
  }
}

TEST_CASE("broadcasts, permutes, slices and channels-last inputs", "[gpu][pointwise]") {
  if (!test::haveGpu()) return;
  FusionBuilder fb("mixed_views");
  auto x = fb.input("x", DType::F16, {"N", "C", "H", "W"});
  auto b = fb.input("b", DType::F32, {"C"});
  auto t = fb.input("t", DType::BF16, {"W", "H"});  // read transposed
  auto y = toCompute(x) * broadcast(b, {true, false, true, true}) +
           broadcastToRank(cast(permute(t, {1, 0}), DType::F32), 4);
  fb.output("y", cast(silu(y), DType::F16));
  fb.output("s", b * 2.0);  // not the iteration shape: another kernel shape
  auto f = fb.finish();
  // Outputs of different shapes cannot share one pointwise kernel: the fusion runs as two.
  Bindings sizes{{"N", 2}, {"C", 24}, {"H", 5}, {"W", 7}};
  auto host_x = HostTensor::random(DType::F16, {2, 24, 5, 7}, 1);
  std::vector<DeviceTensor> dev = {DeviceTensor::fromHost(host_x),
                                   DeviceTensor::fromHost(HostTensor::random(DType::F32, {24}, 2)),
                                   DeviceTensor::fromHost(HostTensor::random(DType::BF16, {7, 5}, 3))};
  Executor ex(*f);
  CHECK(ex.planFor(dev).kernels.size() == 2);
  test::checkOnGpu(*f, sizes);

  FusionBuilder fb2("views");
  auto x2 = fb2.input("x", DType::F16, {"N", "C", "H", "W"});
  auto b2 = fb2.input("b", DType::F32, {"C"});
  auto t2 = fb2.input("t", DType::BF16, {"W", "H"});
  auto y2 = toCompute(x2) * broadcast(b2, {true, false, true, true}) +
            broadcastToRank(cast(permute(t2, {1, 0}), DType::F32), 4);
  fb2.output("y", cast(silu(y2), DType::F16));
  fb2.output("z", y2 * 2.0);
  auto f2 = fb2.finish();
  for (auto n : {Bindings{{"N", 2}, {"C", 24}, {"H", 5}, {"W", 7}},
                 Bindings{{"N", 1}, {"C", 1}, {"H", 1}, {"W", 1}},
                 Bindings{{"N", 3}, {"C", 64}, {"H", 17}, {"W", 32}}}) {
    test::checkOnGpu(*f2, n);
    test::checkOnGpu(*f2, n, {{"x", {0, 2, 3, 1}}});          // channels-last x
    test::checkOnGpu(*f2, n, {{"x", {0, 2, 3, 1}}, {"t", {1, 0}}});
  }
}

TEST_CASE("symbolic sizes: one kernel runs every batch size of its class", "[gpu][pointwise][symbolic]") {
  if (!test::haveGpu()) return;
  Tuning t;
  t.symbolic = true;
  struct Case {
    const char* name;
    const char* sym;
    Bindings others;
    std::vector<int64_t> values = {61, 64, 97, 100, 1531, 4093};
  };
  for (const Case& c : std::vector<Case>{{"bias_gelu", "N", {}},
                                         {"lstm_cell", "B", {}},
                                         {"layer_norm", "N", {{"D", 4096}}},
                                         {"rms_norm", "N", {{"D", 1000}}},
                                         {"softmax", "N", {{"D", 333}}},
                                         // rows of odd length, peeled; one axis with a tail of any length
                                         {"softmax", "N", {{"D", 50257}}, {1, 7, 64}},
                                         {"add", "N", {}, {100001, 100003, 100008, 5, 300007}},
                                         {"group_norm", "N", {{"C", 64}, {"H", 9}, {"W", 7}}},
                                         // column reductions: blocks walk row sets up to N
                                         {"layer_norm_backward", "N", {{"D", 1024}}, {1531, 2000, 4093, 4094}},
                                         {"rms_norm_backward", "N", {{"D", 4096}}, {3000, 4093, 8191}},
                                         // streamed rows, column partials in shared memory
                                         {"layer_norm_backward", "N", {{"D", 16384}}, {300, 301, 1000}},
                                         // the grid tier: a long row over one group; channels-last groups
                                         {"layer_norm", "N", {{"D", 1048584}}, {2, 3, 5}},
                                         {"layer_norm_2d", "N", {{"C", 5}, {"H", 6}, {"W", 10}}, {2, 3, 7, 64}}}) {
    const char* name = c.name;
    const auto* e = findExample(name);
    auto f = e->buildDefault();
    const std::string sym = c.sym;
    Executor ex(*f, t);
    int compiled = 0;
    for (int64_t v : c.values) {
      Bindings sizes = e->default_sizes;
      for (const auto& [k, x] : c.others) sizes[k] = x;
      sizes[sym] = v;
      INFO(name << " " << sym << "=" << v);
      const auto host = test::randomHostInputs(*f, sizes, {}, static_cast<uint64_t>(v));
      compiled += test::runAndCheck(ex, *f, sizes, host).source == CompileStats::Source::Compiled;
    }
    // Classes by block size and vector width, never one a size.
    INFO(name);
    CHECK(compiled <= 3);
  }
}

TEST_CASE("symbolic sizes: reductions over the batch run every count of their class", "[gpu][symbolic]") {
  if (!test::haveGpu()) return;
  Tuning t;
  t.symbolic = true;
  const std::vector<int> nhwc{0, 2, 3, 1};
  struct Case {
    const char* name;  // a built-in, or a fusion in the text format
    const char* sym;
    Bindings others;
    std::vector<int64_t> values;
    std::map<std::string, std::vector<int>> layouts = {};
    DType dtype = DType::F16;
    int compiles = 2;  // plans compiled: the values' classes
  };
  const std::string total = "fusion total {\n  in x: f32[N, D]\n  s: f32[] = sum(x, dims=[0, 1], keepdim=false)\n  out s = s\n}\n";
  const std::string colmean =
      "fusion colmean {\n  in x: bf16[N, C]\n  t0: f32[N, C] = cast(x, to=f32)\n"
      "  m: f32[C] = mean(t0, dims=[0], keepdim=false)\n  out m = m\n}\n";
  for (const Case& c : std::vector<Case>{
           // the weight gradients' sums over N beside the normalization kernel
           {"group_norm_backward", "N", {{"C", 64}, {"H", 16}, {"W", 16}}, {33, 40, 63, 64, 100}},
           {"group_norm_backward", "N", {{"C", 64}, {"H", 16}, {"W", 16}}, {33, 47, 64}, {{"x", nhwc}, {"dy", nhwc}}},
           {"instance_norm_backward", "N", {{"C", 64}, {"H", 16}, {"W", 16}}, {33, 47, 63}},
           // few images: one block a channel, unsplit, looping to the count
           {"group_norm_backward", "N", {{"C", 64}, {"H", 16}, {"W", 16}}, {2, 3, 5, 7}, {}, DType::BF16, 3},
           {"instance_norm_backward", "N", {{"C", 48}, {"H", 9}, {"W", 7}}, {1, 2, 3}, {}, DType::F32, 3},
           // rows and columns in one kernel over fewer rows than a full grid: blocks past the last
           // row set walk none
           {"layer_norm_backward", "N", {{"D", 1024}}, {257, 300, 383}, {}, DType::F16, 2},
           {"rms_norm_backward", "N", {{"D", 4096}}, {1, 3, 100, 129, 200}, {}, DType::BF16, 5},
           // (3 classes: the sums' count crosses 2048 vectors at N = 42, the rows' blocks change at 64)
           {"layer_norm_2d_backward", "N", {{"C", 96}, {"H", 14}, {"W", 14}}, {33, 50, 64}, {}, DType::F16, 3},
           // channels-last groups of 10 channels, two rows a block in shared memory, whole pixels a trip
           {"group_norm", "N", {{"C", 320}, {"H", 32}, {"W", 31}}, {5, 8, 9, 13}, {{"x", nhwc}}, DType::F16, 3},
           {"group_norm_backward", "N", {{"C", 320}, {"H", 32}, {"W", 31}}, {5, 9, 13}, {{"x", nhwc}, {"dy", nhwc}},
            DType::BF16, 3},
           // the channel statistics over {N, H, W}, channels-last
           {"batch_norm_backward", "N", {{"C", 64}, {"H", 14}, {"W", 14}}, {33, 40, 63}, {{"x", nhwc}, {"dy", nhwc}},
            DType::F32},
           // the bias gradient over B beside the gate gradients written as they are read
           {"lstm_cell_backward", "B", {{"H", 256}}, {60, 61, 97, 99}},
           {"gru_cell_backward", "B", {{"H", 256}}, {60, 97}},
           {total.c_str(), "N", {{"D", 1024}}, {1000, 1500, 2047}, {}, DType::F32},
           {colmean.c_str(), "N", {{"C", 512}}, {257, 300, 511}, {}, DType::BF16}}) {
    const bool text = std::string(c.name).rfind("fusion", 0) == 0;
    std::unique_ptr<ir::Fusion> f = text ? parseFusion(c.name) : findExample(c.name)->build(c.dtype);
    Bindings sizes = text ? Bindings{} : findExample(c.name)->default_sizes;
    for (const auto& [k, x] : c.others) sizes[k] = x;
    Executor ex(*f, t);
    int compiled = 0;
    for (int64_t v : c.values) {
      sizes[c.sym] = v;
      INFO(f->name() << " " << c.sym << "=" << v << (c.layouts.empty() ? "" : " channels-last"));
      const auto host = test::randomHostInputs(*f, sizes, c.layouts, static_cast<uint64_t>(v));
      compiled += test::runAndCheck(ex, *f, sizes, host).source == CompileStats::Source::Compiled;
    }
    // A class a power of two of the count, not one a size.
    INFO(f->name());
    CHECK(compiled <= c.compiles);
  }
}

TEST_CASE("LSTM and GRU cells run as one kernel each", "[gpu][pointwise]") {
  if (!test::haveGpu()) return;
  for (const char* name : {"lstm_cell", "gru_cell"}) {
    auto f = findExample(name)->buildDefault();
    for (auto sizes : {Bindings{{"B", 64}, {"H", 256}}, Bindings{{"B", 3}, {"H", 7}},
                       Bindings{{"B", 1}, {"H", 1}}, Bindings{{"B", 256}, {"H", 1024}}}) {
      INFO(name << " B=" << sizes["B"] << " H=" << sizes["H"]);
      test::checkOnGpu(*f, sizes);
    }
  }
}

TEST_CASE("misaligned pointers fall back to scalar access and stay correct", "[gpu][pointwise]") {
  if (!test::haveGpu()) return;
  auto f = findExample("add")->buildDefault();
  for (int64_t skip : {1, 2, 3, 7}) {
    int64_t n = 4096 + 64;
    auto hx = HostTensor::random(DType::F16, {n}, 1).sliceView(0, skip, n - 64 + skip);
    auto hy = HostTensor::random(DType::F16, {n}, 2).sliceView(0, 0, n - 64);
    std::vector<DeviceTensor> dev = {DeviceTensor::fromHost(hx), DeviceTensor::fromHost(hy)};
    Executor ex(*f);
    auto out = ex.run(dev);
    auto ref = evaluateReference(*f, {hx, hy});
    auto c = compareOutputs(*f, {hx, hy}, {}, {out[0].toHost()}, ref)[0];
    INFO("skip " << skip << ": " << c.str());
    CHECK(c.ok);
  }
}

namespace {
// Fills `n` f16 elements with value(i % period) by copying one block of whole periods: the
// huge test's 2^32 elements in a second, not a minute of per-element conversions.
void fillPeriodic(uint16_t* p, int64_t n, int64_t period, float (*value)(int64_t)) {
  const int64_t block = period * 4096;
  std::vector<uint16_t> one(static_cast<size_t>(block));
  for (int64_t i = 0; i < block; ++i) one[static_cast<size_t>(i)] = floatToHalf(value(i % period));
  for (int64_t at = 0; at < n; at += block)
    std::memcpy(p + at, one.data(), static_cast<size_t>(std::min(block, n - at)) * 2);
}
}  // namespace

TEST_CASE("more than 2^32 elements: pointwise and a sum to one value index with 64 bits", "[gpu][pointwise][huge]") {
  if (!test::haveGpu()) return;
  if (runtime::Device::get().totalMemory() < (size_t{20} << 30)) {
    WARN("GPU has less than 20 GiB: skipped");
    return;
  }
  // 2^32 + 25 f16 elements (8 GiB): past every 32-bit count and byte offset. Small integers,
  // exact in f16 before and after; a period of 200 that no power of two divides evenly.
  const int64_t n = (int64_t{1} << 32) + 25;
  constexpr int64_t kPeriod = 200;
  auto small = [](int64_t i) { return static_cast<float>((i * 2654435761LL) % 200 - 100); };
  HostTensor hx = HostTensor::empty(DType::F16, {n});
  fillPeriodic(static_cast<uint16_t*>(hx.data()), n, kPeriod, small);
  {
    FusionBuilder fb("huge");
    auto x = fb.input("x", DType::F16, {"N"});
    fb.output("y", x * 2.0 + 1.0);
    auto f = fb.finish();
    Executor ex(*f);
    auto out = ex.run({DeviceTensor::fromHost(hx)}, {{"N", n}});
    HostTensor hy = out[0].toHost();
    HostTensor want = HostTensor::empty(DType::F16, {n});
    fillPeriodic(static_cast<uint16_t*>(want.data()), n, kPeriod, [](int64_t i) {
      return static_cast<float>((i * 2654435761LL) % 200 - 100) * 2.0f + 1.0f;
    });
    // Compared in blocks: the first differing block is named, and the last partial one too.
    const auto* py = static_cast<const uint16_t*>(hy.data());
    const auto* pw = static_cast<const uint16_t*>(want.data());
    int64_t bad_blocks = 0, first_bad = -1;
    constexpr int64_t kBlock = int64_t{1} << 20;
    for (int64_t at = 0; at < n; at += kBlock)
      if (std::memcmp(py + at, pw + at, static_cast<size_t>(std::min(kBlock, n - at)) * 2) != 0) {
        if (first_bad < 0) first_bad = at;
        ++bad_blocks;
      }
    INFO("first block that differs starts at element " << first_bad);
    CHECK(bad_blocks == 0);
  }
  {
    // A sum of values in {-1, 0, 1} to one f32: every partial is an integer far below 2^24, so
    // any order of adding gives the exact total: n = 3q + 2 elements sum to -1 + 0.
    FusionBuilder fb("huge_sum");
    auto x = fb.input("x", DType::F16, {"N"});
    fb.output("s", sum(cast(x, DType::F32), {0}));
    auto f = fb.finish();
    fillPeriodic(static_cast<uint16_t*>(hx.data()), n, 3, [](int64_t i) { return static_cast<float>(i - 1); });
    Executor ex(*f);
    auto out = ex.run({DeviceTensor::fromHost(hx)}, {{"N", n}});
    HostTensor hs = out[0].toHost();
    REQUIRE(n % 3 == 2);
    CHECK(static_cast<const float*>(hs.data())[0] == -1.0f);
  }
}

TEST_CASE("concat outputs: gate matrices, unequal pieces, either dim", "[gpu][concat]") {
  if (!test::haveGpu()) return;
  for (DType t : {DType::F16, DType::BF16, DType::F32}) {
    FusionBuilder fb("concat_gpu");
    auto a = fb.input("a", t, {"B", "H"});
    auto b = fb.input("b", t, {"B", Extent(2) * Extent::symbol("H")});
    auto ac = toCompute(a);
    fb.output("g", concat({cast(ac * 2.0, t), b, a}, 1));
    fb.output("rows", concat({a, cast(-ac, t)}, 0));
    fb.output("s", cast(ac + 1.0, t));
    auto f = fb.finish();
    for (auto s : {Bindings{{"B", 256}, {"H", 1024}}, Bindings{{"B", 7}, {"H", 3}}, Bindings{{"B", 1}, {"H", 1}},
                   Bindings{{"B", 33}, {"H", 1531}}})
      test::checkOnGpu(*f, s);
  }
}

TEST_CASE("an output reshaped from a grouped computation, on the GPU", "[gpu][pointwise]") {
  if (!test::haveGpu()) return;
  // y = x * s[n, g] over [N, 32, C/32, H, W], written as [N, C, H, W] through the reshape
  // (test_codegen_pointwise.cpp): every float dtype, both layouts, odd sizes.
  for (DType t : {DType::F16, DType::BF16, DType::F32}) {
    FusionBuilder fb("group_scale");
    auto x = fb.input("x", t, {"N", "C", "H", "W"});
    auto s = fb.input("s", DType::F32, {Dim("N"), Dim(32)});
    auto xg = reshape(toCompute(x), {x.size(0), Extent(32), x.size(1) / Extent(32), x.size(2), x.size(3)});
    fb.output("y", reshape(cast(xg * broadcast(s, {false, false, true, true, true}), t),
                           {x.size(0), x.size(1), x.size(2), x.size(3)}));
    auto f = fb.finish();
    for (auto sizes : {Bindings{{"N", 3}, {"C", 96}, {"H", 7}, {"W", 9}}, Bindings{{"N", 2}, {"C", 64}, {"H", 33}, {"W", 1}}}) {
      INFO(dtypeName(t));
      test::checkOnGpu(*f, sizes);
      test::checkOnGpu(*f, sizes, {{"x", {0, 2, 3, 1}}});
    }
  }
}

TEST_CASE("by default a fusion's first sizes compile exactly, a second batch size once for every later one",
          "[gpu][symbolic]") {
  if (!test::haveGpu()) return;
  auto f = findExample("layer_norm")->buildDefault();
  struct Call {
    int64_t n, d;
    bool compiles, runtime_sized;
  };
  for (bool automatic : {true, false}) {
    Tuning t;
    t.no_auto_symbolic = !automatic;
    Executor ex(*f, t);
    // N = 1531 first: exact. 61: a second row count, a kernel taking N at run time; 97 and 4093
    // find it. D = 333: another row length, exact; 1531 again: its exact kernel. (The switch's
    // sizes are others: the exact kernels above are in memory, its key the same.)
    const std::vector<Call> calls = automatic ? std::vector<Call>{{1531, 1000, true, false},
                                                                  {61, 1000, true, true},
                                                                  {97, 1000, false, true},
                                                                  {4093, 1000, false, true},
                                                                  {4093, 333, true, false},
                                                                  {1531, 1000, false, false}}
                                              : std::vector<Call>{{1533, 1000, true, false},
                                                                  {63, 1000, true, false},
                                                                  {99, 1000, true, false}};
    for (const Call& c : calls) {
      const Bindings sizes{{"N", c.n}, {"D", c.d}};
      INFO((automatic ? "automatic" : "LOOM_NO_AUTO_SYMBOLIC") << ": N=" << c.n << " D=" << c.d);
      const auto host = test::randomHostInputs(*f, sizes, {}, static_cast<uint64_t>(c.n + c.d));
      const CompileStats cs = test::runAndCheck(ex, *f, sizes, host);
      // (A kernel another test compiled may come from the disk cache: not a memory hit either.)
      CHECK((cs.source != CompileStats::Source::MemoryCache) == c.compiles);
      CHECK((cs.runtime_size_kernels > 0) == c.runtime_sized);
    }
  }
}

TEST_CASE("a second row count takes it at run time only where the two would share a kernel class",
          "[gpu][symbolic]") {
  if (!test::haveGpu()) return;
  // layer_norm_backward D = 1024: the column kernel's grid is its row sets below the GPU's fill
  // (61 rows), all of the GPU above it (4093, 8192).
  auto f = findExample("layer_norm_backward")->buildDefault();
  Executor ex(*f);
  struct Call {
    int64_t n;
    bool runtime_sized;
  };
  // 4093 exact; 61 shares no class with it: exact; 8192 shares 4093's (not 61's): at run time;
  // 97: an earlier call took N at run time, so this one does too (a class of its own).
  for (const Call& c : {Call{4093, false}, Call{61, false}, Call{8192, true}, Call{97, true}}) {
    const Bindings sizes{{"N", c.n}, {"D", 1024}};
    INFO("N=" << c.n);
    const auto host = test::randomHostInputs(*f, sizes, {}, static_cast<uint64_t>(c.n));
    CHECK((test::runAndCheck(ex, *f, sizes, host).runtime_size_kernels > 0) == c.runtime_sized);
  }
}
