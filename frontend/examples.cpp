#include "frontend/examples.h"

#include <filesystem>

#include "frontend/composites.h"
#include "frontend/examples_backward.h"
#include "frontend/parser.h"
#include "ir/error.h"

namespace loom {

namespace {

using DT = DType;

std::unique_ptr<ir::Fusion> layerNorm(DT t) {
  FusionBuilder fb("layer_norm");
  auto x = fb.input("x", t, {"N", "D"});
  auto w = fb.input("w", t, {"D"});
  auto b = fb.input("b", t, {"D"});
  fb.output("y", layer_norm(x, {"D"}, w, b, 1e-5));
  return fb.finish();
}

std::unique_ptr<ir::Fusion> rmsNorm(DT t) {
  FusionBuilder fb("rms_norm");
  auto x = fb.input("x", t, {"N", "D"});
  auto w = fb.input("w", t, {"D"});
  fb.output("y", rms_norm(x, {"D"}, w, 1e-6));
  return fb.finish();
}

std::unique_ptr<ir::Fusion> softmaxEx(DT t) {
  FusionBuilder fb("softmax");
  auto x = fb.input("x", t, {"N", "D"});
  fb.output("y", softmax(x, -1));
  return fb.finish();
}

std::unique_ptr<ir::Fusion> logSoftmaxEx(DT t) {
  FusionBuilder fb("log_softmax");
  auto x = fb.input("x", t, {"N", "D"});
  fb.output("y", log_softmax(x, -1));
  return fb.finish();
}

std::unique_ptr<ir::Fusion> groupNorm(DT t) {
  FusionBuilder fb("group_norm");
  auto x = fb.input("x", t, {"N", "C", "H", "W"});
  auto w = fb.input("w", DT::F32, {"C"});
  auto b = fb.input("b", DT::F32, {"C"});
  fb.output("y", group_norm(x, 32, w, b, 1e-5));
  return fb.finish();
}

std::unique_ptr<ir::Fusion> batchNorm(DT t) {
  FusionBuilder fb("batch_norm");
  auto x = fb.input("x", t, {"N", "C", "H", "W"});
  auto rm = fb.input("running_mean", DT::F32, {"C"});
  auto rv = fb.input("running_var", DT::F32, {"C"});
  auto w = fb.input("w", DT::F32, {"C"});
  auto b = fb.input("b", DT::F32, {"C"});
  auto r = batch_norm(x, rm, rv, w, b, /*training=*/true, 0.1, 1e-5);
  fb.output("y", r.y);
  fb.output("new_running_mean", r.running_mean, rm);
  fb.output("new_running_var", r.running_var, rv);
  return fb.finish();
}

std::unique_ptr<ir::Fusion> instanceNorm(DT t) {
  FusionBuilder fb("instance_norm");
  auto x = fb.input("x", t, {"N", "C", "H", "W"});
  auto w = fb.input("w", DT::F32, {"C"});
  auto b = fb.input("b", DT::F32, {"C"});
  fb.output("y", instance_norm(x, w, b, 1e-5));
  return fb.finish();
}

std::unique_ptr<ir::Fusion> layerNorm2d(DT t) {
  FusionBuilder fb("layer_norm_2d");
  auto x = fb.input("x", t, {"N", "C", "H", "W"});
  auto w = fb.input("w", t, {"C"});
  auto b = fb.input("b", t, {"C"});
  fb.output("y", layer_norm_2d(x, w, b, 1e-6));
  return fb.finish();
}

std::unique_ptr<ir::Fusion> lstmCell(DT t) {
  FusionBuilder fb("lstm_cell");
  Dim four_h = Extent(4) * Extent::symbol("H");
  auto x = fb.input("x", t, {"B", four_h});  // input projection x @ W_ih^T
  auto hg = fb.input("hidden_gates", t, {"B", four_h});
  auto cx = fb.input("cx", t, {"B", "H"});
  auto bi = fb.input("b_ih", t, {four_h});
  auto bh = fb.input("b_hh", t, {four_h});
  auto r = lstm_cell(x, hg, cx, bi, bh);
  fb.output("hy", r.hy);
  fb.output("cy", r.cy);
  return fb.finish();
}

std::unique_ptr<ir::Fusion> gruCell(DT t) {
  FusionBuilder fb("gru_cell");
  Dim three_h = Extent(3) * Extent::symbol("H");
  auto x = fb.input("x", t, {"B", three_h});
  auto hg = fb.input("hidden_gates", t, {"B", three_h});
  auto hx = fb.input("hx", t, {"B", "H"});
  auto bi = fb.input("b_ih", t, {three_h});
  auto bh = fb.input("b_hh", t, {three_h});
  fb.output("hy", gru_cell(x, hg, hx, bi, bh));
  return fb.finish();
}

std::unique_ptr<ir::Fusion> addEx(DT t) {
  FusionBuilder fb("add");
  auto x = fb.input("x", t, {"N"});
  auto y = fb.input("y", t, {"N"});
  fb.output("z", x + y);
  return fb.finish();
}

std::unique_ptr<ir::Fusion> biasGelu(DT t) {
  FusionBuilder fb("bias_gelu");
  auto x = fb.input("x", t, {"N", "D"});
  auto b = fb.input("b", t, {"D"});
  fb.output("y", cast(gelu(toCompute(x) + toCompute(b), "tanh"), t));
  return fb.finish();
}

}  // namespace

const std::vector<Example>& builtinExamples() {
  static const std::vector<Example> all = {
      {"layer_norm", "layer norm over the last dim, f16 [N, D] with weight and bias", layerNorm, DT::F16,
       {{"N", 256}, {"D", 1024}}},
      {"rms_norm", "RMS norm over the last dim, bf16 [N, D] with weight", rmsNorm, DT::BF16,
       {{"N", 256}, {"D", 1024}}},
      {"softmax", "softmax over the last dim, f16 [N, D]", softmaxEx, DT::F16, {{"N", 256}, {"D", 1024}}},
      {"log_softmax", "log-softmax over the last dim, f32 [N, D]", logSoftmaxEx, DT::F32,
       {{"N", 256}, {"D", 1024}}},
      {"group_norm", "group norm, 32 groups, f16 [N, C, H, W] with f32 weight and bias",
       groupNorm, DT::F16, {{"N", 2}, {"C", 128}, {"H", 16}, {"W", 16}}},
      {"batch_norm", "batch norm training, f32 [N, C, H, W], running stats updated in place",
       batchNorm, DT::F32, {{"N", 8}, {"C", 64}, {"H", 14}, {"W", 14}}},
      {"instance_norm", "instance norm, f32 [N, C, H, W] with weight and bias", instanceNorm, DT::F32,
       {{"N", 4}, {"C", 32}, {"H", 16}, {"W", 16}}},
      {"layer_norm_2d", "layer norm over C of an NCHW f16 image (timm LayerNorm2d)", layerNorm2d, DT::F16,
       {{"N", 4}, {"C", 64}, {"H", 14}, {"W", 14}}},
      {"lstm_cell", "LSTM cell pointwise part, f16 gates [B, 4H] read as 4 slices", lstmCell, DT::F16,
       {{"B", 64}, {"H", 256}}},
      {"gru_cell", "GRU cell pointwise part, f16 gates [B, 3H] read as 3 slices", gruCell, DT::F16,
       {{"B", 64}, {"H", 256}}},
      {"add", "elementwise add of two f16 vectors", addEx, DT::F16, {{"N", 1 << 20}}},
      {"bias_gelu", "bias add + tanh GELU, bf16 [N, D]", biasGelu, DT::BF16, {{"N", 256}, {"D", 1024}}},
  };
  static const std::vector<Example> with_backward = [] {
    std::vector<Example> v = all;
    for (auto& e : backwardExamples()) v.push_back(std::move(e));
    return v;
  }();
  return with_backward;
}

const Example* findExample(const std::string& name) {
  for (const auto& e : builtinExamples())
    if (e.name == name) return &e;
  return nullptr;
}

std::unique_ptr<ir::Fusion> loadFusion(const std::string& name_or_path, Bindings* defaults,
                                       std::optional<DType> dtype) {
  if (const Example* e = findExample(name_or_path)) {
    if (defaults) *defaults = e->default_sizes;
    DType t = dtype.value_or(e->default_dtype);
    LOOM_USER_CHECK(isFloat(t),
                    "built-in `{}` is defined for floating-point dtypes, not {}", e->name, dtypeName(t));
    return e->build(t);
  }
  std::error_code ec;
  if (std::filesystem::is_regular_file(name_or_path, ec)) {
    LOOM_USER_CHECK(!dtype, "--dtype applies to built-in examples only; `{}` is a file, edit its "
                    "types instead", name_or_path);
    if (defaults) defaults->clear();
    return parseFusionFile(name_or_path);
  }
  std::string names;
  for (const auto& e : builtinExamples()) names += (names.empty() ? "" : ", ") + e.name;
  fail("`{}` is neither a built-in example nor a readable file; built-ins are: {}", name_or_path,
       names);
}

}  // namespace loom
