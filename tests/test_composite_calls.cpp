// The composites as calls of the text format (frontend/text_composites.h): each built-in written
// with them is the built-in, op for op; the forms with statistics and workspaces; their errors.
// Also the cells' workspace forms against naive loops, and fed to their backward.
#include <catch2/catch.hpp>

#include <cmath>
#include <string>

#include "frontend/builder.h"
#include "frontend/composites.h"
#include "frontend/composites_backward.h"
#include "frontend/examples.h"
#include "frontend/parser.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "reference/reference.h"
#include "runtime/host_tensor.h"

using namespace loom;

namespace {

// Each built-in's calls: its inputs as `loom print` gives them, the composite, its outputs.
struct Written {
  const char* builtin;
  const char* body;
};

const Written kWritten[] = {
    {"layer_norm", "in x: f16[N, D]\n in w: f16[D]\n in b: f16[D]\n"
                   " y = layer_norm(x, w, b, normalized_shape=[D], eps=1e-05)\n out y = y"},
    {"rms_norm", "in x: bf16[N, D]\n in w: bf16[D]\n y = rms_norm(x, w, normalized_shape=[D], eps=1e-06)\n out y = y"},
    {"softmax", "in x: f16[N, D]\n y = softmax(x, dim=-1)\n out y = y"},
    {"log_softmax", "in x: f32[N, D]\n y = log_softmax(x, dim=-1)\n out y = y"},
    {"group_norm", "in x: f16[N, C, H, W]\n in w: f32[C]\n in b: f32[C]\n"
                   " y = group_norm(x, w, b, num_groups=32, eps=1e-05)\n out y = y"},
    {"batch_norm", "in x: f32[N, C, H, W]\n in running_mean: f32[C]\n in running_var: f32[C]\n in w: f32[C]\n"
                   " in b: f32[C]\n y, rm, rv = batch_norm(x, running_mean, running_var, w, b, training=true,"
                   " momentum=0.1, eps=1e-05)\n out y = y\n out new_running_mean = rm alias running_mean\n"
                   " out new_running_var = rv alias running_var"},
    {"instance_norm", "in x: f32[N, C, H, W]\n in w: f32[C]\n in b: f32[C]\n"
                      " y = instance_norm(x, w, b, eps=1e-05)\n out y = y"},
    {"layer_norm_2d", "in x: f16[N, C, H, W]\n in w: f16[C]\n in b: f16[C]\n"
                      " y = layer_norm_2d(x, w, b, eps=1e-06)\n out y = y"},
    {"lstm_cell", "in x: f16[B, 4*H]\n in hidden_gates: f16[B, 4*H]\n in cx: f16[B, H]\n in b_ih: f16[4*H]\n"
                  " in b_hh: f16[4*H]\n hy, cy = lstm_cell(x, hidden_gates, cx, b_ih, b_hh)\n out hy = hy\n out cy = cy"},
    {"gru_cell", "in x: f16[B, 3*H]\n in hidden_gates: f16[B, 3*H]\n in hx: f16[B, H]\n in b_ih: f16[3*H]\n"
                 " in b_hh: f16[3*H]\n hy = gru_cell(x, hidden_gates, hx, b_ih, b_hh)\n out hy = hy"},
    {"layer_norm_backward", "in dy: f16[N, D]\n in x: f16[N, D]\n in mean: f32[N, 1]\n in rstd: f32[N, 1]\n"
                            " in w: f16[D]\n in b: f16[D]\n"
                            " dx, dw, db = layer_norm_backward(dy, x, mean, rstd, w, b, normalized_shape=[D])\n"
                            " out dx = dx\n out dw = dw\n out db = db"},
    {"rms_norm_backward", "in dy: bf16[N, D]\n in x: bf16[N, D]\n in rstd: f32[N, 1]\n in w: bf16[D]\n"
                          " dx, dw = rms_norm_backward(dy, x, rstd, w, normalized_shape=[D])\n out dx = dx\n out dw = dw"},
    {"softmax_backward", "in dy: f16[N, D]\n in y: f16[N, D]\n dx = softmax_backward(dy, y, dim=-1)\n out dx = dx"},
    {"log_softmax_backward", "in dy: f32[N, D]\n in y: f32[N, D]\n dx = log_softmax_backward(dy, y, dim=-1)\n"
                             " out dx = dx"},
    {"group_norm_backward", "in dy: f16[N, C, H, W]\n in x: f16[N, C, H, W]\n in mean: f32[N, 32]\n"
                            " in rstd: f32[N, 32]\n in w: f32[C]\n"
                            " dx, dw, db = group_norm_backward(dy, x, mean, rstd, w, num_groups=32)\n"
                            " out dx = dx\n out dw = dw\n out db = db"},
    {"batch_norm_backward", "in dy: f32[N, C, H, W]\n in x: f32[N, C, H, W]\n in save_mean: f32[C]\n"
                            " in save_invstd: f32[C]\n in w: f32[C]\n"
                            " dx, dw, db = batch_norm_backward(dy, x, save_mean, save_invstd, w)\n"
                            " out dx = dx\n out dw = dw\n out db = db"},
    {"instance_norm_backward", "in dy: f32[N, C, H, W]\n in x: f32[N, C, H, W]\n in mean: f32[N, C]\n"
                               " in rstd: f32[N, C]\n in w: f32[C]\n"
                               " dx, dw, db = instance_norm_backward(dy, x, mean, rstd, w)\n"
                               " out dx = dx\n out dw = dw\n out db = db"},
    {"layer_norm_2d_backward", "in dy: f16[N, C, H, W]\n in x: f16[N, C, H, W]\n in mean: f32[N, 1, H, W]\n"
                               " in rstd: f32[N, 1, H, W]\n in w: f16[C]\n"
                               " dx, dw, db = layer_norm_2d_backward(dy, x, mean, rstd, w)\n"
                               " out dx = dx\n out dw = dw\n out db = db"},
    {"lstm_cell_backward", "in dhy: f16[B, H]\n in dcy: f16[B, H]\n in cx: f16[B, H]\n in cy: f16[B, H]\n"
                           " in workspace: f16[B, 4*H]\n"
                           " dgates, dcx, dbias = lstm_cell_backward(dhy, dcy, cx, cy, workspace, has_bias=true)\n"
                           " out dgates = dgates\n out dcx = dcx\n out dbias = dbias"},
    {"gru_cell_backward", "in dhy: f16[B, H]\n in workspace: f16[B, 5*H]\n"
                          " gi, gh, ghx, gib, ghb = gru_cell_backward(dhy, workspace)\n"
                          " out dinput_gates = gi\n out dhidden_gates = gh\n out dhx = ghx\n out dinput_bias = gib\n"
                          " out dhidden_bias = ghb"},
};

std::string fusionText(const std::string& name, const std::string& body) {
  return "fusion " + name + " {\n " + body + "\n}\n";
}

std::string parseError(const std::string& body) {
  try {
    parseFusion(fusionText("f", body));
  } catch (const Error& e) {
    return e.what();
  }
  return "(parsed)";
}

double sigmoidD(double x) { return 1 / (1 + std::exp(-x)); }

}  // namespace

