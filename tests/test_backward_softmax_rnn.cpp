// softmax_backward, log_softmax_backward, lstm_cell_backward and gru_cell_backward
// (frontend/composites_backward.h) against the exact derivative of their forward composites:
// central finite differences of the forward's float64 CPU reference, on small odd shapes. The
// cells' workspaces (the activated gates PyTorch's fused cells save) are computed here from the
// same inputs, independently of loom. Then f32/f16/bf16 inputs: types, and values as the
// float64 backward's on the same inputs rounded once.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <cmath>
#include <optional>

#include "frontend/builder.h"
#include "frontend/composites.h"
#include "frontend/composites_backward.h"
#include "ir/error.h"
#include "tests/finite_diff.h"
#include "tests/reference_test_util.h"

using namespace loom;
using loom::test::Vec;

namespace {

std::vector<Dim> dims(const std::vector<int64_t>& s) { return {s.begin(), s.end()}; }
HostTensor asF64(const HostTensor& t) { return HostTensor::fromValues(DType::F64, t.shape(), t.toVector()); }
double sigmoidD(double v) { return 1 / (1 + std::exp(-v)); }

std::unique_ptr<ir::Fusion> softmaxFusion(DType t, const std::vector<int64_t>& shape, int dim, bool log_form) {
  FusionBuilder fb("sm");
  auto x = fb.input("x", t, dims(shape));
  fb.output("y", log_form ? log_softmax(x, dim) : softmax(x, dim));
  return fb.finish();
}

std::unique_ptr<ir::Fusion> softmaxBackwardFusion(DType t, const std::vector<int64_t>& shape, int dim, bool log_form) {
  FusionBuilder fb("smb");
  auto dy = fb.input("dy", t, dims(shape));
  auto y = fb.input("y", t, dims(shape));
  fb.output("dx", log_form ? log_softmax_backward(dy, y, dim) : softmax_backward(dy, y, dim));
  return fb.finish();
}

}  // namespace

TEST_CASE("softmax and log_softmax backward are the forward's exact derivative", "[reference][composites][backward]") {
  struct Case {
    std::vector<int64_t> shape;
    int dim;
  };
  for (bool log_form : {false, true})
    for (const Case& c : {Case{{3, 7}, -1}, Case{{3, 7}, 0}, Case{{1, 5}, 1}, Case{{2, 3, 5}, 1}}) {
      DYNAMIC_SECTION((log_form ? "log_softmax" : "softmax") << " rank " << c.shape.size() << " dim " << c.dim
                                                             << " rows " << c.shape[0]) {
        auto x = HostTensor::random(DType::F64, c.shape, 7, -3, 3), dy = HostTensor::random(DType::F64, c.shape, 8);
        auto fwd = softmaxFusion(DType::F64, c.shape, c.dim, log_form);
        auto y = loom::test::run(*fwd, {x})[0];
        auto dx = loom::test::run(*softmaxBackwardFusion(DType::F64, c.shape, c.dim, log_form), {dy, y})[0];
        loom::test::checkGrad(dx, loom::test::finiteDiffGrad(*fwd, {x}, {dy.toVector()}, 0), "dx");
        for (DType t : {DType::F32, DType::F16, DType::BF16}) {
          auto xt = HostTensor::random(t, c.shape, 9, -3, 3), dyt = HostTensor::random(t, c.shape, 10);
          auto yt = loom::test::run(*softmaxFusion(t, c.shape, c.dim, log_form), {xt})[0];
          auto got = loom::test::run(*softmaxBackwardFusion(t, c.shape, c.dim, log_form), {dyt, yt})[0];
          auto want = loom::test::run(*softmaxBackwardFusion(DType::F64, c.shape, c.dim, log_form), {asF64(dyt), asF64(yt)})[0];
          loom::test::checkValues(got, want.toVector(), t, "dx " + std::string(dtypeName(t)));
        }
      }
    }
}

