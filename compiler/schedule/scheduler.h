#pragma once
// The scheduler registry. A scheduler looks at one segment (a fusion and its concrete inputs)
// and either takes it, with its parameters and the kernel it lowers to, or says why not.
// compile.cpp and the segmenter ask every scheduler of schedulers.def in order.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/compile_options.h"
#include "compiler/kir/kir.h"
#include "compiler/tensor_desc.h"
#include "ir/fusion.h"

namespace loom::schedule {

// What the runtime launches.
struct LaunchShape {
  int64_t grid = 1;
  int block = 1;
  int shared_bytes = 0;           // dynamic shared memory per block
  int cluster = 1;                // blocks per thread-block cluster
  bool cooperative = false;       // every block resident at once (grid-wide barriers)
  int64_t workspace_bytes = 0;    // a global scratch after the outputs
};

// A scheduler's plan for a segment.
struct Planned {
  std::string scheduler;  // which scheduler made it
  std::string summary;    // its parameters and reasons: `loom dump --stage schedule`, `loom segment`
  std::string reason;     // the one-line reason alone (`loom segment`'s params)
  // The scheduler's kernel as it sees it (`loom dump --stage kernel`), printed only when asked.
  std::function<std::string()> detail;
  LaunchShape launch;
  std::vector<TensorDesc> outputs;  // what the runtime allocates (or the aliased input's)
  std::vector<int> output_alias;    // input index per output, or -1
  // The kernel IR, and the name of the pass that makes it.
  std::function<kir::Kernel()> lower;
  std::string first_pass;
  // A kernel taking its size at run time: whether `other`, this segment's plan at another size,
  // lowers to the kernel IR this one does, so that its class needs no lowering again (its
  // scheduler's parameters, inputs and tuning are these but for what the size sets, which the
  // lowering reads only as the kernel's size parameter: same_lowering.h). Unset: lower to know.
  std::function<bool(const Planned& other)> lowers_as;
  std::shared_ptr<const void> lowering;  // what `lower` reads, as its scheduler keeps it
  // The sizes the kernel takes at run time, with their values here (kir::Kernel::sizes).
  std::vector<std::pair<std::string, int64_t>> size_args;
  // Non-empty: why two kernels, a reduction and a pointwise pass (in either order), run faster
  // than this one; the segmenter takes such a plan where it finds exactly one.
  std::string two_pass_faster;
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;
  virtual std::string_view name() const = 0;
  // The plan for `f` with these inputs, or nullopt with `why_not` set.
  virtual std::optional<Planned> plan(const ir::Fusion& f, const Bindings& sizes,
                                      const std::vector<TensorDesc>& inputs, const CompileOptions& opts,
                                      const std::string& kernel_name, std::string* why_not) const = 0;
};

// Every scheduler, in schedulers.def's order.
const std::vector<const Scheduler*>& schedulers();

// The first scheduler's plan; nullopt with one "name: reason" per scheduler.
std::optional<Planned> planSegment(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs,
                                   const CompileOptions& opts, const std::string& kernel_name,
                                   std::vector<std::string>* why_not);

#define LOOM_SCHEDULER(name) const Scheduler& name##Scheduler();
#include "compiler/schedule/schedulers.def"
#undef LOOM_SCHEDULER

}  // namespace loom::schedule
