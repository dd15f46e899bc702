#include "compiler/kir/pipeline.h"

#include "compiler/kir/lower_combines.h"
#include "compiler/kir/printer.h"
#include "compiler/kir/unroll.h"
#include "compiler/kir/verifier.h"

namespace loom::kir {

Kernel runPasses(Kernel k, const std::string& made_by, const std::vector<Pass>& passes, const PassDump& dump) {
  verifyOrFail(k, made_by);
  std::string text = dump ? printKernel(k) : "";
  if (dump) dump(made_by, text);
  for (const auto& p : passes) {
    k = p.run(k);
    verifyOrFail(k, p.name);
    if (!dump) continue;
    std::string next = printKernel(k);
    dump(p.name, next == text ? "(unchanged)\n" : next);
    text = std::move(next);
  }
  return k;
}

const std::vector<Pass>& standardPasses() {
  static const std::vector<Pass> passes = {{"unroll", unrollLoops}, {"lower-combines", lowerCombines}};
  return passes;
}

}  // namespace loom::kir
