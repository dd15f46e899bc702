// The driver calls behind device.h. Every call goes through LOOM_CU (checked, named in errors)
// except in destructors, which must not throw: there a failure can only mean the context is
// already gone (process exit), and the resource went with it.
#include <cuda.h>

#include "runtime/device.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "ir/error.h"
#include "runtime/cuda_driver.h"

namespace loom::runtime {
namespace {

CUdevice g_device = 0;
CUcontext g_context = nullptr;
std::atomic<int> g_selected{0};  // the GPU Device's first construction takes
std::atomic<bool> g_bound{false};  // whether it was constructed
std::mutex g_select_mu;
std::atomic<double> g_last_load_ms{0};

template <typename H>
H toCu(std::uintptr_t h) {
  return reinterpret_cast<H>(h);
}
template <typename H>
std::uintptr_t fromCu(H h) {
  return reinterpret_cast<std::uintptr_t>(h);
}

int deviceAttribute(CUdevice_attribute a) {
  int v = 0;
  LOOM_CU(cuDeviceGetAttribute, &v, a, g_device);
  return v;
}

}  // namespace

// ---- Device ----

Device::Device() : ordinal_(g_selected.load()) {
  LOOM_CU(cuDeviceGet, &g_device, ordinal_);
  LOOM_CU(cuDevicePrimaryCtxRetain, &g_context, g_device);  // held for the process's life
  char name[256] = {};
  LOOM_CU(cuDeviceGetName, name, static_cast<int>(sizeof(name) - 1), g_device);
  name_ = name;
  cc_major_ = deviceAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  cc_minor_ = deviceAttribute(CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  sm_count_ = deviceAttribute(CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  max_threads_per_block_ = deviceAttribute(CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
  max_shared_per_block_ = deviceAttribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK);
  max_shared_per_block_optin_ =
      deviceAttribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  max_shared_per_sm_ = deviceAttribute(CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR);
  l2_bytes_ = deviceAttribute(CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE);
  std::size_t total = 0;
  LOOM_CU(cuDeviceTotalMem_v2, &total, g_device);
  total_memory_ = total;
  LOOM_CU(cuDriverGetVersion, &driver_version_);
  g_bound = true;
}

namespace {
// Scopes open on this thread: one inside another finds loom's context current already (nothing
// within a scope makes another current), and asks the driver nothing.
thread_local int t_scopes = 0;
}  // namespace

ContextScope::ContextScope() {
  if (t_scopes > 0) {
    ++t_scopes;
    counted_ = true;
    return;
  }
  Device::get();  // (the driver initialized, once)
  CUcontext current = nullptr;
  LOOM_CU(cuCtxGetCurrent, &current);
  if (!current) {
    LOOM_CU(cuCtxSetCurrent, g_context);
  } else if (current != g_context) {
    LOOM_CU(cuCtxPushCurrent_v2, g_context);
    pushed_ = true;
  }
  ++t_scopes;
  counted_ = true;
}

ContextScope::ContextScope(std::nothrow_t) {
  CUcontext current = nullptr;
  if (t_scopes > 0 || !g_context || driver().cuCtxGetCurrent(&current) != CUDA_SUCCESS || current == g_context)
    return;
  // (Also over none: the pop leaves the thread as it was.)
  pushed_ = driver().cuCtxPushCurrent_v2(g_context) == CUDA_SUCCESS;
}

ContextScope::~ContextScope() {
  if (counted_) --t_scopes;
  CUcontext popped = nullptr;
  if (pushed_) driver().cuCtxPopCurrent_v2(&popped);  // no throwing here
}

Device& Device::get() {
  // Never destroyed: buffers and modules freed during static destruction still need it. A
  // throwing constructor leaves it unset, so the next call tries (and explains) again.
  static Device* device = new Device();
  return *device;
}

void selectDevice(int ordinal) {
  int count = 0;
  LOOM_CU(cuDeviceGetCount, &count);  // (driver() says "no NVIDIA GPU found" where there is none)
  LOOM_USER_CHECK(ordinal >= 0, "GPU {} does not exist: GPUs are numbered from 0", ordinal);
  LOOM_USER_CHECK(ordinal < count, "GPU {} does not exist: the NVIDIA driver reports {} GPU{} (0 to {})", ordinal,
                  count, count == 1 ? "" : "s", count - 1);
  const std::lock_guard<std::mutex> lock(g_select_mu);
  if (!g_bound.load()) {
    const int before = g_selected.exchange(ordinal);
    try {
      Device::get();  // binds it (or another thread's first use bound the GPU it found selected)
    } catch (...) {
      g_selected = before;
      throw;
    }
  }
  const int in_use = Device::get().ordinal();
  g_selected = in_use;
  if (in_use != ordinal) {
    fail("loom runs on GPU {} in this process (its first GPU work was there) and cannot also run on GPU {}: "
         "loom uses one GPU a process; select the GPU before loom's first GPU work (one process per GPU, "
         "as torchrun starts data-parallel training)",
         in_use, ordinal);
  }
}

int selectedDevice() noexcept { return g_selected.load(); }

namespace {

// The attributes of `p` the driver is asked, with a context current (it may refuse without one).
struct PointerFacts {
  CUresult result = CUDA_SUCCESS;
  unsigned memory_type = 0;  // CUmemorytype
  int managed = 0;
  int ordinal = -1;
};

PointerFacts askPointer(const void* p) {
  PointerFacts f;
  const auto ptr = reinterpret_cast<CUdeviceptr>(p);
  const DriverApi& d = driver();
  f.result = d.cuPointerGetAttribute(&f.memory_type, CU_POINTER_ATTRIBUTE_MEMORY_TYPE, ptr);
  if (f.result == CUDA_SUCCESS) f.result = d.cuPointerGetAttribute(&f.managed, CU_POINTER_ATTRIBUTE_IS_MANAGED, ptr);
  if (f.result == CUDA_SUCCESS) f.result = d.cuPointerGetAttribute(&f.ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, ptr);
  return f;
}

}  // namespace

int pointerDevice(const void* p, const std::string& what) {
  LOOM_USER_CHECK(p != nullptr, "{} is a null pointer: give the address of device memory", what);
  PointerFacts f;
  if (g_bound.load()) {
    const ContextScope scope;  // loom's context
    f = askPointer(p);
  } else {
    f = askPointer(p);
    if (f.result == CUDA_ERROR_INVALID_CONTEXT) {
      // No context on this thread, and loom has none yet: ask under the primary context of the
      // GPU loom would take, retained for the question only (loom's GPU is not bound by it).
      CUdevice dev = 0;
      CUcontext ctx = nullptr, popped = nullptr;
      LOOM_CU(cuDeviceGet, &dev, selectedDevice());
      LOOM_CU(cuDevicePrimaryCtxRetain, &ctx, dev);
      if (driver().cuCtxPushCurrent_v2(ctx) == CUDA_SUCCESS) {
        f = askPointer(p);
        driver().cuCtxPopCurrent_v2(&popped);
      }
      driver().cuDevicePrimaryCtxRelease_v2(dev);
    }
  }
  LOOM_USER_CHECK(f.result != CUDA_ERROR_INVALID_VALUE,
                  "{} ({}) is no memory the CUDA driver knows (host memory that was not allocated or registered "
                  "through CUDA, or a freed pointer): give GPU memory", what, p);
  checkCu(f.result, "cuPointerGetAttribute");
  // Managed and page-locked host memory: every GPU reaches it.
  if (f.managed || f.memory_type == CU_MEMORYTYPE_HOST) return -1;
  LOOM_USER_CHECK(f.ordinal >= 0, "{} ({}) is no GPU's memory (the driver names no device for it): give GPU memory",
                  what, p);
  return f.ordinal;
}

void Device::synchronize() const {
  const ContextScope scope;
  LOOM_CU(cuCtxSynchronize);
}

std::string Device::describe() const {
  return fmt::format("GPU {}: {} (sm_{}, {} SMs, {:.1f} GiB, L2 {} MiB, {} KiB shared/block opt-in, "
                     "driver CUDA {}.{})",
                     ordinal_, name_, smVersion(), sm_count_, total_memory_ / double(1 << 30),
                     l2_bytes_ >> 20, max_shared_per_block_optin_ >> 10, driver_version_ / 1000,
                     driver_version_ % 1000 / 10);
}

// ---- graph capture ----

RelaxedCapture::RelaxedCapture() noexcept {
  CUstreamCaptureMode m = CU_STREAM_CAPTURE_MODE_RELAXED;
  exchanged_ = gpuAvailable() && driver().cuThreadExchangeStreamCaptureMode(&m) == CUDA_SUCCESS;
  mode_ = static_cast<int>(m);
}

RelaxedCapture::~RelaxedCapture() {
  if (!exchanged_) return;
  auto m = static_cast<CUstreamCaptureMode>(mode_);
  driver().cuThreadExchangeStreamCaptureMode(&m);  // (the thread's mode as it was)
}

void zeroNow(std::uintptr_t ptr, std::size_t bytes) {
  if (!bytes) return;
  const ContextScope scope;
  const RelaxedCapture relaxed;
  static Stream* own = new Stream();  // never destroyed: buffers outlive static destruction
  LOOM_CU(cuMemsetD8Async, ptr, 0, bytes, toCu<CUstream>(own->handle()));
  own->synchronize();
}

// ---- DeviceBuffer ----

DeviceBuffer::DeviceBuffer(std::size_t bytes) : size_(bytes) {
  const ContextScope scope;
  if (bytes == 0) return;
  const RelaxedCapture relaxed;
  CUdeviceptr p = 0;
  LOOM_CU(cuMemAlloc_v2, &p, bytes);
  ptr_ = p;
}

DeviceBuffer::~DeviceBuffer() {
  if (!ptr_) return;
  const ContextScope scope(std::nothrow);
  const RelaxedCapture relaxed;
  driver().cuMemFree_v2(ptr_);  // see the file comment: no throwing here
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& o) noexcept
    : ptr_(std::exchange(o.ptr_, 0)), size_(std::exchange(o.size_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& o) noexcept {
  if (this != &o) {
    if (ptr_) {
      const ContextScope scope(std::nothrow);
      const RelaxedCapture relaxed;
      driver().cuMemFree_v2(ptr_);
    }
    ptr_ = std::exchange(o.ptr_, 0);
    size_ = std::exchange(o.size_, 0);
  }
  return *this;
}

void DeviceBuffer::checkRange(std::size_t bytes, std::size_t offset, const char* what) const {
  LOOM_USER_CHECK(offset <= size_ && bytes <= size_ - offset,
                  "{} of {} bytes at offset {} is outside a device buffer of {} bytes", what,
                  bytes, offset, size_);
}

void DeviceBuffer::copyFromHost(const void* src, std::size_t bytes, std::size_t offset) {
  const ContextScope scope;
  checkRange(bytes, offset, "copy from host");
  if (bytes) LOOM_CU(cuMemcpyHtoD_v2, ptr_ + offset, src, bytes);
}

void DeviceBuffer::copyToHost(void* dst, std::size_t bytes, std::size_t offset) const {
  checkRange(bytes, offset, "copy to host");
  const ContextScope scope;
  if (bytes) LOOM_CU(cuMemcpyDtoH_v2, dst, ptr_ + offset, bytes);
}

void DeviceBuffer::copyFrom(const DeviceBuffer& src) {
  const ContextScope scope;
  LOOM_USER_CHECK(src.size_ == size_, "device copy from {} bytes into {} bytes", src.size_,
                  size_);
  if (size_) LOOM_CU(cuMemcpyDtoD_v2, ptr_, src.ptr_, size_);
}

void DeviceBuffer::memset(std::uint8_t byte) {
  const ContextScope scope;
  if (size_) LOOM_CU(cuMemsetD8_v2, ptr_, byte, size_);
}

void DeviceBuffer::fill32(std::uint32_t word) {
  const ContextScope scope;
  LOOM_USER_CHECK(size_ % 4 == 0, "fill32 of a device buffer of {} bytes (not a multiple of 4)",
                  size_);
  if (size_) LOOM_CU(cuMemsetD32_v2, ptr_, word, size_ / 4);
}

// ---- Module and Kernel ----

Module::Module(const std::string& image, const std::string& label, Image kind) : label_(label) {
  const ContextScope scope;
  // The JIT writes its complaints here; without it a bad PTX is only CUDA_ERROR_INVALID_PTX.
  std::vector<char> log(16 * 1024, '\0');
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {log.data(), reinterpret_cast<void*>(log.size() - 1)};
  CUmodule m = nullptr;
  auto t0 = std::chrono::steady_clock::now();
  const RelaxedCapture relaxed;  // (a first launch inside a capture loads its kernel)
  CUresult r = driver().cuModuleLoadDataEx(&m, image.c_str(), 2, options, values);
  load_ms_ =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (r != CUDA_SUCCESS)
    fail("the CUDA driver rejected the {} of {}: cuModuleLoadDataEx failed: {}\nJIT log:\n{}",
         kind == Image::Cubin ? "cubin" : "PTX", label_, cuErrorText(r), log[0] ? log.data() : "(empty)");
  handle_ = fromCu(m);
  g_last_load_ms = load_ms_;
}

Module::~Module() {
  if (!handle_) return;
  const ContextScope scope(std::nothrow);
  driver().cuModuleUnload(toCu<CUmodule>(handle_));
}

Module::Module(Module&& o) noexcept
    : handle_(std::exchange(o.handle_, 0)), label_(std::move(o.label_)), load_ms_(o.load_ms_) {}

Module& Module::operator=(Module&& o) noexcept {
  if (this != &o) {
    if (handle_) {
      const ContextScope scope(std::nothrow);
      driver().cuModuleUnload(toCu<CUmodule>(handle_));
    }
    handle_ = std::exchange(o.handle_, 0);
    label_ = std::move(o.label_);
    load_ms_ = o.load_ms_;
  }
  return *this;
}

Kernel Module::getKernel(const std::string& name) const {
  LOOM_USER_CHECK(handle_, "getKernel(\"{}\") on a moved-from module", name);
  const ContextScope scope;
  CUfunction f = nullptr;
  CUresult r = driver().cuModuleGetFunction(&f, toCu<CUmodule>(handle_), name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND) fail("{} has no kernel named \"{}\"", label_, name);
  checkCu(r, "cuModuleGetFunction");
  Kernel k(fromCu(f), name);
  k.static_shared_ = k.attribute(CU_FUNC_ATTRIBUTE_SHARED_SIZE_BYTES);  // read once: launches ask
  return k;
}

double lastModuleLoadMs() { return g_last_load_ms; }

int Kernel::attribute(int attr) const {
  const ContextScope scope;
  int v = 0;
  LOOM_CU(cuFuncGetAttribute, &v, static_cast<CUfunction_attribute>(attr),
          toCu<CUfunction>(handle_));
  return v;
}

int Kernel::numRegs() const { return attribute(CU_FUNC_ATTRIBUTE_NUM_REGS); }
int Kernel::maxThreadsPerBlock() const {
  return attribute(CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK);
}
int Kernel::localBytes() const { return attribute(CU_FUNC_ATTRIBUTE_LOCAL_SIZE_BYTES); }

void Kernel::setMaxDynamicSharedBytes(int bytes) const {
  if (bytes <= opted_in_->load(std::memory_order_relaxed)) return;
  const ContextScope scope;
  LOOM_CU(cuFuncSetAttribute, toCu<CUfunction>(handle_),
          CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, bytes);
  int seen = opted_in_->load(std::memory_order_relaxed);
  while (seen < bytes && !opted_in_->compare_exchange_weak(seen, bytes, std::memory_order_relaxed)) {
  }
}

void Kernel::allowNonPortableCluster() const {
  if (non_portable_->load(std::memory_order_relaxed)) return;
  const ContextScope scope;
  LOOM_CU(cuFuncSetAttribute, toCu<CUfunction>(handle_), CU_FUNC_ATTRIBUTE_NON_PORTABLE_CLUSTER_SIZE_ALLOWED, 1);
  non_portable_->store(true, std::memory_order_relaxed);
}

int Kernel::maxActiveBlocksPerSm(int block_threads, std::size_t dynamic_shared_bytes) const {
  const ContextScope scope;
  int n = 0;
  LOOM_CU(cuOccupancyMaxActiveBlocksPerMultiprocessor, &n, toCu<CUfunction>(handle_),
          block_threads, dynamic_shared_bytes);
  return n;
}

// ---- launch ----

// A block gets 48 KiB of shared memory, static and dynamic together, unless the kernel opts in
// to more.
static void optInSharedBytes(const Kernel& kernel, const LaunchConfig& c) {
  const std::size_t kDefault = 48 * 1024;
  if (c.shared_bytes > kDefault ||
      (c.shared_bytes > 0 && c.shared_bytes + static_cast<std::size_t>(kernel.staticSharedBytes()) > kDefault))
    kernel.setMaxDynamicSharedBytes(static_cast<int>(c.shared_bytes));
}

void launch(const Kernel& kernel, const LaunchConfig& c, void** args, StreamHandle stream) {
  LOOM_USER_CHECK(kernel.handle(), "launch of an empty kernel handle");
  LOOM_USER_CHECK(c.grid.x && c.grid.y && c.grid.z && c.block.x && c.block.y && c.block.z,
                  "launch of {} with an empty grid ({},{},{}) or block ({},{},{})",
                  kernel.name(), c.grid.x, c.grid.y, c.grid.z, c.block.x, c.block.y, c.block.z);
  const ContextScope scope;
  optInSharedBytes(kernel, c);
  if (c.cluster_x <= 1 && !c.cooperative) {
    LOOM_CU(cuLaunchKernel, toCu<CUfunction>(kernel.handle()), c.grid.x, c.grid.y, c.grid.z,
            c.block.x, c.block.y, c.block.z, c.shared_bytes, toCu<CUstream>(stream), args, nullptr);
    return;
  }
  LOOM_USER_CHECK(c.grid.x % std::max(1u, c.cluster_x) == 0,
                  "launch of {}: grid.x {} is not a multiple of the cluster size {}", kernel.name(),
                  c.grid.x, c.cluster_x);
  LOOM_USER_CHECK(c.cluster_x <= 1 || Device::get().smVersion() >= 90,
                  "launch of {}: thread-block clusters of {} need sm_90 or newer; this GPU is sm_{}",
                  kernel.name(), c.cluster_x, Device::get().smVersion());
  // Clusters of more than 8 blocks (sm_90 allows 16) are non-portable: the kernel opts in.
  if (c.cluster_x > 8) kernel.allowNonPortableCluster();
  CUlaunchAttribute attrs[2] = {};
  unsigned n = 0;
  if (c.cluster_x > 1) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION;
    attrs[n].value.clusterDim.x = c.cluster_x;
    attrs[n].value.clusterDim.y = 1;
    attrs[n].value.clusterDim.z = 1;
    ++n;
  }
  if (c.cooperative) {
    attrs[n].id = CU_LAUNCH_ATTRIBUTE_COOPERATIVE;
    attrs[n].value.cooperative = 1;
    ++n;
  }
  CUlaunchConfig lc{};
  lc.gridDimX = c.grid.x;
  lc.gridDimY = c.grid.y;
  lc.gridDimZ = c.grid.z;
  lc.blockDimX = c.block.x;
  lc.blockDimY = c.block.y;
  lc.blockDimZ = c.block.z;
  lc.sharedMemBytes = c.shared_bytes;
  lc.hStream = toCu<CUstream>(stream);
  lc.attrs = attrs;
  lc.numAttrs = n;
  LOOM_CU(cuLaunchKernelEx, &lc, toCu<CUfunction>(kernel.handle()), args, nullptr);
}

void checkResidentAtOnce(const Kernel& kernel, const LaunchConfig& c) {
  optInSharedBytes(kernel, c);  // the occupancy query, too, honours only opted-in sizes
  const int per_sm = kernel.maxActiveBlocksPerSm(static_cast<int>(c.block.x * c.block.y * c.block.z), c.shared_bytes);
  LOOM_USER_CHECK(static_cast<long>(per_sm) * Device::get().smCount() >= static_cast<long>(c.grid.x) * c.grid.y * c.grid.z,
                  "launch of {}: its {} blocks must all be resident at once (grid-wide barriers) but "
                  "only {} per SM x {} SMs fit; was it compiled for another GPU?",
                  kernel.name(), c.grid.x * c.grid.y * c.grid.z, per_sm, Device::get().smCount());
}

void memsetAsync(std::uintptr_t ptr, std::uint8_t byte, std::size_t bytes, StreamHandle stream) {
  const ContextScope scope;
  if (bytes) LOOM_CU(cuMemsetD8Async, ptr, byte, bytes, toCu<CUstream>(stream));
}

// ---- Stream ----

Stream::Stream() {
  const ContextScope scope;
  CUstream s = nullptr;
  LOOM_CU(cuStreamCreate, &s, CU_STREAM_NON_BLOCKING);
  handle_ = fromCu(s);
}

Stream::~Stream() {
  if (!handle_) return;
  const ContextScope scope(std::nothrow);
  driver().cuStreamDestroy_v2(toCu<CUstream>(handle_));
}

Stream::Stream(Stream&& o) noexcept : handle_(std::exchange(o.handle_, 0)) {}

Stream& Stream::operator=(Stream&& o) noexcept {
  if (this != &o) {
    if (handle_) {
      const ContextScope scope(std::nothrow);
      driver().cuStreamDestroy_v2(toCu<CUstream>(handle_));
    }
    handle_ = std::exchange(o.handle_, 0);
  }
  return *this;
}

std::uint64_t streamId(StreamHandle stream) {
  const ContextScope scope;
  CUstreamCaptureStatus status = CU_STREAM_CAPTURE_STATUS_NONE;
  cuuint64_t capture = 0;
  LOOM_CU(cuStreamGetCaptureInfo_v1, toCu<CUstream>(stream), &status, &capture);
  if (status != CU_STREAM_CAPTURE_STATUS_NONE) return kCapturedStream | capture;  // (cuStreamGetId would end it)
  unsigned long long id = 0;
  LOOM_CU(cuStreamGetId, toCu<CUstream>(stream), &id);
  return id;
}

void Stream::synchronize() const {
  const ContextScope scope;
  LOOM_CU(cuStreamSynchronize, toCu<CUstream>(handle_));
}

// ---- Event ----

Event::Event() {
  const ContextScope scope;
  CUevent e = nullptr;
  LOOM_CU(cuEventCreate, &e, CU_EVENT_DEFAULT);
  handle_ = fromCu(e);
}

Event::~Event() {
  if (!handle_) return;
  const ContextScope scope(std::nothrow);
  driver().cuEventDestroy_v2(toCu<CUevent>(handle_));
}

Event::Event(Event&& o) noexcept : handle_(std::exchange(o.handle_, 0)) {}

Event& Event::operator=(Event&& o) noexcept {
  if (this != &o) {
    if (handle_) {
      const ContextScope scope(std::nothrow);
      driver().cuEventDestroy_v2(toCu<CUevent>(handle_));
    }
    handle_ = std::exchange(o.handle_, 0);
  }
  return *this;
}

void Event::record(StreamHandle stream) {
  const ContextScope scope;
  LOOM_CU(cuEventRecord, toCu<CUevent>(handle_), toCu<CUstream>(stream));
}

void Event::synchronize() const {
  const ContextScope scope;
  LOOM_CU(cuEventSynchronize, toCu<CUevent>(handle_));
}

float Event::elapsedMs(const Event& start, const Event& end) {
  end.synchronize();
  const ContextScope scope;
  float ms = 0;
  LOOM_CU(cuEventElapsedTime_v2, &ms, toCu<CUevent>(start.handle_), toCu<CUevent>(end.handle_));
  return ms;
}

}  // namespace loom::runtime
