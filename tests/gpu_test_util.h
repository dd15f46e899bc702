#pragma once
// Shared by the [gpu] tests: skip with a message where no GPU is found, and run a fusion on
// the GPU against the CPU reference.
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "frontend/internal_api.h"
#include "reference/compare.h"
#include "runtime/cuda_driver.h"
#include "runtime/device_tensor.h"
#include "runtime/executor.h"

namespace loom::test {

// Two kernels and an intermediate between them: y = x / (its column sums), then y's row sums.
inline std::unique_ptr<ir::Fusion> colrow() {
  return parseFusion(
      "fusion colrow {\n  in x: f32[N, D]\n  s: f32[1b, D] = sum(x, dims=[0], keepdim=true)\n"
      "  y: f32[N, D] = div(x, s)\n  z: f32[N] = sum(y, dims=[1])\n  out z = z\n}\n");
}

inline bool haveGpu() {
  std::string why;
  if (runtime::gpuAvailable(&why)) return true;
  WARN("no GPU: skipped (" << why << ")");
  return false;
}

// Random inputs of `f` (in the given memory orders).
inline std::vector<HostTensor> randomHostInputs(const ir::Fusion& f, const Bindings& sizes,
                                                const std::map<std::string, std::vector<int>>& layouts = {},
                                                uint64_t seed = 1, double lo = -1.0, double hi = 1.0) {
  std::vector<HostTensor> host;
  for (const ir::Value* v : f.inputs()) {
    auto shape = evalShape(v, sizes);
    HostTensor t = HostTensor::random(v->dtype(), shape, seed++, lo, hi);
    auto it = layouts.find(v->name());
    if (it != layouts.end()) t = t.withOrder(it->second);
    host.push_back(t);
  }
  return host;
}

// Every output in `outs` (on the device) checked against `ref` (by default the float64 reference
// of `host`).
inline void checkOutputs(const ir::Fusion& f, const Bindings& sizes, const std::vector<HostTensor>& host,
                         const std::vector<DeviceTensor>& outs, const std::vector<HostTensor>* ref = nullptr) {
  std::vector<HostTensor> got;
  for (const auto& o : outs) got.push_back(o.toHost());
  const auto cs = compareOutputs(f, host, sizes, got, ref ? *ref : evaluateReference(f, host, sizes));
  for (size_t i = 0; i < cs.size(); ++i) {
    INFO(f.name() << " output " << f.outputs()[i].name << ": " << cs[i].str());
    CHECK(cs[i].ok);
  }
}

// One run of `ex` on fresh device copies of `host` (in-place outputs update them) into poisoned
// outputs, every output checked against `ref` (by default the float64 reference of `host`).
// Returns the compile stats of this signature's lookup: whether it compiled, and what.
inline CompileStats runAndCheck(Executor& ex, const ir::Fusion& f, const Bindings& sizes,
                                const std::vector<HostTensor>& host, const std::vector<HostTensor>* ref = nullptr) {
  std::vector<DeviceTensor> dev;
  for (const auto& h : host) dev.push_back(DeviceTensor::fromHost(h));
  std::vector<DeviceTensor> outs = ex.allocateOutputs(dev, sizes, /*poison=*/true);
  const CompileStats stats = ex.lastCompile();  // (runInto finds the signature in memory)
  ex.runInto(dev, outs, sizes);
  checkOutputs(f, sizes, host, outs, ref);
  return stats;
}

// The same run, returning the outputs on the host for checks to the bit (indices, picks).
inline std::vector<HostTensor> runCheckedOutputs(Executor& ex, const ir::Fusion& f, const Bindings& sizes,
                                                 const std::vector<HostTensor>& host, const std::vector<HostTensor>& ref) {
  std::vector<DeviceTensor> dev;
  for (const auto& h : host) dev.push_back(DeviceTensor::fromHost(h));
  std::vector<DeviceTensor> outs = ex.allocateOutputs(dev, sizes, /*poison=*/true);
  ex.runInto(dev, outs, sizes);
  checkOutputs(f, sizes, host, outs, &ref);
  std::vector<HostTensor> got;
  for (const auto& o : outs) got.push_back(o.toHost());
  return got;
}

// The given inputs, poisoned outputs, two runs, every output checked.
inline void checkOnGpuWith(const ir::Fusion& f, const Bindings& sizes, const std::vector<HostTensor>& host) {
  Executor ex(f);
  auto ref = evaluateReference(f, host, sizes);
  // Twice, on fresh copies of the inputs into fresh poisoned outputs: the second launch reuses
  // the first's kernel and workspace, whose grid barrier counters the first must have left at zero.
  for (int launch = 1; launch <= 2; ++launch) {
    INFO("launch " << launch);
    runAndCheck(ex, f, sizes, host, &ref);
  }
}

// Random inputs (in the given memory orders), poisoned outputs, two runs, every output checked.
inline void checkOnGpu(const ir::Fusion& f, const Bindings& sizes,
                       const std::map<std::string, std::vector<int>>& layouts = {},
                       uint64_t seed = 1, double lo = -1.0, double hi = 1.0) {
  checkOnGpuWith(f, sizes, randomHostInputs(f, sizes, layouts, seed, lo, hi));
}

// Random inputs of `f` on the GPU (seeded from `seed`, dense).
inline std::vector<DeviceTensor> randomDeviceInputs(const ir::Fusion& f, const Bindings& sizes, uint64_t seed,
                                                    const std::map<std::string, std::vector<int>>& layouts = {}) {
  std::vector<DeviceTensor> dev;
  for (const auto& h : randomHostInputs(f, sizes, layouts, seed)) dev.push_back(DeviceTensor::fromHost(h));
  return dev;
}

// Each output's bytes, copied to the host.
inline std::vector<std::vector<char>> outputBytes(const std::vector<DeviceTensor>& outs) {
  std::vector<std::vector<char>> all;
  for (const auto& o : outs) {
    HostTensor h = o.toHost();
    all.emplace_back(static_cast<const char*>(h.data()), static_cast<const char*>(h.data()) + h.nbytes());
  }
  return all;
}

// Random inputs (seeded from `seed`, in `layouts`), then 10 runs into fresh poisoned outputs:
// every output's bytes the same each time (reductions split over blocks combine in a fixed order).
inline void checkBitwiseRepeatable(const ir::Fusion& f, const Bindings& sizes, uint64_t seed,
                                   const std::map<std::string, std::vector<int>>& layouts = {}) {
  Executor ex(f);
  const std::vector<DeviceTensor> dev = randomDeviceInputs(f, sizes, seed, layouts);
  std::vector<std::vector<char>> first;
  for (int run = 0; run < 10; ++run) {
    auto outs = ex.allocateOutputs(dev, sizes, /*poison=*/true);
    ex.runInto(dev, outs, sizes);
    const auto bytes = outputBytes(outs);
    for (size_t i = 0; i < outs.size(); ++i) {
      INFO(f.name() << " output " << f.outputs()[i].name << " run " << run);
      if (run == 0) first.push_back(bytes[i]);
      else CHECK(bytes[i] == first[i]);
    }
  }
}

}  // namespace loom::test
