#pragma once
// A small C++ layer over the CUDA driver: the device, device memory, PTX modules and kernels,
// launches, streams and events. RAII throughout; every driver call is checked and a failure is
// a loom::Error naming the call and the driver's error. No cuda.h needed here: handles are
// plain integers.
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>
#include <string>
#include <utility>

namespace loom::runtime {

using StreamHandle = std::uintptr_t;  // a CUstream; 0 is the legacy default stream

// Makes GPU `ordinal` the one loom runs on in this process (selectDevice's doc in
// include/loom/executor.h): before loom's first GPU work, or naming the GPU it already runs on.
void selectDevice(int ordinal);
// The GPU loom runs on, or will run on at its first GPU work (0 unless selectDevice chose another).
int selectedDevice() noexcept;
// The GPU whose memory `p` points into (the driver's number, as cuda:N), for pointers a caller
// hands loom without saying where they live; -1 for memory every GPU reaches (managed memory,
// page-locked host memory). Throws loom::Error naming `what` where the driver knows no memory at
// `p` (pageable host memory, a freed pointer), and as checkCu for any other driver failure.
int pointerDevice(const void* p, const std::string& what);

// loom's GPU (GPU 0 unless selectDevice chose another before loom's first GPU work), with its
// primary context (the one the CUDA runtime and PyTorch share). One a process.
class Device {
 public:
  // Initializes the driver on first use (loom's GPU and its primary context, loom's; each driver
  // call is made under a ContextScope). Throws loom::Error "no NVIDIA GPU found: ..." where there
  // is none.
  static Device& get();

  int ordinal() const { return ordinal_; }  // the driver's number of this GPU

  const std::string& name() const { return name_; }
  int ccMajor() const { return cc_major_; }
  int ccMinor() const { return cc_minor_; }
  int smVersion() const { return cc_major_ * 10 + cc_minor_; }  // 90 for sm_90
  int smCount() const { return sm_count_; }
  std::size_t totalMemory() const { return total_memory_; }
  int maxThreadsPerBlock() const { return max_threads_per_block_; }
  int maxSharedPerBlock() const { return max_shared_per_block_; }             // without opt-in
  int maxSharedPerBlockOptin() const { return max_shared_per_block_optin_; }  // with opt-in
  int maxSharedPerSm() const { return max_shared_per_sm_; }
  int l2Bytes() const { return l2_bytes_; }
  int driverVersion() const { return driver_version_; }  // e.g. 13000 for CUDA 13.0

  void synchronize() const;   // waits for all work on the context
  std::string describe() const;  // one line: name, sm, SMs, memory, L2, driver

 private:
  Device();
  int ordinal_ = 0;
  std::string name_;
  int cc_major_ = 0, cc_minor_ = 0, sm_count_ = 0, max_threads_per_block_ = 0;
  int max_shared_per_block_ = 0, max_shared_per_block_optin_ = 0, max_shared_per_sm_ = 0;
  int l2_bytes_ = 0, driver_version_ = 0;
  std::size_t total_memory_ = 0;
};

// Loom's context current on this thread while the scope lives. Where another is current (a
// caller's own context, or another GPU's primary context that a framework made current), ours is
// pushed over it, and the caller's is current again when the scope ends; where none is, ours is
// bound and stays (as the CUDA runtime's first call on a thread does). Every runtime function
// that calls the driver holds one, and the Executor's entry points hold one around all they do
// (a scope inside another asks the driver nothing). Stream 0 is then loom's context's legacy
// stream: a caller with a context of its own orders loom's work with its own by events, or
// passes a stream of loom's context (PyTorch's contexts are the primary ones, loom's included).
class ContextScope {
 public:
  ContextScope();
  // For destructors: throws nothing (a failing driver call leaves the context as it is).
  explicit ContextScope(std::nothrow_t);
  ~ContextScope();
  ContextScope(const ContextScope&) = delete;
  ContextScope& operator=(const ContextScope&) = delete;

 private:
  bool pushed_ = false;
  bool counted_ = false;
};

// While it lives, the driver calls this thread makes that are no stream work (allocating and
// freeing memory, loading a module, zeroing on a stream of loom's own) leave a CUDA graph capture
// valid: a capture in the driver's global mode (PyTorch's default) otherwise fails at the first
// such call from any thread. PyTorch's allocator does the same around its own allocations.
class RelaxedCapture {
 public:
  RelaxedCapture() noexcept;
  ~RelaxedCapture();
  RelaxedCapture(const RelaxedCapture&) = delete;
  RelaxedCapture& operator=(const RelaxedCapture&) = delete;

