#pragma once
// Composite ops built from loom's primitives, with the arguments a PyTorch user knows. Mixed
// precision is AMP's: f16/bf16 tensors are read, math runs in f32, results are cast back to the
// input's dtype. Statistics use Welford var_mean, never sum / sum-of-squares.
#include <optional>
#include <vector>

#include "frontend/builder.h"

namespace loom {

// torch.nn.functional.layer_norm: normalizes over the trailing dims given by normalized_shape.
Tensor layer_norm(Tensor x, const std::vector<Dim>& normalized_shape,
                  std::optional<Tensor> weight = std::nullopt,
                  std::optional<Tensor> bias = std::nullopt, double eps = 1e-5);

// torch.nn.functional.rms_norm: x * rsqrt(mean(x^2) + eps) * weight.
Tensor rms_norm(Tensor x, const std::vector<Dim>& normalized_shape,
                std::optional<Tensor> weight = std::nullopt, double eps = 1e-6);

// torch.nn.functional.group_norm on [N, C, *spatial]; weight and bias are [C].
Tensor group_norm(Tensor x, int num_groups, std::optional<Tensor> weight = std::nullopt,
                  std::optional<Tensor> bias = std::nullopt, double eps = 1e-5);

struct BatchNormResult {
  Tensor y;
  Tensor running_mean, running_var;  // updated statistics (training); write back in place
};
// torch.nn.functional.batch_norm on [N, C, *spatial]. Training normalizes with the batch
// statistics and returns the running statistics updated with `momentum` (running_var takes
// the unbiased batch variance, as PyTorch does). Inference normalizes with the running ones.
BatchNormResult batch_norm(Tensor x, Tensor running_mean, Tensor running_var,
                           std::optional<Tensor> weight, std::optional<Tensor> bias, bool training,
                           double momentum = 0.1, double eps = 1e-5);

// torch.nn.functional.instance_norm (use_input_stats=True) on [N, C, *spatial].
Tensor instance_norm(Tensor x, std::optional<Tensor> weight = std::nullopt,
                     std::optional<Tensor> bias = std::nullopt, double eps = 1e-5);

Tensor softmax(Tensor x, int dim);
Tensor log_softmax(Tensor x, int dim);

// timm's LayerNorm2d: layer norm over the channel dim of an NCHW tensor, weight/bias [C].
Tensor layer_norm_2d(Tensor x, std::optional<Tensor> weight = std::nullopt,
                     std::optional<Tensor> bias = std::nullopt, double eps = 1e-6);

struct LstmCellResult {
  Tensor hy, cy;
};
// The pointwise part of an LSTM cell (PyTorch's fused cell): gates [B, 4H] are the input and
// hidden projections, read as four slices i, f, g, o; biases [4H] are optional.
LstmCellResult lstm_cell(Tensor input_gates, Tensor hidden_gates, Tensor cx,
                         std::optional<Tensor> input_bias = std::nullopt,
                         std::optional<Tensor> hidden_bias = std::nullopt);

// The pointwise part of a GRU cell: gates [B, 3H] read as r, z, n slices; returns hy.
Tensor gru_cell(Tensor input_gates, Tensor hidden_gates, Tensor hx,
                std::optional<Tensor> input_bias = std::nullopt,
                std::optional<Tensor> hidden_bias = std::nullopt);

// The dtype math runs in for `t` (f32 for f16/bf16) and a cast to it.
Tensor toCompute(Tensor t);

}  // namespace loom
