// cross_entropy and cross_entropy_backward: the reference against direct loops (ignored rows,
// label smoothing, each reduction), the text-format calls, and their kernels: the forward a
// row's one pass, the backward one pointwise pass, PTX that ptxas accepts.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/compile_test_util.h"

#include "compiler/codegen/ptxas_check.h"
#include "compiler/compile.h"
#include "frontend/parser.h"
#include "reference/reference.h"
#include "tests/cross_entropy_fusions.h"
#include "tests/planned_kernels.h"

using namespace loom;
using loom::test::descsFor;

namespace {

struct Direct {
  std::vector<double> loss, lse, dlogits;
  double total = 0, counted = 0;
};

// The loss of each row, its logsumexp and dlogits for dloss = 1 a row, in double.
Direct direct(const std::vector<double>& x, const HostTensor& target, int64_t n, int64_t c, double eps) {
  Direct d;
  for (int64_t i = 0; i < n; ++i) {
    double m = -INFINITY, s = 0, mean = 0;
    for (int64_t j = 0; j < c; ++j) m = std::max(m, x[static_cast<size_t>(i * c + j)]);
    for (int64_t j = 0; j < c; ++j) s += std::exp(x[static_cast<size_t>(i * c + j)] - m), mean += x[static_cast<size_t>(i * c + j)];
    const double lse = std::log(s) + m;
    mean /= static_cast<double>(c);
    const auto t = static_cast<int64_t>(target.getLinear(i));
    const bool counts = t != -100;
    const double nll = counts ? lse - x[static_cast<size_t>(i * c + t)] : 0;
    const double loss = counts ? (1 - eps) * nll + eps * (lse - mean) : 0;
    d.loss.push_back(loss);
    d.lse.push_back(lse);
    d.total += loss;
    d.counted += counts;
    for (int64_t j = 0; j < c; ++j) {
      const double p = std::exp(x[static_cast<size_t>(i * c + j)] - lse);
      d.dlogits.push_back(counts ? p - (j == t ? 1 - eps : 0) - eps / static_cast<double>(c) : 0);
    }
  }
  return d;
}

void checkNear(const std::vector<double>& got, const std::vector<double>& want, double tol, const char* what) {
  REQUIRE(got.size() == want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    INFO(what << " element " << i);
    CHECK(std::fabs(got[i] - want[i]) <= tol * (1 + std::fabs(want[i])));
  }
}

}  // namespace

TEST_CASE("cross_entropy and its backward are the direct formulas, ignored rows and smoothing included",
          "[reference][cross_entropy]") {
  const int64_t n = 13, c = 11;
  const HostTensor x = HostTensor::random(DType::F64, {n, c}, 3, -3.0, 3.0);
  const HostTensor target = test::targetsFor(n, c);
  for (double eps : {0.0, 0.1}) {
    INFO("label_smoothing " << eps);
    const Direct d = direct(x.toVector(), target, n, c, eps);
    auto none = test::crossEntropyForward(DType::F64, LossReduction::None, eps);
    auto out = evaluateReference(*none, {x, target});
    checkNear(out[0].toVector(), d.loss, 1e-12, "loss");
    checkNear(out[1].toVector(), d.lse, 1e-12, "lse");
    auto mean = evaluateReference(*test::crossEntropyForward(DType::F64, LossReduction::Mean, eps), {x, target});
    CHECK(mean[0].getLinear(0) == Approx(d.total / d.counted).epsilon(1e-12));
    auto total = evaluateReference(*test::crossEntropyForward(DType::F64, LossReduction::Sum, eps), {x, target});
    CHECK(total[0].getLinear(0) == Approx(d.total).epsilon(1e-12));
    // dloss = 1 a row; for the mean, 1 / the rows counted.
    const HostTensor lse = HostTensor::fromValues(DType::F32, {n}, d.lse);
    const HostTensor lse64 = HostTensor::fromValues(DType::F32, {n}, out[1].toVector());
    auto back = test::crossEntropyBackward(DType::F64, LossReduction::None, eps);
    auto dx = evaluateReference(*back, {HostTensor::fromValues(DType::F64, {n}, std::vector<double>(n, 1.0)), x, target, lse64});
    checkNear(dx[0].toVector(), d.dlogits, 1e-6, "dlogits");
    auto back_mean = test::crossEntropyBackward(DType::F64, LossReduction::Mean, eps);
    auto dxm = evaluateReference(*back_mean, {HostTensor::fromValues(DType::F64, {}, {1.0}), x, target, lse64});
    std::vector<double> scaled = d.dlogits;
    for (double& v : scaled) v /= d.counted;
    checkNear(dxm[0].toVector(), scaled, 1e-6, "dlogits of the mean");
  }
}

