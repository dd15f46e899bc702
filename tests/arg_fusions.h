#pragma once
// Fusions with argmax and argmin (shared by the CPU-only PTX tests and the [gpu] tests): each
// with its sizes, layouts and how many kernels its plan has.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "frontend/internal_api.h"

namespace loom::test {

// argmax and argmin of x along `dim` (of rank-2 [N, D] or rank-4 [N, C, H, W] inputs).
inline std::unique_ptr<ir::Fusion> argExtremes(DType t, int rank, int dim) {
  FusionBuilder fb(rank == 2 ? "arg_extremes" : "arg_extremes_4d");
  auto x = rank == 2 ? fb.input("x", t, {"N", "D"}) : fb.input("x", t, {"N", "C", "H", "W"});
  fb.output("hi", argmax(x, dim));
  fb.output("lo", argmin(x, dim, true));
  return fb.finish();
}

// A classifier's head over logits x [N, D]: the probabilities (softmax), the predicted class
// and the class of the largest magnitude (argmax of an exact function of x), in one kernel.
inline std::unique_ptr<ir::Fusion> predictedClass(DType t) {
  FusionBuilder fb("predicted_class");
  auto x = fb.input("x", t, {"N", "D"});
  auto xf = cast(x, DType::F32);
  auto e = exp(xf - amax(xf, {1}, true));
  fb.output("p", cast(e / sum(e, {1}, true), t));
  fb.output("class", argmax(x, 1));
  fb.output("loudest", argmax(abs(xf), 1, true));
  return fb.finish();
}

struct ArgCase {
  std::unique_ptr<ir::Fusion> f;
  Bindings sizes;
  std::map<std::string, std::vector<int>> layouts;
  size_t kernels = 1;
};

// Rows in each normalization tier and past them, columns, channels of NCHW and NHWC images,
// every dtype; rows of 1 and extents no vector divides.
inline std::vector<ArgCase> argCases() {
  std::vector<ArgCase> cases;
  const std::vector<Bindings> rows = {{{"N", 1}, {"D", 1}},      {{"N", 3}, {"D", 7}},     {{"N", 4096}, {"D", 1000}},
                                      {{"N", 64}, {"D", 50257}}, {{"N", 8}, {"D", 128256}}, {{"N", 65537}, {"D", 3}}};
  for (DType t : {DType::F16, DType::BF16, DType::F32, DType::F64, DType::I32})
    for (const Bindings& sizes : rows) cases.push_back({argExtremes(t, 2, 1), sizes, {}});
  for (const Bindings& sizes : {Bindings{{"N", 65537}, {"D", 3}}, Bindings{{"N", 100003}, {"D", 64}},
                                Bindings{{"N", 1000}, {"D", 771}}})
    cases.push_back({argExtremes(DType::F16, 2, 0), sizes, {}});
  for (const std::vector<int>& order : {std::vector<int>{0, 1, 2, 3}, std::vector<int>{0, 2, 3, 1}}) {
    cases.push_back({argExtremes(DType::F16, 4, 1), {{"N", 8}, {"C", 21}, {"H", 128}, {"W", 128}}, {{"x", order}}});
    cases.push_back({argExtremes(DType::BF16, 4, 1), {{"N", 2}, {"C", 3}, {"H", 33}, {"W", 31}}, {{"x", order}}});
  }
  for (DType t : {DType::F16, DType::F32})
    for (const Bindings& sizes : {Bindings{{"N", 5}, {"D", 3}}, Bindings{{"N", 8192}, {"D", 50257}}})
      cases.push_back({predictedClass(t), sizes, {}});
  return cases;
}

}  // namespace loom::test
