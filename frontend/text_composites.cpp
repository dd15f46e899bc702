#include "frontend/text_composites.h"

#include <algorithm>

#include "frontend/composites.h"
#include "frontend/composites_backward.h"
#include "ir/error.h"

namespace loom::text {

double CompositeArgs::number(std::string_view key, double fallback) const {
  auto it = params.find(key);
  return it == params.end() ? fallback : std::get<double>(it->second);
}

int CompositeArgs::whole(std::string_view key) const { return std::get<int>(params.find(key)->second); }

int CompositeArgs::whole(std::string_view key, int fallback) const {
  auto it = params.find(key);
  return it == params.end() ? fallback : std::get<int>(it->second);
}

bool CompositeArgs::flag(std::string_view key, bool fallback) const {
  auto it = params.find(key);
  return it == params.end() ? fallback : std::get<bool>(it->second);
}

std::string CompositeArgs::name(std::string_view key, std::string_view fallback) const {
  auto it = params.find(key);
  return it == params.end() ? std::string(fallback) : std::get<std::string>(it->second);
}

std::vector<Dim> CompositeArgs::dims(std::string_view key) const {
  std::vector<Dim> out;
  for (const Extent& e : std::get<std::vector<Extent>>(params.find(key)->second)) out.emplace_back(e);
  return out;
}

namespace {

using R = std::vector<NamedResult>;
using K = ParamKind;

// A norm's gradients: dx, then dw and db where the composite made them.
R grads(const NormGrads& g) {
  R r{{"dx", g.dx}};
  if (g.dw) r.push_back({"dw", g.dw});
  if (g.db) r.push_back({"db", g.db});
  return r;
}

// Forms with the statistics where more than one name is given.
R normStats(const NormStats& s) { return {{"y", s.y}, {"mean", s.mean}, {"rstd", s.rstd}}; }

R layerNorm(const CompositeArgs& a) {
  auto shape = a.dims("normalized_shape");
  const double eps = a.number("eps", 1e-5);
  if (a.results == 1) return {{"y", layer_norm(a.tensor(0), shape, a.opt(1), a.opt(2), eps)}};
  return normStats(layer_norm_with_stats(a.tensor(0), shape, a.opt(1), a.opt(2), eps));
}

R rmsNorm(const CompositeArgs& a) {
  auto shape = a.dims("normalized_shape");
  const double eps = a.number("eps", 1e-6);
  if (a.results == 1) return {{"y", rms_norm(a.tensor(0), shape, a.opt(1), eps)}};
  auto s = rms_norm_with_stats(a.tensor(0), shape, a.opt(1), eps);
  return {{"y", s.y}, {"rstd", s.rstd}};
}

R groupNorm(const CompositeArgs& a) {
  const int g = a.whole("num_groups");
  const double eps = a.number("eps", 1e-5);
  if (a.results == 1) return {{"y", group_norm(a.tensor(0), g, a.opt(1), a.opt(2), eps)}};
  return normStats(group_norm_with_stats(a.tensor(0), g, a.opt(1), a.opt(2), eps));
}

// Training: y, the updated running statistics where given, then save_mean and save_invstd where
// two more names ask for them. Evaluation: y from the running statistics.
R batchNorm(const CompositeArgs& a) {
  const double momentum = a.number("momentum", 0.1), eps = a.number("eps", 1e-5);
  const auto &rm = a.opt(1), &rv = a.opt(2);
  LOOM_USER_CHECK(rm.has_value() == rv.has_value(), "batch_norm: running_mean and running_var are given "
                  "together or not at all");
  if (!a.flag("training", true)) {
    LOOM_USER_CHECK(rm.has_value(), "batch_norm with training=false normalizes by the running statistics: "
                    "give running_mean and running_var");
    return {{"y", batch_norm(a.tensor(0), *rm, *rv, a.opt(3), a.opt(4), false, momentum, eps).y}};
  }
  const size_t plain = rm ? 3 : 1;
  if (a.results == plain && rm) {
    auto r = batch_norm(a.tensor(0), *rm, *rv, a.opt(3), a.opt(4), true, momentum, eps);
    return {{"y", r.y}, {"running_mean", r.running_mean}, {"running_var", r.running_var}};
  }
  auto s = batch_norm_with_stats(a.tensor(0), rm, rv, a.opt(3), a.opt(4), momentum, eps);
  R r{{"y", s.y}};
  if (rm) {
    r.push_back({"running_mean", s.running_mean});
    r.push_back({"running_var", s.running_var});
  }
  if (a.results != plain) {
    r.push_back({"save_mean", s.save_mean});
    r.push_back({"save_invstd", s.save_invstd});
  }
  return r;
}

R instanceNorm(const CompositeArgs& a) {
  const double eps = a.number("eps", 1e-5);
  if (a.results == 1) return {{"y", instance_norm(a.tensor(0), a.opt(1), a.opt(2), eps)}};
  return normStats(instance_norm_with_stats(a.tensor(0), a.opt(1), a.opt(2), eps));
}

R layerNorm2d(const CompositeArgs& a) {
  const double eps = a.number("eps", 1e-6);
  if (a.results == 1) return {{"y", layer_norm_2d(a.tensor(0), a.opt(1), a.opt(2), eps)}};
  return normStats(layer_norm_2d_with_stats(a.tensor(0), a.opt(1), a.opt(2), eps));
}

R softmaxOp(const CompositeArgs& a) { return {{"y", softmax(a.tensor(0), a.whole("dim"))}}; }
R logSoftmaxOp(const CompositeArgs& a) { return {{"y", log_softmax(a.tensor(0), a.whole("dim"))}}; }

// y and the sum; or those and the statistics.
R dropoutAdd(const DropoutAddNormResult& r, const CompositeArgs& a) {
  R out{{"y", r.y}, {"sum", r.sum}};
  if (a.results == 2) return out;
  if (r.mean) out.push_back({"mean", r.mean});
  out.push_back({"rstd", r.rstd});
  return out;
}

R dropoutAddLayerNorm(const CompositeArgs& a) {
  return dropoutAdd(dropout_add_layer_norm(a.tensor(0), a.tensor(1), a.tensor(2), a.tensor(3), a.number("p", 0),
                                           a.dims("normalized_shape"), a.opt(4), a.opt(5), a.number("eps", 1e-5)),
                    a);
}

R dropoutAddRmsNorm(const CompositeArgs& a) {
  return dropoutAdd(dropout_add_rms_norm(a.tensor(0), a.tensor(1), a.tensor(2), a.tensor(3), a.number("p", 0),
                                         a.dims("normalized_shape"), a.opt(4), a.number("eps", 1e-6)),
                    a);
}

R dropoutAddGrads(const DropoutAddNormGrads& g) {
  R r{{"dx", g.dx}, {"dresidual", g.dresidual}};
  if (g.dw) r.push_back({"dw", g.dw});
  if (g.db) r.push_back({"db", g.db});
  return r;
}

R dropoutAddLayerNormBackward(const CompositeArgs& a) {
  return dropoutAddGrads(dropout_add_layer_norm_backward(a.tensor(0), a.opt(1), a.tensor(2), a.tensor(3), a.tensor(4),
                                                         a.tensor(5), a.tensor(6), a.number("p", 0),
                                                         a.dims("normalized_shape"), a.opt(7), a.opt(8)));
}

R dropoutAddRmsNormBackward(const CompositeArgs& a) {
  return dropoutAddGrads(dropout_add_rms_norm_backward(a.tensor(0), a.opt(1), a.tensor(2), a.tensor(3), a.tensor(4),
                                                       a.tensor(5), a.number("p", 0), a.dims("normalized_shape"),
                                                       a.opt(6)));
}

LossReduction lossReduction(const CompositeArgs& a) {
  const std::string r = a.name("reduction", "mean");
  if (r == "none") return LossReduction::None;
  if (r == "sum") return LossReduction::Sum;
  LOOM_USER_CHECK(r == "mean", "{}: reduction `{}` is none of none, mean or sum", a.op, r);
  return LossReduction::Mean;
}

R crossEntropy(const CompositeArgs& a) {
  const int ignore = a.whole("ignore_index", -100);
  const double ls = a.number("label_smoothing", 0);
  auto s = cross_entropy_with_stats(a.tensor(0), a.tensor(1), ignore, ls, lossReduction(a));
  if (a.results == 1) return {{"loss", s.loss}};
  return {{"loss", s.loss}, {"lse", s.lse}};
}

R crossEntropyBackward(const CompositeArgs& a) {
  const int ignore = a.whole("ignore_index", -100);
  return {{"dlogits", cross_entropy_backward(a.tensor(0), a.tensor(1), a.tensor(2), a.tensor(3), ignore,
                                             a.number("label_smoothing", 0), lossReduction(a))}};
}

R lstmCell(const CompositeArgs& a) {
  if (a.results == 2) {
    auto r = lstm_cell(a.tensor(0), a.tensor(1), a.tensor(2), a.opt(3), a.opt(4));
    return {{"hy", r.hy}, {"cy", r.cy}};
  }
  auto r = lstm_cell_with_workspace(a.tensor(0), a.tensor(1), a.tensor(2), a.opt(3), a.opt(4));
  return {{"hy", r.hy}, {"cy", r.cy}, {"workspace", r.workspace}};
}

R gruCell(const CompositeArgs& a) {
  if (a.results == 1) return {{"hy", gru_cell(a.tensor(0), a.tensor(1), a.tensor(2), a.opt(3), a.opt(4))}};
  auto r = gru_cell_with_workspace(a.tensor(0), a.tensor(1), a.tensor(2), a.opt(3), a.opt(4));
  return {{"hy", r.hy}, {"workspace", r.workspace}};
}

R layerNormBackward(const CompositeArgs& a) {
  return grads(layer_norm_backward(a.tensor(0), a.tensor(1), a.tensor(2), a.tensor(3), a.dims("normalized_shape"),
                                   a.opt(4), a.opt(5)));
}

R rmsNormBackward(const CompositeArgs& a) {
  return grads(rms_norm_backward(a.tensor(0), a.tensor(1), a.tensor(2), a.dims("normalized_shape"), a.opt(3)));
}

R softmaxBackward(const CompositeArgs& a) { return {{"dx", softmax_backward(a.tensor(0), a.tensor(1), a.whole("dim"))}}; }

R logSoftmaxBackward(const CompositeArgs& a) {
  return {{"dx", log_softmax_backward(a.tensor(0), a.tensor(1), a.whole("dim"))}};
}

R groupNormBackward(const CompositeArgs& a) {
  return grads(group_norm_backward(a.tensor(0), a.tensor(1), a.tensor(2), a.tensor(3), a.whole("num_groups"),
                                   a.opt(4)));
}

R batchNormBackward(const CompositeArgs& a) {
  return grads(batch_norm_backward(a.tensor(0), a.tensor(1), a.tensor(2), a.tensor(3), a.opt(4)));
}

R instanceNormBackward(const CompositeArgs& a) {
  return grads(instance_norm_backward(a.tensor(0), a.tensor(1), a.tensor(2), a.tensor(3), a.opt(4)));
}

R layerNorm2dBackward(const CompositeArgs& a) {
  return grads(layer_norm_2d_backward(a.tensor(0), a.tensor(1), a.tensor(2), a.tensor(3), a.opt(4)));
}

R lstmCellBackward(const CompositeArgs& a) {
  auto g = lstm_cell_backward(a.opt(0), a.opt(1), a.tensor(2), a.tensor(3), a.tensor(4), a.flag("has_bias", true));
  R r{{"grad_gates", g.grad_gates}, {"grad_cx", g.grad_cx}};
  if (g.grad_bias) r.push_back({"grad_bias", *g.grad_bias});
  return r;
}

R gruCellBackward(const CompositeArgs& a) {
  auto g = gru_cell_backward(a.tensor(0), a.tensor(1), a.flag("has_bias", true));
  R r{{"grad_input_gates", g.grad_input_gates}, {"grad_hidden_gates", g.grad_hidden_gates}, {"grad_hx", g.grad_hx}};
  if (g.grad_input_bias) r.push_back({"grad_input_bias", *g.grad_input_bias});
  if (g.grad_hidden_bias) r.push_back({"grad_hidden_bias", *g.grad_hidden_bias});
  return r;
}

}  // namespace

const std::vector<CompositeSpec>& composites() {
  static const std::vector<CompositeSpec> specs = {
      {"layer_norm", {"x", "weight?", "bias?"}, {{"normalized_shape", K::Extents, true}, {"eps", K::Number, false}},
       "y; or y, mean, rstd", layerNorm},
      {"rms_norm", {"x", "weight?"}, {{"normalized_shape", K::Extents, true}, {"eps", K::Number, false}},
       "y; or y, rstd", rmsNorm},
      {"group_norm", {"x", "weight?", "bias?"}, {{"num_groups", K::Int, true}, {"eps", K::Number, false}},
       "y; or y, mean, rstd", groupNorm},
      {"batch_norm", {"x", "running_mean?", "running_var?", "weight?", "bias?"},
       {{"training", K::Bool, false}, {"momentum", K::Number, false}, {"eps", K::Number, false}},
       "y, then running_mean and running_var updated where given (training); or those and save_mean, save_invstd",
       batchNorm},
      {"instance_norm", {"x", "weight?", "bias?"}, {{"eps", K::Number, false}}, "y; or y, mean, rstd", instanceNorm},
      {"layer_norm_2d", {"x", "weight?", "bias?"}, {{"eps", K::Number, false}}, "y; or y, mean, rstd", layerNorm2d},
      {"softmax", {"x"}, {{"dim", K::Int, true}}, "y", softmaxOp},
      {"log_softmax", {"x"}, {{"dim", K::Int, true}}, "y", logSoftmaxOp},
      {"dropout_add_layer_norm", {"x", "residual", "seed", "offset", "weight?", "bias?"},
       {{"p", K::Number, true}, {"normalized_shape", K::Extents, true}, {"eps", K::Number, false}},
       "y, sum; or y, sum, mean, rstd", dropoutAddLayerNorm},
      {"dropout_add_rms_norm", {"x", "residual", "seed", "offset", "weight?"},
       {{"p", K::Number, true}, {"normalized_shape", K::Extents, true}, {"eps", K::Number, false}},
       "y, sum; or y, sum, rstd", dropoutAddRmsNorm},
      {"dropout_add_layer_norm_backward",
       {"dy", "dsum?", "sum", "mean", "rstd", "seed", "offset", "weight?", "bias?"},
       {{"p", K::Number, true}, {"normalized_shape", K::Extents, true}},
       "dx, dresidual, dw where weight is given, db where bias is given", dropoutAddLayerNormBackward},
      {"dropout_add_rms_norm_backward", {"dy", "dsum?", "sum", "rstd", "seed", "offset", "weight?"},
       {{"p", K::Number, true}, {"normalized_shape", K::Extents, true}},
       "dx, dresidual, dw where weight is given", dropoutAddRmsNormBackward},
      {"cross_entropy", {"logits", "target"},
       {{"ignore_index", K::Int, false}, {"label_smoothing", K::Number, false}, {"reduction", K::Name, false}},
       "loss; or loss, lse", crossEntropy},
      {"cross_entropy_backward", {"dloss", "logits", "target", "lse"},
       {{"ignore_index", K::Int, false}, {"label_smoothing", K::Number, false}, {"reduction", K::Name, false}},
       "dlogits", crossEntropyBackward},
      {"lstm_cell", {"input_gates", "hidden_gates", "cx", "input_bias?", "hidden_bias?"}, {},
       "hy, cy; or hy, cy, workspace", lstmCell},
      {"gru_cell", {"input_gates", "hidden_gates", "hx", "input_bias?", "hidden_bias?"}, {}, "hy; or hy, workspace",
       gruCell},
      {"layer_norm_backward", {"dy", "x", "mean", "rstd", "weight?", "bias?"},
       {{"normalized_shape", K::Extents, true}}, "dx, dw where weight is given, db where bias is given",
       layerNormBackward},
      {"rms_norm_backward", {"dy", "x", "rstd", "weight?"}, {{"normalized_shape", K::Extents, true}},
       "dx, dw where weight is given", rmsNormBackward},
      {"softmax_backward", {"dy", "y"}, {{"dim", K::Int, true}}, "dx", softmaxBackward},
      {"log_softmax_backward", {"dy", "y"}, {{"dim", K::Int, true}}, "dx", logSoftmaxBackward},
      {"group_norm_backward", {"dy", "x", "mean", "rstd", "weight?"}, {{"num_groups", K::Int, true}},
       "dx, dw where weight is given, db", groupNormBackward},
      {"batch_norm_backward", {"dy", "x", "save_mean", "save_invstd", "weight?"}, {},
       "dx, dw where weight is given, db", batchNormBackward},
      {"instance_norm_backward", {"dy", "x", "mean", "rstd", "weight?"}, {}, "dx, dw where weight is given, db",
       instanceNormBackward},
      {"layer_norm_2d_backward", {"dy", "x", "mean", "rstd", "weight?"}, {}, "dx, dw where weight is given, db",
       layerNorm2dBackward},
      {"lstm_cell_backward", {"dhy?", "dcy?", "cx", "cy", "workspace"}, {{"has_bias", K::Bool, false}},
       "grad_gates, grad_cx, and grad_bias with has_bias (the default)", lstmCellBackward},
      {"gru_cell_backward", {"dhy", "workspace"}, {{"has_bias", K::Bool, false}},
       "grad_input_gates, grad_hidden_gates, grad_hx, and grad_input_bias, grad_hidden_bias with has_bias "
       "(the default)",
       gruCellBackward},
  };
  return specs;
}

const CompositeSpec* findComposite(std::string_view name) {
  const auto& all = composites();
  auto it = std::find_if(all.begin(), all.end(), [&](const CompositeSpec& s) { return s.name == name; });
  return it == all.end() ? nullptr : &*it;
}

}  // namespace loom::text
