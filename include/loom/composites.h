#pragma once
// Composite ops built from loom's primitives, with the arguments a PyTorch user knows. Mixed
// precision is AMP's: f16/bf16 tensors are read, math runs in f32, results are cast back to the
// input's dtype. Statistics use Welford var_mean, never sum / sum-of-squares.
#include <optional>
#include <vector>

#include <loom/builder.h>

#pragma GCC visibility push(default)
namespace loom {

// The *_with_stats forms also return what their backward (frontend/composites_backward.h)
// reads, as PyTorch's native ops save it: the mean and the reciprocal standard deviation
// rsqrt(var + eps), in the compute dtype (f32 for f16/bf16 inputs, f64 for f64).
struct NormStats {
  Tensor y, mean, rstd;
};

// torch.nn.functional.layer_norm: normalizes over the trailing dims given by normalized_shape.
Tensor layer_norm(Tensor x, const std::vector<Dim>& normalized_shape,
                  std::optional<Tensor> weight = std::nullopt,
                  std::optional<Tensor> bias = std::nullopt, double eps = 1e-5);
// aten.native_layer_norm: mean and rstd are x's leading dims followed by one 1 per normalized
// dim ([N, 1] for x [N, D]), as PyTorch's.
NormStats layer_norm_with_stats(Tensor x, const std::vector<Dim>& normalized_shape,
                                std::optional<Tensor> weight = std::nullopt,
                                std::optional<Tensor> bias = std::nullopt, double eps = 1e-5);

// torch.nn.functional.rms_norm: x * rsqrt(mean(x^2) + eps) * weight.
Tensor rms_norm(Tensor x, const std::vector<Dim>& normalized_shape,
                std::optional<Tensor> weight = std::nullopt, double eps = 1e-6);
struct RmsNormStats {
  Tensor y, rstd;
};
// aten._fused_rms_norm: rstd is shaped as layer_norm_with_stats' ([N, 1] for x [N, D]).
RmsNormStats rms_norm_with_stats(Tensor x, const std::vector<Dim>& normalized_shape,
                                 std::optional<Tensor> weight = std::nullopt, double eps = 1e-6);

// torch.nn.functional.group_norm on [N, C, *spatial]; weight and bias are [C].
Tensor group_norm(Tensor x, int num_groups, std::optional<Tensor> weight = std::nullopt,
                  std::optional<Tensor> bias = std::nullopt, double eps = 1e-5);
// aten.native_group_norm: mean and rstd are [N, G].
NormStats group_norm_with_stats(Tensor x, int num_groups,
                                std::optional<Tensor> weight = std::nullopt,
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
struct BatchNormStats {
  Tensor y;
  Tensor running_mean, running_var;  // updated, as batch_norm's; empty where not given
  Tensor save_mean, save_invstd;     // [C]: the batch mean and rsqrt(batch var + eps)
};
// aten.native_batch_norm with training=True: batch_norm's training form, also returning
// save_mean and save_invstd for batch_norm_backward. The running statistics are optional.
BatchNormStats batch_norm_with_stats(Tensor x, std::optional<Tensor> running_mean,
                                     std::optional<Tensor> running_var,
                                     std::optional<Tensor> weight, std::optional<Tensor> bias,
                                     double momentum = 0.1, double eps = 1e-5);
// The same with the momentum as a scalar tensor, read at run time: PyTorch's cumulative average
// (momentum=None) passes 1 / num_batches_tracked, which changes every step.
BatchNormStats batch_norm_with_stats(Tensor x, std::optional<Tensor> running_mean,
                                     std::optional<Tensor> running_var,
                                     std::optional<Tensor> weight, std::optional<Tensor> bias,
                                     Tensor momentum, double eps = 1e-5);

// torch.nn.functional.instance_norm (use_input_stats=True) on [N, C, *spatial].
Tensor instance_norm(Tensor x, std::optional<Tensor> weight = std::nullopt,
                     std::optional<Tensor> bias = std::nullopt, double eps = 1e-5);
// mean and rstd are [N, C] (PyTorch saves the same values as [N*C], through batch norm).
NormStats instance_norm_with_stats(Tensor x, std::optional<Tensor> weight = std::nullopt,
                                   std::optional<Tensor> bias = std::nullopt, double eps = 1e-5);

Tensor softmax(Tensor x, int dim);

// Apex's and FlashAttention's fused dropout-add-norm of a residual stream: sum = x +
// dropout(residual, p) (its mask Philox numbers keyed by the i64 scalars seed and offset, as
// loom's dropout), rounded to x's dtype, then the norm of sum over normalized_shape. Returns y,
// the sum (for the next residual) and the statistics the backward reads (no mean for RMS norm).
struct DropoutAddNormResult {
  Tensor y, sum, mean, rstd;
};
DropoutAddNormResult dropout_add_layer_norm(Tensor x, Tensor residual, Tensor seed, Tensor offset, double p,
                                            const std::vector<Dim>& normalized_shape,
                                            std::optional<Tensor> weight = std::nullopt,
                                            std::optional<Tensor> bias = std::nullopt, double eps = 1e-5);
DropoutAddNormResult dropout_add_rms_norm(Tensor x, Tensor residual, Tensor seed, Tensor offset, double p,
                                          const std::vector<Dim>& normalized_shape,
                                          std::optional<Tensor> weight = std::nullopt, double eps = 1e-6);

// How a loss's rows are reduced, as torch's `reduction`: none ([N]), mean or sum (a scalar).
enum class LossReduction { None, Mean, Sum };
// torch.nn.functional.cross_entropy of logits [N, C] and class indices [N] (i32 or i64): each
// row's logsumexp less its target's logit, with label_smoothing e (1 - e) of that plus e times
// the mean over the classes of logsumexp less the logit; rows whose target is ignore_index give
// 0 and are left out of the mean. The loss is in the logits' dtype, the math in f32 for
// f16/bf16. A target outside [0, C) is an error in the reference evaluator and a row of
// logsumexp + inf on the GPU (docs/text-format.md, gather).
Tensor cross_entropy(Tensor logits, Tensor target, int64_t ignore_index = -100, double label_smoothing = 0,
                     LossReduction reduction = LossReduction::Mean);
struct CrossEntropyStats {
  Tensor loss;
  Tensor lse;  // [N]: each row's logsumexp in the compute dtype, what the backward reads
};
CrossEntropyStats cross_entropy_with_stats(Tensor logits, Tensor target, int64_t ignore_index = -100,
                                           double label_smoothing = 0, LossReduction reduction = LossReduction::Mean);
Tensor log_softmax(Tensor x, int dim);

// timm's LayerNorm2d: layer norm over the channel dim of an NCHW tensor, weight/bias [C].
Tensor layer_norm_2d(Tensor x, std::optional<Tensor> weight = std::nullopt,
                     std::optional<Tensor> bias = std::nullopt, double eps = 1e-6);
// mean and rstd are [N, 1, H, W]: keepdim over C (timm's permuted layer norm saves the same
// values as [N, H, W, 1]).
NormStats layer_norm_2d_with_stats(Tensor x, std::optional<Tensor> weight = std::nullopt,
                                   std::optional<Tensor> bias = std::nullopt, double eps = 1e-6);

struct LstmCellResult {
  Tensor hy, cy;
};
// The pointwise part of an LSTM cell (PyTorch's fused cell): gates [B, 4H] are the input and
// hidden projections, read as four slices i, f, g, o; biases [4H] are optional.
LstmCellResult lstm_cell(Tensor input_gates, Tensor hidden_gates, Tensor cx,
                         std::optional<Tensor> input_bias = std::nullopt,
                         std::optional<Tensor> hidden_bias = std::nullopt);
// aten._thnn_fused_lstm_cell: also the workspace lstm_cell_backward reads, [B, 4H] in the gates'
// dtype: the activated gates sigmoid(i), sigmoid(f), tanh(g), sigmoid(o) side by side.
struct LstmCellWorkspace {
  Tensor hy, cy, workspace;
};
LstmCellWorkspace lstm_cell_with_workspace(Tensor input_gates, Tensor hidden_gates, Tensor cx,
                                           std::optional<Tensor> input_bias = std::nullopt,
                                           std::optional<Tensor> hidden_bias = std::nullopt);

// The pointwise part of a GRU cell: gates [B, 3H] read as r, z, n slices; returns hy.
Tensor gru_cell(Tensor input_gates, Tensor hidden_gates, Tensor hx,
                std::optional<Tensor> input_bias = std::nullopt,
                std::optional<Tensor> hidden_bias = std::nullopt);
// aten._thnn_fused_gru_cell: also the workspace gru_cell_backward reads, [B, 5H] in the gates'
// dtype: r, z, n (activated), hx, and the hidden n-gate with its bias.
struct GruCellWorkspace {
  Tensor hy, workspace;
};
GruCellWorkspace gru_cell_with_workspace(Tensor input_gates, Tensor hidden_gates, Tensor hx,
                                         std::optional<Tensor> input_bias = std::nullopt,
                                         std::optional<Tensor> hidden_bias = std::nullopt);

// The dtype math runs in for `t` (f32 for f16/bf16) and a cast to it.
Tensor toCompute(Tensor t);

}  // namespace loom
#pragma GCC visibility pop