TEST_CASE("each built-in written with composite calls is the built-in, op for op", "[text][composites]") {
  for (const Written& w : kWritten) {
    INFO(w.builtin);
    auto want = findExample(w.builtin)->buildDefault();
    auto got = parseFusion(fusionText(w.builtin, w.body));
    // The results take the names on the left; every op, operand and type is the built-in's.
    CHECK(ir::structurallyEqual(*want, *got, /*value_names=*/false));
    const std::string text = ir::printFusion(*got);  // expanded into the ops, and parses back
    CHECK(ir::structurallyEqual(*parseFusion(text), *got));
  }
}

TEST_CASE("composite calls: the forms with statistics and optional operands", "[text][composites]") {
  SECTION("layer_norm with its statistics, then its backward, beside primitives") {
    auto got = parseFusion(fusionText("ln", "in x: f16[N, D]\n in r: f16[N, D]\n in dy: f16[N, D]\n in w: f16[D]\n"
                                            " s: f16[N, D] = add(x, r)\n"
                                            " y, mean: f32[N, 1b], rstd = layer_norm(s, w, none, normalized_shape=[D])\n"
                                            " dx, dw = layer_norm_backward(dy, s, mean, rstd, w, normalized_shape=[D])\n"
                                            " out y = y\n out mean = mean\n out dx = dx\n out dw = dw"));
    FusionBuilder fb("ln");
    auto x = fb.input("x", DType::F16, {"N", "D"});
    auto r = fb.input("r", DType::F16, {"N", "D"});
    auto dy = fb.input("dy", DType::F16, {"N", "D"});
    auto w = fb.input("w", DType::F16, {"D"});
    auto s = add(x, r);
    auto st = layer_norm_with_stats(s, {"D"}, w, std::nullopt);
    auto g = layer_norm_backward(dy, s, st.mean, st.rstd, {"D"}, w);
    fb.output("y", st.y);
    fb.output("mean", st.mean);
    fb.output("dx", g.dx);
    fb.output("dw", g.dw);
    auto want = fb.finish();
    // The add is named `s` in the text and `t0` by the builder; the composite's ops follow it.
    CHECK(ir::printFusion(*got).find("s: f16[N, D] = add(x, r)") != std::string::npos);
    CHECK(got->ops().size() == (*want).ops().size());
    CHECK(got->outputs().size() == 4);
    CHECK(ir::structurallyEqual(*want, *got, /*value_names=*/false));
  }
  SECTION("lstm_cell_backward with dhy left out, without biases") {
    auto got = parseFusion(fusionText("l", "in dcy: f32[B, H]\n in cx: f32[B, H]\n in cy: f32[B, H]\n"
                                           " in ws: f32[B, 4*H]\n"
                                           " g, gcx = lstm_cell_backward(none, dcy, cx, cy, ws, has_bias=false)\n"
                                           " out g = g\n out gcx = gcx"));
    FusionBuilder fb("l");
    auto dcy = fb.input("dcy", DType::F32, {"B", "H"});
    auto cx = fb.input("cx", DType::F32, {"B", "H"});
    auto cy = fb.input("cy", DType::F32, {"B", "H"});
    auto ws = fb.input("ws", DType::F32, {"B", Extent(4) * Extent::symbol("H")});
    auto g = lstm_cell_backward(std::nullopt, dcy, cx, cy, ws, false);
    fb.output("g", g.grad_gates);
    fb.output("gcx", g.grad_cx);
    CHECK(ir::structurallyEqual(*fb.finish(), *got, /*value_names=*/false));
    CHECK(got->findValue("gcx") != nullptr);  // the result is named as on the left
  }
  SECTION("results named like the call's own values (tN): those take other names") {
    auto got = parseFusion(fusionText("p", "in x: f16[N, D]\n t3, t5, t9 = layer_norm(x, normalized_shape=[D])\n"
                                           " out y = t3\n out m = t5\n out r = t9"));
    CHECK(got->outputs()[0].value->definition()->kind() == ir::OpKind::Cast);  // y, in x's dtype
    CHECK(got->outputs()[0].value->dtype() == DType::F16);
    CHECK(got->outputs()[1].value->name() == "t5");
    CHECK(ir::structurallyEqual(*parseFusion(ir::printFusion(*got)), *got));
  }
  SECTION("batch_norm's five results, and training without running statistics") {
    auto five = parseFusion(fusionText("bn", "in x: f32[N, C, H, W]\n in rm: f32[C]\n in rv: f32[C]\n"
                                             " y, m, v, sm, si = batch_norm(x, rm, rv)\n out y = y\n out sm = sm\n"
                                             " out si = si\n out m = m alias rm\n out v = v alias rv"));
    CHECK(five->outputs().size() == 5);
    auto three = parseFusion(fusionText("bn", "in x: f32[N, C, H, W]\n y, sm, si = batch_norm(x)\n out y = y\n"
                                              " out si = si"));
    CHECK(three->outputs().size() == 2);
  }
}

