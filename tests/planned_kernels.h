#pragma once
// Shared by the CPU-only tests of whole fusions: a fusion planned for sm_90 on 132 SMs with
// every kernel's PTX checked by ptxas, and the line that names a case in a failure's message.
#include <map>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "compiler/compile.h"
#include "tests/compile_test_util.h"

namespace loom::test {

// "name dtype K=V ..." of a fusion's first input and its sizes.
inline std::string caseName(const ir::Fusion& f, const Bindings& sizes) {
  std::string s = fmt::format("{} {}", f.name(), dtypeName(f.inputs()[0]->dtype()));
  for (const auto& [k, v] : sizes) s += fmt::format(" {}={}", k, v);
  return s;
}

// The plan, each of its kernels' PTX checked (a failure names the plan's segments).
inline CompiledPlan plannedWithPtxas(const ir::Fusion& f, const Bindings& sizes,
                                     const std::map<std::string, std::vector<int>>& layouts = {}) {
  CompiledPlan plan = compilePlan(f, sizes, descsFor(f, sizes, layouts), CompileOptions{{90, 132}});
  INFO(plan.segments);
  for (const auto& k : plan.kernels) LOOM_CHECK_PTXAS(k.kernel.ptx, 90);
  return plan;
}

}  // namespace loom::test
