// GPU: an Executor's signatures. It holds a bounded number of plans (least recently used
// dropped with their intermediates, planned again when they come back), and runs the plan of
// the sizes it is given where two signatures share their inputs; a thread with no current context
// launches what another prepared, and a caller's own current context stays current; loom runs on
// one GPU a process; a fusion at a size of 0 runs as no kernels.
#include <catch2/catch.hpp>
#include <cuda.h>
#include <dlfcn.h>

#include <exception>
#include <functional>
#include <thread>

#include "frontend/framework_ops.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "tests/gpu_test_util.h"

using namespace loom;

namespace {
// `body` on a thread of its own (one that never used CUDA); what it throws is thrown here.
void onFreshThread(const std::function<void()>& body) {
  std::exception_ptr err;
  std::thread([&] {
    try {
      body();
    } catch (...) {
      err = std::current_exception();
    }
  }).join();
  if (err) std::rethrow_exception(err);
}
}  // namespace

TEST_CASE("an Executor drops its least recently used signatures, and plans them again when they come back",
          "[gpu][executor]") {
  if (!test::haveGpu()) return;
  auto f = test::colrow();
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
  auto f = test::colrow();
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
  test::checkOutputs(*f, big, host, out);
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
  auto with_temp = test::colrow();
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
    onFreshThread([&] { ex.launch(in, out); });
    runtime::Device::get().synchronize();
    test::checkOutputs(*f, sizes, host, out);
  }
}

TEST_CASE("a caller's own current context stays current across loom's calls, which run in loom's",
          "[gpu][executor]") {
  if (!test::haveGpu()) return;
  // A caller (another library, or a framework that made another GPU's context current) has its
  // own context current: loom launches a plan prepared in its own context, plans a new size,
  // allocates and synchronizes, in its own, and the caller's is current again after each call;
  // on this thread and on a fresh one.
  auto f = test::colrow();
  Executor ex(*f);
  const Bindings sizes{{"N", 29}, {"D", 70}}, other{{"N", 31}, {"D", 70}};
  const auto host = test::randomHostInputs(*f, sizes, {}, 12, 0.5, 1.5);
  const auto host2 = test::randomHostInputs(*f, other, {}, 13, 0.5, 1.5);
  std::vector<DeviceTensor> in{DeviceTensor::fromHost(host[0])};
  std::vector<DeviceTensor> out = ex.run(in, sizes);  // prepared with loom's context current
  // A context of the test's own, from the driver loom loaded (loom's table holds only what loom
  // calls; cuCtxCreate_v4 needs a 12.5 driver): skipped where the driver has neither entry.
  void* libcuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  REQUIRE(libcuda);
  using CreateV4 = CUresult (*)(CUcontext*, void*, unsigned, CUdevice);
  using CreateV2 = CUresult (*)(CUcontext*, unsigned, CUdevice);
  using Destroy = CUresult (*)(CUcontext);
  auto create4 = reinterpret_cast<CreateV4>(dlsym(libcuda, "cuCtxCreate_v4"));
  auto create2 = reinterpret_cast<CreateV2>(dlsym(libcuda, "cuCtxCreate_v2"));
  auto destroy_ctx = reinterpret_cast<Destroy>(dlsym(libcuda, "cuCtxDestroy_v2"));
  if ((!create4 && !create2) || !destroy_ctx) return;
  auto& cu = runtime::driver();
  CUdevice dev = 0;
  REQUIRE(cu.cuDeviceGet(&dev, 0) == CUDA_SUCCESS);
  CUcontext mine = nullptr;  // current on this thread once made
  REQUIRE((create4 ? create4(&mine, nullptr, 0, dev) : create2(&mine, 0, dev)) == CUDA_SUCCESS);
  struct DestroyAtEnd {
    Destroy fn;
    CUcontext c;
    ~DestroyAtEnd() { fn(c); }
  } destroy{destroy_ctx, mine};
  auto current = [&] {
    CUcontext c = nullptr;
    runtime::driver().cuCtxGetCurrent(&c);
    return c;
  };
  out[0].poison(0xff);
  ex.launch(in, out);
  CHECK(current() == mine);
  runtime::Device::get().synchronize();
  test::checkOutputs(*f, sizes, host, out);
  std::vector<DeviceTensor> in2{DeviceTensor::fromHost(host2[0])};
  test::checkOutputs(*f, other, host2, ex.run(in2, other));  // planned, loaded, allocated, run
  CHECK(current() == mine);
  bool kept = false;
  onFreshThread([&] {
    runtime::driver().cuCtxSetCurrent(mine);
    out[0].poison(0xff);
    ex.launch(in, out);
    runtime::Device::get().synchronize();
    kept = current() == mine;
  });
  CHECK(kept);
  test::checkOutputs(*f, sizes, host, out);
}

