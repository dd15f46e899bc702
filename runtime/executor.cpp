#include "runtime/executor.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <map>
#include <mutex>

#include "ir/error.h"
#include "reference/reference.h"
#include "runtime/bind_sizes.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/dynamic_sizes.h"
#include "runtime/cubin_worker.h"
#include "runtime/environment_options.h"
#include "runtime/kernel_cache.h"
#include "runtime/memory_raw.h"
#include "runtime/module_image.h"
#include "runtime/signature_lru.h"

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

// Kernels' global scratch (grid-wide reductions' partials and counters) by loaded kernel (one
// per cache key) and stream: the signatures one kernel serves (a class of sizes taking a size at
// run time) share one on each stream, in stream order as one signature's launches do; each
// launch leaves its counters at zero.
struct Executor::Workspaces {
  std::map<std::pair<const Loaded*, std::uint64_t>, std::shared_ptr<runtime::DeviceBuffer>> by_kernel;

  std::shared_ptr<runtime::DeviceBuffer> get(const Loaded* kernel, std::uint64_t bytes, std::uint64_t stream_id,
                                             std::uintptr_t stream) {
    auto& w = by_kernel[{kernel, stream_id}];
    if (!w) {
      w = std::make_shared<runtime::DeviceBuffer>(static_cast<std::size_t>(bytes));
      // Zero before the first launch: in stream order, or now where the stream is being captured
      // into a CUDA graph (a memset there would be recorded, not run).
      if (stream_id & runtime::kCapturedStream)
        runtime::zeroNow(w->ptr(), w->size());
      else
        runtime::memsetAsync(w->ptr(), 0, w->size(), stream);
    }
    return w;
  }
};

// What a plan's launches on one stream write besides the outputs: the intermediates between its
// kernels, and per kernel its global scratch (Workspaces).
struct Executor::Scratch {
  std::uint64_t stream_id = 0;
  std::vector<DeviceTensor> temps;
  std::vector<std::shared_ptr<runtime::DeviceBuffer>> workspaces;  // null: the kernel has none
  bool captured() const { return (stream_id & runtime::kCapturedStream) != 0; }
};

struct Executor::Entry {
  std::vector<TensorDesc> inputs;
  Bindings sizes;  // the sizes given beside the inputs (symbols the inputs do not determine)
  Bindings bound;  // every size, bound
  bool runtime_sized = false;  // compiled with LOOM_TUNE_SYMBOLIC (by the knob, or automatically)
  bool empty = false;          // a size of 0: emptyPlan's (no kernels)
  // An exact signature's symbolicClassKeys as digests (fnv1a), once asked (runtimeSizes).
  std::optional<std::vector<std::uint64_t>> classes;
  CompiledPlan plan;
  std::vector<std::shared_ptr<Loaded>> loaded;  // one per plan kernel
  // What the plan's launches on one stream write besides the outputs (Executor::Scratch): one
  // set per stream the plan has run on (by runtime::streamId; each CUDA graph capture its own):
  // launches on two streams may run at once, and must not share it.
  std::vector<std::unique_ptr<Scratch>> scratch;

  // Whether the plan's launches write anything besides the outputs (most do not: their launches
  // ask nothing of the stream).
  bool usesScratch() const {
    return !plan.temps.empty() || std::any_of(plan.kernels.begin(), plan.kernels.end(),
                                              [](const auto& pk) { return pk.kernel.workspace_bytes > 0; });
  }

  // The scratch for launches on `stream`, allocated (workspaces zeroed on that stream) at the
  // plan's first use there.
  Scratch& scratchFor(std::uintptr_t stream, Workspaces& pool) {
    const std::uint64_t id = runtime::streamId(stream);
    for (auto& s : scratch)
      if (s->stream_id == id) return *s;
    auto s = std::make_unique<Scratch>();
    s->stream_id = id;
    for (const auto& d : plan.temps) s->temps.push_back(DeviceTensor::allocate(d.dtype, d.shape, d.strides));
    for (size_t k = 0; k < plan.kernels.size(); ++k) {
      const std::uint64_t bytes = plan.kernels[k].kernel.workspace_bytes;
      s->workspaces.push_back(bytes ? pool.get(loaded[k].get(), bytes, id, stream) : nullptr);
    }
    scratch.push_back(std::move(s));
    return *scratch.back();
  }
};

