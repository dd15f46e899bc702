#pragma once
// Comparing a GPU result with the float64 CPU reference, two ways, non-finite values required at
// the same places:
// - globally, ||out - ref||_2 / ||ref||_2 against a tolerance that fits the dtype;
// - element by element, |out - ref| / (tolerance * (rms(ref) + |ref|)) against kElementFactor,
//   so that a few wrong rows of a large output (which the L2 norm dilutes) are still caught.
//   The unit is the tolerance of the least precise float the value was rounded to on its way
//   (an f16 intermediate of an f32 output can land one f16 step off, as it may).
#include <cstdint>
#include <string>

#include "runtime/host_tensor.h"

namespace loom::ir {
class Fusion;
}

namespace loom {

struct Comparison {
  double rel_l2 = 0;       // ||out - ref||_2 / max(||ref||_2, tiny)
  double max_abs = 0;      // over finite elements
  double worst = 0;        // the largest element error, in units of tolerance * (rms(ref) + |ref|)
  int64_t worst_index = -1;   // its linear (row-major) index
  int64_t bad_nonfinite = 0;  // NaN/inf where the reference has none, or the reverse
  double tolerance = 0;
  bool ok = false;
  std::string str() const;
};

// The relative-L2 tolerance loom promises for results stored in `t`.
double toleranceFor(DType t);
// How many tolerances one element may be off, scaled by rms(ref) + |ref|: rounding to the
// stored dtype costs at most a quarter of one, a wrong value tens to thousands.
inline constexpr double kElementFactor = 8.0;
// The element check's tolerance for output `out` of `f`: the coarsest among the float dtypes of
// its computed values (inputs are exact) and the output's own.
double elementTolerance(const ir::Fusion& f, DType out);
// `element_tolerance` 0 means the output dtype's.
Comparison compareToReference(const HostTensor& got, const HostTensor& ref, double element_tolerance = 0);

}  // namespace loom
