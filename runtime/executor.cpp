#include "runtime/executor.h"

#include <chrono>
#include <map>
#include <mutex>

#include "compiler/codegen/ptx_backend.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "runtime/bind_sizes.h"
#include "runtime/device.h"
#include "runtime/kernel_cache.h"

namespace loom {

namespace {
double msSince(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

struct Loaded {
  CompiledKernel meta;
  runtime::Module module;
  runtime::Kernel kernel;
};

// Process-wide: kernels loaded once per key, shared by every Executor.
std::mutex g_mu;
std::map<std::string, std::shared_ptr<Loaded>>& memoryCache() {
  static std::map<std::string, std::shared_ptr<Loaded>> m;
  return m;
}
}  // namespace

struct Executor::Entry {
  std::vector<TensorDesc> inputs;
  std::shared_ptr<Loaded> loaded;
};

CompileOptions currentDeviceOptions() {
  auto& d = runtime::Device::get();
  return CompileOptions{codegen::ptxTargetFor(d.ccMajor(), d.ccMinor()), d.smCount()};
}

Executor::Executor(const ir::Fusion& fusion) : f_(fusion), fusion_text_(ir::printFusion(fusion)) {
  fusion.verify();
}
Executor::~Executor() = default;

Executor::Entry& Executor::prepare(const std::vector<DeviceTensor>& inputs, const Bindings& sizes) {
  std::vector<TensorDesc> descs;
  for (const auto& t : inputs) descs.push_back(t.desc());
  for (auto& e : entries_)
    if (e->inputs == descs) {
      stats_ = CompileStats{CompileStats::Source::MemoryCache};
      return *e;
    }
  auto t0 = std::chrono::steady_clock::now();
  std::vector<DType> dtypes;
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& t : inputs) {
    dtypes.push_back(t.dtype());
    shapes.push_back(t.shape());
  }
  Bindings bound = bindShapes(f_, dtypes, shapes, sizes);
  CompileOptions opts = currentDeviceOptions();
  std::string key = compileKey(f_, descs, opts);
  CompileStats st;
  std::shared_ptr<Loaded> loaded;
  {
    std::lock_guard<std::mutex> lock(g_mu);
    auto it = memoryCache().find(key);
    if (it != memoryCache().end()) {
      loaded = it->second;
      st.source = CompileStats::Source::MemoryCache;
    }
  }
  if (!loaded) {
    std::optional<CompiledKernel> k = runtime::diskCacheLoad(key);
    st.source = k ? CompileStats::Source::DiskCache : CompileStats::Source::Compiled;
    if (!k) {
      k = compileFusion(f_, bound, descs, opts);
      st.llvm_ptx_ms = k->llvm_ptx_ms;
      runtime::diskCacheStore(key, *k);
    }
    runtime::Module mod(k->ptx, k->name);
    st.load_ms = mod.loadMs();
    runtime::Kernel kern = mod.getKernel(k->name);
    loaded = std::shared_ptr<Loaded>(new Loaded{std::move(*k), std::move(mod), kern});
    std::lock_guard<std::mutex> lock(g_mu);
    memoryCache()[key] = loaded;
  }
  st.total_ms = msSince(t0);
  stats_ = st;
  entries_.push_back(std::make_unique<Entry>(Entry{descs, loaded}));
  return *entries_.back();
}

std::vector<TensorDesc> Executor::outputSpecs(const std::vector<DeviceTensor>& inputs,
                                              const Bindings& sizes) {
  return prepare(inputs, sizes).loaded->meta.outputs;
}

const CompiledKernel& Executor::kernelFor(const std::vector<DeviceTensor>& inputs,
                                          const Bindings& sizes) {
  return prepare(inputs, sizes).loaded->meta;
}

std::vector<DeviceTensor> Executor::run(const std::vector<DeviceTensor>& inputs,
                                        const Bindings& sizes) {
  Entry& e = prepare(inputs, sizes);
  std::vector<DeviceTensor> outs;
  const auto& meta = e.loaded->meta;
  for (size_t i = 0; i < meta.outputs.size(); ++i) {
    int alias = meta.output_alias[i];
    if (alias >= 0) outs.push_back(inputs[static_cast<size_t>(alias)]);
    else outs.push_back(DeviceTensor::allocate(meta.outputs[i].dtype, meta.outputs[i].shape, meta.outputs[i].strides));
  }
  launch(inputs, outs);
  runtime::Device::get().synchronize();
  return outs;
}

void Executor::runInto(const std::vector<DeviceTensor>& inputs, std::vector<DeviceTensor>& outputs,
                       const Bindings& sizes) {
  Entry& e = prepare(inputs, sizes);
  const auto& meta = e.loaded->meta;
  LOOM_USER_CHECK(outputs.size() == meta.outputs.size(), "fusion `{}` has {} outputs, {} given",
                  f_.name(), meta.outputs.size(), outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& want = meta.outputs[i];
    const auto& got = outputs[i];
    LOOM_USER_CHECK(got.dtype() == want.dtype && got.shape() == want.shape && got.strides() == want.strides,
                    "output `{}`: expected {} but the given tensor is {}", f_.outputs()[i].name,
                    want.str(), got.desc().str());
  }
  launch(inputs, outputs);
}

void Executor::launch(const std::vector<DeviceTensor>& inputs,
                      const std::vector<DeviceTensor>& outputs) {
  // The hot path: find the entry compiled for exactly these inputs without building descs.
  Entry* e = nullptr;
  for (auto& cand : entries_) {
    bool same = cand->inputs.size() == inputs.size();
    for (size_t i = 0; same && i < inputs.size(); ++i) {
      const TensorDesc& d = cand->inputs[i];
      const DeviceTensor& t = inputs[i];
      same = d.dtype == t.dtype() && d.shape == t.shape() && d.strides == t.strides() &&
             d.align_bytes == alignmentOf(t.ptr());
    }
    if (same) {
      e = cand.get();
      break;
    }
  }
  if (!e) e = &prepare(inputs, {});
  uintptr_t ptrs[64];
  void* args[64];
  size_t n = inputs.size() + outputs.size();
  LOOM_USER_CHECK(n <= 64, "fusion `{}` has {} tensors; loom launches at most 64", f_.name(), n);
  for (size_t i = 0; i < inputs.size(); ++i) ptrs[i] = inputs[i].ptr();
  for (size_t i = 0; i < outputs.size(); ++i) ptrs[inputs.size() + i] = outputs[i].ptr();
  for (size_t i = 0; i < n; ++i) args[i] = &ptrs[i];
  const auto& m = e->loaded->meta;
  runtime::LaunchConfig cfg;
  cfg.grid.x = m.grid;
  cfg.block.x = m.block;
  runtime::launch(e->loaded->kernel, cfg, args);
}

}  // namespace loom