namespace {
// A hash of an input signature: each input's dtype, sizes, strides and alignment.
std::uint64_t signatureHash(const std::vector<DeviceTensor>& in) {
  std::uint64_t h = 1469598103934665603ull;
  auto mix = [&](std::uint64_t v) { h = (h ^ v) * 1099511628211ull; };
  mix(in.size());
  for (const DeviceTensor& t : in) {
    mix(static_cast<std::uint64_t>(t.dtype()));
    mix(static_cast<std::uint64_t>(alignmentOf(t.ptr())));
    mix(t.shape().size());
    for (int64_t v : t.shape()) mix(static_cast<std::uint64_t>(v));
    for (int64_t v : t.strides()) mix(static_cast<std::uint64_t>(v));
  }
  return h;
}
}  // namespace

struct Executor::Entries : runtime::SignatureLru<Entry> {
  explicit Entries(size_t capacity = kMaxSignatures) : SignatureLru(capacity) {}
  // The entry `same` accepts: the most recently used one first (a repeated signature is found
  // without hashing it), else by the signature's hash, which `hash` (if given) then holds.
  template <class Same>
  Entry* lookup(const std::vector<DeviceTensor>& in, const Same& same, std::uint64_t* hash = nullptr) {
    if (Entry* e = mostRecent(); e && same(*e)) return e;
    const std::uint64_t h = signatureHash(in);
    if (hash) *hash = h;
    return find(h, same);
  }
};


// The stream kernels go to: the legacy default stream, or (LOOM_STREAM=per-thread) the
// per-thread default stream, which skips the legacy stream's implicit synchronization.
static runtime::StreamHandle launchStream() {
  static const runtime::StreamHandle s = [] {
    return environmentValue("LOOM_STREAM") == "per-thread" ? runtime::StreamHandle{0x2} : runtime::StreamHandle{0};
  }();
  return s;
}

static runtime::LaunchConfig launchConfig(const CompiledKernel& k) {
  runtime::LaunchConfig cfg;
  cfg.grid.x = k.grid;
  cfg.block.x = k.block;
  cfg.shared_bytes = k.shared_bytes;
  cfg.cluster_x = k.cluster;
  cfg.cooperative = k.cooperative;
  return cfg;
}

DeviceInfo currentDevice() {
  auto& d = runtime::Device::get();
  return DeviceInfo{ptxTargetFor(d.ccMajor(), d.ccMinor()), d.smCount()};
}

Executor::Executor(const ir::Fusion& fusion, Tuning tuning)
    : f_(fusion), tuning_(std::move(tuning)), entries_(std::make_unique<Entries>()), stream_(launchStream()),
      workspaces_(std::make_unique<Workspaces>()) {
  fusion.verify();
  dumpsFromEnvironment();
}
Executor::~Executor() = default;

// The entry compiled for exactly these inputs, compared field by field (no descriptions built).
static bool sameInputs(const std::vector<TensorDesc>& descs, const std::vector<DeviceTensor>& inputs) {
  if (descs.size() != inputs.size()) return false;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorDesc& d = descs[i];
    const DeviceTensor& t = inputs[i];
    if (!(d.dtype == t.dtype() && d.shape == t.shape() && d.strides == t.strides() &&
          d.align_bytes == alignmentOf(t.ptr())))
      return false;
  }
  return true;
}

// Whether a new signature compiles kernels taking a size at run time: under LOOM_TUNE_SYMBOLIC
// always; by default (runtime/dynamic_sizes.h) where an earlier signature whose sizes differ
// from these only in one leading size did (its kernels' classes are then found or compiled as
// they come: no planning on this path, which every further size takes), or where such an
// earlier exact signature would share a kernel class with these (both planned; an earlier
// signature's classes are kept, this one's are planned again where a later one asks).
// `sized`: the earlier signatures of runtime-sized kernels whose sizes differ from these in one
// leading size, most recent first; the first one's plan's segments this one may take, and every
// one's kernel classes (compile.h, replanLike).
bool Executor::runtimeSizes(const Bindings& bound, const std::vector<TensorDesc>& descs,
                            std::vector<Entry*>* sized) {
  sized->clear();
  if (tuning_.no_auto_symbolic && !tuning_.symbolic) return false;
  std::vector<Entry*> earlier;
  entries_->forEach([&](Entry& e) {
    if (e.empty || !runtime::secondValueOfLeadingSize(f_, e.bound, bound)) return;
    if (e.runtime_sized) sized->push_back(&e);
    earlier.push_back(&e);
  });
  if (tuning_.symbolic || !sized->empty()) return true;
  if (earlier.empty()) return false;
  CompileOptions sym{currentDevice(), tuning_};
  sym.tuning.symbolic = true;
  // A segment or schedule the planning refuses shares nothing (the exact compile then says why).
  // (As digests: a 64-bit collision would at worst compile kernels taking the size at run time.)
  auto classes = [&](const Bindings& b, const std::vector<TensorDesc>& d) {
    std::vector<std::uint64_t> out;
    try {
      for (const std::string& key : symbolicClassKeys(f_, b, d, sym)) out.push_back(key.empty() ? 0 : runtime::fnv1a(key));
    } catch (const Error&) {
      out.clear();
    }
    return out;
  };
  const std::vector<std::uint64_t> now = classes(bound, descs);
  for (Entry* e : earlier) {
    if (!e->classes) e->classes = classes(e->bound, e->inputs);
    if (now.size() != e->classes->size()) continue;
    for (size_t k = 0; k < now.size(); ++k)
      if (now[k] != 0 && now[k] == (*e->classes)[k]) return true;
  }
  return false;
}

