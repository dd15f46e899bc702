// The loom.torch extension: loom's norms and any fusion as PyTorch ops (TORCH_LIBRARY `loom`:
// CUDA kernels over at::Tensors, Autograd kernels through loom's backward ops; fakes are
// registered from Python), and eager entry points that skip the dispatcher for plain CUDA
// tensors.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/extension.h>
#include <torch/library.h>

#include <loom/error.h>

#include "autograd.h"
#include "dispatch.h"
#include "norm_ops.h"
#include "runner.h"

namespace loom_torch {
namespace {

using Str = c10::string_view;

bool wantsGrad(std::initializer_list<const at::Tensor*> ts) {
  if (!at::GradMode::is_enabled()) return false;
  for (const at::Tensor* t : ts)
    if (t && t->defined() && t->requires_grad()) return true;
  return false;
}

Three tuple3(const std::vector<at::Tensor>& v) { return {v[0], v[1], v[2]}; }
Three nonNull(Three t, const at::Tensor& x) {
  auto fill = [&](at::Tensor& s) {
    if (!s.defined()) s = at::empty({0}, x.options());
  };
  fill(std::get<1>(t));
  fill(std::get<2>(t));
  return t;
}

// ---- the ops' CUDA kernels (the dispatcher's; statistics always) ----

Three cudaLayerNorm(const at::Tensor& x, const OptT& w, const OptT& b, double eps, Str act) {
  return layerNorm(x, w, b, eps, std::string(act), true);
}
std::tuple<at::Tensor, at::Tensor> cudaRmsNorm(const at::Tensor& x, const OptT& w, double eps) {
  return rmsNorm(x, w, eps, true);
}
Three cudaGroupNorm(const at::Tensor& x, const OptT& w, const OptT& b, int64_t groups, double eps, Str act) {
  return groupNorm(x, w, b, groups, eps, std::string(act), true);
}
Three cudaInstanceNorm(const at::Tensor& x, const OptT& w, const OptT& b, double eps) {
  return instanceNorm(x, w, b, eps, true);
}
Three cudaLayerNorm2d(const at::Tensor& x, const OptT& w, const OptT& b, double eps, Str act) {
  return layerNorm2d(x, w, b, eps, std::string(act), true);
}
Three cudaBatchNorm(const at::Tensor& x, const OptT& rm, const OptT& rv, const OptT& w, const OptT& b, const OptT& nbt,
                    double momentum, double eps, Str act) {
  return nonNull(batchNorm(x, rm, rv, w, b, nbt, momentum, eps, std::string(act), true), x);
}
Three cudaLayerNormBackward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& m, const at::Tensor& r,
                            const OptT& w, const OptT& b, Str act) {
  return layerNormBackward(dy, x, m, r, w, b, std::string(act));
}
Three cudaGroupNormBackward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& m, const at::Tensor& r,
                            const OptT& w, const OptT& b, int64_t groups, Str act) {
  return groupNormBackward(dy, x, m, r, w, b, groups, std::string(act));
}
Three cudaLayerNorm2dBackward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& m, const at::Tensor& r,
                              const OptT& w, const OptT& b, Str act) {
  return layerNorm2dBackward(dy, x, m, r, w, b, std::string(act));
}
Three cudaBatchNormBackward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& m, const at::Tensor& r,
                            const OptT& w, const OptT& b, Str act) {
  return batchNormBackward(dy, x, m, r, w, b, std::string(act));
}

// ---- their Autograd kernels ----

Three gradLayerNorm(const at::Tensor& x, const OptT& w, const OptT& b, double eps, Str act) {
  return tuple3(layerNormGrad(x, w, b, eps, std::string(act)));
}
std::tuple<at::Tensor, at::Tensor> gradRmsNorm(const at::Tensor& x, const OptT& w, double eps) {
  auto v = rmsNormGrad(x, w, eps);
  return {v[0], v[1]};
}
Three gradGroupNorm(const at::Tensor& x, const OptT& w, const OptT& b, int64_t groups, double eps, Str act) {
  return tuple3(groupNormGrad(x, w, b, groups, eps, std::string(act)));
}
Three gradInstanceNorm(const at::Tensor& x, const OptT& w, const OptT& b, double eps) {
  return tuple3(instanceNormGrad(x, w, b, eps));
}
Three gradLayerNorm2d(const at::Tensor& x, const OptT& w, const OptT& b, double eps, Str act) {
  return tuple3(layerNorm2dGrad(x, w, b, eps, std::string(act)));
}
Three gradBatchNorm(const at::Tensor& x, const OptT& rm, const OptT& rv, const OptT& w, const OptT& b, const OptT& nbt,
                    double momentum, double eps, Str act) {
  return tuple3(batchNormGrad(x, rm, rv, w, b, nbt, momentum, eps, std::string(act)));
}