TEST_CASE("composite calls: errors say what is wrong and where", "[text][composites][errors]") {
  const std::string in = "in x: f16[N, D]\n in w: f16[D]\n ";
  CHECK(parseError(in + "y = layer_norm(none, normalized_shape=[D])\n out y = y") ==
        "<input>:4:17: error: `layer_norm`'s operand `x` is required: `none` leaves out only an optional one\n"
        " y = layer_norm(none, normalized_shape=[D])\n"
        "                ^");
  CHECK_THAT(parseError(in + "y = layer_norm(x, eps=1)\n out y = y"),
             Catch::Contains("4:25: error: `layer_norm` needs the parameter `normalized_shape`"));
  CHECK_THAT(parseError(in + "y = layer_norm(x, normalized_shape=[D], groups=2)\n out y = y"),
             Catch::Contains("`layer_norm` has no parameter `groups`; its parameters are normalized_shape, eps"));
  CHECK_THAT(parseError(in + "y, m = layer_norm(x, normalized_shape=[D])\n out y = y"),
             Catch::Contains("4:9: error: `layer_norm` gives 3 values here (y, mean, rstd) but 2 names are given; "
                             "its results: y; or y, mean, rstd"));
  CHECK_THAT(parseError("in x: f16[N, D]\n in w: f16[D]\n in m: f32[N, 1]\n"
                        " dx, dw, db = layer_norm_backward(x, x, m, m, w, normalized_shape=[D])\n out dx = dx"),
             Catch::Contains("`layer_norm_backward` gives 2 values here (dx, dw) but 3 names are given"));
  CHECK_THAT(parseError(in + "y = layer_norm(x, normalized_shape=[N])\n out y = y"),
             Catch::Contains("4:6: error: layer_norm: normalized_shape [N] does not match the trailing dims [D]"));
  CHECK_THAT(parseError(in + "y: f32[N, D] = softmax(x, dim=1)\n out y = y"),
             Catch::Contains("`y` is declared as f32[N, D] but `softmax` gives its y type f16[N, D]"));
  CHECK_THAT(parseError(in + "y = softmax(x, x, dim=1)\n out y = y"),
             Catch::Contains("`softmax` takes 1 operand (x)"));
  CHECK_THAT(parseError(in + "y = softmax(dim=1, x)\n out y = y"),
             Catch::Contains("expected `key=value` (operands come before parameters)"));
  CHECK_THAT(parseError(in + "y = softmax(x)\n out y = y"), Catch::Contains("`softmax` needs the parameter `dim`"));
  CHECK_THAT(parseError(in + "y = softmax(x, dim=1)\n t1: f16[N, D] = neg(x)\n out y = y"),
             Catch::Contains("`t1` is already the name of a value a composite call made; choose another name"));
  CHECK_THAT(parseError(in + "y = layer_nrom(x, normalized_shape=[D])\n out y = y"),
             Catch::Contains("unknown op `layer_nrom`; did you mean `layer_norm`?"));
  CHECK_THAT(parseError("in x: f32[N, C, H, W]\n y = batch_norm(x, training=false)\n out y = y"),
             Catch::Contains("batch_norm with training=false normalizes by the running statistics"));
}

