// GPU: loom's launches captured into a CUDA graph (as torch.cuda.graph and torch.compile's
// "reduce-overhead" mode record them), in the driver's global capture mode: the first launch in
// the capture allocates its intermediates and workspaces without breaking it, the graph's replays
// compute fresh inputs, also once the Executor dropped the captured signature, and the stream
// runs loom's work outside the graph afterwards; zeroNow zeroes while another stream captures.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cuda.h>
#include <dlfcn.h>

#include "frontend/examples.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "tests/gpu_test_util.h"

using namespace loom;

namespace {
// The graph entry points, from the driver loom loaded (loom's own table holds only what loom calls).
struct GraphApi {
  CUresult (*begin)(CUstream, CUstreamCaptureMode) = nullptr;
  CUresult (*end)(CUstream, CUgraph*) = nullptr;
  CUresult (*instantiate)(CUgraphExec*, CUgraph, unsigned long long) = nullptr;
  CUresult (*launch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*destroy_exec)(CUgraphExec) = nullptr;
  CUresult (*destroy)(CUgraph) = nullptr;
  bool ok() const { return begin && end && instantiate && launch && destroy_exec && destroy; }
};

GraphApi graphApi() {
  GraphApi g;
  void* cu = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
  if (!cu) return g;
  auto sym = [&](auto& fn, const char* name) { fn = reinterpret_cast<std::decay_t<decltype(fn)>>(dlsym(cu, name)); };
  sym(g.begin, "cuStreamBeginCapture_v2");
  sym(g.end, "cuStreamEndCapture");
  sym(g.instantiate, "cuGraphInstantiateWithFlags");
  sym(g.launch, "cuGraphLaunch");
  sym(g.destroy_exec, "cuGraphExecDestroy");
  sym(g.destroy, "cuGraphDestroy");
  return g;
}

// Device tensors of `host`'s values copied into `into` (the captured graph's inputs, same layouts).
void refill(std::vector<DeviceTensor>& into, const std::vector<HostTensor>& host) {
  for (size_t i = 0; i < into.size(); ++i) {
    const DeviceTensor fresh = DeviceTensor::fromHost(host[i]);
    REQUIRE(fresh.spanBytes() == into[i].spanBytes());
    REQUIRE(runtime::driver().cuMemcpyDtoD_v2(into[i].ptr(), fresh.ptr(), fresh.spanBytes()) == CUDA_SUCCESS);
  }
  runtime::Device::get().synchronize();
}
}  // namespace

TEST_CASE("a plan captured into a CUDA graph replays on fresh inputs, and its stream runs it after",
          "[gpu][executor][graph]") {
  if (!test::haveGpu()) return;
  const GraphApi g = graphApi();
  if (!g.ok()) return;
  struct Case {
    std::unique_ptr<ir::Fusion> f;
    Bindings sizes;
  };
  std::vector<Case> cases;
  // Column sums beside row statistics: a cooperative kernel with a grid workspace.
  cases.push_back({findExample("layer_norm_backward")->build(DType::F32), {{"N", 1531}, {"D", 1000}}});
  // Two kernels and an intermediate between them.
  cases.push_back({test::colrow(), {{"N", 37}, {"D", 129}}});
  for (const Case& c : cases) {
    const ir::Fusion& f = *c.f;
    INFO("fusion " << f.name());
    Executor ex(f);
    ex.limitSignatures(1);  // a second signature drops the captured one
    const auto h1 = test::randomHostInputs(f, c.sizes, {}, 21, 0.5, 1.5);
    std::vector<DeviceTensor> in;
    for (const auto& h : h1) in.push_back(DeviceTensor::fromHost(h));
    std::vector<DeviceTensor> out = ex.allocateOutputs(in, c.sizes, /*poison=*/true);
    ex.launch(in, out);  // compiled and run on the default stream first, as PyTorch's warm-up does
    runtime::Device::get().synchronize();
    test::checkOutputs(f, c.sizes, h1, out);

    runtime::Stream s;  // no scratch of loom's on it yet: the capture's launch allocates it
    const auto cs = reinterpret_cast<CUstream>(s.handle());
    ex.setStream(s.handle());
    REQUIRE(g.begin(cs, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
    ex.launch(in, out);
    CUgraph graph = nullptr;
    REQUIRE(g.end(cs, &graph) == CUDA_SUCCESS);  // fails where a call during capture broke it
    CUgraphExec exec = nullptr;
    REQUIRE(g.instantiate(&exec, graph, 0) == CUDA_SUCCESS);
    for (uint64_t seed : {22, 23}) {
      const auto h = test::randomHostInputs(f, c.sizes, {}, seed, 0.5, 1.5);
      refill(in, h);
      for (auto& o : out) o.poison(0xff);
      REQUIRE(g.launch(exec, cs) == CUDA_SUCCESS);
      s.synchronize();
      test::checkOutputs(f, c.sizes, h, out);
    }
    // The stream outside the graph (scratch of its own).
    for (auto& o : out) o.poison(0xff);
    refill(in, h1);
    ex.launch(in, out);
    s.synchronize();
    test::checkOutputs(f, c.sizes, h1, out);
    // Another signature drops the captured one from the Executor: the graph's scratch stays.
    ex.setStream(0);
    Bindings other = c.sizes;
    other["N"] += 1;
    const auto ho = test::randomHostInputs(f, other, {}, 24, 0.5, 1.5);
    std::vector<DeviceTensor> in_other;
    for (const auto& h : ho) in_other.push_back(DeviceTensor::fromHost(h));
    test::checkOutputs(f, other, ho, ex.run(in_other, other));
    REQUIRE(ex.signatures() == 1);
    const auto h4 = test::randomHostInputs(f, c.sizes, {}, 25, 0.5, 1.5);
    refill(in, h4);
    for (auto& o : out) o.poison(0xff);
    REQUIRE(g.launch(exec, cs) == CUDA_SUCCESS);
    s.synchronize();
    test::checkOutputs(f, c.sizes, h4, out);
    g.destroy_exec(exec);
    g.destroy(graph);
  }
}

TEST_CASE("zeroNow zeroes memory at once, also while another stream is being captured", "[gpu][graph]") {
  if (!test::haveGpu()) return;
  const GraphApi g = graphApi();
  if (!g.ok()) return;
  runtime::Stream s;
  const auto cs = reinterpret_cast<CUstream>(s.handle());
  for (bool capturing : {false, true}) {
    INFO("while capturing: " << capturing);
    runtime::DeviceBuffer buf(1 << 20);
    buf.fill32(0xffffffffu);
    if (capturing) REQUIRE(g.begin(cs, CU_STREAM_CAPTURE_MODE_GLOBAL) == CUDA_SUCCESS);
    {
      const runtime::DeviceBuffer during(4096);  // allocated and freed inside the capture
    }
    runtime::zeroNow(buf.ptr(), buf.size());
    if (capturing) {
      CUgraph graph = nullptr;
      REQUIRE(g.end(cs, &graph) == CUDA_SUCCESS);  // still valid: nothing of the above was refused
      g.destroy(graph);
    }
    std::vector<std::uint32_t> host(buf.size() / 4, 1);
    buf.copyToHost(host.data(), buf.size());
    CHECK(std::all_of(host.begin(), host.end(), [](std::uint32_t v) { return v == 0; }));
  }
}
