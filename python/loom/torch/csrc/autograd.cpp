#include "autograd.h"

#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/autograd.h>

#include "runner.h"

namespace loom_torch {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

bool allPlain(std::initializer_list<const at::Tensor*> ts) {
  for (const at::Tensor* t : ts)
    if (t && t->defined() && !plainCuda(*t)) return false;
  return true;
}

namespace {

const at::Tensor* opt(const OptT& t) { return t ? &*t : nullptr; }
at::Tensor orUndefined(const OptT& t) { return t ? *t : at::Tensor(); }
OptT given(const at::Tensor& t) { return t.defined() ? OptT(t) : std::nullopt; }

// loom's backward kernels have no derivative of their own: a double backward is refused.
void onceDifferentiable(const char* op) {
  TORCH_CHECK(!at::GradMode::is_enabled(), "loom::", op, " is differentiable once: loom's norms take no double "
              "backward (create_graph=True through them); PyTorch's own modules do, for a gradient penalty");
}

// An op through the dispatcher (below autograd: the caller holds AutoDispatchBelowADInplaceOrView).
template <class Sig>
c10::TypedOperatorHandle<Sig> handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}

using ThreeSig = Three(const at::Tensor&, const OptT&, const OptT&, double, c10::string_view);
using ThreeBwdSig = Three(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const OptT&,
                          const OptT&, c10::string_view);

// Grads of the inputs a backward returns, undefined where the input was not given (or is
// not a tensor).
at::Tensor gradIf(bool given, const at::Tensor& g) { return given ? g : at::Tensor(); }

struct LayerNormFn : torch::autograd::Function<LayerNormFn> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const OptT& w, const OptT& b, double eps,
                               std::string act) {
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = handle<ThreeSig>("loom::layer_norm");
    auto [y, mean, rstd] = allPlain({&x, opt(w), opt(b)}) ? layerNorm(x, w, b, eps, act, true) : op.call(x, w, b, eps, act);
    ctx->save_for_backward({x, orUndefined(w), orUndefined(b), mean, rstd});
    ctx->saved_data["act"] = act;
    ctx->mark_non_differentiable({mean, rstd});
    return {y, mean, rstd};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    if (!g[0].defined()) return {at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor(), at::Tensor()};
    onceDifferentiable("layer_norm_backward");
    auto s = ctx->get_saved_variables();
    const std::string act = ctx->saved_data["act"].toStringRef();
    static auto op = handle<ThreeBwdSig>("loom::layer_norm_backward");
    auto [dx, dw, db] = op.call(g[0], s[0], s[3], s[4], given(s[1]), given(s[2]), act);
    return {dx, gradIf(s[1].defined(), dw), gradIf(s[2].defined(), db), at::Tensor(), at::Tensor()};
  }
};

struct RmsNormFn : torch::autograd::Function<RmsNormFn> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const OptT& w, double eps) {
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = handle<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const OptT&, double)>("loom::rms_norm");
    auto [y, rstd] = allPlain({&x, opt(w)}) ? rmsNorm(x, w, eps, true) : op.call(x, w, eps);
    ctx->save_for_backward({x, orUndefined(w), rstd});
    ctx->mark_non_differentiable({rstd});
    return {y, rstd};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    if (!g[0].defined()) return {at::Tensor(), at::Tensor(), at::Tensor()};
    onceDifferentiable("rms_norm_backward");
    auto s = ctx->get_saved_variables();
    static auto op = handle<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                                                const OptT&)>("loom::rms_norm_backward");
    auto [dx, dw] = op.call(g[0], s[0], s[2], given(s[1]));
    return {dx, gradIf(s[1].defined(), dw), at::Tensor()};
  }
};

// The norms over channels share their backward's shape: (dy, x, mean, rstd, w, b, act), with
// group norm's groups between.
struct GroupNormFn : torch::autograd::Function<GroupNormFn> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const OptT& w, const OptT& b, int64_t groups,
                               double eps, std::string act) {
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = handle<Three(const at::Tensor&, const OptT&, const OptT&, int64_t, double, c10::string_view)>(
        "loom::group_norm");
    auto [y, mean, rstd] = allPlain({&x, opt(w), opt(b)}) ? groupNorm(x, w, b, groups, eps, act, true)
                                                          : op.call(x, w, b, groups, eps, act);
    ctx->save_for_backward({x, orUndefined(w), orUndefined(b), mean, rstd});
    ctx->saved_data["act"] = act;
    ctx->saved_data["groups"] = groups;
    ctx->mark_non_differentiable({mean, rstd});
    return {y, mean, rstd};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    if (!g[0].defined()) return variable_list(6);
    onceDifferentiable("group_norm_backward");
    auto s = ctx->get_saved_variables();
    static auto op = handle<Three(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                  const OptT&, const OptT&, int64_t, c10::string_view)>("loom::group_norm_backward");
    auto [dx, dw, db] = op.call(g[0], s[0], s[3], s[4], given(s[1]), given(s[2]), ctx->saved_data["groups"].toInt(),
                                ctx->saved_data["act"].toStringRef());
    return {dx, gradIf(s[1].defined(), dw), gradIf(s[2].defined(), db), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

struct InstanceNormFn : torch::autograd::Function<InstanceNormFn> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const OptT& w, const OptT& b, double eps) {
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = handle<Three(const at::Tensor&, const OptT&, const OptT&, double)>("loom::instance_norm");
    auto [y, mean, rstd] = allPlain({&x, opt(w), opt(b)}) ? instanceNorm(x, w, b, eps, true) : op.call(x, w, b, eps);
    ctx->save_for_backward({x, orUndefined(w), orUndefined(b), mean, rstd});
    ctx->mark_non_differentiable({mean, rstd});
    return {y, mean, rstd};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    if (!g[0].defined()) return variable_list(4);
    onceDifferentiable("instance_norm_backward");
    auto s = ctx->get_saved_variables();
    static auto op = handle<Three(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                  const OptT&)>("loom::instance_norm_backward");
    auto [dx, dw, db] = op.call(g[0], s[0], s[3], s[4], given(s[1]));
    return {dx, gradIf(s[1].defined(), dw), gradIf(s[2].defined(), db), at::Tensor()};
  }
};