// ---- any fusion, by the number compile_fusion gave it ----

std::mutex g_fusions_mu;
// Never destroyed, as the norms' runners (norm_ops.cpp): they live as long as the process.
std::vector<std::unique_ptr<Runner>>& fusions() {
  static auto& f = *new std::vector<std::unique_ptr<Runner>>;
  return f;
}

Runner& fusionRunner(int64_t id) {
  std::lock_guard<std::mutex> lock(g_fusions_mu);
  TORCH_CHECK(id >= 0 && static_cast<size_t>(id) < fusions().size(), "loom::fusion: no fusion ", id,
              " (compile_fusion gives the numbers)");
  return *fusions()[static_cast<size_t>(id)];
}

std::vector<at::Tensor> cudaFusion(int64_t id, at::TensorList inputs) { return fusionRunner(id).run(inputs); }

// `kind`: "text" (loom's text format), "file" (a path to one), "builtin" (a name; `extra` its
// dtype or ""), "op" (a framework op; `extra` its parameters).
int64_t compileFusion(const std::string& source, const std::string& kind, const std::string& extra) {
  TORCH_CHECK(kind == "text" || kind == "file" || kind == "builtin" || kind == "op", "loom.torch.compile_fusion: kind '",
              kind, "' is not text, file, builtin or op");
  std::optional<loom::DType> dtype;
  if (kind == "builtin" && !extra.empty()) {
    dtype = loom::parseDType(extra);
    TORCH_CHECK(dtype.has_value(), "loom.torch.compile_fusion: dtype '", extra, "' is not f16, bf16, f32 or f64");
  }
  loom::Fusion f = kind == "text"   ? loom::Fusion::parse(source)
                   : kind == "file" ? loom::Fusion::parseFile(source)
                   : kind == "op"   ? loom::Fusion::frameworkOp(source, extra)
                                    : loom::Fusion::builtin(source, dtype);
  auto r = std::make_unique<Runner>(std::move(f));
  std::lock_guard<std::mutex> lock(g_fusions_mu);
  fusions().push_back(std::move(r));
  return static_cast<int64_t>(fusions().size() - 1);
}

py::tuple fusionSignature(int64_t id) {
  const Runner& r = fusionRunner(id);
  return py::make_tuple(r.fusion().name(), r.fusion().inputNames(), r.fusion().outputNames(),
                        r.fusion().outputAliases(), r.fusion().str());
}

py::list fusionSpecs(int64_t id, const std::vector<at::Tensor>& like) {
  py::list out;
  for (const OutSpec& o : fusionRunner(id).specs(like))
    out.append(py::make_tuple(o.shape, o.strides, std::string(loom::dtypeName(loomDtype(o.dtype, "output")))));
  return out;
}

// ---- eager entry points: y alone without a gradient, through autograd with one ----

