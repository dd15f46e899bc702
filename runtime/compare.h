#pragma once
// Comparing a GPU result with the float64 CPU reference: ||out - ref|| / ||ref|| against a
// tolerance that fits the dtype, non-finite values required at the same places.
#include <string>

#include "runtime/host_tensor.h"

namespace loom {

struct Comparison {
  double rel_l2 = 0;       // ||out - ref||_2 / max(||ref||_2, tiny)
  double max_abs = 0;      // over finite elements
  int64_t bad_nonfinite = 0;  // NaN/inf where the reference has none, or the reverse
  double tolerance = 0;
  bool ok = false;
  std::string str() const;
};

// The relative-L2 tolerance loom promises for results stored in `t`.
double toleranceFor(DType t);
Comparison compareToReference(const HostTensor& got, const HostTensor& ref);

}  // namespace loom