namespace {

struct LstmData {
  int64_t b, h;
  HostTensor ig, hg, cx, ib, hb;
};

std::unique_ptr<ir::Fusion> lstmForward(int64_t b, int64_t h) {
  FusionBuilder fb("lstm");
  auto ig = fb.input("ig", DType::F64, {b, 4 * h}), hg = fb.input("hg", DType::F64, {b, 4 * h});
  auto cx = fb.input("cx", DType::F64, {b, h});
  auto ib = fb.input("ib", DType::F64, {4 * h}), hb = fb.input("hb", DType::F64, {4 * h});
  auto r = lstm_cell(ig, hg, cx, ib, hb);
  fb.output("hy", r.hy);
  fb.output("cy", r.cy);
  return fb.finish();
}

// PyTorch's workspace: sigmoid(i), sigmoid(f), tanh(g), sigmoid(o) of the summed gates.
HostTensor lstmWorkspace(const LstmData& d, DType t) {
  Vec ws;
  for (int64_t r = 0; r < d.b; ++r)
    for (int64_t k = 0; k < 4; ++k)
      for (int64_t j = 0; j < d.h; ++j) {
        int64_t col = k * d.h + j;
        double g = d.ig.get({r, col}) + d.hg.get({r, col}) + d.ib.get({col}) + d.hb.get({col});
        ws.push_back(k == 2 ? std::tanh(g) : sigmoidD(g));
      }
  return HostTensor::fromValues(t, {d.b, 4 * d.h}, ws);
}

std::unique_ptr<ir::Fusion> lstmBackward(DType t, int64_t b, int64_t h, bool with_dhy, bool with_dcy, bool has_bias) {
  FusionBuilder fb("lstm_backward");
  std::optional<Tensor> dhy, dcy;
  if (with_dhy) dhy = fb.input("dhy", t, {b, h});
  if (with_dcy) dcy = fb.input("dcy", t, {b, h});
  auto cx = fb.input("cx", t, {b, h}), cy = fb.input("cy", t, {b, h});
  auto ws = fb.input("workspace", t, {b, 4 * h});
  auto g = lstm_cell_backward(dhy, dcy, cx, cy, ws, has_bias);
  REQUIRE(g.grad_bias.has_value() == has_bias);
  CHECK(g.grad_gates.value()->typeString() == fmt::format("{}[{}, {}]", dtypeName(t), b, 4 * h));
  fb.output("dgates", g.grad_gates);
  fb.output("dcx", g.grad_cx);
  if (has_bias) fb.output("dbias", *g.grad_bias);
  return fb.finish();
}

}  // namespace

TEST_CASE("lstm_cell_backward is lstm_cell's exact derivative, as one gate matrix", "[reference][composites][backward]") {
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{3, 5}, {1, 7}};
  const std::vector<std::pair<bool, bool>> grads_given = {{true, true}, {true, false}, {false, true}};
  for (auto [b, h] : sizes)
    for (auto [with_dhy, with_dcy] : grads_given) {
      DYNAMIC_SECTION("B " << b << " H " << h << (with_dhy ? " dhy" : "") << (with_dcy ? " dcy" : "")) {
        LstmData d{b, h, HostTensor::random(DType::F64, {b, 4 * h}, 1, -2, 2), HostTensor::random(DType::F64, {b, 4 * h}, 2, -2, 2),
                   HostTensor::random(DType::F64, {b, h}, 3, -2, 2), HostTensor::random(DType::F64, {4 * h}, 4),
                   HostTensor::random(DType::F64, {4 * h}, 5)};
        auto fwd = lstmForward(b, h);
        std::vector<HostTensor> fin = {d.ig, d.hg, d.cx, d.ib, d.hb};
        auto out = loom::test::run(*fwd, fin);
        auto dhy = HostTensor::random(DType::F64, {b, h}, 6), dcy = HostTensor::random(DType::F64, {b, h}, 7);
        const std::vector<Vec> cot = {with_dhy ? dhy.toVector() : Vec{}, with_dcy ? dcy.toVector() : Vec{}};
        std::vector<HostTensor> in;
        if (with_dhy) in.push_back(dhy);
        if (with_dcy) in.push_back(dcy);
        in.insert(in.end(), {d.cx, out[1], lstmWorkspace(d, DType::F64)});
        auto grads = loom::test::run(*lstmBackward(DType::F64, b, h, with_dhy, with_dcy, true), in);
        // The input and the hidden projections have the same gradient (they are summed).
        Vec dig = loom::test::finiteDiffGrad(*fwd, fin, cot, 0), dhg = loom::test::finiteDiffGrad(*fwd, fin, cot, 1);
        // The [B, 4H] gate matrix against the whole input (and hidden) projection's gradient.
        loom::test::checkGrad(grads[0], dig, "gates");
        loom::test::checkGrad(grads[0], dhg, "hidden gates");
        loom::test::checkGrad(grads[1], loom::test::finiteDiffGrad(*fwd, fin, cot, 2), "dcx");
        loom::test::checkGrad(grads[2], loom::test::finiteDiffGrad(*fwd, fin, cot, 3), "bias");
        loom::test::checkGrad(grads[2], loom::test::finiteDiffGrad(*fwd, fin, cot, 4), "hidden bias");
      }
    }
}

