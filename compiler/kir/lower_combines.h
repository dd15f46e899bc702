#pragma once
// Pass `lower-combines`: each combine across a row's threads becomes what the GPU does: a
// butterfly of shuffles within the warp, and for rows of several warps, each warp's lane 0
// publishing its value in a shared-memory buffer, a block barrier, every thread combining the
// row's warps in order, and a barrier before the buffer can be written again. Every thread of
// the row ends with the same bits.
#include "compiler/kir/kir.h"

namespace loom::kir {

Kernel lowerCombines(const Kernel& k);

}  // namespace loom::kir
