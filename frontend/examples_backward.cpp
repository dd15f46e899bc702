#include "frontend/examples_backward.h"

#include "frontend/composites_backward.h"

namespace loom {

namespace {

using DT = DType;

// The outputs of a norm's backward, under the names dx, dw, db (those computed).
void outputGrads(FusionBuilder& fb, const NormGrads& g) {
  fb.output("dx", g.dx);
  if (g.dw) fb.output("dw", g.dw);
  if (g.db) fb.output("db", g.db);
}

std::unique_ptr<ir::Fusion> layerNormBackward(DT t) {
  FusionBuilder fb("layer_norm_backward");
  auto dy = fb.input("dy", t, {"N", "D"});
  auto x = fb.input("x", t, {"N", "D"});
  auto mean = fb.input("mean", DT::F32, {"N", 1});
  auto rstd = fb.input("rstd", DT::F32, {"N", 1});
  auto w = fb.input("w", t, {"D"});
  auto b = fb.input("b", t, {"D"});  // read for its dtype only, as aten's
  outputGrads(fb, layer_norm_backward(dy, x, mean, rstd, {"D"}, w, b));
  return fb.finish();
}

std::unique_ptr<ir::Fusion> rmsNormBackward(DT t) {
  FusionBuilder fb("rms_norm_backward");
  auto dy = fb.input("dy", t, {"N", "D"});
  auto x = fb.input("x", t, {"N", "D"});
  auto rstd = fb.input("rstd", DT::F32, {"N", 1});
  auto w = fb.input("w", t, {"D"});
  outputGrads(fb, rms_norm_backward(dy, x, rstd, {"D"}, w));
  return fb.finish();
}

// dx of softmax or log-softmax over the last dim of [N, D], from dy and the forward's output y.
std::unique_ptr<ir::Fusion> softmaxFamilyBackward(const char* name, Tensor (*grad)(Tensor, Tensor, int), DT t) {
  FusionBuilder fb(name);
  auto dy = fb.input("dy", t, {"N", "D"});
  auto y = fb.input("y", t, {"N", "D"});
  fb.output("dx", grad(dy, y, -1));
  return fb.finish();
}

std::unique_ptr<ir::Fusion> softmaxBackward(DT t) {
  return softmaxFamilyBackward("softmax_backward", softmax_backward, t);
}

std::unique_ptr<ir::Fusion> logSoftmaxBackward(DT t) {
  return softmaxFamilyBackward("log_softmax_backward", log_softmax_backward, t);
}

std::unique_ptr<ir::Fusion> groupNormBackward(DT t) {
  FusionBuilder fb("group_norm_backward");
  auto dy = fb.input("dy", t, {"N", "C", "H", "W"});
  auto x = fb.input("x", t, {"N", "C", "H", "W"});
  auto mean = fb.input("mean", DT::F32, {"N", 32});
  auto rstd = fb.input("rstd", DT::F32, {"N", 32});
  auto w = fb.input("w", DT::F32, {"C"});
  outputGrads(fb, group_norm_backward(dy, x, mean, rstd, 32, w));
  return fb.finish();
}

std::unique_ptr<ir::Fusion> batchNormBackward(DT t) {
  FusionBuilder fb("batch_norm_backward");
  auto dy = fb.input("dy", t, {"N", "C", "H", "W"});
  auto x = fb.input("x", t, {"N", "C", "H", "W"});
  auto mean = fb.input("save_mean", DT::F32, {"C"});
  auto invstd = fb.input("save_invstd", DT::F32, {"C"});
  auto w = fb.input("w", DT::F32, {"C"});
  outputGrads(fb, batch_norm_backward(dy, x, mean, invstd, w));
  return fb.finish();
}

std::unique_ptr<ir::Fusion> instanceNormBackward(DT t) {
  FusionBuilder fb("instance_norm_backward");
  auto dy = fb.input("dy", t, {"N", "C", "H", "W"});
  auto x = fb.input("x", t, {"N", "C", "H", "W"});
  auto mean = fb.input("mean", DT::F32, {"N", "C"});
  auto rstd = fb.input("rstd", DT::F32, {"N", "C"});
  auto w = fb.input("w", DT::F32, {"C"});
  outputGrads(fb, instance_norm_backward(dy, x, mean, rstd, w));
  return fb.finish();
}

std::unique_ptr<ir::Fusion> layerNorm2dBackward(DT t) {
  FusionBuilder fb("layer_norm_2d_backward");
  auto dy = fb.input("dy", t, {"N", "C", "H", "W"});
  auto x = fb.input("x", t, {"N", "C", "H", "W"});
  auto mean = fb.input("mean", DT::F32, {"N", 1, "H", "W"});
  auto rstd = fb.input("rstd", DT::F32, {"N", 1, "H", "W"});
  auto w = fb.input("w", t, {"C"});
  outputGrads(fb, layer_norm_2d_backward(dy, x, mean, rstd, w));
  return fb.finish();
}

std::unique_ptr<ir::Fusion> lstmCellBackward(DT t) {
  FusionBuilder fb("lstm_cell_backward");
  auto dhy = fb.input("dhy", t, {"B", "H"});
  auto dcy = fb.input("dcy", t, {"B", "H"});
  auto cx = fb.input("cx", t, {"B", "H"});
  auto cy = fb.input("cy", t, {"B", "H"});
  auto ws = fb.input("workspace", t, {"B", Extent(4) * Extent::symbol("H")});
  auto g = lstm_cell_backward(dhy, dcy, cx, cy, ws, /*has_bias=*/true);
  fb.output("dgates", g.grad_gates);
  fb.output("dcx", g.grad_cx);
  fb.output("dbias", *g.grad_bias);
  return fb.finish();
}

std::unique_ptr<ir::Fusion> gruCellBackward(DT t) {
  FusionBuilder fb("gru_cell_backward");
  auto dhy = fb.input("dhy", t, {"B", "H"});
  auto ws = fb.input("workspace", t, {"B", Extent(5) * Extent::symbol("H")});
  auto g = gru_cell_backward(dhy, ws, /*has_bias=*/true);
  fb.output("dinput_gates", g.grad_input_gates);
  fb.output("dhidden_gates", g.grad_hidden_gates);
  fb.output("dhx", g.grad_hx);
  fb.output("dinput_bias", *g.grad_input_bias);
  fb.output("dhidden_bias", *g.grad_hidden_bias);
  return fb.finish();
}

}  // namespace

std::vector<Example> backwardExamples() {
  const Bindings rows = {{"N", 256}, {"D", 1024}};
  return {
      {"layer_norm_backward", "layer norm's dx, dw, db, f16 [N, D], f32 mean and rstd [N, 1]",
       layerNormBackward, DT::F16, rows},
      {"rms_norm_backward", "RMS norm's dx, dw, bf16 [N, D], f32 rstd [N, 1]", rmsNormBackward,
       DT::BF16, rows},
      {"softmax_backward", "softmax's dx from dy and y, f16 [N, D], over the last dim",
       softmaxBackward, DT::F16, rows},
      {"log_softmax_backward", "log-softmax's dx from dy and y, f32 [N, D], over the last dim",
       logSoftmaxBackward, DT::F32, rows},
      {"group_norm_backward", "group norm's dx, dw, db, 32 groups, f16 [N, C, H, W], f32 mean "
       "and rstd [N, 32]", groupNormBackward, DT::F16, {{"N", 2}, {"C", 128}, {"H", 16}, {"W", 16}}},
      {"batch_norm_backward", "batch norm's (training) dx, dw, db, f32 [N, C, H, W], save_mean "
       "and save_invstd [C]", batchNormBackward, DT::F32, {{"N", 8}, {"C", 64}, {"H", 14}, {"W", 14}}},
      {"instance_norm_backward", "instance norm's dx, dw, db, f32 [N, C, H, W], mean and rstd "
       "[N, C]", instanceNormBackward, DT::F32, {{"N", 4}, {"C", 32}, {"H", 16}, {"W", 16}}},
      {"layer_norm_2d_backward", "LayerNorm2d's dx, dw, db, f16 [N, C, H, W], f32 mean and rstd "
       "[N, 1, H, W]", layerNorm2dBackward, DT::F16, {{"N", 4}, {"C", 64}, {"H", 14}, {"W", 14}}},
      {"lstm_cell_backward", "LSTM cell's gate, cx and bias gradients, f16: PyTorch's [B, 4H] gate matrix, [4H] bias",
       lstmCellBackward, DT::F16, {{"B", 64}, {"H", 256}}},
      {"gru_cell_backward", "GRU cell's gate, hx and bias gradients, f16: PyTorch's [B, 3H] gate matrices, [3H] biases",
       gruCellBackward, DT::F16, {{"B", 64}, {"H", 256}}},
  };
}

}  // namespace loom
