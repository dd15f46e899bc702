#pragma once
// The kernel IR as text: a loop nest a GPU engineer reads (loom dump --stage kir, LOOM_DUMP=kir).
#include <string>

#include "compiler/kir/kir.h"

namespace loom::kir {

std::string printExpr(const Kernel& k, const Expr& e);
std::string printKernel(const Kernel& k);

}  // namespace loom::kir
