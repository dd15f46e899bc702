#pragma once
// Named lowering passes over the kernel IR, run in order with the verifier between them; the
// kernel's text after each pass goes to `dump` (LOOM_DUMP=kir, loom dump --stage kir).
#include <functional>
#include <string>
#include <vector>

#include "compiler/kir/kir.h"

namespace loom::kir {

struct Pass {
  std::string name;
  std::function<Kernel(const Kernel&)> run;
};

using PassDump = std::function<void(const std::string& pass, const std::string& text)>;

// `k` came out of pass `made_by` (a scheduler's lowering); it and every pass's result are
// verified (an internal error names the pass at fault).
Kernel runPasses(Kernel k, const std::string& made_by, const std::vector<Pass>& passes, const PassDump& dump);

// The passes every kernel takes after its scheduler's lowering, in order.
const std::vector<Pass>& standardPasses();

}  // namespace loom::kir