TEST_CASE("cross_entropy as text-format calls is the composite", "[text][cross_entropy]") {
  auto f = parseFusion(
      "fusion ce {\n in logits: bf16[N, C]\n in target: i64[N]\n in dloss: bf16[N]\n"
      " loss, lse = cross_entropy(logits, target, ignore_index=-100, label_smoothing=0.1, reduction=none)\n"
      " dlogits = cross_entropy_backward(dloss, logits, target, lse, label_smoothing=0.1, reduction=none)\n"
      " out loss = loss\n out dlogits = dlogits\n}\n");
  const HostTensor x = HostTensor::random(DType::BF16, {9, 5}, 4, -2.0, 2.0);
  const HostTensor target = test::targetsFor(9, 5);
  const HostTensor dloss = HostTensor::random(DType::BF16, {9}, 5);
  auto got = evaluateReference(*f, {x, target, dloss});
  auto fwd = evaluateReference(*test::crossEntropyForward(DType::BF16, LossReduction::None, 0.1), {x, target});
  CHECK(got[0].toVector() == fwd[0].toVector());
  CHECK_THROWS_WITH(parseFusion("fusion ce {\n in logits: f32[N, C]\n in target: i64[N]\n"
                                " loss = cross_entropy(logits, target, reduction=average)\n out loss = loss\n}\n"),
                    Catch::Contains("reduction `average` is none of none, mean or sum"));
  FusionBuilder fb("bad");
  auto l = fb.input("logits", DType::F32, {"N", "C"});
  auto t3 = fb.input("t", DType::F32, {"N"});
  CHECK_THROWS_WITH(cross_entropy(l, t3), Catch::Contains("must be i32 or i64 class indices [N]"));
}

TEST_CASE("cross_entropy is one kernel forward and one backward with PTX ptxas accepts", "[ptx][cross_entropy]") {
  // The mean: the rows' losses, then their sum (forward); the rows counted, then dlogits
  // (backward). Smoothing over a symbolic C: 1 / C in a small kernel of its own first.
  struct Case {
    LossReduction r;
    double eps;
    size_t forward, backward;
  };
  for (const Case& c : {Case{LossReduction::None, 0.0, 1, 1}, Case{LossReduction::None, 0.1, 1, 2},
                        Case{LossReduction::Mean, 0.0, 2, 2}, Case{LossReduction::Sum, 0.1, 2, 2}}) {
    for (const Bindings& sizes : {Bindings{{"N", 8192}, {"C", 50257}}, Bindings{{"N", 3}, {"C", 7}}}) {
      INFO("reduction " << static_cast<int>(c.r) << " smoothing " << c.eps << " N=" << sizes.at("N"));
      for (bool forward : {true, false}) {
        auto f = forward ? test::crossEntropyForward(DType::BF16, c.r, c.eps)
                         : test::crossEntropyBackward(DType::BF16, c.r, c.eps);
        const CompiledPlan plan = test::plannedWithPtxas(*f, sizes);
        INFO(plan.segments);
        const size_t most = forward ? c.forward : c.backward;
        // (A sum over the rows joins the rows' kernel where one kernel holds them all.)
        if (c.r == LossReduction::None) CHECK(plan.kernels.size() == most);
        else CHECK(plan.kernels.size() <= most);
      }
    }
  }
  // A vocabulary of constant size: dlogits with smoothing in one pass.
  auto f = test::crossEntropyBackward(DType::BF16, LossReduction::None, 0.1, Dim(50257));
  const Bindings sizes = {{"N", 8192}};
  const CompiledPlan plan = compilePlan(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}});
  INFO(plan.segments);
  CHECK(plan.kernels.size() == 1);
}
