// [gpu]: iota and Philox random numbers on the GPU, bit for bit the reference's, whatever the
// vector width, tail, iteration order (channels-last inputs) or kernel; dropout's mask the same
// in a forward and a backward fusion.
#include <catch2/catch.hpp>

#include "tests/gpu_test_util.h"
#include "tests/random_fusions.h"

using namespace loom;

namespace {

HostTensor scalarI64(int64_t v) { return HostTensor::fromValues(DType::I64, {}, {static_cast<double>(v)}); }

// x + u for u random of x's shape, u and the sum both outputs; `normal` for rand_normal.
std::unique_ptr<ir::Fusion> noisy(DType t, bool normal) {
  FusionBuilder fb(normal ? "normal_noise" : "uniform_noise");
  auto x = fb.input("x", t, {"N", "C", "H", "W"});
  auto s = fb.input("seed", DType::I64, {});
  auto o = fb.input("offset", DType::I64, {});
  std::vector<Dim> shape = {"N", "C", "H", "W"};
  auto u = normal ? randNormal(s, o, shape, t) : randUniform(s, o, shape, t);
  fb.output("u", u);
  fb.output("y", x + u);
  return fb.finish();
}

std::vector<HostTensor> inputsOf(const ir::Fusion& f, const Bindings& sizes, const std::vector<int>& x_order,
                                 int64_t seed, int64_t offset) {
  std::vector<HostTensor> host = test::randomHostInputs(f, sizes, {{"x", x_order}});
  host[1] = scalarI64(seed);
  host[2] = scalarI64(offset);
  return host;
}

const std::vector<Bindings> kShapes = {
    {{"N", 1}, {"C", 1}, {"H", 1}, {"W", 1}},    {{"N", 2}, {"C", 3}, {"H", 5}, {"W", 7}},
    {{"N", 4}, {"C", 64}, {"H", 8}, {"W", 16}},  {{"N", 3}, {"C", 96}, {"H", 33}, {"W", 31}},
    {{"N", 2}, {"C", 8}, {"H", 100}, {"W", 1003}},
};

}  // namespace

TEST_CASE("random numbers on the GPU are the reference's bits at every shape and layout", "[gpu][random]") {
  if (!test::haveGpu()) return;
  for (DType t : {DType::F16, DType::BF16, DType::F32, DType::F64}) {
    for (bool normal : {false, true}) {
      auto f = noisy(t, normal);
      for (const Bindings& sizes : kShapes) {
        for (const std::vector<int>& order : {std::vector<int>{0, 1, 2, 3}, std::vector<int>{0, 2, 3, 1}}) {
          INFO(f->name() << " " << dtypeName(t) << " N=" << sizes.at("N") << " C=" << sizes.at("C") << " H="
                         << sizes.at("H") << " W=" << sizes.at("W") << " order " << order[1]);
          const auto host = inputsOf(*f, sizes, order, 0x1234567890abLL, (int64_t{1} << 32) - 5);
          test::checkOnGpuWith(*f, sizes, host);
          if (normal) continue;  // normal numbers carry the GPU's log and cos: checked to tolerance above
          Executor ex(*f);
          std::vector<DeviceTensor> dev;
          for (const auto& h : host) dev.push_back(DeviceTensor::fromHost(h));
          const auto outs = ex.run(dev);
          CHECK(outs[0].toHost().toVector() == evaluateReference(*f, host, sizes)[0].toVector());
        }
      }
    }
  }
}

TEST_CASE("iota on the GPU counts along its dim in every dtype", "[gpu][random]") {
  if (!test::haveGpu()) return;
  for (DType t : {DType::I32, DType::I64, DType::F16, DType::F32}) {
    for (int dim = 0; dim < 4; ++dim) {
      FusionBuilder fb("iota_plus");
      auto x = fb.input("x", t, {"N", "C", "H", "W"});
      fb.output("i", iota(fb, {"N", "C", "H", "W"}, dim, t));
      fb.output("y", x + iota(fb, {"N", "C", "H", "W"}, dim, t));
      auto f = fb.finish();
      for (const Bindings& sizes : {kShapes[1], kShapes[2], kShapes[3]}) {
        INFO(dtypeName(t) << " dim " << dim << " C=" << sizes.at("C"));
        test::checkOnGpu(*f, sizes, {{"x", {0, 2, 3, 1}}}, 3, -4, 4);
        test::checkOnGpu(*f, sizes, {}, 3, -4, 4);
      }
    }
  }
}

TEST_CASE("dropout's mask is the same in its forward and backward kernels", "[gpu][random]") {
  if (!test::haveGpu()) return;
  auto fusion = [](const char* name) {
    FusionBuilder fb(name);
    auto x = fb.input("x", DType::F16, {"N", "D"});
    auto s = fb.input("seed", DType::I64, {});
    auto o = fb.input("offset", DType::I64, {});
    fb.output("y", cast(dropout(cast(x, DType::F32), 0.3, s, o), DType::F16));
    return fb.finish();
  };
  auto fwd = fusion("dropout_forward"), bwd = fusion("dropout_backward");
  const Bindings sizes{{"N", 333}, {"D", 1000}};
  auto host = test::randomHostInputs(*fwd, sizes, {}, 5, 0.5, 1.5);  // never zero
  host[1] = scalarI64(42);
  host[2] = scalarI64(1000);
  auto dy = test::randomHostInputs(*bwd, sizes, {}, 9, -1.5, -0.5);
  dy[1] = host[1];
  dy[2] = host[2];
  test::checkOnGpuWith(*fwd, sizes, host);
  test::checkOnGpuWith(*bwd, sizes, dy);
  std::vector<DeviceTensor> a, b;
  for (const auto& h : host) a.push_back(DeviceTensor::fromHost(h));
  for (const auto& h : dy) b.push_back(DeviceTensor::fromHost(h));
  const std::vector<double> y = Executor(*fwd).run(a)[0].toHost().toVector();
  const std::vector<double> dx = Executor(*bwd).run(b)[0].toHost().toVector();
  int64_t kept = 0, same = 0;
  for (size_t i = 0; i < y.size(); ++i) {
    kept += y[i] != 0;
    same += (y[i] != 0) == (dx[i] != 0);
  }
  CHECK(same == static_cast<int64_t>(y.size()));
  CHECK(std::abs(static_cast<double>(kept) / static_cast<double>(y.size()) - 0.7) < 0.01);
}

namespace {

void checkSeeded(const ir::Fusion& f, const Bindings& sizes, const std::map<std::string, std::vector<int>>& layouts) {
  std::vector<HostTensor> host = test::randomHostInputs(f, sizes, layouts);
  host[1] = scalarI64(-77);
  host[2] = scalarI64(123456789);
  test::checkOnGpuWith(f, sizes, host);
}

}  // namespace

TEST_CASE("random numbers inside normalization and reduction kernels match the reference", "[gpu][random]") {
  if (!test::haveGpu()) return;
  for (const auto& c : test::randomRowCases()) {
    INFO(c.f->name() << " " << c.sizes.begin()->second << " x " << c.sizes.rbegin()->second);
    checkSeeded(*c.f, c.sizes, c.layouts);
  }
}
