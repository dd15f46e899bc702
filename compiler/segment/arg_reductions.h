#pragma once
// Arg-reductions as the reductions every scheduler already holds: argmax(x, d) is the first index
// along d where x equals amax(x, d) or is NaN, that is amin over d of where(x == max or isnan(x),
// iota along d, a sentinel no index reaches). The normalization scheduler keeps x on chip between
// the two reductions, so the arg-reduction reads x once, in the kernel of its neighbours; a NaN
// makes amax NaN, which equals nothing, so the first NaN wins as in torch.argmax.
#include <memory>

#include "ir/fusion.h"

namespace loom::segment {

// The fusion with every argmax and argmin so written (outputs, inputs and every other op as
// they are, the arg-reduction's result keeping its name), or null where it has none.
std::unique_ptr<ir::Fusion> expandArgReductions(const ir::Fusion& f);

}  // namespace loom::segment
