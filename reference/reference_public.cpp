// The public reference entry points (include/loom/reference.h) over loom's IR.
#include <loom/reference.h>

#include "ir/error.h"
#include "reference/compare.h"
#include "reference/reference.h"

namespace loom {

static const ir::Fusion& held(const Fusion& f) {
  LOOM_USER_CHECK(f, "this loom::Fusion was moved from and holds no fusion");
  return *f;
}

std::vector<HostTensor> evaluateReference(const Fusion& fusion, const std::vector<HostTensor>& inputs,
                                          const Bindings& given) {
  return evaluateReference(held(fusion), inputs, given);
}

std::vector<Comparison> compareOutputs(const Fusion& fusion, const std::vector<HostTensor>& inputs,
                                       const Bindings& sizes, const std::vector<HostTensor>& got,
                                       const std::vector<HostTensor>& ref) {
  return compareOutputs(held(fusion), inputs, sizes, got, ref);
}

}  // namespace loom