at::Tensor eagerLayerNorm(const at::Tensor& x, const OptT& w, const OptT& b, double eps, const std::string& act) {
  static auto op = handle<decltype(cudaLayerNorm)>("loom::layer_norm");
  if (!allPlain({&x, opt(w), opt(b)})) return std::get<0>(op.call(x, w, b, eps, act));
  if (wantsGrad({&x, opt(w), opt(b)})) return layerNormGrad(x, w, b, eps, act)[0];
  return std::get<0>(layerNorm(x, w, b, eps, act, false));
}
at::Tensor eagerRmsNorm(const at::Tensor& x, const OptT& w, double eps) {
  static auto op = handle<decltype(cudaRmsNorm)>("loom::rms_norm");
  if (!allPlain({&x, opt(w)})) return std::get<0>(op.call(x, w, eps));
  if (wantsGrad({&x, opt(w)})) return rmsNormGrad(x, w, eps)[0];
  return std::get<0>(rmsNorm(x, w, eps, false));
}
at::Tensor eagerGroupNorm(const at::Tensor& x, const OptT& w, const OptT& b, int64_t groups, double eps,
                          const std::string& act) {
  static auto op = handle<decltype(cudaGroupNorm)>("loom::group_norm");
  if (!allPlain({&x, opt(w), opt(b)})) return std::get<0>(op.call(x, w, b, groups, eps, act));
  if (wantsGrad({&x, opt(w), opt(b)})) return groupNormGrad(x, w, b, groups, eps, act)[0];
  return std::get<0>(groupNorm(x, w, b, groups, eps, act, false));
}
at::Tensor eagerInstanceNorm(const at::Tensor& x, const OptT& w, const OptT& b, double eps) {
  static auto op = handle<decltype(cudaInstanceNorm)>("loom::instance_norm");
  if (!allPlain({&x, opt(w), opt(b)})) return std::get<0>(op.call(x, w, b, eps));
  if (wantsGrad({&x, opt(w), opt(b)})) return instanceNormGrad(x, w, b, eps)[0];
  return std::get<0>(instanceNorm(x, w, b, eps, false));
}
at::Tensor eagerLayerNorm2d(const at::Tensor& x, const OptT& w, const OptT& b, double eps, const std::string& act) {
  static auto op = handle<decltype(cudaLayerNorm2d)>("loom::layer_norm_2d");
  if (!allPlain({&x, opt(w), opt(b)})) return std::get<0>(op.call(x, w, b, eps, act));
  if (wantsGrad({&x, opt(w), opt(b)})) return layerNorm2dGrad(x, w, b, eps, act)[0];
  return std::get<0>(layerNorm2d(x, w, b, eps, act, false));
}
at::Tensor eagerBatchNorm(const at::Tensor& x, const OptT& rm, const OptT& rv, const OptT& w, const OptT& b,
                          const OptT& nbt, double momentum, double eps, const std::string& act) {
  static auto op = handle<decltype(cudaBatchNorm)>("loom::batch_norm");
  if (!allPlain({&x, opt(rm), opt(rv), opt(w), opt(b), opt(nbt)}))
    return std::get<0>(op.call(x, rm, rv, w, b, nbt, momentum, eps, act));
  if (wantsGrad({&x, opt(w), opt(b)})) return batchNormGrad(x, rm, rv, w, b, nbt, momentum, eps, act)[0];
  return std::get<0>(batchNorm(x, rm, rv, w, b, nbt, momentum, eps, act, false));
}

// The backward ops' Autograd kernel: they have no derivative of their own, so a call wanting one
// is refused (not a gradient silently missing); else the op below autograd.
void noDerivative(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  if (at::GradMode::is_enabled())
    for (const c10::IValue& v : *stack)
      TORCH_CHECK(!(v.isTensor() && v.toTensor().requires_grad()), op.schema().name(),
                  " has no derivative: loom's norms are differentiable once (no double backward or "
                  "create_graph=True through them; PyTorch's own modules are, for a gradient penalty)");
  at::AutoDispatchBelowADInplaceOrView guard;
  op.callBoxed(stack);
}

std::vector<at::Tensor> eagerFusion(int64_t id, const std::vector<at::Tensor>& inputs) {
  for (const at::Tensor& t : inputs)
    if (!plainCuda(t)) {
      static auto op = handle<decltype(cudaFusion)>("loom::fusion");
      return op.call(id, inputs);
    }
  return fusionRunner(id).run(inputs);
}

}  // namespace
}  // namespace loom_torch

using namespace loom_torch;

