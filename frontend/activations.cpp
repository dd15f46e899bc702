#include "frontend/activations.h"

#include <cmath>

#include "ir/error.h"

namespace loom {

Activation parseActivation(const std::string& op, const std::string& name) {
#define LOOM_ACT_PARSE(n) \
  if (name == #n) return Activation::n;
  LOOM_ACTIVATIONS(LOOM_ACT_PARSE)
#undef LOOM_ACT_PARSE
  fail("op `{}`: act={} is not an activation loom fuses (none, relu, silu, gelu, gelu_tanh, sigmoid, tanh)", op,
       name);
}

Tensor applyActivation(Tensor z, Activation a) {
  switch (a) {
    case Activation::none: return z;
    case Activation::relu: return relu(z);
    case Activation::silu: return silu(z);
    case Activation::gelu: return gelu(z, "none");
    case Activation::gelu_tanh: return gelu(z, "tanh");
    case Activation::sigmoid: return sigmoid(z);
    case Activation::tanh: return tanh(z);
  }
  return z;
}

Tensor activationGrad(Tensor dy, Tensor z, Activation a) {
  switch (a) {
    case Activation::none: return dy;
    case Activation::relu: return where(gt(z, 0.0), dy, 0.0);  // PyTorch's threshold_backward: 0 at z = 0
    case Activation::silu: {
      Tensor s = sigmoid(z);
      return dy * s * (1.0 + z * (1.0 - s));
    }
    case Activation::gelu: {  // Phi(z) + z * phi(z)
      const double inv_sqrt2 = 1.0 / std::sqrt(2.0), inv_sqrt_2pi = 1.0 / std::sqrt(2.0 * M_PI);
      Tensor cdf = 0.5 * (1.0 + erf(z * inv_sqrt2));
      return dy * (cdf + z * exp(-0.5 * z * z) * inv_sqrt_2pi);
    }
    case Activation::gelu_tanh: {
      const double k = std::sqrt(2.0 / M_PI), c = 0.044715;
      Tensor t = tanh(k * (z + c * z * z * z));
      return dy * (0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * k * (1.0 + 3.0 * c * z * z));
    }
    case Activation::sigmoid: {
      Tensor s = sigmoid(z);
      return dy * s * (1.0 - s);
    }
    case Activation::tanh: {
      Tensor t = tanh(z);
      return dy * (1.0 - t * t);
    }
  }
  return dy;
}

}  // namespace loom
