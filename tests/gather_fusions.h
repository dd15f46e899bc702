#pragma once
// Fusions with gather and index_select (shared by the CPU-only PTX tests and the [gpu] tests):
// each with its sizes, the extent its indices pick from, and how many kernels its plan has.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frontend/internal_api.h"

namespace loom::test {

// A row's cross-entropy loss: logsumexp of the logits less the target's logit, in f32.
inline std::unique_ptr<ir::Fusion> crossEntropyLoss(DType t, DType index) {
  FusionBuilder fb("cross_entropy_loss");
  auto x = fb.input("logits", t, {"N", "V"});
  auto target = fb.input("target", index, {Dim("N"), Dim(1)});
  auto xf = cast(x, DType::F32);
  auto m = amax(xf, {1}, true);
  auto lse = log(sum(exp(xf - m), {1}, true)) + m;
  fb.output("loss", lse - gather(xf, 1, target));
  fb.output("picked", gather(x, 1, target));  // in the logits' own dtype
  return fb.finish();
}

// K picks along `dim` of x [N, D] for every position of the other dim.
inline std::unique_ptr<ir::Fusion> gatherAlong(DType t, int dim) {
  FusionBuilder fb(dim == 0 ? "gather_rows" : "gather_columns");
  auto x = fb.input("x", t, {"N", "D"});
  auto index = dim == 0 ? fb.input("index", DType::I64, {"K", "D"}) : fb.input("index", DType::I32, {"N", "K"});
  fb.output("y", gather(x, dim, index));
  return fb.finish();
}

// Rows (dim 0) or columns (dim 1) of x [N, D] chosen by a 1-d index of K.
inline std::unique_ptr<ir::Fusion> indexSelect(DType t, int dim) {
  FusionBuilder fb(dim == 0 ? "select_rows" : "select_columns");
  auto x = fb.input("x", t, {"N", "D"});
  auto index = fb.input("index", DType::I64, {"K"});
  auto y = index_select(x, dim, index);
  fb.output("y", y);
  return fb.finish();
}

struct GatherCase {
  std::unique_ptr<ir::Fusion> f;
  Bindings sizes;
  std::string picks_from;  // the symbol of the dim the indices pick along
  size_t kernels = 1;
};

// Rows in the normalization scheduler's tiers (registers to shared memory), rows of 1 and
// extents no vector divides, picks along either dim, every value dtype.
inline std::vector<GatherCase> gatherCases() {
  std::vector<GatherCase> cases;
  for (const Bindings& s : {Bindings{{"N", 1}, {"V", 1}}, Bindings{{"N", 3}, {"V", 7}}, Bindings{{"N", 4096}, {"V", 1000}},
                            Bindings{{"N", 256}, {"V", 50257}}, Bindings{{"N", 65537}, {"V", 3}}})
    for (DType t : {DType::BF16, DType::F32})
      cases.push_back({crossEntropyLoss(t, t == DType::F32 ? DType::I32 : DType::I64), s, "V"});
  for (DType t : {DType::F16, DType::F32, DType::I32, DType::Bool}) {
    cases.push_back({gatherAlong(t, 1), {{"N", 1000}, {"D", 771}, {"K", 3}}, "D"});
    cases.push_back({gatherAlong(t, 0), {{"N", 1000}, {"D", 64}, {"K", 5}}, "N"});
    cases.push_back({indexSelect(t, 0), {{"N", 1000}, {"D", 512}, {"K", 7}}, "N"});
    cases.push_back({indexSelect(t, 1), {{"N", 300}, {"D", 1003}, {"K", 9}}, "D"});
  }
  return cases;
}

}  // namespace loom::test
