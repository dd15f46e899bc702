#pragma once
// A rewrite the segmenter weighs against the fusion as written: a sum over atoms that another
// reduction's rows partly reduce, summed in two steps instead (the part the rows reduce first,
// beside them in their kernel, then the rest in a small kernel of its own). Group norm
// backward's dw and db, sums over N, H and W beside rows over (C/G, H, W), become sums over H
// and W of each channel (sub-row reductions of the rows' kernel: x and dy read once) and then
// over N; instance norm backward's become the rows' own sums, then over N.
#include <memory>

#include "ir/fusion.h"

namespace loom::segment {

// The fusion with every such sum split (outputs, inputs and every other op as they are), or null
// where none is.
std::unique_ptr<ir::Fusion> splitReductions(const ir::Fusion& f);

}  // namespace loom::segment
