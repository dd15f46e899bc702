#pragma once
// The backward of the composites in frontend/composites.h, built from the same primitives, with
// the arguments of PyTorch's native backward ops. They read the statistics the *_with_stats
// forms return (the mean and rstd = rsqrt(var + eps) of the forward) rather than recomputing
// them. Mixed precision as the forward: f16/bf16 tensors are read, the math runs in f32, dx is
// written in x's dtype; the saved statistics are f32 (any float dtype is accepted and cast).
// Parameter gradients (sums over every dim but the parameter's) are written in the dtype of
// the parameter they are the gradient of (db of a norm with no bias argument: in the weight's
// dtype, or in the compute dtype where no weight is given either).
#include <optional>
#include <vector>

#include <loom/builder.h>
#include <loom/composites.h>

#pragma GCC visibility push(default)
namespace loom {

// dx always; dw where a weight is given; db as each function says (empty otherwise).
struct NormGrads {
  Tensor dx, dw, db;
};

// aten.native_layer_norm_backward: mean and rstd as layer_norm_with_stats returns them, x's
// leading dims followed by one 1 per normalized dim ([N, 1] for x [N, D]). dw where weight is
// given, db where bias is given (bias is read for its shape and dtype only).
NormGrads layer_norm_backward(Tensor dy, Tensor x, Tensor mean, Tensor rstd,
                              const std::vector<Dim>& normalized_shape,
                              std::optional<Tensor> weight = std::nullopt,
                              std::optional<Tensor> bias = std::nullopt);

// aten._fused_rms_norm_backward: rstd shaped as layer_norm_backward's. No db.
NormGrads rms_norm_backward(Tensor dy, Tensor x, Tensor rstd,
                            const std::vector<Dim>& normalized_shape,
                            std::optional<Tensor> weight = std::nullopt);

// aten._softmax_backward_data: y is softmax's output; dx = y * (dy - sum(dy * y, dim)), in
// dy's dtype.
Tensor softmax_backward(Tensor dy, Tensor y, int dim);
// aten._log_softmax_backward_data: y is log_softmax's output; dx = dy - exp(y) * sum(dy, dim).
Tensor log_softmax_backward(Tensor dy, Tensor y, int dim);
// dropout_add_layer_norm's and dropout_add_rms_norm's gradients from dy (of y) and dsum (of the
// sum, where the next block read it; optional): dx is the norm's dx plus dsum, dresidual the same
// through the forward's dropout mask, recomputed from seed and offset; dw and db as the norm's.
struct DropoutAddNormGrads {
  Tensor dx, dresidual, dw, db;
};
DropoutAddNormGrads dropout_add_layer_norm_backward(Tensor dy, std::optional<Tensor> dsum, Tensor sum, Tensor mean,
                                                    Tensor rstd, Tensor seed, Tensor offset, double p,
                                                    const std::vector<Dim>& normalized_shape,
                                                    std::optional<Tensor> weight = std::nullopt,
                                                    std::optional<Tensor> bias = std::nullopt);
DropoutAddNormGrads dropout_add_rms_norm_backward(Tensor dy, std::optional<Tensor> dsum, Tensor sum, Tensor rstd,
                                                  Tensor seed, Tensor offset, double p,
                                                  const std::vector<Dim>& normalized_shape,
                                                  std::optional<Tensor> weight = std::nullopt);

// cross_entropy's dlogits [N, C] in the logits' dtype, from dloss (the loss's shape: [N] for
// LossReduction::None, a scalar otherwise) and the forward's lse [N]: dloss times softmax less
// (1 - label_smoothing) at the target and label_smoothing / C everywhere, 0 on ignored rows
// (over the rows counted for the mean). One pass over the logits.
Tensor cross_entropy_backward(Tensor dloss, Tensor logits, Tensor target, Tensor lse, int64_t ignore_index = -100,
                              double label_smoothing = 0, LossReduction reduction = LossReduction::Mean);

// aten.native_group_norm_backward on [N, C, *spatial]: mean and rstd are [N, num_groups].
// dw where weight is given; db always.
NormGrads group_norm_backward(Tensor dy, Tensor x, Tensor mean, Tensor rstd, int num_groups,
                              std::optional<Tensor> weight = std::nullopt);

// aten.native_batch_norm_backward with train=True (the batch statistics' gradient flows back
// to x): save_mean and save_invstd are [C]. dw where weight is given; db always.
NormGrads batch_norm_backward(Tensor dy, Tensor x, Tensor save_mean, Tensor save_invstd,
                              std::optional<Tensor> weight = std::nullopt);

// instance_norm's backward on [N, C, *spatial]: mean and rstd are [N, C] (PyTorch's [N*C]).
// dw where weight is given; db always.
NormGrads instance_norm_backward(Tensor dy, Tensor x, Tensor mean, Tensor rstd,
                                 std::optional<Tensor> weight = std::nullopt);

// layer_norm_2d's backward (layer norm over C of [N, C, *spatial]): mean and rstd are
// [N, 1, *spatial]. dw where weight is given; db always.
NormGrads layer_norm_2d_backward(Tensor dy, Tensor x, Tensor mean, Tensor rstd,
                                 std::optional<Tensor> weight = std::nullopt);

// The recurrent cells' gradients come back as PyTorch's fused cells give them: one [B, 4H]
// (LSTM) or [B, 3H] (GRU) matrix of the gates' gradients side by side, in gate order (a concat
// of the gates' [B, H] blocks, which a kernel writes through its column slices).
struct LstmCellGrads {
  Tensor grad_gates;                // [B, 4H]: i, f, g, o, in the workspace's dtype
  Tensor grad_cx;                   // [B, H], in cx's dtype
  std::optional<Tensor> grad_bias;  // [4H]: grad_gates summed over B; none without has_bias.
                                    // Both biases of lstm_cell get this.
};
// aten._thnn_fused_lstm_cell_backward: workspace [B, 4H] holds the activated gates
// sigmoid(i), sigmoid(f), tanh(g), sigmoid(o) of the forward; cx is its cell input and cy its
// cell output. dhy and dcy are the incoming gradients of hy and cy; either may be absent
// (zero), not both.
LstmCellGrads lstm_cell_backward(std::optional<Tensor> dhy, std::optional<Tensor> dcy, Tensor cx,
                                 Tensor cy, Tensor workspace, bool has_bias = true);

struct GruCellGrads {
  Tensor grad_input_gates;   // [B, 3H]: r, z, n, in the workspace's dtype
  Tensor grad_hidden_gates;  // [B, 3H]: the same r and z; n is the input's times r
  Tensor grad_hx;            // [B, H], in dhy's dtype
  std::optional<Tensor> grad_input_bias, grad_hidden_bias;  // [3H] each; none without has_bias
};
// aten._thnn_fused_gru_cell_backward: workspace [B, 5H] holds r, z, n (activated), hx and the
// hidden n-gate with its bias, as PyTorch's fused GRU cell saves them.
GruCellGrads gru_cell_backward(Tensor dhy, Tensor workspace, bool has_bias = true);

}  // namespace loom
#pragma GCC visibility pop
