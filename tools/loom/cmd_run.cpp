// `loom run FUSION`: compile, run on the GPU with seeded random inputs (every kernel of the
// plan, in launch order), check every output against the CPU reference, time the whole plan.
#include <algorithm>
#include <iostream>
#include <limits>

#include "reference/compare.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "tools/loom/cli.h"
#include "tools/loom/plan_info.h"

namespace loom::cli {

int runBatch(const std::string& path, const std::vector<std::string>& options);  // cmd_run_batch.cpp

int runRun(const Args& a) {
  if (auto batch = a.get("batch")) {
    if (a.get("device") && runtime::gpuAvailable()) gpuFromArgs(a);  // every case on it (none: each says so)
    return runBatch(*batch, {"dim", "layout", "seed", "iters", "dtype", "check", "no-check", "device"});
  }
  auto l = loadFromArgs(a, "run");
  auto layouts = layoutsFromArgs(a, *l.fusion);
  const auto seed = static_cast<uint64_t>(intOption(a, "seed", 0, 0, std::numeric_limits<int64_t>::max()));
  const int iters = static_cast<int>(intOption(a, "iters", 20, 0, 1000000));
  auto& dev = gpuFromArgs(a);
  const bool check = a.flag("check") || !a.flag("no-check");
  if (check)
    checkReferenceFits(*l.fusion, l.sizes, /*host_inputs=*/true,
                       "give smaller sizes (--dim), or run without the check (--no-check)");
  auto host_in = randomInputs(*l.fusion, l.sizes, layouts, seed);
  std::vector<DeviceTensor> dev_in;
  for (const auto& h : host_in) dev_in.push_back(DeviceTensor::fromHost(h));
  Executor ex(*l.fusion);
  const CompiledPlan& plan = ex.planFor(dev_in, l.sizes);  // compiles now: the stats below are this call's
  const auto& cs = ex.lastCompile();
  const std::vector<TensorDesc> in_descs = descsOf(dev_in);
  const std::vector<KernelInfo> kernels = planKernels(plan, in_descs);
  std::cout << fmt::format("fusion {} on {}\n", l.fusion->name(), dev.describe());
  std::cout << fmt::format("  compile: {} (LLVM->PTX {:.1f} ms, module load {:.1f} ms, total {:.1f} ms: "
                           "plan {:.1f}, disk {:.1f})\n",
                           cs.source == CompileStats::Source::Compiled ? "fresh"
                           : cs.source == CompileStats::Source::DiskCache ? "disk cache" : "memory cache",
                           cs.llvm_ptx_ms, cs.load_ms, cs.total_ms, cs.plan_ms, cs.disk_ms);
  for (size_t k = 0; k < kernels.size(); ++k)
    std::cout << fmt::format("  kernel {}/{}: {} ({:.2f} MB read, {:.2f} MB written)\n", k + 1, kernels.size(),
                             launchText(kernels[k]), static_cast<double>(kernels[k].bytes_read) / 1e6,
                             static_cast<double>(kernels[k].bytes_written) / 1e6);
  // Poisoned outputs (aliased ones are their inputs), then one checked run.
  std::vector<DeviceTensor> outs = ex.allocateOutputs(dev_in, l.sizes, /*poison=*/true);
  ex.runInto(dev_in, outs, l.sizes);
  dev.synchronize();
  bool ok = true;
  if (check) {
    auto ref = evaluateReference(*l.fusion, host_in, l.sizes);
    std::vector<HostTensor> got;
    for (const auto& o : outs) got.push_back(o.toHost());
    const auto cs = compareOutputs(*l.fusion, host_in, l.sizes, got, ref);
    for (size_t i = 0; i < cs.size(); ++i) {
      ok = ok && cs[i].ok;
      std::cout << fmt::format("  {:<18} {}\n", l.fusion->outputs()[i].name, cs[i].str());
    }
  }
  if (iters > 0) {
    // Aliased outputs are updated in place: re-upload inputs is unnecessary for timing.
    std::vector<float> times;
    for (int it = 0; it < iters; ++it) {
      runtime::Event s, e;
      s.record();
      ex.launch(dev_in, outs);
      e.record();
      times.push_back(runtime::Event::elapsedMs(s, e));
    }
    std::sort(times.begin(), times.end());
    double ms = times[times.size() / 2];
    const uint64_t bytes = fusionBytes(in_descs, descsOf(outs));
    std::cout << fmt::format("  {} time {:.4f} ms (median of {}, warm L2{}), {:.1f} GB/s\n",
                             kernels.size() == 1 ? "kernel" : "plan", ms, iters,
                             kernels.size() == 1 ? "" : fmt::format(", {} kernels back to back", kernels.size()),
                             static_cast<double>(bytes) / (ms * 1e6));
  }
  if (!ok) fail("GPU result of `{}` does not match the CPU reference", l.fusion->name());
  return 0;
}

}  // namespace loom::cli
