#pragma once
// The CPU reference evaluator: the oracle every GPU result is compared with. Straightforward,
// one op at a time, float64 inside: every intermediate is a dense row-major array of doubles
// over its logical shape. Results of ops whose dtype is f16, bf16, an int or bool are rounded to
// that dtype (roundTo); f32 and f64 results stay in double, so the oracle is more accurate than
// the GPU (a cast to f32 converts as a cast to f64 would, and f32 constants keep their double
// value). Scalar semantics are ir/op_math.h's; reductions sum with compensation, and var_mean
// is two-pass (mean, then the sum of squared deviations), both in double; var follows torch:
// M2 / max(n - correction, 0). Over zero elements sum is 0, mean and var_mean are NaN, and
// amax/amin throw loom::Error. Int values are exact up to 2^53 (the double's integer range).
// Large ops run by ranges on several threads (reductions by ranges of outputs, each output's
// inputs in row-major order): the results are the same bits on any number of threads.
#include <cstdint>
#include <string>
#include <vector>

#include "ir/fusion.h"
#include "runtime/host_tensor.h"

namespace loom {

// Evaluates `fusion` on `inputs` (any strides; checked and sized by bindSizes with `given`).
// Returns one contiguous tensor per fusion output, in output order, of the output's dtype.
// Aliased outputs are returned like any other; writing them back is the caller's business.
std::vector<HostTensor> evaluateReference(const ir::Fusion& fusion,
                                          const std::vector<HostTensor>& inputs,
                                          const Bindings& given = {});

// evaluateReference's results and, for each output, a float64 tensor of its shape: each
// element's error bound, how far a correct GPU evaluation (f32 inside, results rounded to their
// dtypes, sums in any order) may land from the reference, by a first-order running error
// analysis (reference/reference_bounds.cpp says the rules). Large where the result is ill
// conditioned: a mean of values that cancel, a division by a sum near zero. About twice the
// memory and several times the time of evaluateReference, so callers compare first and ask
// for bounds only where an output fails (compareOutputs in reference/compare.h).
struct ReferenceWithBounds {
  std::vector<HostTensor> values, bounds;
};
ReferenceWithBounds evaluateReferenceBounds(const ir::Fusion& fusion, const std::vector<HostTensor>& inputs,
                                            const Bindings& given = {});

// The most host memory evaluateReference holds at once for `fusion` at these sizes: the float64
// copy of every live value (an input's until its last use, an intermediate's from its op to
// its last use), the outputs as host tensors, and, with `host_inputs`, the inputs themselves
// in their dtypes (what a caller allocates before it calls the evaluator); `with_bounds`, that
// of evaluateReferenceBounds.
double referencePeakBytes(const ir::Fusion& fusion, const Bindings& sizes, bool host_inputs,
                          bool with_bounds = false);

// Throws loom::Error, saying how much the evaluation would need and how much memory is
// available (Linux's MemAvailable), where referencePeakBytes is more than that: an evaluation
// that large would be killed for want of memory rather than fail. `hint` ends the message
// (what the user can do instead). Does nothing where the available memory is not known.
void checkReferenceFits(const ir::Fusion& fusion, const Bindings& sizes, bool host_inputs, const std::string& hint,
                        bool with_bounds = false);

}  // namespace loom