TEST_CASE("the cells' workspace forms hold what their backward reads", "[reference][composites]") {
  const int64_t B = 3, H = 17;
  const DType t = DType::F32;
  auto ig = HostTensor::random(t, {B, 4 * H}, 1, -3, 3), hg = HostTensor::random(t, {B, 4 * H}, 2, -3, 3);
  auto cx = HostTensor::random(t, {B, H}, 3, -2, 2), dcy = HostTensor::random(t, {B, H}, 4);
  auto lstm = parseFusion(fusionText("lstm", "in ig: f32[B, 4*H]\n in hg: f32[B, 4*H]\n in cx: f32[B, H]\n"
                                             " in dcy: f32[B, H]\n hy, cy, ws = lstm_cell(ig, hg, cx)\n"
                                             " g, gcx = lstm_cell_backward(none, dcy, cx, cy, ws, has_bias=false)\n"
                                             " out ws = ws\n out g = g"));
  auto out = evaluateReference(*lstm, {ig, hg, cx, dcy});
  for (int64_t i = 0; i < B; ++i)
    for (int64_t j = 0; j < H; ++j) {
      auto gate = [&](int64_t k) { return ig.get({i, k * H + j}) + hg.get({i, k * H + j}); };
      const double act[4] = {sigmoidD(gate(0)), sigmoidD(gate(1)), std::tanh(gate(2)), sigmoidD(gate(3))};
      for (int64_t k = 0; k < 4; ++k) CHECK(out[0].get({i, k * H + j}) == Approx(act[k]).epsilon(1e-6));
      // With dhy absent, the cell's gradient reaches the f gate as dcy * cx * f (1 - f).
      CHECK(out[1].get({i, H + j}) == Approx(dcy.get({i, j}) * cx.get({i, j}) * act[1] * (1 - act[1])).epsilon(1e-5));
    }

  auto gi = HostTensor::random(t, {B, 3 * H}, 5, -3, 3), gh = HostTensor::random(t, {B, 3 * H}, 6, -3, 3);
  auto gb = HostTensor::random(t, {3 * H}, 7), hx = HostTensor::random(t, {B, H}, 8);
  auto gru = parseFusion(fusionText("gru", "in gi: f32[B, 3*H]\n in gh: f32[B, 3*H]\n in hx: f32[B, H]\n"
                                           " in hb: f32[3*H]\n hy, ws = gru_cell(gi, gh, hx, none, hb)\n"
                                           " out hy = hy\n out ws = ws"));
  auto g = evaluateReference(*gru, {gi, gh, hx, gb});
  for (int64_t i = 0; i < B; ++i)
    for (int64_t j = 0; j < H; ++j) {
      auto part = [&](const HostTensor& m, bool bias, int64_t k) {
        return m.get({i, k * H + j}) + (bias ? gb.get({k * H + j}) : 0.0);
      };
      const double r = sigmoidD(part(gi, false, 0) + part(gh, true, 0));
      const double z = sigmoidD(part(gi, false, 1) + part(gh, true, 1));
      const double hn = part(gh, true, 2), n = std::tanh(part(gi, false, 2) + r * hn);
      const double want[5] = {r, z, n, hx.get({i, j}), hn};
      for (int64_t k = 0; k < 5; ++k) CHECK(g[1].get({i, k * H + j}) == Approx(want[k]).epsilon(1e-6));
      CHECK(g[0].get({i, j}) == Approx((1 - z) * n + z * hx.get({i, j})).epsilon(1e-6));
    }
}
