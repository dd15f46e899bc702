#include "autograd.h"

#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>

#include "dispatch.h"
#include "runner.h"

namespace loom_torch {

using torch::autograd::SavedVariable;
using torch::autograd::variable_list;

bool allPlain(std::initializer_list<const at::Tensor*> ts) {
  for (const at::Tensor* t : ts)
    if (t && t->defined() && !plainCuda(*t)) return false;
  return true;
}

namespace {

at::Tensor orUndefined(const OptT& t) { return t ? *t : at::Tensor(); }
OptT given(const at::Tensor& t) { return t.defined() ? OptT(t) : std::nullopt; }

// A norm's node in the autograd graph, written as PyTorch's generated nodes are (not through
// torch::autograd::Function, whose bookkeeping costs more host time a call than the kernel's
// launch): the tensors the backward reads, and the op's parameters in the subclass. Its next
// edges are x, w and b (those the norm takes).
struct NormNode : torch::autograd::Node {
  SavedVariable x, mean, rstd, w, b;

  // The backward op: (dx, dw, db) from dy and the saved tensors.
  virtual Three backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                         const OptT& w, const OptT& b) = 0;

  variable_list apply(variable_list&& grads) override {
    variable_list out(num_outputs());
    if (!grads[0].defined()) return out;
    // loom's backward kernels have no derivative of their own: a double backward is refused.
    TORCH_CHECK(!at::GradMode::is_enabled(), name(), ": loom's norms are differentiable once (no double backward or "
                "create_graph=True through them); PyTorch's own modules are, for a gradient penalty");
    at::Tensor xs = x.unpack(), ws = w.unpack(), bs = b.unpack();
    auto [dx, dw, db] = backward(grads[0], xs, mean.unpack(), rstd.unpack(), given(ws), given(bs));
    out[0] = dx;
    if (out.size() > 1 && ws.defined()) out[1] = dw;
    if (out.size() > 2 && bs.defined()) out[2] = db;
    return out;
  }
  void release_variables() override {
    for (SavedVariable* s : {&x, &mean, &rstd, &w, &b}) s->reset_data();
  }
};

// Runs `forward` below autograd (it returns y and the statistics) and, where a gradient is
// wanted, hangs a new Node on y: the statistics carry no gradient.
template <class Node, class Fwd, class Setup>
std::vector<at::Tensor> recorded(const at::Tensor& x, const OptT& w, const OptT& b, bool takesBias, Fwd&& forward,
                                 Setup&& setup) {
  const bool wanted = torch::autograd::compute_requires_grad(x, w, b);
  std::vector<at::Tensor> out;
  {
    at::AutoDispatchBelowADInplaceOrView guard;
    auto [y, mean, rstd] = forward();
    out = {y, mean, rstd};
  }
  if (!wanted) return out;
  std::shared_ptr<Node> node(new Node(), torch::autograd::deleteNode);
  setup(*node);
  node->set_next_edges(takesBias ? torch::autograd::collect_next_edges(x, orUndefined(w), orUndefined(b))
                                 : torch::autograd::collect_next_edges(x, orUndefined(w)));
  node->x = SavedVariable(x, false);
  node->w = SavedVariable(orUndefined(w), false);
  node->b = SavedVariable(orUndefined(b), false);
  node->mean = SavedVariable(out[1], false);
  node->rstd = SavedVariable(out[2], false);
  torch::autograd::set_history(out[0], node);
  return out;
}

using ThreeSig = Three(const at::Tensor&, const OptT&, const OptT&, double, c10::string_view);
using ThreeBwdSig = Three(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&, const OptT&,
                          const OptT&, c10::string_view);

// The backward ops' plain-tensor kernels are called directly; other tensors go through the
// dispatcher (which AOT autograd traces).
bool plainBackward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& m, const at::Tensor& r, const OptT& w,
                   const OptT& b) {
  return allPlain({&dy, &x, &m, &r, opt(w), opt(b)});
}

struct LayerNormNode : NormNode {
  std::string act;
  std::string name() const override { return "loom::layer_norm_backward"; }
  Three backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& m, const at::Tensor& r, const OptT& w,
                 const OptT& b) override {
    if (plainBackward(dy, x, m, r, w, b)) return layerNormBackward(dy, x, m, r, w, b, act);
    static auto op = handle<ThreeBwdSig>("loom::layer_norm_backward");
    return op.call(dy, x, m, r, w, b, act);
  }
};

struct RmsNormNode : NormNode {
  std::string name() const override { return "loom::rms_norm_backward"; }
  Three backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor&, const at::Tensor& r, const OptT& w,
                 const OptT&) override {
    using Sig = std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const at::Tensor&, const at::Tensor&, const OptT&);
    static auto op = handle<Sig>("loom::rms_norm_backward");
    auto [dx, dw] = allPlain({&dy, &x, &r, opt(w)}) ? rmsNormBackward(dy, x, r, w) : op.call(dy, x, r, w);
    return {dx, dw, at::Tensor()};
  }
};

struct GroupNormNode : NormNode {
  std::string act;
  int64_t groups = 1;
  std::string name() const override { return "loom::group_norm_backward"; }
  Three backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& m, const at::Tensor& r, const OptT& w,
                 const OptT& b) override {
    if (plainBackward(dy, x, m, r, w, b)) return groupNormBackward(dy, x, m, r, w, b, groups, act);
    static auto op = handle<Three(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                  const OptT&, const OptT&, int64_t, c10::string_view)>("loom::group_norm_backward");
    return op.call(dy, x, m, r, w, b, groups, act);
  }
};

