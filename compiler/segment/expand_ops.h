#pragma once
// Ops the schedulers hold only as others, written as those before segmenting.
//
// gather and index_select: x's element at each index is the amax over d of where(iota along d ==
// index, x, the dtype's lowest value), over [.., x's d, the index's d, ..]: one reduction a
// picked element, riding the reductions of its row where a kernel already has them (a target
// logit beside the row's logsumexp); its work is the index's extent times x's along d.
//
// Arg-reductions as the reductions every scheduler already holds. Where x is f16, bf16, f32 or
// i32 and the dim has at most 2^32 elements, argmax(x, d) is one amax of i64 keys: x's order as a
// 32-bit integer (a float's bits, mirrored below zero, NaN above everything) times 2^32, plus the
// index reversed (2^32 - 1 - i, so the first of equal values wins); the index is the key's low
// word. Otherwise (f64, i64) it is the first index along d where x equals amax(x, d) or is NaN,
// amin over d of where(hit, iota, a sentinel no index reaches), whose row the normalization
// scheduler keeps on chip between the two reductions; a NaN makes amax NaN, which equals nothing,
// so the first NaN wins as in torch.argmax.
#include <memory>

#include "ir/fusion.h"

namespace loom::segment {

// The fusion with every argmax, argmin, gather and index_select so written (outputs, inputs and
// every other op as they are, each rewritten op's result keeping its name), or null where it has
// none. `sizes` say whether a dim's indices fit a key's low word.
std::unique_ptr<ir::Fusion> expandOps(const ir::Fusion& f, const Bindings& sizes);

}  // namespace loom::segment
