#pragma once
// Comparing a GPU result with the float64 CPU reference, two ways, non-finite values required at
// the same places:
// - globally, ||out - ref||_2 / ||ref||_2 against a tolerance that fits the dtype;
// - element by element, |out - ref| / (tolerance * (rms(ref) + |ref|)) against kElementFactor,
//   so that a few wrong rows of a large output (which the L2 norm dilutes) are still caught.
//   The unit is the tolerance of the least precise float the value was rounded to on its way
//   (an f16 intermediate of an f32 output can land one f16 step off, as it may).
// With error bounds (evaluateReferenceBounds), each element may also be off by
// kBoundFactor times its bound, in both checks: the slack an ill-conditioned result needs
// (a mean of values that cancel) and only where it needs it. compareOutputs asks for the
// bounds only where an output fails without them.
#include <cstdint>
#include <string>
#include <vector>

#include <loom/reference.h>

#include "ir/extent.h"
#include "runtime/host_tensor.h"

namespace loom::ir {
class Fusion;
}

namespace loom {

// How many tolerances one element may be off, scaled by rms(ref) + |ref|: rounding to the
// stored dtype costs at most a quarter of one, a wrong value tens to thousands.
inline constexpr double kElementFactor = 8.0;
// The element check's tolerance for output `out` of `f`: the coarsest among the float dtypes of
// its computed values (inputs are exact) and the output's own.
double elementTolerance(const ir::Fusion& f, DType out);
// How many of its error bounds an element may be off, beyond the tolerances above.
inline constexpr double kBoundFactor = 2.0;
// `element_tolerance` 0 means the output dtype's; `bound`, where given, is the reference's
// float64 error bound for each element (evaluateReferenceBounds).
Comparison compareToReference(const HostTensor& got, const HostTensor& ref, double element_tolerance = 0,
                              const HostTensor* bound = nullptr);
// Compares each output of `f` computed on `inputs` (`got`, host copies, in output order) with
// the reference `ref` (evaluateReference on the same inputs and sizes). Where one fails, the
// reference is evaluated again with error bounds and that output compared with them: a
// result is wrong only where its error is more than its conditioning explains.
std::vector<Comparison> compareOutputs(const ir::Fusion& f, const std::vector<HostTensor>& inputs,
                                       const Bindings& sizes, const std::vector<HostTensor>& got,
                                       const std::vector<HostTensor>& ref);

}  // namespace loom