struct InstanceNormNode : NormNode {
  std::string name() const override { return "loom::instance_norm_backward"; }
  Three backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& m, const at::Tensor& r, const OptT& w,
                 const OptT&) override {
    if (plainBackward(dy, x, m, r, w, std::nullopt)) return instanceNormBackward(dy, x, m, r, w);
    static auto op = handle<Three(const at::Tensor&, const at::Tensor&, const at::Tensor&, const at::Tensor&,
                                  const OptT&)>("loom::instance_norm_backward");
    return op.call(dy, x, m, r, w);
  }
};

struct LayerNorm2dNode : NormNode {
  std::string act;
  std::string name() const override { return "loom::layer_norm_2d_backward"; }
  Three backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& m, const at::Tensor& r, const OptT& w,
                 const OptT& b) override {
    if (plainBackward(dy, x, m, r, w, b)) return layerNorm2dBackward(dy, x, m, r, w, b, act);
    static auto op = handle<ThreeBwdSig>("loom::layer_norm_2d_backward");
    return op.call(dy, x, m, r, w, b, act);
  }
};

struct BatchNormNode : NormNode {
  std::string act;
  std::string name() const override { return "loom::batch_norm_backward"; }
  Three backward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& m, const at::Tensor& r, const OptT& w,
                 const OptT& b) override {
    if (plainBackward(dy, x, m, r, w, b)) return batchNormBackward(dy, x, m, r, w, b, act);
    static auto op = handle<ThreeBwdSig>("loom::batch_norm_backward");
    return op.call(dy, x, m, r, w, b, act);
  }
};

// The node's parameters: its activation, or nothing.
auto withAct(const std::string& act) {
  return [&act](auto& node) { node.act = act; };
}
auto nothing() {
  return [](NormNode&) {};
}

}  // namespace

std::vector<at::Tensor> layerNormGrad(const at::Tensor& x, const OptT& w, const OptT& b, double eps,
                                      const std::string& act) {
  auto fwd = [&]() -> Three {
    if (allPlain({&x, opt(w), opt(b)})) return layerNorm(x, w, b, eps, act, true);
    static auto op = handle<ThreeSig>("loom::layer_norm");
    return op.call(x, w, b, eps, act);
  };
  return recorded<LayerNormNode>(x, w, b, true, fwd, withAct(act));
}

std::vector<at::Tensor> rmsNormGrad(const at::Tensor& x, const OptT& w, double eps) {
  auto fwd = [&]() -> Three {
    static auto op = handle<std::tuple<at::Tensor, at::Tensor>(const at::Tensor&, const OptT&, double)>("loom::rms_norm");
    auto [y, rstd] = allPlain({&x, opt(w)}) ? rmsNorm(x, w, eps, true) : op.call(x, w, eps);
    return {y, at::Tensor(), rstd};
  };
  auto out = recorded<RmsNormNode>(x, w, std::nullopt, false, fwd, nothing());
  return {out[0], out[2]};
}

std::vector<at::Tensor> groupNormGrad(const at::Tensor& x, const OptT& w, const OptT& b, int64_t groups, double eps,
                                      const std::string& act) {
  auto fwd = [&]() -> Three {
    if (allPlain({&x, opt(w), opt(b)})) return groupNorm(x, w, b, groups, eps, act, true);
    static auto op = handle<Three(const at::Tensor&, const OptT&, const OptT&, int64_t, double, c10::string_view)>(
        "loom::group_norm");
    return op.call(x, w, b, groups, eps, act);
  };
  return recorded<GroupNormNode>(x, w, b, true, fwd, [&](GroupNormNode& node) {
    node.act = act;
    node.groups = groups;
  });
}

std::vector<at::Tensor> instanceNormGrad(const at::Tensor& x, const OptT& w, const OptT& b, double eps) {
  auto fwd = [&]() -> Three {
    if (allPlain({&x, opt(w), opt(b)})) return instanceNorm(x, w, b, eps, true);
    static auto op = handle<Three(const at::Tensor&, const OptT&, const OptT&, double)>("loom::instance_norm");
    return op.call(x, w, b, eps);
  };
  return recorded<InstanceNormNode>(x, w, b, true, fwd, nothing());
}

std::vector<at::Tensor> layerNorm2dGrad(const at::Tensor& x, const OptT& w, const OptT& b, double eps,
                                        const std::string& act) {
  auto fwd = [&]() -> Three {
    if (allPlain({&x, opt(w), opt(b)})) return layerNorm2d(x, w, b, eps, act, true);
    static auto op = handle<ThreeSig>("loom::layer_norm_2d");
    return op.call(x, w, b, eps, act);
  };
  return recorded<LayerNorm2dNode>(x, w, b, true, fwd, withAct(act));
}

std::vector<at::Tensor> batchNormGrad(const at::Tensor& x, const OptT& rm, const OptT& rv, const OptT& w,
                                      const OptT& b, const OptT& nbt, double momentum, double eps,
                                      const std::string& act) {
  using Sig = Three(const at::Tensor&, const OptT&, const OptT&, const OptT&, const OptT&, const OptT&, double, double,
                    c10::string_view);
  auto fwd = [&]() -> Three {
    if (allPlain({&x, opt(rm), opt(rv), opt(w), opt(b), opt(nbt)}))
      return batchNorm(x, rm, rv, w, b, nbt, momentum, eps, act, true);
    static auto op = handle<Sig>("loom::batch_norm");
    return op.call(x, rm, rv, w, b, nbt, momentum, eps, act);
  };
  return recorded<BatchNormNode>(x, w, b, true, fwd, withAct(act));
}

}  // namespace loom_torch
