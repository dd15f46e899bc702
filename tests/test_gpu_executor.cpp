// GPU: an Executor's signatures. It holds a bounded number of plans (least recently used
// dropped with their intermediates, planned again when they come back), and runs the plan of
// the sizes it is given where two signatures share their inputs; a thread with no current context
// launches what another prepared.
#include <catch2/catch.hpp>

#include <exception>
#include <thread>

#include "runtime/device.h"
#include "tests/gpu_test_util.h"

using namespace loom;

namespace {
// Two kernels and an intermediate between them: y = x / (its column sums), then y's row sums.
std::unique_ptr<ir::Fusion> colrow() {
  return parseFusion(
      "fusion colrow {\n  in x: f32[N, D]\n  s: f32[1b, D] = sum(x, dims=[0], keepdim=true)\n"
      "  y: f32[N, D] = div(x, s)\n  z: f32[N] = sum(y, dims=[1])\n  out z = z\n}\n");
}
}  // namespace

TEST_CASE("an Executor drops its least recently used signatures, and plans them again when they come back",
          "[gpu][executor]") {
  if (!test::haveGpu()) return;
  auto f = colrow();
  Executor ex(*f);
  ex.limitSignatures(3);
  // 100, 200 and 300 come back after being dropped (planned again: some first-call time), 300
  // once while still held; each call is checked against the reference.
  struct Call {
    int64_t n;
    bool planned;
  };
  int step = 0;
  for (const Call& c : {Call{100, true}, Call{200, true}, Call{300, true}, Call{400, true}, Call{300, false},
                        Call{100, true}, Call{500, true}, Call{200, true}, Call{100, false}}) {
    const Bindings sizes{{"N", c.n}, {"D", 67}};
    INFO("call " << step << ": N=" << c.n);
    // Positive inputs: column sums far from zero.
    const auto host = test::randomHostInputs(*f, sizes, {}, static_cast<uint64_t>(c.n + step++), 0.5, 1.5);
    const CompileStats cs = test::runAndCheck(ex, *f, sizes, host);
    CHECK((cs.total_ms > 0) == c.planned);
    REQUIRE(ex.planFor(std::vector<DeviceTensor>{DeviceTensor::fromHost(host[0])}, sizes).temps.size() == 1);
    CHECK(ex.signatures() <= 3);
  }
  CHECK(ex.signatures() == 3);
}

TEST_CASE("a dropped signature's intermediates outlive the launches queued on them", "[gpu][executor]") {
  if (!test::haveGpu()) return;
  auto f = colrow();
  Executor ex(*f);
  ex.limitSignatures(1);
  const Bindings big{{"N", 65536}, {"D", 1000}}, small{{"N", 3}, {"D", 5}};
  const auto host = test::randomHostInputs(*f, big, {}, 7, 0.5, 1.5);
  std::vector<DeviceTensor> in{DeviceTensor::fromHost(host[0])};
  std::vector<DeviceTensor> out = ex.allocateOutputs(in, big, /*poison=*/true);
  // Twenty launches queued on the big plan's intermediates, then another signature drops it
  // (its first call runs in the same stream); no wait in between.
  for (int i = 0; i < 20; ++i) ex.launch(in, out);
  const auto small_host = test::randomHostInputs(*f, small, {}, 8, 0.5, 1.5);
  test::runAndCheck(ex, *f, small, small_host);
  CHECK(ex.signatures() == 1);
  const auto cs = compareOutputs(*f, host, big, {out[0].toHost()}, evaluateReference(*f, host, big));
  INFO(cs[0].str());
  CHECK(cs[0].ok);
}

TEST_CASE("runInto runs the plan of the sizes it is given where two signatures share their inputs",
          "[gpu][executor]") {
  if (!test::haveGpu()) return;
  // x[N*D] as N rows of D: one input signature, two plans (its sizes given beside it).
  auto f = parseFusion(
      "fusion rows {\n  in x: f32[N*D]\n  r: f32[N, D] = reshape(x, shape=[N, D])\n"
      "  y: f32[N] = sum(r, dims=[1])\n  out y = y\n}\n");
  Executor ex(*f);
  int step = 0;
  for (const Bindings& sizes : {Bindings{{"N", 2}, {"D", 8}}, Bindings{{"N", 4}, {"D", 4}},
                                Bindings{{"N", 2}, {"D", 8}}, Bindings{{"N", 4}, {"D", 4}}}) {
    INFO("call " << step << ": N=" << sizes.at("N") << " D=" << sizes.at("D"));
    test::runAndCheck(ex, *f, sizes, test::randomHostInputs(*f, sizes, {}, static_cast<uint64_t>(step++)));
  }
  CHECK(ex.signatures() == 2);
}

TEST_CASE("a thread that never used CUDA launches a prepared plan (the context is made current there)",
          "[gpu][executor]") {
  if (!test::haveGpu()) return;
  // As PyTorch's autograd thread calls loom: the plan prepared here, launched on a new thread
  // with no current context. colrow has an intermediate (its launch asks for the stream's id);
  // scale has none (its launch is the kernel alone).
  auto scale = parseFusion(
      "fusion scale {\n  in x: f32[N, D]\n  y: f32[N, D] = mul(x, x)\n  out y = y\n}\n");
  auto with_temp = colrow();
  for (const ir::Fusion* f : {with_temp.get(), scale.get()}) {
    INFO("fusion " << f->name());
    Executor ex(*f);
    const Bindings sizes{{"N", 37}, {"D", 129}};
    const auto host = test::randomHostInputs(*f, sizes, {}, 11, 0.5, 1.5);
    std::vector<DeviceTensor> in{DeviceTensor::fromHost(host[0])};
    std::vector<DeviceTensor> out = ex.allocateOutputs(in, sizes, /*poison=*/true);
    ex.launch(in, out);  // prepared (and its scratch made) on this thread
    runtime::Device::get().synchronize();
    out = ex.allocateOutputs(in, sizes, /*poison=*/true);
    std::exception_ptr err;
    std::thread([&] {
      try {
        ex.launch(in, out);
      } catch (...) {
        err = std::current_exception();
      }
    }).join();
    if (err) std::rethrow_exception(err);
    runtime::Device::get().synchronize();
    const auto cs = compareOutputs(*f, host, sizes, {out[0].toHost()}, evaluateReference(*f, host, sizes));
    INFO(cs[0].str());
    CHECK(cs[0].ok);
  }
}