TORCH_LIBRARY(loom, m) {
  m.set_python_module("loom.torch.ops");
  m.def("layer_norm(Tensor x, Tensor? weight, Tensor? bias, float eps, str act='none') -> (Tensor, Tensor, Tensor)");
  m.def("layer_norm_backward(Tensor dy, Tensor x, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, "
        "str act='none') -> (Tensor, Tensor, Tensor)");
  m.def("rms_norm(Tensor x, Tensor? weight, float eps) -> (Tensor, Tensor)");
  m.def("rms_norm_backward(Tensor dy, Tensor x, Tensor rstd, Tensor? weight) -> (Tensor, Tensor)");
  m.def("group_norm(Tensor x, Tensor? weight, Tensor? bias, int groups, float eps, str act='none') -> "
        "(Tensor, Tensor, Tensor)");
  m.def("group_norm_backward(Tensor dy, Tensor x, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, int groups, "
        "str act='none') -> (Tensor, Tensor, Tensor)");
  m.def("instance_norm(Tensor x, Tensor? weight, Tensor? bias, float eps) -> (Tensor, Tensor, Tensor)");
  m.def("instance_norm_backward(Tensor dy, Tensor x, Tensor mean, Tensor rstd, Tensor? weight) -> "
        "(Tensor, Tensor, Tensor)");
  m.def("layer_norm_2d(Tensor x, Tensor? weight, Tensor? bias, float eps, str act='none') -> (Tensor, Tensor, Tensor)");
  m.def("layer_norm_2d_backward(Tensor dy, Tensor x, Tensor mean, Tensor rstd, Tensor? weight, Tensor? bias, "
        "str act='none') -> (Tensor, Tensor, Tensor)");
  m.def("batch_norm(Tensor x, Tensor(a!)? running_mean, Tensor(b!)? running_var, Tensor? weight, Tensor? bias, "
        "Tensor? num_batches_tracked, float momentum, float eps, str act='none') -> (Tensor, Tensor, Tensor)");
  m.def("batch_norm_backward(Tensor dy, Tensor x, Tensor save_mean, Tensor save_invstd, Tensor? weight, "
        "Tensor? bias, str act='none') -> (Tensor, Tensor, Tensor)");
  m.def("fusion(int id, Tensor[] inputs) -> Tensor[]");
}

TORCH_LIBRARY_IMPL(loom, CUDA, m) {
  m.impl("layer_norm", TORCH_FN(cudaLayerNorm));
  m.impl("layer_norm_backward", TORCH_FN(cudaLayerNormBackward));
  m.impl("rms_norm", TORCH_FN(cudaRmsNorm));
  m.impl("rms_norm_backward", TORCH_FN(rmsNormBackward));
  m.impl("group_norm", TORCH_FN(cudaGroupNorm));
  m.impl("group_norm_backward", TORCH_FN(cudaGroupNormBackward));
  m.impl("instance_norm", TORCH_FN(cudaInstanceNorm));
  m.impl("instance_norm_backward", TORCH_FN(instanceNormBackward));
  m.impl("layer_norm_2d", TORCH_FN(cudaLayerNorm2d));
  m.impl("layer_norm_2d_backward", TORCH_FN(cudaLayerNorm2dBackward));
  m.impl("batch_norm", TORCH_FN(cudaBatchNorm));
  m.impl("batch_norm_backward", TORCH_FN(cudaBatchNormBackward));
  m.impl("fusion", TORCH_FN(cudaFusion));
}

TORCH_LIBRARY_IMPL(loom, Autograd, m) {
  m.impl("layer_norm", TORCH_FN(gradLayerNorm));
  m.impl("rms_norm", TORCH_FN(gradRmsNorm));
  m.impl("group_norm", TORCH_FN(gradGroupNorm));
  m.impl("instance_norm", TORCH_FN(gradInstanceNorm));
  m.impl("layer_norm_2d", TORCH_FN(gradLayerNorm2d));
  m.impl("batch_norm", TORCH_FN(gradBatchNorm));
  for (const char* op : {"layer_norm_backward", "rms_norm_backward", "group_norm_backward", "instance_norm_backward",
                         "layer_norm_2d_backward", "batch_norm_backward"})
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<&noDerivative>());
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const c10::ValueError& e) {
      PyErr_SetString(PyExc_ValueError, e.what_without_backtrace());
    } catch (const c10::Error& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what_without_backtrace());
    }
  });
  m.def("layer_norm", &eagerLayerNorm);
  m.def("rms_norm", &eagerRmsNorm);
  m.def("group_norm", &eagerGroupNorm);
  m.def("instance_norm", &eagerInstanceNorm);
  m.def("layer_norm_2d", &eagerLayerNorm2d);
  m.def("batch_norm", &eagerBatchNorm);
  m.def("run_fusion", &eagerFusion);
  m.def("compile_fusion", &compileFusion);
  m.def("fusion_signature", &fusionSignature);
  m.def("fusion_specs", &fusionSpecs);
}
