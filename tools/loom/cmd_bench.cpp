// `loom bench FUSION`: times a compiled fusion the way triton.testing.do_bench does (warm-up,
// CUDA events around every launch, L2 flushed before each timed launch, median): the whole
// plan (every kernel launched back to back, as the Executor runs it) and, where the plan has
// several kernels, each kernel alone. Reports GB/s against the device-to-device copy bandwidth
// measured the same way in the same process, the compile time and the host overhead per
// launch. With --inputs/--save-outputs it reads inputs from and writes outputs to raw files,
// so bench/peer.py can check loom against PyTorch.
#include <algorithm>
#include <chrono>
#include <iostream>

#include "runtime/bind_sizes.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "tools/loom/bench_io.h"
#include "tools/loom/bench_report.h"
#include "tools/loom/cli.h"

namespace loom::cli {

namespace {

using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

// This process's first compile, through the Executor (it may hit the disk cache), then a cold
// compile of the whole plan straight through compilePlan, which reports LLVM->PTX even when the
// Executor found the kernels in the disk cache (LLVM is initialized by now; it fills no cache).
void compileAndMeasure(const ir::Fusion& f, const Bindings& sizes, const Tuning& tuning, Executor& ex,
                       const std::vector<DeviceTensor>& dev_in, BenchResult& r) {
  ex.planFor(dev_in, sizes);  // compiles now; throws when no scheduler accepts a segment
  const CompileStats cs = ex.lastCompile();
  r.compile_source = cs.source == CompileStats::Source::Compiled    ? "fresh"
                     : cs.source == CompileStats::Source::DiskCache ? "disk cache"
                                                                    : "memory cache";
  r.llvm_ptx_ms = cs.llvm_ptx_ms;
  r.load_ms = cs.load_ms;
  r.first_total_ms = cs.total_ms;
  Bindings bound = bindSizes(f, dev_in, sizes);
  auto t0 = Clock::now();
  CompiledPlan cold = compilePlan(f, bound, descsOf(dev_in), CompileOptions{currentDevice(), tuning});
  r.cold_compile_ms = msSince(t0);
  r.cold_llvm_ptx_ms = 0;
  for (const auto& pk : cold.kernels) r.cold_llvm_ptx_ms += pk.kernel.llvm_ptx_ms;
}


// Launches in batches short enough never to fill the launch queue (so host time is not GPU
// time), synchronizing between batches: host microseconds per launch.
constexpr int kLaunchBatch = 100;
template <typename Launch>
double usPerLaunch(int launches, Launch launch) {
  auto& dev = runtime::Device::get();
  double ms = 0;
  dev.synchronize();
  for (int b = 0; b < launches / kLaunchBatch; ++b) {
    auto t0 = Clock::now();
    for (int i = 0; i < kLaunchBatch; ++i) launch();
    ms += msSince(t0);
    dev.synchronize();
  }
  return ms * 1e3 / launches;
}

// The driver's own cost per launch, under loom's: an empty kernel (no parameters, one warp) on
// the legacy default stream (the Executor's unless LOOM_STREAM says per-thread), after a
// warm-up batch.
double driverFloorUs(int launches) {
  static const char* kEmpty =
      ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry loom_empty()\n{\n\tret;\n}\n";
  runtime::Module m(kEmpty, "empty kernel");
  runtime::Kernel k = m.getKernel("loom_empty");
  runtime::LaunchConfig cfg;
  cfg.block.x = 32;
  auto launch = [&] { runtime::launch(k, cfg, nullptr, runtime::StreamHandle{0}); };
  for (int i = 0; i < kLaunchBatch; ++i) launch();
  return usPerLaunch(launches, launch);
}

// Host overhead: back-to-back launches of the cached plan, and the driver's floor beside it.
void measureHost(Executor& ex, const std::vector<DeviceTensor>& dev_in, const std::vector<DeviceTensor>& outs,
                 BenchResult& r) {
  int launches = std::clamp(static_cast<int>(300.0 / std::max(r.plan.median_ms, 1e-3)), kLaunchBatch, 2000);
  launches = launches / kLaunchBatch * kLaunchBatch;
  r.host_us = usPerLaunch(launches, [&] { ex.launch(dev_in, outs); });
  r.host_launches = launches;
  r.driver_floor_us = driverFloorUs(launches);
}

int benchImpl(const Args& a, BenchResult& r) {
  auto l = loadFromArgs(a, "bench");
  auto layouts = layoutsFromArgs(a, *l.fusion);
  r.fusion = l.fusion->name();
  const int fixed_reps = static_cast<int>(intOption(a, "iters", 0, 1, 1000000));
  auto& dev = gpuFromArgs(a);
  r.device = dev.describe();
  r.gpu = dev.name();

  std::vector<DeviceTensor> dev_in = emptyInputs(*l.fusion, l.sizes, layouts);
  r.dtype = dev_in.empty() ? "" : std::string(dtypeName(dev_in[0].dtype()));
  const Tuning tuning = tuningFromEnvironment();
  Executor ex(*l.fusion, tuning);
  compileAndMeasure(*l.fusion, l.sizes, tuning, ex, dev_in, r);

  // The data: from files or seeded random values, uploaded with the same layouts (the
  // Executor finds the plan compiled above for them).
  dev_in.clear();
  {
    std::vector<HostTensor> host_in;
    if (auto dir = a.get("inputs")) {
      host_in = loadInputs(*dir, *l.fusion, l.sizes, layouts);
      r.inputs_from_files = true;
    } else {
      host_in = randomInputs(*l.fusion, l.sizes, layouts, 0);
    }
    for (const auto& h : host_in) dev_in.push_back(DeviceTensor::fromHost(h));
  }
  const CompiledPlan& plan = ex.planFor(dev_in, l.sizes);
  for (const KernelInfo& k : planKernels(plan, descsOf(dev_in))) r.kernels.push_back({k, {}});

  // Outputs: poisoned, aliased ones are their inputs (updated in place).
  std::vector<DeviceTensor> outs = ex.allocateOutputs(dev_in, l.sizes, /*poison=*/true);
  for (size_t i = 0; i < outs.size(); ++i)
    r.output_lines.push_back(descJson(l.fusion->outputs()[i].name, outs[i].desc(), plan.output_alias[i]));
  for (size_t i = 0; i < dev_in.size(); ++i)
    r.input_lines.push_back(descJson(l.fusion->inputs()[i]->name(), dev_in[i].desc()));
  r.bytes = fusionBytes(descsOf(dev_in), descsOf(outs));

  // One run of the whole plan on the given inputs, saved before timing updates aliased outputs
  // again. It also leaves every intermediate written, for the kernels timed alone below.
  ex.runInto(dev_in, outs, l.sizes);
  dev.synchronize();
  if (auto dir = a.get("save-outputs")) {
    std::vector<HostTensor> h;
    for (const auto& t : outs) h.push_back(t.toHost());
    saveOutputs(*dir, *l.fusion, h);
  }

  runtime::DeviceBuffer flush(kFlushBytes);
  r.plan = timeLikeDoBench([&] { ex.launch(dev_in, outs); }, flush, fixed_reps);
  if (r.kernels.size() == 1) {
    r.kernels[0].time = r.plan;
  } else {
    for (size_t k = 0; k < r.kernels.size(); ++k)
      r.kernels[k].time = timeLikeDoBench([&] { ex.launchKernel(dev_in, outs, k); }, flush, fixed_reps);
  }
  {
    runtime::DeviceBuffer src(kCopyBytes), dst(kCopyBytes);
    src.memset(1);
    r.copy = timeLikeDoBench([&] { dst.copyFrom(src); }, flush, 0);
  }
  measureHost(ex, dev_in, outs, r);
  return 0;
}

}  // namespace

// Input buffers of the right shapes and layouts but no data yet: a fusion no scheduler accepts
// fails on these, before gigabytes of inputs are read.
std::vector<DeviceTensor> emptyInputs(const ir::Fusion& f, const Bindings& sizes,
                                      const std::map<std::string, std::vector<int>>& layouts) {
  std::vector<DeviceTensor> dev_in;
  for (const ir::Value* v : f.inputs()) {
    auto shape = evalShape(v, sizes);
    auto lay = layouts.find(v->name());
    dev_in.push_back(DeviceTensor::allocate(
        v->dtype(), shape, lay == layouts.end() ? contiguousStrides(shape) : stridesForOrder(shape, lay->second)));
  }
  return dev_in;
}

int runBenchSizes(const Args& a, const std::string& spec);  // cmd_bench_sizes.cpp

int runBench(const Args& a) {
  if (auto spec = a.get("sizes")) return runBenchSizes(a, *spec);
  BenchResult r;
  bool json = a.flag("json");
  try {
    benchImpl(a, r);
  } catch (const std::exception& e) {
    // With --json the reason also goes to stdout, so a harness reading JSON gets it.
    if (json)
      std::cout << fmt::format("{{\"ok\": false, \"fusion\": {}, \"error\": {}}}\n",
                               jsonStr(r.fusion.empty() && !a.positionals().empty() ? a.positionals()[0]
                                                                                     : r.fusion),
                               jsonStr(e.what()));
    throw;
  }
  if (json) std::cout << benchJson(r) << "\n";
  else std::cout << benchText(r);
  return 0;
}

}  // namespace loom::cli