TEST_CASE("lstm_cell_backward in f32, f16, bf16; no bias; a missing gradient is a user error",
          "[reference][composites][backward]") {
  const int64_t b = 3, h = 5;
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    LstmData d{b, h, HostTensor::random(t, {b, 4 * h}, 1, -2, 2), HostTensor::random(t, {b, 4 * h}, 2, -2, 2),
               HostTensor::random(t, {b, h}, 3, -2, 2), HostTensor::random(t, {4 * h}, 4), HostTensor::random(t, {4 * h}, 5)};
    std::vector<HostTensor> in = {HostTensor::random(t, {b, h}, 6), HostTensor::random(t, {b, h}, 7), d.cx,
                                  HostTensor::random(t, {b, h}, 8, -2, 2), lstmWorkspace(d, t)};
    auto got = loom::test::run(*lstmBackward(t, b, h, true, true, true), in);
    std::vector<HostTensor> in64;
    for (const auto& x : in) in64.push_back(asF64(x));
    auto want = loom::test::run(*lstmBackward(DType::F64, b, h, true, true, true), in64);
    for (size_t k = 0; k < got.size(); ++k)
      loom::test::checkValues(got[k], want[k].toVector(), t, std::string(dtypeName(t)) + " output " + std::to_string(k));
    auto no_bias = loom::test::run(*lstmBackward(t, b, h, true, true, false), in);
    CHECK(no_bias.size() == 2);
  }
  FusionBuilder fb("bad");
  auto cx = fb.input("cx", DType::F16, {"B", "H"});
  auto ws = fb.input("ws", DType::F16, {"B", Extent(3) * Extent::symbol("H")});
  CHECK_THROWS_WITH(lstm_cell_backward(std::nullopt, std::nullopt, cx, cx, ws),
                    Catch::Contains("give dhy, dcy or both"));
  CHECK_THROWS_WITH(lstm_cell_backward(cx, std::nullopt, cx, cx, ws),
                    Catch::Contains("workspace `ws` has shape [B, 3*H] but must be [B, 4*H]"));
}

namespace {

struct GruData {
  int64_t b, h;
  HostTensor ig, hg, hx, ib, hb;
};

std::unique_ptr<ir::Fusion> gruForward(int64_t b, int64_t h) {
  FusionBuilder fb("gru");
  auto ig = fb.input("ig", DType::F64, {b, 3 * h}), hg = fb.input("hg", DType::F64, {b, 3 * h});
  auto hx = fb.input("hx", DType::F64, {b, h});
  auto ib = fb.input("ib", DType::F64, {3 * h}), hb = fb.input("hb", DType::F64, {3 * h});
  fb.output("hy", gru_cell(ig, hg, hx, ib, hb));
  return fb.finish();
}

// PyTorch's workspace: r, z, n (activated), hx, and the hidden n-gate plus its bias.
HostTensor gruWorkspace(const GruData& d, DType t) {
  Vec ws;
  for (int64_t r = 0; r < d.b; ++r) {
    auto in = [&](int64_t k, int64_t j) { return d.ig.get({r, k * d.h + j}) + d.ib.get({k * d.h + j}); };
    auto hid = [&](int64_t k, int64_t j) { return d.hg.get({r, k * d.h + j}) + d.hb.get({k * d.h + j}); };
    Vec rs, zs, ns, hxs, hns;
    for (int64_t j = 0; j < d.h; ++j) {
      double rr = sigmoidD(in(0, j) + hid(0, j)), zz = sigmoidD(in(1, j) + hid(1, j));
      rs.push_back(rr);
      zs.push_back(zz);
      ns.push_back(std::tanh(in(2, j) + rr * hid(2, j)));
      hxs.push_back(d.hx.get({r, j}));
      hns.push_back(hid(2, j));
    }
    for (const Vec* v : {&rs, &zs, &ns, &hxs, &hns}) ws.insert(ws.end(), v->begin(), v->end());
  }
  return HostTensor::fromValues(t, {d.b, 5 * d.h}, ws);
}

std::unique_ptr<ir::Fusion> gruBackward(DType t, int64_t b, int64_t h, bool has_bias) {
  FusionBuilder fb("gru_backward");
  auto dhy = fb.input("dhy", t, {b, h});
  auto ws = fb.input("workspace", t, {b, 5 * h});
  auto g = gru_cell_backward(dhy, ws, has_bias);
  fb.output("dinput_gates", g.grad_input_gates);
  fb.output("dhidden_gates", g.grad_hidden_gates);
  fb.output("dhx", g.grad_hx);
  REQUIRE(g.grad_input_bias.has_value() == has_bias);
  if (has_bias) {
    fb.output("dinput_bias", *g.grad_input_bias);
    fb.output("dhidden_bias", *g.grad_hidden_bias);
  }
  return fb.finish();
}

}  // namespace