// How many earlier sizes' plans a new size's kernels are compared with (Executor::prepare).
constexpr size_t kKnownPlans = 8;

static void countKernels(const CompiledPlan& plan, CompileStats& st) {
  st.kernels = static_cast<int>(plan.kernels.size());
  st.runtime_size_kernels = static_cast<int>(std::count_if(
      plan.kernels.begin(), plan.kernels.end(), [](const PlannedKernel& pk) { return !pk.kernel.size_args.empty(); }));
}

// Each kernel of `plan` loaded (from the process-wide memory cache, else made a module now and
// stored on disk where it was compiled), appended to `loaded`; the times into `st`.
static void loadKernels(const CompiledPlan& plan, std::vector<std::shared_ptr<Loaded>>& loaded_out,
                        CompileStats& st) {
  for (const auto& pk : plan.kernels) {
    std::shared_ptr<Loaded> loaded;
    {
      std::lock_guard<std::mutex> lock(g_mu);
      auto it = memoryCache().find(pk.key);
      if (it != memoryCache().end()) loaded = it->second;
    }
    if (!loaded) {
      CompiledKernel k = pk.kernel;
      if (k.llvm_ptx_ms > 0) {
        st.source = CompileStats::Source::Compiled;
        st.llvm_ptx_ms += k.llvm_ptx_ms;
        st.plan_ms -= k.llvm_ptx_ms;
        runtime::diskCacheStore(pk.key, k);
      }
      // Loaded now as the entry has it (PTX through the driver's JIT where it has no cubin for
      // this GPU); its cubin is made in the background for the disk cache and the next process,
      // held to the registers the JIT gave it.
      runtime::Module mod = runtime::loadModule(k);
      st.load_ms += mod.loadMs();
      runtime::Kernel kern = mod.getKernel(k.name);
      runtime::makeCubinLater(pk.key, k, runtime::Device::get().smVersion(), {kern.numRegs(), kern.localBytes()});
      loaded = std::shared_ptr<Loaded>(new Loaded{std::move(k), std::move(mod), kern});
      std::lock_guard<std::mutex> lock(g_mu);
      memoryCache()[pk.key] = loaded;
    }
    loaded_out.push_back(loaded);
  }
}

