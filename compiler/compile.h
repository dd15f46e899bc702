#pragma once
// Compiles one fusion for concrete input tensors: schedule, lower, LLVM IR, PTX. Knows nothing
// of the driver; the runtime loads and launches what this returns.
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/compile_options.h"
#include "compiler/tensor_desc.h"
#include "ir/dump.h"
#include "ir/fusion.h"

namespace loom {

namespace schedule {
struct Planned;
}
namespace segment {
struct SegmentPlan;
}

// The sm_XX targets loom emits PTX for, and the one for a device of compute capability
// major.minor (the highest not above it; loom::Error below sm_80). The compiler's face for
// these, so that the runtime and the tools need not include compiler/codegen.
std::vector<int> supportedSms();
int ptxTargetFor(int cc_major, int cc_minor);

struct CompiledKernel {
  std::string name;
  std::string ptx;
  unsigned block = 1;
  unsigned grid = 1;
  unsigned shared_bytes = 0;        // dynamic shared memory per block
  unsigned cluster = 1;             // blocks per thread-block cluster (sm_90), 1: none
  bool cooperative = false;         // every block resident at once (grid-wide barriers)
  std::uint64_t workspace_bytes = 0;  // a global scratch, passed after the outputs: zero when
                                      // allocated, and each launch leaves it so
  std::vector<TensorDesc> outputs;  // to allocate (or the aliased input's)
  std::vector<int> output_alias;    // input index per output, or -1
  double llvm_ptx_ms = 0;           // LLVM IR -> PTX
  // Machine code for sm_`cubin_sm` made from `ptx` (runtime/ptx_compiler.h), kept in the disk
  // cache beside it; empty where none was made (the driver then JIT-compiles the PTX).
  std::string cubin;
  int cubin_sm = 0;  // -sm: the cubin made for that SM was refused as worse than the JIT's
  // The sizes it takes at run time (kir::Kernel::sizes), passed after the tensors and the
  // workspace as 64-bit integers; empty for a kernel that knows every size.
  std::vector<std::string> size_args;
};

// The text of each stage, filled when asked (loom dump, LOOM_DUMP).
using StageText = std::map<DumpStage, std::string>;

// Throws loom::Error when no scheduler accepts the fusion (with the reason).
CompiledKernel compileFusion(const ir::Fusion& f, const Bindings& sizes,
                             const std::vector<TensorDesc>& inputs, const CompileOptions& opts,
                             StageText* stages = nullptr);

// A stable text key of everything that changes the generated code: the fusion, its inputs, the
// value of every size it names (a size the inputs do not determine, such as N and D of a
// reshape of x[N*D], too), the target, the compiler build, and every tuning knob set (in
// include/loom/tuning.def order).
std::string compileKey(const ir::Fusion& f, const std::vector<TensorDesc>& inputs, const Bindings& sizes,
                       const CompileOptions& opts);

// A kernel that takes some sizes at run time (LOOM_TUNE_SYMBOLIC), as these sizes need it: its
// key is the fusion and its kernel IR's fingerprint (which holds no value of those sizes, so every
// size whose schedule comes out the same shares it), the target, the build and the knobs; the
// launch grid and the outputs are these sizes' own. nullopt: the segment's kernel knows every
// size (compileKey is its key).
struct SymbolicClass {
  std::string key;
  std::string ir_hash;  // the kernel IR's fingerprint (hex)
  unsigned grid = 1;
  std::vector<TensorDesc> outputs;
  std::vector<int64_t> size_values;
};
// The class of this segment at an earlier size: its schedule there and its kernel IR's fingerprint.
struct KnownClass {
  const schedule::Planned* planned = nullptr;
  std::string ir_hash;
};
// `planned`: f's schedule for these sizes and options where the caller has it (the segmenter's).
// `known`: earlier sizes' classes of this segment; one whose schedule lowers as this one's
// (schedule::Planned::lowers_as) gives its fingerprint, and the kernel IR is not lowered again.
std::optional<SymbolicClass> symbolicClass(const ir::Fusion& f, const Bindings& sizes,
                                           const std::vector<TensorDesc>& inputs, const CompileOptions& opts,
                                           const schedule::Planned* planned = nullptr,
                                           const std::vector<KnownClass>& known = {});

// Planning only (segments, schedules, kernel IR; no LLVM): per kernel of the plan for these
// sizes with `opts` (LOOM_TUNE_SYMBOLIC set), its symbolicClass key, or "" where that kernel
// would know every size. Two sizes share a kernel where their keys at its index are equal.
std::vector<std::string> symbolicClassKeys(const ir::Fusion& f, const Bindings& sizes,
                                           const std::vector<TensorDesc>& inputs, const CompileOptions& opts);

}  // namespace loom

