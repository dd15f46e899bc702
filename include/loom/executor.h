#pragma once
// Runs a fusion on the GPU. The first call for a given input signature (dtypes, sizes,
// strides, alignment) compiles (or finds the kernel in the memory or disk cache); later calls
// only launch.
//
// Sizes: a fusion's first sizes compile exactly. A later signature whose sizes differ from an
// earlier one's only in one size leading every tensor that names it (a batch, the rows), where
// the two would share a kernel class (or where such an earlier signature already took the size
// at run time), compiles kernels that take that size at run time, which every later value of
// their class finds compiled (LOOM_NO_AUTO_SYMBOLIC: every size exactly;
// LOOM_TUNE_SYMBOLIC: at run time from the first call). Such a kernel may launch another grid
// than the exact one (column kernels keep the blocks an SM their registers allow), so a size's
// column sums can differ in their last bits with the sizes an Executor saw before it; each
// signature's own results stay bitwise the same from run to run.
//
// A size of 0 (an empty batch, zero rows) plans no kernels: the outputs are allocated as they
// are (row-major; empty ones have no elements to write) and a launch does nothing, except where
// an output still has elements (a reduction over an empty dim): the float64 reference computes
// it on the host after the GPU finishes what it has queued (not inside a CUDA graph capture).
//
// One Executor serves one host thread at a time (its plans and its stream are not guarded).
// Each plan keeps its intermediates per stream it runs on, and each kernel its grid-reduction
// workspace per stream (one for every signature the kernel serves), reused by every launch there
// in stream order, so launches on several streams may run at once.
//
// Signatures: an Executor keeps the plans of its 64 most recently used input signatures (found
// by a hash of the signature; a repeated one first). A 65th drops the least recently used one
// with its intermediates (after the GPU finishes what it has queued); that signature, when it
// comes back, is planned again and finds its kernels loaded (whether it takes a size at run time
// is decided again from the signatures then held, so its column sums may differ in their last
// bits from its first plan's). Kernels stay loaded, and their workspaces held, while the
// Executor lives.
//
// CUDA graphs: launches may be captured (a stream in capture, any capture mode). Each capture
// gets intermediates and workspaces of its own, allocated at its first launch of a plan (without
// breaking the capture) and kept while the Executor lives, also once their signature is dropped:
// a graph's replays write them, so a graph must not outlive the Executor (or C runner) whose
// launches it captured, and replays of one graph run one at a time.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <loom/device_tensor.h>
#include <loom/export.h>
#include <loom/fusion.h>
#include <loom/tuning.h>

namespace loom {
struct CompiledPlan;  // loom's own (compiler/compile.h), declared outside the exported region
}  // namespace loom

#pragma GCC visibility push(default)
namespace loom {

// Whether a GPU can run loom's kernels: libcuda.so.1 loads, cuInit succeeds and there is a
// device. Never throws; on false, `why` (if given) says what is missing.
bool gpuAvailable(std::string* why = nullptr) noexcept;

// The GPU loom runs on: one a process, GPU 0 unless this chose another before loom's first GPU
// work (in that GPU's primary context, which the CUDA runtime and PyTorch share). Naming the GPU
// already in use does nothing. Throws loom::Error where no GPU is found, where `ordinal` is not
// one of the driver's GPUs, or where loom already runs on another GPU in this process (a
// data-parallel job runs one process per GPU, each selecting its own).
void selectDevice(int ordinal);
// The GPU loom runs on, or will run on at its first GPU work.
int selectedDevice() noexcept;

struct CompileStats {
  enum class Source { Compiled, MemoryCache, DiskCache } source = Source::Compiled;
  double llvm_ptx_ms = 0;  // LLVM IR -> PTX (0 when cached)
  double load_ms = 0;      // cuModuleLoadData (0 on a memory hit)
  double disk_ms = 0;      // reading and checking disk-cache entries
  double plan_ms = 0;      // segmenting, scheduling and lowering to the keys (the rest of the plan)
  double sizes_ms = 0;     // binding the sizes, choosing exact or runtime-sized kernels
  double buffers_ms = 0;   // residency checks, intermediates and workspaces
  double total_ms = 0;     // the whole first-call overhead
  // Kernels of the plan that take a size at run time (LOOM_TUNE_SYMBOLIC, or by default from a
  // second value of a leading size on: runtime/dynamic_sizes.h), of `kernels`.
  int runtime_size_kernels = 0, kernels = 0;
};

class Executor {
 public:
  // Compiles for the current GPU with `tuning`: by default the tuning knobs set in the
  // environment, read here, once (runtime/environment_options.h).
  // `fusion` must outlive the Executor (it is read at each new input signature): a temporary
  // is refused.
  explicit Executor(const Fusion& fusion, Tuning tuning = tuningFromEnvironment());
  explicit Executor(Fusion&& fusion, Tuning tuning = tuningFromEnvironment()) = delete;
#ifdef LOOM_INTERNAL_API
  LOOM_HIDDEN explicit Executor(const ir::Fusion& fusion, Tuning tuning = tuningFromEnvironment());
#endif
  ~Executor();
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Allocates the outputs and runs; aliased outputs are their inputs, updated in place.
  std::vector<DeviceTensor> run(const std::vector<DeviceTensor>& inputs,
                                const Bindings& sizes = {});
  // Fresh outputs for a run with these inputs (aliased ones are those inputs); `poison` fills
  // the fresh ones with 0xff bytes (NaN for floats) so an unwritten element shows.
  std::vector<DeviceTensor> allocateOutputs(const std::vector<DeviceTensor>& inputs,
                                            const Bindings& sizes = {}, bool poison = false);
  // Runs into outputs the caller allocated as outputSpecs() says (for benchmarks and reuse): same
  // dtypes and sizes, the same strides wherever a dim is not 1, and aligned as the kernel stores.
  void runInto(const std::vector<DeviceTensor>& inputs, std::vector<DeviceTensor>& outputs,
               const Bindings& sizes = {});
  // The outputs a run with these inputs produces (dtype, sizes, strides), compiling if needed.
  std::vector<TensorDesc> outputSpecs(const std::vector<DeviceTensor>& inputs,
                                      const Bindings& sizes = {});
  // Launches asynchronously, no checks beyond the signature lookup: the hot path. It finds the
  // plan by the inputs alone: where signatures share their inputs (sizes given beside them),
  // the most recently used one of them (runInto names its sizes).
  void launch(const std::vector<DeviceTensor>& inputs, const std::vector<DeviceTensor>& outputs);
  // Launches only kernel `k` of the plan for these inputs (planFor(inputs).kernels[k]), as
  // launch() does, in the same stream: for timing one kernel of a plan. It reads the
  // intermediates an earlier kernel wrote, so run the whole plan first (runInto or launch) on
  // the same stream, with no other signature planned in between (a dropped plan comes back with
  // fresh intermediates).
  void launchKernel(const std::vector<DeviceTensor>& inputs, const std::vector<DeviceTensor>& outputs,
                    size_t k);

