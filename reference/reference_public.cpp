// The public reference entry points (include/loom/reference.h) over loom's IR.
#include <loom/reference.h>

#include "reference/compare.h"
#include "reference/reference.h"

namespace loom {

std::vector<HostTensor> evaluateReference(const Fusion& fusion, const std::vector<HostTensor>& inputs,
                                          const Bindings& given) {
  return evaluateReference(fusion.held(), inputs, given);
}

std::vector<Comparison> compareOutputs(const Fusion& fusion, const std::vector<HostTensor>& inputs,
                                       const Bindings& sizes, const std::vector<HostTensor>& got,
                                       const std::vector<HostTensor>& ref) {
  return compareOutputs(fusion.held(), inputs, sizes, got, ref);
}

}  // namespace loom