Executor::Entry& Executor::prepare(const std::vector<DeviceTensor>& inputs, const Bindings& sizes) {
  const runtime::ContextScope scope;  // (modules loaded and scratch made in loom's context)
  std::uint64_t hash = 0;
  if (Entry* e = entries_->lookup(inputs, [&](const Entry& c) { return c.sizes == sizes && sameInputs(c.inputs, inputs); },
                                  &hash)) {
    stats_ = CompileStats{CompileStats::Source::MemoryCache};
    countKernels(e->plan, stats_);
    return *e;
  }
  const std::vector<TensorDesc> descs = descsOf(inputs);
  auto t0 = std::chrono::steady_clock::now();
  Bindings bound = bindSizes(f_, inputs, sizes);
  CompileOptions opts{currentDevice(), tuning_};
  std::vector<Entry*> sized;
  const bool empty = hasEmptySize(bound, descs);
  opts.tuning.symbolic = !empty && runtimeSizes(bound, descs, &sized);
  CompileStats st;
  st.sizes_ms = msSince(t0);
  st.source = CompileStats::Source::MemoryCache;
  // Each kernel: the process-wide memory cache, then the disk cache, then a compile.
  auto lookup = [&](const std::string& key) -> std::optional<CompiledKernel> {
    {
      std::lock_guard<std::mutex> lock(g_mu);
      auto it = memoryCache().find(key);
      if (it != memoryCache().end()) return it->second->meta;
    }
    const auto d0 = std::chrono::steady_clock::now();
    auto k = runtime::diskCacheLoad(key);
    st.disk_ms += msSince(d0);
    if (k && st.source == CompileStats::Source::MemoryCache) st.source = CompileStats::Source::DiskCache;
    return k;
  };
  auto entry = std::make_unique<Entry>();
  entry->inputs = descs;
  entry->sizes = sizes;
  entry->bound = bound;
  entry->runtime_sized = opts.tuning.symbolic;
  entry->empty = empty;
  const auto p0 = std::chrono::steady_clock::now();
  // A new size of runtime-sized kernels: the earlier signature's segments, where their classes
  // are compiled (planning each kernel, not a search over segmentations); else a plan anew.
  std::optional<CompiledPlan> replanned;
  if (!sized.empty()) {
    // The other classes already planned for this signature's sizes (most recent first), whose
    // kernel IR a kernel of the same schedule need not lower again.
    std::vector<const CompiledPlan*> others;
    for (size_t i = 1; i < sized.size() && others.size() < kKnownPlans; ++i) others.push_back(&sized[i]->plan);
    replanned = replanLike(sized.front()->plan, f_, bound, descs, opts, lookup, others);
  }
  entry->plan = empty ? emptyPlan(f_, bound, descs)
              : replanned ? std::move(*replanned) : compilePlan(f_, bound, descs, opts, nullptr, lookup);
  countKernels(entry->plan, st);
  st.plan_ms = msSince(p0) - st.disk_ms;
  loadKernels(entry->plan, entry->loaded, st);
  const auto b0 = std::chrono::steady_clock::now();
  for (size_t k = 0; k < entry->plan.kernels.size(); ++k) {
    const CompiledKernel& ck = entry->plan.kernels[k].kernel;
    if (ck.cooperative) runtime::checkResidentAtOnce(entry->loaded[k]->kernel, launchConfig(ck));
  }
  if (entry->usesScratch()) entry->scratchFor(stream_, *workspaces_);  // (the stream it is prepared on: none made at its first launch)
  st.buffers_ms = msSince(b0);
  // The loaded kernels hold the code; the plan keeps its keys' digests (a key holds the printed
  // fusion, KiBs).
  for (auto& pk : entry->plan.kernels) {
    pk.key = fmt::format("{:016x}", runtime::fnv1a(pk.key));
    std::string().swap(pk.kernel.ptx);
    std::string().swap(pk.kernel.cubin);
  }
  dumpIfEnabled(DumpStage::Launch, f_.name(),
                fmt::format("{} kernel(s) prepared in {:.1f} ms\n", entry->plan.kernels.size(), msSince(t0)));
  // Kernels of a plan compile in parallel: their LLVM->PTX times may add up past the wall time.
  st.plan_ms = std::max(0.0, st.plan_ms);
  st.total_ms = msSince(t0);
  stats_ = st;
  Entry& added = *entry;
  if (std::unique_ptr<Entry> dropped = entries_->insert(hash, std::move(entry))) {
    // Its intermediates may still be read or written by launches queued on any stream (its
    // workspaces are the kernels', kept). A CUDA graph that captured its launches writes them at
    // every replay, as long as the graph lives: those are kept while the Executor lives.
    bool queued = false;
    for (auto& s : dropped->scratch) {
      if (s->captured())
        captured_.push_back(std::move(s));
      else
        queued = queued || !s->temps.empty();
    }
    if (queued) runtime::Device::get().synchronize();
  }
  return added;
}

size_t Executor::signatures() const { return entries_->size(); }

void Executor::limitSignatures(size_t n) {
  LOOM_ASSERT(entries_->size() == 0 && n >= 1, "limitSignatures({}) after {} signatures", n, entries_->size());
  entries_ = std::make_unique<Entries>(n);
}

std::vector<TensorDesc> Executor::outputSpecs(const std::vector<DeviceTensor>& inputs,
                                              const Bindings& sizes) {
  return prepare(inputs, sizes).plan.outputs;
}

const CompiledPlan& Executor::planFor(const std::vector<DeviceTensor>& inputs, const Bindings& sizes) {
  return prepare(inputs, sizes).plan;
}