  // The CUDA stream (a CUstream) later launches go to, in order; by default the legacy default
  // stream, or the per-thread one with LOOM_STREAM=per-thread.
  void setStream(std::uintptr_t stream) { stream_ = stream; }

  const CompileStats& lastCompile() const { return stats_; }
  // How these inputs run: the kernels, why each boundary (as `loom segment` prints it), and
  // each kernel's launch shape. Compiles if needed.
  std::string describePlan(const std::vector<DeviceTensor>& inputs, const Bindings& sizes = {});
#ifdef LOOM_INTERNAL_API
  // loom's own code: the plan itself (segments, launch shapes, output specs; each kernel's key
  // as the 16 hex digits of its digest, its PTX and cubin dropped: the loaded kernel holds them).
  // Valid until the next call that may plan another signature.
  LOOM_HIDDEN const CompiledPlan& planFor(const std::vector<DeviceTensor>& inputs, const Bindings& sizes = {});
  // How many signatures' plans it holds now (at most kMaxSignatures, or the limit below).
  LOOM_HIDDEN size_t signatures() const;
  // Holds at most `n` (>= 1) signatures' plans instead: before its first signature (tests).
  LOOM_HIDDEN void limitSignatures(size_t n);
#endif
  static constexpr size_t kMaxSignatures = 64;

 private:
  struct Entry;
  LOOM_HIDDEN Entry& prepare(const std::vector<DeviceTensor>& inputs, const Bindings& sizes);
  LOOM_HIDDEN bool runtimeSizes(const Bindings& bound, const std::vector<TensorDesc>& descs,
                                std::vector<Entry*>* sized);
  LOOM_HIDDEN Entry& entryFor(const std::vector<DeviceTensor>& inputs, const std::vector<DeviceTensor>& outputs);
  struct Scratch;
  LOOM_HIDDEN Scratch* scratchFor(Entry& e);
  LOOM_HIDDEN void launchOne(Entry& e, size_t k, Scratch* scratch, const std::vector<DeviceTensor>& inputs,
                             const std::vector<DeviceTensor>& outputs);
  LOOM_HIDDEN void runOnHost(Entry& e, const std::vector<DeviceTensor>& inputs,
                             const std::vector<DeviceTensor>& outputs);
  LOOM_HIDDEN void launchAll(Entry& e, const std::vector<DeviceTensor>& inputs,
                             const std::vector<DeviceTensor>& outputs);
  const ir::Fusion& f_;
  const Tuning tuning_;
  struct Workspaces;
  struct Entries;
  std::unique_ptr<Entries> entries_;  // the signatures' plans, least recently used dropped first
  CompileStats stats_;
  std::uintptr_t stream_;
  std::unique_ptr<Workspaces> workspaces_;  // kernels' global scratch, shared by the signatures of a kernel
  // The scratch of dropped signatures that CUDA graphs captured (their replays write it).
  std::vector<std::unique_ptr<Scratch>> captured_;
};


}  // namespace loom
#pragma GCC visibility pop
