#pragma once
// The segmenter: one kernel when a scheduler accepts the whole fusion; otherwise the fewest
// segments it can find, each accepted by a scheduler. Segments are runs of the fusion's ops in
// topological order, grown greedily while a scheduler still accepts them, so no two segments
// depend on each other both ways. Views, casts and broadcasts never force a cut by themselves:
// every scheduler takes them. Every decision carries the schedulers' reasons.
#include <memory>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "compiler/segment/subfusion.h"

namespace loom::segment {

struct Segment {
  std::vector<const ir::Op*> ops;
  SubFusion sub;
  std::string scheduler;  // "pointwise", "reduction" or "normalization" (schedulers.def)
  std::string params;     // the schedule's summary
  std::vector<TensorDesc> input_descs, output_descs;
  std::vector<std::string> rejections;  // why the segment stops where it does
  // Ops of `ops` this segment computes again from the fusion's inputs (casts, views, pointwise
  // chains of inputs) rather than read from another kernel.
  std::vector<const ir::Op*> recomputed;
  // The schedule of `sub` for the plan's sizes and options (its lowering reads `sub.fusion`).
  std::shared_ptr<const schedule::Planned> planned;
  uint64_t bytesRead() const;
  uint64_t bytesWritten() const;
};

struct SegmentPlan {
  std::vector<Segment> segments;
  std::vector<std::string> whole_rejections;  // why the whole fusion is not one kernel
  std::vector<std::string> alternatives;      // other plans tried, and why this one was taken
  std::vector<const ir::Op*> unused;          // ops no output needs: in no segment, never run
  // Bytes the fusion's inputs and outputs take: what one kernel would move (each input read
  // once, each output written once). Each segment moves its own inputs and outputs
  // (Segment::bytes), intermediates where written and where read.
  uint64_t one_kernel_bytes = 0;
  // The fusion the segments' ops belong to where it is not the one given: its arg-reductions
  // written as reductions (expand_ops.h), its sums split in two steps (split_reductions.h);
  // the same inputs and outputs in the same order.
  std::shared_ptr<const ir::Fusion> rewritten;
  // The fusion the segments' ops belong to.
  const ir::Fusion& fusion(const ir::Fusion& given) const { return rewritten ? *rewritten : given; }
  uint64_t bytes() const;
  std::string str(const ir::Fusion& f) const;
  std::string json(const ir::Fusion& f) const;
  std::string dot(const ir::Fusion& f) const;
};

// Why a fusion at these sizes runs as no kernels (a size, or a dim of an input, is 0: every
// output is empty, or a reduction over an empty dim that the runtime computes on the host), or
// "" where it does not.
std::string emptySizeReason(const Bindings& sizes, const std::vector<TensorDesc>& inputs);

// Which scheduler accepts `f` for these inputs; nullopt with each scheduler's reason.
struct Accepted {
  std::string scheduler, params;
  std::vector<TensorDesc> outputs;
  std::string two_pass_faster;  // schedule::Planned::two_pass_faster
  // The schedule itself. Its lowering reads the candidate's sub-fusion: used only while that
  // candidate (or the Segment it is closed into) lives.
  std::shared_ptr<const schedule::Planned> planned;
};
std::optional<Accepted> acceptFusion(const ir::Fusion& f, const Bindings& sizes,
                                     const std::vector<TensorDesc>& inputs,
                                     const CompileOptions& opts, std::vector<std::string>* why_not);

SegmentPlan segmentFusion(const ir::Fusion& f, const Bindings& sizes,
                          const std::vector<TensorDesc>& inputs, const CompileOptions& opts);

// `earlier`'s segments (a plan of `given` at other sizes; their sub-fusions shared), each
// scheduled again at these sizes, its inputs the fusion's or the segments' before it; nullopt
// where a segment's scheduler no longer takes it as before (compile.h, replanLike).
std::optional<SegmentPlan> rescheduleSegments(const SegmentPlan& earlier, const ir::Fusion& given, const Bindings& sizes,
                                              const std::vector<TensorDesc>& inputs, const CompileOptions& opts);

}  // namespace loom::segment