std::string Executor::describePlan(const std::vector<DeviceTensor>& inputs, const Bindings& sizes) {
  const CompiledPlan& plan = planFor(inputs, sizes);
  std::string s = plan.segments;
  for (size_t k = 0; k < plan.kernels.size(); ++k) {
    const CompiledKernel& ck = plan.kernels[k].kernel;
    s += fmt::format("kernel {}/{}: {} grid {} block {} shared {} B{}{}\n", k + 1, plan.kernels.size(), ck.name,
                     ck.grid, ck.block, ck.shared_bytes, ck.cluster > 1 ? fmt::format(" cluster {}", ck.cluster) : "",
                     ck.cooperative ? " cooperative" : "");
  }
  return s;
}

Executor::Executor(const Fusion& fusion, Tuning tuning) : Executor(fusion.held(), std::move(tuning)) {}

bool gpuAvailable(std::string* why) noexcept { return runtime::gpuAvailable(why); }
void selectDevice(int ordinal) { runtime::selectDevice(ordinal); }
int selectedDevice() noexcept { return runtime::selectedDevice(); }

std::vector<DeviceTensor> Executor::allocateOutputs(const std::vector<DeviceTensor>& inputs,
                                                    const Bindings& sizes, bool poison) {
  const CompiledPlan& plan = prepare(inputs, sizes).plan;
  std::vector<DeviceTensor> outs;
  for (size_t i = 0; i < plan.outputs.size(); ++i) {
    int alias = plan.output_alias[i];
    if (alias >= 0) {
      outs.push_back(inputs[static_cast<size_t>(alias)]);
      continue;
    }
    const TensorDesc& d = plan.outputs[i];
    outs.push_back(DeviceTensor::allocate(d.dtype, d.shape, d.strides));
    if (poison) outs.back().poison();
  }
  return outs;
}

std::vector<DeviceTensor> Executor::run(const std::vector<DeviceTensor>& inputs,
                                        const Bindings& sizes) {
  const runtime::ContextScope scope;
  std::vector<DeviceTensor> outs = allocateOutputs(inputs, sizes);
  launchAll(prepare(inputs, sizes), inputs, outs);  // (these sizes' plan: launch() goes by the inputs alone)
  runtime::Device::get().synchronize();
  return outs;
}

void Executor::runInto(const std::vector<DeviceTensor>& inputs, std::vector<DeviceTensor>& outputs,
                       const Bindings& sizes) {
  const runtime::ContextScope scope;
  Entry& e = prepare(inputs, sizes);
  const auto& plan = e.plan;
  LOOM_USER_CHECK(outputs.size() == plan.outputs.size(), "fusion `{}` has {} outputs, {} given",
                  f_.name(), plan.outputs.size(), outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i) {
    const auto& want = plan.outputs[i];
    const auto& got = outputs[i];
    // (A size-1 dim's stride never moves an address: any is taken.)
    bool strides_ok = got.strides().size() == want.strides.size();
    for (size_t d = 0; strides_ok && d < want.strides.size(); ++d)
      strides_ok = want.shape[d] == 1 || got.strides()[d] == want.strides[d];
    LOOM_USER_CHECK(got.dtype() == want.dtype && got.shape() == want.shape && strides_ok,
                    "output `{}`: expected {} but the given tensor is {}", f_.outputs()[i].name,
                    want.str(), got.desc().str());
    LOOM_USER_CHECK(alignmentOf(got.ptr()) >= want.align_bytes,
                    "output `{}`: the kernel stores {}-byte vectors, but the given tensor starts at {:#x}, "
                    "aligned to {} bytes only", f_.outputs()[i].name, want.align_bytes, got.ptr(),
                    alignmentOf(got.ptr()));
    int alias = plan.output_alias[i];
    LOOM_USER_CHECK(alias < 0 || got.ptr() == inputs[static_cast<size_t>(alias)].ptr(),
                    "output `{}` is written in place into input `{}`: pass that input's tensor",
                    f_.outputs()[i].name, f_.inputs()[static_cast<size_t>(alias)]->name());
  }
  // The entry of these sizes (launch() finds one by the inputs alone, whichever sizes it has).
  launchAll(e, inputs, outputs);
}

// The hot path: the entry compiled for exactly these inputs, found without building descs.
Executor::Entry& Executor::entryFor(const std::vector<DeviceTensor>& inputs,
                                    const std::vector<DeviceTensor>& outputs) {
  Entry* e = entries_->lookup(inputs, [&](const Entry& c) { return sameInputs(c.inputs, inputs); });
  if (!e) e = &prepare(inputs, {});
  LOOM_USER_CHECK(outputs.size() == e->plan.outputs.size(), "fusion `{}` has {} outputs, {} given",
                  f_.name(), e->plan.outputs.size(), outputs.size());
  return *e;
}

