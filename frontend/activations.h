#pragma once
// The activations a norm module may end in (timm's *Act norms: BatchNormAct2d, GroupNormAct,
// LayerNormAct, ...), applied inside the norm's fusion, and their gradients for its backward.
#include <string>

#include <loom/builder.h>

namespace loom {

#define LOOM_ACTIVATIONS(X) X(none) X(relu) X(silu) X(gelu) X(gelu_tanh) X(sigmoid) X(tanh)

enum class Activation {
#define LOOM_ACT_ENUM(n) n,
  LOOM_ACTIVATIONS(LOOM_ACT_ENUM)
#undef LOOM_ACT_ENUM
};

// `name` as an Activation; a loom::Error naming `op` and the known names otherwise.
Activation parseActivation(const std::string& op, const std::string& name);

// act(z), in z's dtype (the caller casts).
Tensor applyActivation(Tensor z, Activation a);
// dy * act'(z): the gradient at the activation's input z (compute dtype).
Tensor activationGrad(Tensor dy, Tensor z, Activation a);

}  // namespace loom
