// dropout_add_layer_norm and dropout_add_rms_norm with their backward: the reference against
// loops over the mask's own uniform numbers, the text-format calls, and their kernels (the
// forward one pass over the rows, the backward the norm's kernels) with PTX that ptxas accepts.
#include <catch2/catch.hpp>

#include <cmath>

#include "tests/compile_test_util.h"

#include "compiler/codegen/ptxas_check.h"
#include "compiler/compile.h"
#include "frontend/composites.h"
#include "frontend/composites_backward.h"
#include "frontend/parser.h"
#include "reference/reference.h"
#include "tests/dropout_norm_fusions.h"
#include "tests/planned_kernels.h"
#include "tests/reference_test_util.h"

using namespace loom;
using loom::test::descsFor;

using loom::test::kP;
using loom::test::backward;
using loom::test::forward;

TEST_CASE("dropout-add-norm is the sum through the mask's own numbers, then the norm", "[reference][dropout_norm]") {
  const int64_t n = 7, d = 33;
  for (bool rms : {false, true}) {
    INFO((rms ? "rms" : "layer") << " norm");
    std::vector<HostTensor> in = {HostTensor::random(DType::F64, {n, d}, 1, -1, 1), HostTensor::random(DType::F64, {n, d}, 2, -1, 1),
                                  HostTensor::fromValues(DType::I64, {}, {1234.0}), HostTensor::fromValues(DType::I64, {}, {77.0}),
                                  HostTensor::random(DType::F64, {d}, 3, 0.5, 1.5)};
    if (!rms) in.push_back(HostTensor::random(DType::F64, {d}, 4, -1, 1));
    const auto out = test::run(*forward(rms, DType::F64, true), in);
    const auto u = out.back().toVector(), x = in[0].toVector(), r = in[1].toVector();
    std::vector<double> sum, y;
    for (int64_t i = 0; i < n; ++i) {
      double mean = 0, sq = 0;
      std::vector<double> row;
      for (int64_t j = 0; j < d; ++j) {
        const size_t k = static_cast<size_t>(i * d + j);
        row.push_back(x[k] + (u[k] >= kP ? r[k] / (1 - kP) : 0));
        mean += row.back() / static_cast<double>(d);
      }
      for (double v : row) sq += rms ? v * v : (v - mean) * (v - mean);
      const double rstd = 1 / std::sqrt(sq / static_cast<double>(d) + (rms ? 1e-6 : 1e-5));
      for (int64_t j = 0; j < d; ++j) {
        const double v = row[static_cast<size_t>(j)];
        sum.push_back(v);
        y.push_back(((rms ? v : v - mean) * rstd) * in[4].getLinear(j) + (rms ? 0 : in[5].getLinear(j)));
      }
    }
    test::checkValues(out[1], sum, DType::F64, "sum");
    test::checkValues(out[0], y, DType::F64, "y", 64);
    // The backward: dx is the norm's dx plus dsum; dresidual the same through the forward's mask.
    const HostTensor dy = HostTensor::random(DType::F64, {n, d}, 5, -1, 1), ds = HostTensor::random(DType::F64, {n, d}, 6, -1, 1);
    std::vector<HostTensor> bin = {dy, ds, out[1]};
    if (!rms) bin.push_back(HostTensor::fromValues(DType::F32, {n, 1}, out[2].toVector()));
    bin.push_back(HostTensor::fromValues(DType::F32, {n, 1}, out[rms ? 2 : 3].toVector()));
    bin.insert(bin.end(), {in[2], in[3], in[4]});
    if (!rms) bin.push_back(in[5]);
    const auto g = test::run(*backward(rms, DType::F64), bin);
    FusionBuilder nb("norm_backward");
    auto ndy = nb.input("dy", DType::F64, {"N", "D"});
    auto ns = nb.input("sum", DType::F64, {"N", "D"});
    auto nm = rms ? Tensor{} : nb.input("mean", DType::F32, {Dim("N"), Dim(1)});
    auto nr = nb.input("rstd", DType::F32, {Dim("N"), Dim(1)});
    auto nw = nb.input("w", DType::F64, {"D"});
    nb.output("dx", rms ? rms_norm_backward(ndy, ns, nr, {"D"}, nw).dx : layer_norm_backward(ndy, ns, nm, nr, {"D"}, nw).dx);
    std::vector<HostTensor> nin = {dy, out[1]};
    if (!rms) nin.push_back(bin[3]);
    nin.push_back(bin[rms ? 3 : 4]);
    nin.push_back(in[4]);
    const auto dnorm = test::run(*nb.finish(), nin)[0].toVector(), dsv = ds.toVector();
    std::vector<double> dx, dres;
    for (size_t k = 0; k < dnorm.size(); ++k) {
      dx.push_back(dnorm[k] + dsv[k]);
      dres.push_back(u[k] >= kP ? dx.back() / (1 - kP) : 0);
    }
    test::checkValues(g[0], dx, DType::F64, "dx");
    test::checkValues(g[1], dres, DType::F64, "dresidual");
  }
}

TEST_CASE("dropout-add-norm as text-format calls is the composite", "[text][dropout_norm]") {
  auto f = parseFusion(
      "fusion block {\n in x: bf16[N, D]\n in r: bf16[N, D]\n in seed: i64[]\n in offset: i64[]\n in w: bf16[D]\n"
      " y, s, rstd = dropout_add_rms_norm(x, r, seed, offset, w, p=0.25, normalized_shape=[D])\n"
      " dx, dres, dw = dropout_add_rms_norm_backward(y, none, s, rstd, seed, offset, w, p=0.25, normalized_shape=[D])\n"
      " out y = y\n out s = s\n out dres = dres\n}\n");
  const std::vector<HostTensor> in = {HostTensor::random(DType::BF16, {5, 64}, 1), HostTensor::random(DType::BF16, {5, 64}, 2),
                                      HostTensor::fromValues(DType::I64, {}, {9.0}), HostTensor::fromValues(DType::I64, {}, {0.0}),
                                      HostTensor::random(DType::BF16, {64}, 3)};
  const auto got = test::run(*f, in);
  const auto want = test::run(*forward(true, DType::BF16, false), in);
  CHECK(got[0].toVector() == want[0].toVector());
  CHECK(got[1].toVector() == want[1].toVector());
  CHECK_THROWS_WITH(parseFusion("fusion b {\n in x: f32[N, D]\n in r: f32[N, 4]\n in seed: i64[]\n in offset: i64[]\n"
                                " y, s = dropout_add_layer_norm(x, r, seed, offset, p=0.1, normalized_shape=[D])\n"
                                " out y = y\n}\n"),
                    Catch::Contains("must have x `x`'s shape"));
}

TEST_CASE("dropout-add-norm forward is one kernel and its backward the norm's, with PTX ptxas accepts",
          "[ptx][dropout_norm]") {
  for (bool rms : {false, true}) {
    for (const Bindings& sizes : {Bindings{{"N", 16384}, {"D", 4096}}, Bindings{{"N", 3}, {"D", 7}}}) {
      INFO((rms ? "rms" : "layer") << " N=" << sizes.at("N"));
      for (bool fwd : {true, false}) {
        auto f = fwd ? forward(rms, DType::BF16, false) : backward(rms, DType::BF16);
        const CompiledPlan plan = test::plannedWithPtxas(*f, sizes);
        INFO(plan.segments);
        if (fwd) CHECK(plan.kernels.size() == 1);
        else CHECK(plan.kernels.size() <= 2);
      }
    }
  }
}