TEST_CASE("gru_cell_backward is gru_cell's exact derivative, as gate matrices", "[reference][composites][backward]") {
  const std::vector<std::pair<int64_t, int64_t>> sizes = {{3, 5}, {1, 7}};
  for (auto [b, h] : sizes) {
    DYNAMIC_SECTION("B " << b << " H " << h) {
      GruData d{b, h, HostTensor::random(DType::F64, {b, 3 * h}, 1, -2, 2), HostTensor::random(DType::F64, {b, 3 * h}, 2, -2, 2),
                HostTensor::random(DType::F64, {b, h}, 3, -2, 2), HostTensor::random(DType::F64, {3 * h}, 4),
                HostTensor::random(DType::F64, {3 * h}, 5)};
      auto fwd = gruForward(b, h);
      std::vector<HostTensor> fin = {d.ig, d.hg, d.hx, d.ib, d.hb};
      auto dhy = HostTensor::random(DType::F64, {b, h}, 6);
      const std::vector<Vec> cot = {dhy.toVector()};
      auto g = loom::test::run(*gruBackward(DType::F64, b, h, true), {dhy, gruWorkspace(d, DType::F64)});
      Vec dig = loom::test::finiteDiffGrad(*fwd, fin, cot, 0), dhg = loom::test::finiteDiffGrad(*fwd, fin, cot, 1);
      // The [B, 3H] gate matrices against the whole projections' gradients.
      loom::test::checkGrad(g[0], dig, "input gates");
      loom::test::checkGrad(g[1], dhg, "hidden gates");
      loom::test::checkGrad(g[2], loom::test::finiteDiffGrad(*fwd, fin, cot, 2), "dhx");
      loom::test::checkGrad(g[3], loom::test::finiteDiffGrad(*fwd, fin, cot, 3), "input bias");
      loom::test::checkGrad(g[4], loom::test::finiteDiffGrad(*fwd, fin, cot, 4), "hidden bias");
    }
  }
}

TEST_CASE("gru_cell_backward in f32, f16, bf16; no bias", "[reference][composites][backward]") {
  const int64_t b = 3, h = 5;
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    GruData d{b, h, HostTensor::random(t, {b, 3 * h}, 1, -2, 2), HostTensor::random(t, {b, 3 * h}, 2, -2, 2),
              HostTensor::random(t, {b, h}, 3, -2, 2), HostTensor::random(t, {3 * h}, 4), HostTensor::random(t, {3 * h}, 5)};
    std::vector<HostTensor> in = {HostTensor::random(t, {b, h}, 6), gruWorkspace(d, t)};
    auto got = loom::test::run(*gruBackward(t, b, h, true), in);
    auto want = loom::test::run(*gruBackward(DType::F64, b, h, true), {asF64(in[0]), asF64(in[1])});
    for (size_t k = 0; k < got.size(); ++k)
      loom::test::checkValues(got[k], want[k].toVector(), t, std::string(dtypeName(t)) + " output " + std::to_string(k));
    CHECK(loom::test::run(*gruBackward(t, b, h, false), in).size() == 3);
  }
  FusionBuilder fb("bad");
  auto dhy = fb.input("dhy", DType::F16, {"B", "H"});
  CHECK_THROWS_WITH(gru_cell_backward(dhy, fb.input("ws", DType::F16, {"B", Extent(3) * Extent::symbol("H")})),
                    Catch::Contains("workspace `ws` has shape [B, 3*H] but must be [B, 5*H]"));
}