TEST_CASE("loom runs on one GPU a process: selectDevice names it, or refuses another and says which",
          "[executor]") {
  if (!gpuAvailable()) {
    CHECK_THROWS_WITH(selectDevice(0), Catch::Contains("no NVIDIA GPU found"));
    CHECK(selectedDevice() == 0);
    return;
  }
  CHECK_THROWS_WITH(selectDevice(-1), Catch::Contains("GPU -1 does not exist: GPUs are numbered from 0"));
  CHECK_THROWS_WITH(selectDevice(4096), Catch::Contains("GPU 4096 does not exist: the NVIDIA driver reports"));
  const int in_use = runtime::Device::get().ordinal();  // earlier tests ran on it
  CHECK(selectedDevice() == in_use);
  CHECK_NOTHROW(selectDevice(in_use));
  int count = 0;
  REQUIRE(runtime::driver().cuDeviceGetCount(&count) == CUDA_SUCCESS);
  if (count > 1) {
    const int other = in_use == 0 ? 1 : 0;
    CHECK_THROWS_WITH(selectDevice(other),
                      Catch::Contains(fmt::format("loom runs on GPU {} in this process", in_use)) &&
                          Catch::Contains(fmt::format("cannot also run on GPU {}", other)));
  }
  CHECK(selectedDevice() == in_use);
  CHECK(runtime::Device::get().ordinal() == in_use);
  // Pointers handed over without their GPU (__cuda_array_interface__) are asked for it.
  runtime::DeviceBuffer buf(4096);
  CHECK(runtime::pointerDevice(reinterpret_cast<const void*>(buf.ptr()), "buf") == in_use);
  CHECK(runtime::pointerDevice(reinterpret_cast<const void*>(buf.ptr() + 100), "buf + 100") == in_use);
  const int on_host = 3;
  CHECK_THROWS_WITH(runtime::pointerDevice(&on_host, "input `x`"),
                    Catch::Contains("input `x` (0x") && Catch::Contains("is no memory the CUDA driver knows"));
  // Page-locked host memory: every GPU reaches it (-1, no GPU to select).
  const runtime::ContextScope scope;
  void* pinned = nullptr;
  REQUIRE(runtime::driver().cuMemAllocHost_v2(&pinned, 4096) == CUDA_SUCCESS);
  CHECK(runtime::pointerDevice(pinned, "pinned") == -1);
  runtime::driver().cuMemFreeHost(pinned);
}

TEST_CASE("a fusion at a size of 0 runs as no kernels, and a reduction over an empty dim gives the reference's values",
          "[gpu][executor][empty]") {
  if (!test::haveGpu()) return;
  // Every output empty: no kernels.
  auto ln = buildFrameworkOp("layer_norm", {{"x", "f16"}, {"w", "f32"}, {"b", "f32"}});
  test::checkOnGpu(*ln, {{"N", 0}, {"D", 64}});
  Executor ex(*ln);
  auto empty = test::randomDeviceInputs(*ln, {{"N", 0}, {"D", 64}}, 3);
  CHECK(ex.planFor(empty).kernels.empty());
  // dw and db of an empty batch: sums over no rows, 0 (computed on the host).
  auto lnb = buildFrameworkOp("layer_norm_backward", {{"x", "f32"}, {"w", "f32"}, {"b", "f32"}});
  test::checkOnGpu(*lnb, {{"N", 0}, {"D", 40}});
  auto colsum = parseFusion("fusion colsum {\n  in x: f32[M, D]\n  s: f32[D] = sum(x, dims=[0])\n"
                            "  m: f32[D] = mean(x, dims=[0])\n  out s = s\n  out m = m\n}\n");
  test::checkOnGpu(*colsum, {{"M", 0}, {"D", 7}});
  // The same Executor then runs a size with elements as any other.
  test::checkOnGpu(*colsum, {{"M", 5}, {"D", 7}});
}
