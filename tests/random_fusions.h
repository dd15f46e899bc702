#pragma once
// Fusions whose row kernels compute random numbers and iota (shared by the CPU-only PTX tests
// and the [gpu] tests): each with its sizes, layouts and the scheduler that takes it whole.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frontend/internal_api.h"

namespace loom::test {

// Inputs x, then the i64 scalars seed and offset. y: dropout(x) normalized over the last dim
// plus each element's column index; d: the dropped values themselves (so a row kernel stores a
// value made from indices too).
inline std::unique_ptr<ir::Fusion> droppedNorm(DType t) {
  FusionBuilder fb("dropped_norm");
  auto x = fb.input("x", t, {"N", "D"});
  auto s = fb.input("seed", DType::I64, {});
  auto o = fb.input("offset", DType::I64, {});
  auto d = dropout(cast(x, DType::F32), 0.25, s, o);
  auto vm = var_mean(d, {1}, 0.0, true);
  fb.output("y", cast((d - vm.mean) * rsqrt(vm.var + 1e-5) + cast(iota(fb, {"N", "D"}, 1), DType::F32), t));
  fb.output("d", cast(d, t));
  return fb.finish();
}

// Inputs x, seed, offset: the variance and mean over `dim` of dropout(x) plus normal noise.
inline std::unique_ptr<ir::Fusion> noisyStats(int dim) {
  FusionBuilder fb("noisy_stats");
  auto x = fb.input("x", DType::F16, {"M", "D"});
  auto s = fb.input("seed", DType::I64, {});
  auto o = fb.input("offset", DType::I64, {});
  auto vm = var_mean(dropout(cast(x, DType::F32), 0.5, s, o) + randNormal(s, o, {"M", "D"}, DType::F32), {dim}, 0.0);
  fb.output("v", vm.var);
  fb.output("m", vm.mean);
  return fb.finish();
}

struct RandomRowCase {
  std::unique_ptr<ir::Fusion> f;
  Bindings sizes;
  std::map<std::string, std::vector<int>> layouts;
  std::string scheduler;
};

// The normalization scheduler's tiers (registers, shared memory, grid) and the reduction
// scheduler's layouts (outer, inner), each one kernel.
inline std::vector<RandomRowCase> randomRowCases() {
  std::vector<RandomRowCase> cases;
  for (DType t : {DType::F16, DType::BF16, DType::F32, DType::F64})
    for (const Bindings& sizes : {Bindings{{"N", 3}, {"D", 5}}, Bindings{{"N", 1000}, {"D", 1024}},
                                  Bindings{{"N", 64}, {"D", 65537}}, Bindings{{"N", 8}, {"D", 1 << 20}}})
      cases.push_back({droppedNorm(t), sizes, {}, "normalization"});
  cases.push_back({noisyStats(0), {{"M", 100003}, {"D", 64}}, {}, "reduction"});  // outer layout
  cases.push_back({noisyStats(0), {{"M", 7}, {"D", 3}}, {}, "reduction"});
  cases.push_back({noisyStats(1), {{"M", 4}, {"D", 1 << 22}}, {}, "reduction"});  // inner layout
  cases.push_back({noisyStats(0), {{"M", 64}, {"D", 300000}}, {{"x", {1, 0}}}, "normalization"});
  return cases;
}

}  // namespace loom::test
