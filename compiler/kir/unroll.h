#pragma once
// Pass `unroll`: a loop a thread makes `unroll` trips of at once becomes a main loop that takes
// `unroll` trips while all of them are in bounds, each trip's loads (and the indices they need)
// issued before any trip's math so that they are in flight together, then a loop of single
// trips for the rest. Loops with `unroll` 1 are left as they are.
#include "compiler/kir/kir.h"

namespace loom::kir {

Kernel unrollLoops(const Kernel& k);

}  // namespace loom::kir