 private:
  int mode_ = 0;
  bool exchanged_ = false;
};

// Device memory; move-only. A zero-byte buffer holds no allocation and ptr() == 0. Allocating and
// freeing keep any CUDA graph capture valid (RelaxedCapture).
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(std::size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  std::size_t size() const { return size_; }
  std::uintptr_t ptr() const { return ptr_; }

  // Synchronous copies of `bytes` at byte `offset`; out of range -> loom::Error.
  void copyFromHost(const void* src, std::size_t bytes, std::size_t offset = 0);
  void copyToHost(void* dst, std::size_t bytes, std::size_t offset = 0) const;
  void copyFrom(const DeviceBuffer& src);  // device to device, whole buffer, sizes must match
  void memset(std::uint8_t byte);          // every byte
  void fill32(std::uint32_t word);         // every 32-bit word (poisoning with NaN patterns)

 private:
  void checkRange(std::size_t bytes, std::size_t offset, const char* what) const;
  std::uintptr_t ptr_ = 0;
  std::size_t size_ = 0;
};

// A kernel handle; valid while the Module it came from lives.
class Kernel {
 public:
  std::uintptr_t handle() const { return handle_; }
  const std::string& name() const { return name_; }
  int numRegs() const;
  int maxThreadsPerBlock() const;  // for this kernel's register use
  int staticSharedBytes() const { return static_shared_; }
  int localBytes() const;          // per-thread local memory (spills)
  // Allows launches with up to `bytes` of dynamic shared memory (needed above 48 KiB). Asks
  // the driver only when `bytes` is more than this kernel (and its copies) already allow.
  void setMaxDynamicSharedBytes(int bytes) const;
  int maxActiveBlocksPerSm(int block_threads, std::size_t dynamic_shared_bytes) const;
  // Allows launches in clusters of more than 8 blocks (once per function).
  void allowNonPortableCluster() const;

 private:
  friend class Module;
  Kernel(std::uintptr_t handle, std::string name) : handle_(handle), name_(std::move(name)) {}
  int attribute(int attr) const;
  std::uintptr_t handle_ = 0;
  std::string name_;
  int static_shared_ = 0;  // bytes, from the driver when the kernel is looked up
  // The dynamic shared memory the driver was last told to allow, shared by copies (the
  // attribute belongs to the function handle), read and raised by launches on any thread.
  std::shared_ptr<std::atomic<int>> opted_in_ = std::make_shared<std::atomic<int>>(0);
  // Whether the driver was told to allow clusters of more than 8 blocks (shared as opted_in_).
  std::shared_ptr<std::atomic<bool>> non_portable_ = std::make_shared<std::atomic<bool>>(false);
};

// A loaded module; move-only. The driver JIT-compiles PTX when it loads it; a cubin
// (runtime/ptx_compiler.h) is machine code already.
class Module {
 public:
  enum class Image { Ptx, Cubin };
  // `label` names the module in errors. An image the driver rejects -> loom::Error with the
  // driver's JIT log.
  explicit Module(const std::string& image, const std::string& label = "module", Image kind = Image::Ptx);
  ~Module();
  Module(Module&& other) noexcept;
  Module& operator=(Module&& other) noexcept;
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;

  Kernel getKernel(const std::string& name) const;  // no such kernel -> loom::Error
  double loadMs() const { return load_ms_; }        // wall time of cuModuleLoadDataEx

 private:
  std::uintptr_t handle_ = 0;
  std::string label_;
  double load_ms_ = 0;
};

// Wall time of the most recent Module load in this process, in milliseconds.
double lastModuleLoadMs();

struct Dim3 {
  unsigned x = 1, y = 1, z = 1;
};

struct LaunchConfig {
  Dim3 grid;
  Dim3 block;
  unsigned shared_bytes = 0;  // dynamic shared memory
  unsigned cluster_x = 1;     // blocks per thread-block cluster along x (sm_90+); 1: none
  bool cooperative = false;   // all blocks resident at once, or the launch fails (grid barriers)
};

// For a cooperative launch: throws loom::Error unless all of `config`'s blocks fit on the GPU
// at once. Once per kernel and configuration, not per launch (it asks the driver).
void checkResidentAtOnce(const Kernel& kernel, const LaunchConfig& config);

// Sets `bytes` bytes at device address `ptr` to `byte`, in order on `stream`.
void memsetAsync(std::uintptr_t ptr, std::uint8_t byte, std::size_t bytes, StreamHandle stream = 0);
// Zeroes `bytes` at `ptr` before returning, on a stream of loom's own: memory allocated while the
// stream it will be used on is being captured, zeroed now (a memset on the capturing stream would
// be recorded into the graph instead).
void zeroNow(std::uintptr_t ptr, std::size_t bytes);

// Which stream `stream` is, for keeping per-stream state: the driver's id of it (unique in the
// context, so a handle reused after cuStreamDestroy, and the per-thread default stream of each
// thread, are told apart). A stream being captured into a CUDA graph has no id the driver will
// give: there, kCapturedStream | the capture's own id (unique per capture), so each graph's
// launches keep state of their own, apart from other graphs' and from the stream's outside it.
std::uint64_t streamId(StreamHandle stream);
inline constexpr std::uint64_t kCapturedStream = std::uint64_t{1} << 63;

// Launches asynchronously on `stream`. `args` points at each kernel parameter's value, in
// order (as cuLaunchKernel wants). Dynamic shared memory above 48 KiB is opted into here.
// Clusters and cooperative launches go through cuLaunchKernelEx (the grid must be a multiple
// of the cluster size).
void launch(const Kernel& kernel, const LaunchConfig& config, void** args,
            StreamHandle stream = 0);

// A stream of its own; move-only.
class Stream {
 public:
  Stream();
  ~Stream();
  Stream(Stream&& other) noexcept;
  Stream& operator=(Stream&& other) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  StreamHandle handle() const { return handle_; }
  void synchronize() const;

 private:
  StreamHandle handle_ = 0;
};

// A CUDA event, for timing work on the GPU; move-only.
class Event {
 public:
  Event();
  ~Event();
  Event(Event&& other) noexcept;
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  void record(StreamHandle stream = 0);
  void synchronize() const;
  // Milliseconds between two recorded events; waits for `end` first.
  static float elapsedMs(const Event& start, const Event& end);

 private:
  std::uintptr_t handle_ = 0;
};

}  // namespace loom::runtime
