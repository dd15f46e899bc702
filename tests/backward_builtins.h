#pragma once
// Shared by the tests that walk every built-in: which one is its main input (the backward
// built-ins without an `x`), the channels-last layouts of its image inputs, which backward
// built-ins are more than one kernel today, and the LSTM cell's backward with one gradient.
#include <map>
#include <set>
#include <string>
#include <vector>

#include "frontend/builder.h"
#include "frontend/composites_backward.h"
#include "ir/fusion.h"

namespace loom::test {

// The backward built-ins the segmenter cuts into several kernels today, at their default
// sizes in either memory order: a reduction over the normalized dims (for dx) beside sums over
// dims that are partly the same (group and instance norm: dw and db also sum over H and W), or
// rows strided along their reduction (LayerNorm2d over the channels of NCHW). Layer and RMS norm
// backward are one kernel (their dw and db as column reductions). tests/test_backward_builtins.cpp
// compiles these as plans; drop a name here when it becomes one kernel, and the tests of every
// built-in take it up.
inline const std::set<std::string> kMultiKernelBuiltins = {"group_norm_backward", "instance_norm_backward",
                                                           "layer_norm_2d_backward"};
// Channels-last, batch norm backward's rows (channels) are strided along their reduction and
// long: one kernel would be vectors of rows over the grid holding x and dy, which measured
// slower than its reductions' kernel and a pointwise kernel after it (segmenter.cpp,
// twoPassInstead): two kernels, by choice.
inline const std::set<std::string> kTwoPassChannelsLast = {"batch_norm_backward"};

// x, else dy (softmax_backward), else the first input (the recurrent cells' backward).
inline const ir::Value* mainInput(const ir::Fusion& f) {
  for (const char* name : {"x", "dy"})
    for (const ir::Value* v : f.inputs())
      if (v->name() == name) return v;
  return f.inputs().front();
}

// Channels-last (0, 2, 3, 1) for the rank-4 inputs x and dy: a backward's gradient comes in
// its activation's layout.
inline std::map<std::string, std::vector<int>> channelsLastImages(const ir::Fusion& f) {
  std::map<std::string, std::vector<int>> lay;
  for (const ir::Value* v : f.inputs())
    if ((v->name() == "x" || v->name() == "dy") && v->rank() == 4) lay[v->name()] = {0, 2, 3, 1};
  return lay;
}

// lstm_cell_backward with one incoming gradient `g` left out: g is dhy (no dcy) or dcy (no dhy).
inline Fusion lstmCellBackwardOneGradient(DType t, bool g_is_dhy) {
  FusionBuilder fb("lstm_partial");
  auto g = fb.input("g", t, {"B", "H"});
  auto cx = fb.input("cx", t, {"B", "H"});
  auto cy = fb.input("cy", t, {"B", "H"});
  auto ws = fb.input("ws", t, {"B", Extent(4) * Extent::symbol("H")});
  auto r = g_is_dhy ? lstm_cell_backward(g, std::nullopt, cx, cy, ws) : lstm_cell_backward(std::nullopt, g, cx, cy, ws);
  fb.output("dgates", r.grad_gates);
  fb.output("dcx", r.grad_cx);
  fb.output("dbias", *r.grad_bias);
  return fb.finish();
}

}  // namespace loom::test
