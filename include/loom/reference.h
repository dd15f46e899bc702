#pragma once
// The CPU reference evaluator, float64 inside, and comparing GPU results with it: the oracle
// every GPU result of loom's is checked against. Non-finite values must come out at the same
// places; each output is compared globally (||out - ref|| / ||ref|| against a tolerance that
// fits its dtype) and element by element, and where it fails, again with each element's error
// bound (how far a correct f32 evaluation may land from the exact one: a mean of values that
// cancel is ill conditioned).
#include <cstdint>
#include <string>
#include <vector>

#include <loom/extent.h>
#include <loom/fusion.h>
#include <loom/host_tensor.h>

#pragma GCC visibility push(default)
namespace loom {

struct Comparison {
  double rel_l2 = 0;       // ||out - ref||_2 / max(||ref||_2, tiny)
  double max_abs = 0;      // over finite elements
  double worst = 0;        // the largest element error, in units of tolerance * (rms(ref) + |ref|)
  int64_t worst_index = -1;   // its linear (row-major) index
  int64_t bad_nonfinite = 0;  // NaN/inf where the reference has none, or the reverse
  double tolerance = 0;
  bool bounded = false;       // compared with the reference's error bounds
  bool ok = false;
  std::string str() const;
};

// The relative-L2 tolerance loom promises for results stored in `t`.
double toleranceFor(DType t);

// Evaluates `fusion` on `inputs` (any strides; sizes bound from them and `given`). Returns one
// contiguous tensor per fusion output, in output order, of the output's dtype.
std::vector<HostTensor> evaluateReference(const Fusion& fusion, const std::vector<HostTensor>& inputs,
                                          const Bindings& given = {});

// Compares each output of `fusion` computed on `inputs` (`got`, host copies, in output order)
// with `ref` (evaluateReference on the same inputs and sizes).
std::vector<Comparison> compareOutputs(const Fusion& fusion, const std::vector<HostTensor>& inputs,
                                       const Bindings& sizes, const std::vector<HostTensor>& got,
                                       const std::vector<HostTensor>& ref);

}  // namespace loom
#pragma GCC visibility pop