namespace loom {

// Where a kernel of a plan reads or writes a tensor.
struct TensorRef {
  enum class Kind { Input, Output, Temp } kind;
  int index;
  bool operator==(const TensorRef&) const = default;
};

struct PlannedKernel {
  std::string key;  // compileKey of its segment (or symbolicKey): memory and disk cache key
  CompiledKernel kernel;  // of a symbolic kernel: grid and outputs for these sizes
  std::vector<TensorRef> args;  // one per kernel parameter: the segment's inputs, then outputs
  std::vector<int64_t> size_values;  // kernel.size_args' values for these sizes
  std::string ir_hash;               // its class's kernel IR fingerprint (SymbolicClass); "" if exact
};

// A fusion as the kernels it runs as, in launch order.
struct CompiledPlan {
  std::vector<PlannedKernel> kernels;
  std::vector<TensorDesc> temps;    // intermediates between kernels, allocated once
  std::vector<TensorDesc> outputs;  // the fusion's outputs (an aliased one: its input's desc)
  std::vector<int> output_alias;    // input index per output, or -1
  std::string segments;             // the segmentation, as `loom segment` prints it
  std::shared_ptr<const segment::SegmentPlan> segment_plan;  // the segments themselves (replanLike)
  // A plan at a size of 0 (emptyPlan) whose outputs are not all empty: a reduction over an empty
  // dim, whose values (a sum's 0, a mean's NaN) the reference evaluator computes on the host.
  bool host_reference = false;
};

// Whether a size bound in `sizes` or a dim of `inputs` is 0: such a fusion runs as emptyPlan.
bool hasEmptySize(const Bindings& sizes, const std::vector<TensorDesc>& inputs);
// The plan of a fusion at a size of 0: no kernels; outputs row-major (an aliased one its input's
// desc), with host_reference set where one of them has elements.
CompiledPlan emptyPlan(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs);

// Segments the fusion and compiles every segment. `lookup`, when given, is asked for each
// kernel's key first (the runtime's caches) and compiles only on a miss.
CompiledPlan compilePlan(const ir::Fusion& f, const Bindings& sizes,
                         const std::vector<TensorDesc>& inputs, const CompileOptions& opts,
                         StageText* stages = nullptr,
                         const std::function<std::optional<CompiledKernel>(const std::string&)>& lookup = {});

// A new size of a signature whose plan takes its sizes at run time (`opts` LOOM_TUNE_SYMBOLIC):
// `earlier`'s segments, each scheduled again at these sizes, where every segment's kernel is a
// class `lookup` already holds; nullopt where one is not (a scheduler refuses the segment, its
// kernel would know every size or is not compiled), and compilePlan then segments anew. Plans
// 3 kernels where segmenting searched ~80 candidates (group norm backward). The segmentation is
// the earlier size's, which this size's own search might have drawn otherwise (its thresholds
// weigh bytes); each kernel is its class's, as compilePlan's would be. A kernel whose schedule
// lowers as that of `earlier`'s or `others`' kernel (earlier sizes' plans) takes that one's class
// without lowering its kernel IR again (symbolicClass).
std::optional<CompiledPlan> replanLike(const CompiledPlan& earlier, const ir::Fusion& f, const Bindings& sizes,
                                       const std::vector<TensorDesc>& inputs, const CompileOptions& opts,
                                       const std::function<std::optional<CompiledKernel>(const std::string&)>& lookup,
                                       const std::vector<const CompiledPlan*>& others = {});

}  // namespace loom