Executor::Scratch* Executor::scratchFor(Entry& e) {
  return e.usesScratch() ? &e.scratchFor(stream_, *workspaces_) : nullptr;
}

void Executor::launchOne(Entry& e, size_t k, Scratch* scratch, const std::vector<DeviceTensor>& inputs,
                         const std::vector<DeviceTensor>& outputs) {
  uintptr_t ptrs[64];
  void* args[64];
  const auto& pk = e.plan.kernels[k];
  LOOM_USER_CHECK(pk.args.size() + pk.size_values.size() < 64,
                  "a kernel of `{}` has {} tensors and {} sizes; loom launches at most 63 parameters",
                  f_.name(), pk.args.size(), pk.size_values.size());
  for (size_t i = 0; i < pk.args.size(); ++i) {
    const TensorRef& r = pk.args[i];
    const size_t idx = static_cast<size_t>(r.index);
    ptrs[i] = r.kind == TensorRef::Kind::Input ? inputs[idx].ptr()
              : r.kind == TensorRef::Kind::Output ? outputs[idx].ptr() : scratch->temps[idx].ptr();
    args[i] = &ptrs[i];
  }
  size_t n = pk.args.size();
  if (pk.kernel.workspace_bytes) {
    ptrs[n] = scratch->workspaces[k]->ptr();
    args[n] = &ptrs[n];
    ++n;
  }
  // Symbolic sizes: 64-bit values after the tensors (the plan keeps them for its signature).
  for (const int64_t& v : pk.size_values) args[n++] = const_cast<int64_t*>(&v);
  runtime::launch(e.loaded[k]->kernel, launchConfig(pk.kernel), args, stream_);
}

// A plan at a size of 0 whose outputs have elements (emptyPlan): the reference evaluator's values,
// copied in after the GPU finishes what it has queued (the inputs' elements may be written there).
void Executor::runOnHost(Entry& e, const std::vector<DeviceTensor>& inputs, const std::vector<DeviceTensor>& outputs) {
  LOOM_USER_CHECK(!(runtime::streamId(stream_) & runtime::kCapturedStream),
                  "fusion `{}` at a size of 0 computes its non-empty outputs on the host, which a CUDA graph "
                  "cannot capture: run it once outside the capture, or give it sizes with elements", f_.name());
  runtime::Device::get().synchronize();
  std::vector<HostTensor> host;
  for (const DeviceTensor& t : inputs) host.push_back(t.toHost());
  std::vector<HostTensor> ref = evaluateReference(f_, host, e.sizes);
  for (size_t i = 0; i < outputs.size(); ++i) {
    const DeviceTensor& out = outputs[i];
    if (out.numel() == 0) continue;
    LOOM_ASSERT(out.strides() == contiguousStrides(out.shape()) && ref[i].dtype() == out.dtype(),
                "output `{}` of an empty-size plan is not row-major {}", f_.outputs()[i].name, dtypeName(out.dtype()));
    runtime::copyFromHostRaw(out.ptr(), ref[i].data(), out.spanBytes());
  }
}

void Executor::launchAll(Entry& e, const std::vector<DeviceTensor>& inputs,
                         const std::vector<DeviceTensor>& outputs) {
  if (e.plan.host_reference) return runOnHost(e, inputs, outputs);
  Scratch* scratch = scratchFor(e);  // (asks the stream's id once a launch of the plan)
  for (size_t k = 0; k < e.plan.kernels.size(); ++k) launchOne(e, k, scratch, inputs, outputs);
}

void Executor::launch(const std::vector<DeviceTensor>& inputs,
                      const std::vector<DeviceTensor>& outputs) {
  // (Each entry point holds loom's context for all it does: a thread may launch a plan prepared
  // on another, with no context current, as PyTorch's autograd thread does, or another one.)
  const runtime::ContextScope scope;
  launchAll(entryFor(inputs, outputs), inputs, outputs);
}

void Executor::launchKernel(const std::vector<DeviceTensor>& inputs,
                            const std::vector<DeviceTensor>& outputs, size_t k) {
  const runtime::ContextScope scope;
  Entry& e = entryFor(inputs, outputs);
  LOOM_USER_CHECK(k < e.plan.kernels.size(), "fusion `{}` runs as {} kernel(s); there is no kernel {}",
                  f_.name(), e.plan.kernels.size(), k);
  launchOne(e, k, scratchFor(e), inputs, outputs);
}

}  // namespace loom