struct LayerNorm2dFn : torch::autograd::Function<LayerNorm2dFn> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const OptT& w, const OptT& b, double eps,
                               std::string act) {
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = handle<ThreeSig>("loom::layer_norm_2d");
    auto [y, mean, rstd] = allPlain({&x, opt(w), opt(b)}) ? layerNorm2d(x, w, b, eps, act, true) : op.call(x, w, b, eps, act);
    ctx->save_for_backward({x, orUndefined(w), orUndefined(b), mean, rstd});
    ctx->saved_data["act"] = act;
    ctx->mark_non_differentiable({mean, rstd});
    return {y, mean, rstd};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    if (!g[0].defined()) return variable_list(5);
    onceDifferentiable("layer_norm_2d_backward");
    auto s = ctx->get_saved_variables();
    static auto op = handle<ThreeBwdSig>("loom::layer_norm_2d_backward");
    auto [dx, dw, db] = op.call(g[0], s[0], s[3], s[4], given(s[1]), given(s[2]), ctx->saved_data["act"].toStringRef());
    return {dx, gradIf(s[1].defined(), dw), gradIf(s[2].defined(), db), at::Tensor(), at::Tensor()};
  }
};

using BatchNormSig = Three(const at::Tensor&, const OptT&, const OptT&, const OptT&, const OptT&, const OptT&, double,
                           double, c10::string_view);

struct BatchNormFn : torch::autograd::Function<BatchNormFn> {
  static variable_list forward(AutogradContext* ctx, const at::Tensor& x, const OptT& rm, const OptT& rv, const OptT& w,
                               const OptT& b, const OptT& nbt, double momentum, double eps, std::string act) {
    at::AutoDispatchBelowADInplaceOrView guard;
    static auto op = handle<BatchNormSig>("loom::batch_norm");
    auto [y, mean, invstd] = allPlain({&x, opt(rm), opt(rv), opt(w), opt(b), opt(nbt)})
                                 ? batchNorm(x, rm, rv, w, b, nbt, momentum, eps, act, true)
                                 : op.call(x, rm, rv, w, b, nbt, momentum, eps, act);
    ctx->save_for_backward({x, orUndefined(w), orUndefined(b), mean, invstd});
    ctx->saved_data["act"] = act;
    ctx->mark_non_differentiable({mean, invstd});
    return {y, mean, invstd};
  }
  static variable_list backward(AutogradContext* ctx, variable_list g) {
    if (!g[0].defined()) return variable_list(9);
    onceDifferentiable("batch_norm_backward");
    auto s = ctx->get_saved_variables();
    static auto op = handle<ThreeBwdSig>("loom::batch_norm_backward");
    auto [dx, dw, db] = op.call(g[0], s[0], s[3], s[4], given(s[1]), given(s[2]), ctx->saved_data["act"].toStringRef());
    variable_list out(9);
    out[0] = dx;
    out[3] = gradIf(s[1].defined(), dw);
    out[4] = gradIf(s[2].defined(), db);
    return out;
  }
};

}  // namespace

std::vector<at::Tensor> layerNormGrad(const at::Tensor& x, const OptT& w, const OptT& b, double eps,
                                      const std::string& act) {
  return LayerNormFn::apply(x, w, b, eps, act);
}
std::vector<at::Tensor> rmsNormGrad(const at::Tensor& x, const OptT& w, double eps) {
  return RmsNormFn::apply(x, w, eps);
}
std::vector<at::Tensor> groupNormGrad(const at::Tensor& x, const OptT& w, const OptT& b, int64_t groups, double eps,
                                      const std::string& act) {
  return GroupNormFn::apply(x, w, b, groups, eps, act);
}
std::vector<at::Tensor> instanceNormGrad(const at::Tensor& x, const OptT& w, const OptT& b, double eps) {
  return InstanceNormFn::apply(x, w, b, eps);
}
std::vector<at::Tensor> layerNorm2dGrad(const at::Tensor& x, const OptT& w, const OptT& b, double eps,
                                        const std::string& act) {
  return LayerNorm2dFn::apply(x, w, b, eps, act);
}
std::vector<at::Tensor> batchNormGrad(const at::Tensor& x, const OptT& running_mean, const OptT& running_var,
                                      const OptT& w, const OptT& b, const OptT& num_batches_tracked, double momentum,
                                      double eps, const std::string& act) {
  return BatchNormFn::apply(x, running_mean, running_var, w, b, num_batches_tracked, momentum, eps, act);
}

}  // namespace loom_torch
