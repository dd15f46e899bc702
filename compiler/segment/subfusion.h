#pragma once
// Cutting a segment out of a fusion: the ops of the segment, copied into a fusion of their own
// whose inputs are the values the segment reads from outside (fusion inputs or other segments'
// results) and whose outputs are the values read outside it (or fusion outputs). Constants are
// copied into every segment that uses them rather than passed between kernels.
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "ir/fusion.h"

namespace loom::segment {

struct SubFusion {
  std::shared_ptr<ir::Fusion> fusion;  // shared by the copies of a plan (segment::SegmentPlan)
  std::vector<const ir::Value*> inputs;   // values of the original fusion, in input order
  std::vector<const ir::Value*> outputs;  // values of the original fusion, in output order
};

// `ops` in topological order. Output names follow the original fusion's output names where the
// value is one, else the value's own name.
// Uses by ops in `pending` (not yet placed; they may still join this segment) do not make a
// broadcast-shaped value an output.
// Ops in `recomputed` (cheap functions of the fusion's inputs this segment computes again for
// its own ops) give no output: whoever else reads them computes them too, and the segment that
// has them as its own writes them where the fusion outputs them.
// Where `live` is given, uses by ops outside it (ops no output of the fusion needs, never
// computed) are no uses.
SubFusion extractSegment(const ir::Fusion& f, const std::vector<const ir::Op*>& ops,
                         const std::string& name, const std::set<const ir::Op*>& pending = {},
                         const std::set<const ir::Op*>& recomputed = {},
                         const std::set<const ir::Op*>* live = nullptr);

}  // namespace loom::segment
