#include "frontend/composites.h"

#include "frontend/composite_helpers.h"
#include "ir/error.h"

namespace loom {

Tensor toCompute(Tensor t) { return cast(t, computeDType(t.dtype())); }

using namespace composite;

namespace {

struct Normalized {
  Tensor y, rstd;
};
// (xc - mean) * rstd with rstd = rsqrt(var + eps), keeping rstd for the *_with_stats forms.
Normalized normalize(Tensor xc, const VarMean& s, double eps) {
  Tensor rstd = rsqrt(s.var + eps);
  return {(xc - s.mean) * rstd, rstd};
}

}  // namespace

NormStats layer_norm_with_stats(Tensor x, const std::vector<Dim>& normalized_shape,
                                std::optional<Tensor> weight, std::optional<Tensor> bias, double eps) {
  auto ns = trailingDims("layer_norm", x, normalized_shape);
  const int k = static_cast<int>(ns.size());
  if (weight) checkParam("layer_norm", "weight", *weight, ns);
  if (bias) checkParam("layer_norm", "bias", *bias, ns);
  Tensor xc = toCompute(x);
  auto stats = var_mean(xc, range(x.rank() - k, x.rank()), 0, true);
  auto n = normalize(xc, stats, eps);
  Tensor y = affine(n.y, weight, bias, [&](Tensor p) { return broadcastToRank(p, x.rank()); });
  return {cast(y, x.dtype()), stats.mean, n.rstd};
}

Tensor layer_norm(Tensor x, const std::vector<Dim>& normalized_shape, std::optional<Tensor> weight,
                  std::optional<Tensor> bias, double eps) {
  return layer_norm_with_stats(x, normalized_shape, weight, bias, eps).y;
}

RmsNormStats rms_norm_with_stats(Tensor x, const std::vector<Dim>& normalized_shape,
                                 std::optional<Tensor> weight, double eps) {
  auto ns = trailingDims("rms_norm", x, normalized_shape);
  const int k = static_cast<int>(ns.size());
  if (weight) checkParam("rms_norm", "weight", *weight, ns);
  Tensor xc = toCompute(x);
  Tensor ms = mean(xc * xc, range(x.rank() - k, x.rank()), true);
  Tensor rstd = rsqrt(ms + eps);
  Tensor y = xc * rstd;
  y = affine(y, weight, std::nullopt, [&](Tensor p) { return broadcastToRank(p, x.rank()); });
  return {cast(y, x.dtype()), rstd};
}

Tensor rms_norm(Tensor x, const std::vector<Dim>& normalized_shape, std::optional<Tensor> weight,
                double eps) {
  return rms_norm_with_stats(x, normalized_shape, weight, eps).y;
}

namespace {
// group_norm with its statistics keepdim over [N, G, C/G, *S]: [N, G, 1b, ...].
NormStats groupNorm(Tensor x, int num_groups, std::optional<Tensor> weight,
                    std::optional<Tensor> bias, double eps) {
  checkChannels("group_norm", x);
  const Extent& c = x.size(1);
  LOOM_USER_CHECK(num_groups > 0, "group_norm: num_groups must be positive, not {}", num_groups);
  if (c.isConstant())
    LOOM_USER_CHECK(c.constant() % num_groups == 0, "group_norm: {} channels do not split into {} "
                    "groups", c.constant(), num_groups);
  if (weight) checkParam("group_norm", "weight", *weight, {c});
  if (bias) checkParam("group_norm", "bias", *bias, {c});
  Tensor xc = toCompute(x);
  // [N, C, *S] -> [N, G, C/G, *S]; statistics over (C/G, *S); back to [N, C, *S].
  std::vector<Dim> grouped = {x.size(0), num_groups, c / Extent(num_groups)};
  for (int d = 2; d < x.rank(); ++d) grouped.push_back(x.size(d));
  Tensor xg = reshape(xc, grouped);
  auto stats = var_mean(xg, range(2, xg.rank()), 0, true);
  std::vector<Dim> back;
  for (const auto& e : x.shape()) back.push_back(e);
  auto n = normalize(xg, stats, eps);
  Tensor y = reshape(n.y, back);
  y = affine(y, weight, bias, [&](Tensor p) { return perChannel(p, x.rank()); });
  return {cast(y, x.dtype()), stats.mean, n.rstd};
}
}  // namespace

Tensor group_norm(Tensor x, int num_groups, std::optional<Tensor> weight,
                  std::optional<Tensor> bias, double eps) {
  return groupNorm(x, num_groups, weight, bias, eps).y;
}

NormStats group_norm_with_stats(Tensor x, int num_groups, std::optional<Tensor> weight,
                                std::optional<Tensor> bias, double eps) {
  NormStats r = groupNorm(x, num_groups, weight, bias, eps);
  auto spatial = range(2, r.mean.rank());  // the keepdim dims (C/G, *S)
  return {r.y, squeeze(r.mean, spatial), squeeze(r.rstd, spatial)};
}

namespace {
void checkBatchNorm(Tensor x, std::optional<Tensor> running_mean, std::optional<Tensor> running_var,
                    std::optional<Tensor> weight, std::optional<Tensor> bias) {
  checkChannels("batch_norm", x);
  const Extent& c = x.size(1);
  if (running_mean) checkParam("batch_norm", "running_mean", *running_mean, {c});
  if (running_var) checkParam("batch_norm", "running_var", *running_var, {c});
  if (weight) checkParam("batch_norm", "weight", *weight, {c});
  if (bias) checkParam("batch_norm", "bias", *bias, {c});
}

// Training: y from the batch statistics (returned, [C], population variance) and the running
// statistics updated with `momentum`, where given. (The ops are built in the order the
// single-expression form always built them: y's cast comes last.)
struct BatchNormTrain {
  BatchNormResult r;
  VarMean stats;
};
// `momentum_t`, where given, is the momentum as a scalar tensor (in place of `momentum`).
BatchNormTrain batchNormTrain(Tensor x, std::optional<Tensor> running_mean,
                              std::optional<Tensor> running_var, std::optional<Tensor> weight,
                              std::optional<Tensor> bias, double momentum, double eps,
                              std::optional<Tensor> momentum_t = std::nullopt) {
  Tensor xc = toCompute(x);
  auto expand = [&](Tensor p) { return perChannel(p, x.rank()); };
  std::vector<int> dims = {0};
  for (int d = 2; d < x.rank(); ++d) dims.push_back(d);
  auto stats = var_mean(xc, dims, 0, false);  // [C]
  Tensor y = (xc - expand(stats.mean)) * rsqrt(expand(stats.var) + eps);
  y = affine(y, weight, bias, expand);
  BatchNormResult r;
  if (running_mean || running_var) {
    // Running statistics: the unbiased variance var * n / (n - 1), as PyTorch keeps.
    Tensor n = cast(stats.count, stats.var.dtype());
    Tensor unbiased = stats.var * n / (n - 1.0);
    std::optional<Tensor> rm, rv, new_rm, new_rv;
    if (running_mean) rm = cast(*running_mean, stats.mean.dtype());
    if (running_var) rv = cast(*running_var, stats.var.dtype());
    auto update = [&](const auto& m) {  // (a double or a scalar tensor: the same ops)
      if (rm) new_rm = *rm * (1.0 - m) + stats.mean * m;
      if (rv) new_rv = *rv * (1.0 - m) + unbiased * m;
    };
    if (momentum_t)
      update(cast(*momentum_t, stats.var.dtype()));
    else
      update(momentum);
    r.y = cast(y, x.dtype());
    if (new_rm) r.running_mean = cast(*new_rm, running_mean->dtype());
    if (new_rv) r.running_var = cast(*new_rv, running_var->dtype());
  } else {
    r.y = cast(y, x.dtype());
  }
  return {r, stats};
}
}  // namespace

BatchNormResult batch_norm(Tensor x, Tensor running_mean, Tensor running_var,
                           std::optional<Tensor> weight, std::optional<Tensor> bias, bool training,
                           double momentum, double eps) {
  checkBatchNorm(x, running_mean, running_var, weight, bias);
  if (training) return batchNormTrain(x, running_mean, running_var, weight, bias, momentum, eps).r;
  Tensor xc = toCompute(x);
  auto expand = [&](Tensor p) { return perChannel(p, x.rank()); };
  Tensor rm = cast(running_mean, xc.dtype()), rv = cast(running_var, xc.dtype());
  Tensor y = (xc - expand(rm)) * rsqrt(expand(rv) + eps);
  y = affine(y, weight, bias, expand);
  return {cast(y, x.dtype()), running_mean, running_var};
}

BatchNormStats batch_norm_with_stats(Tensor x, std::optional<Tensor> running_mean,
                                     std::optional<Tensor> running_var, std::optional<Tensor> weight,
                                     std::optional<Tensor> bias, double momentum, double eps) {
  checkBatchNorm(x, running_mean, running_var, weight, bias);
  auto t = batchNormTrain(x, running_mean, running_var, weight, bias, momentum, eps);
  return {t.r.y, t.r.running_mean, t.r.running_var, t.stats.mean, rsqrt(t.stats.var + eps)};
}

BatchNormStats batch_norm_with_stats(Tensor x, std::optional<Tensor> running_mean,
                                     std::optional<Tensor> running_var, std::optional<Tensor> weight,
                                     std::optional<Tensor> bias, Tensor momentum, double eps) {
  checkBatchNorm(x, running_mean, running_var, weight, bias);
  LOOM_USER_CHECK(momentum.rank() == 0, "batch_norm: momentum `{}` {} must be a scalar", momentum.name(),
                  momentum.value()->typeString());
  auto t = batchNormTrain(x, running_mean, running_var, weight, bias, 0.0, eps, momentum);
  return {t.r.y, t.r.running_mean, t.r.running_var, t.stats.mean, rsqrt(t.stats.var + eps)};
}

namespace {
// instance_norm with its statistics keepdim: [N, C, 1b, ...].
NormStats instanceNorm(Tensor x, std::optional<Tensor> weight, std::optional<Tensor> bias,
                       double eps) {
  checkChannels("instance_norm", x);
  LOOM_USER_CHECK(x.rank() >= 3, "instance_norm: input `{}` {} needs spatial dims [N, C, ...]",
                  x.name(), x.value()->typeString());
  const Extent& c = x.size(1);
  if (weight) checkParam("instance_norm", "weight", *weight, {c});
  if (bias) checkParam("instance_norm", "bias", *bias, {c});
  Tensor xc = toCompute(x);
  auto stats = var_mean(xc, range(2, x.rank()), 0, true);
  auto n = normalize(xc, stats, eps);
  Tensor y = affine(n.y, weight, bias, [&](Tensor p) { return perChannel(p, x.rank()); });
  return {cast(y, x.dtype()), stats.mean, n.rstd};
}
}  // namespace

Tensor instance_norm(Tensor x, std::optional<Tensor> weight, std::optional<Tensor> bias,
                     double eps) {
  return instanceNorm(x, weight, bias, eps).y;
}

NormStats instance_norm_with_stats(Tensor x, std::optional<Tensor> weight,
                                   std::optional<Tensor> bias, double eps) {
  NormStats r = instanceNorm(x, weight, bias, eps);
  auto spatial = range(2, x.rank());
  return {r.y, squeeze(r.mean, spatial), squeeze(r.rstd, spatial)};
}

Tensor softmax(Tensor x, int dim) {
  Tensor xc = toCompute(x);
  dim = normalizeDim(dim, x.rank());
  Tensor e = exp(xc - amax(xc, {dim}, true));
  return cast(e / sum(e, {dim}, true), x.dtype());
}

Tensor log_softmax(Tensor x, int dim) {
  Tensor xc = toCompute(x);
  dim = normalizeDim(dim, x.rank());
  Tensor shifted = xc - amax(xc, {dim}, true);
  return cast(shifted - log(sum(exp(shifted), {dim}, true)), x.dtype());
}

NormStats layer_norm_2d_with_stats(Tensor x, std::optional<Tensor> weight,
                                   std::optional<Tensor> bias, double eps) {
  checkChannels("layer_norm_2d", x);
  const Extent& c = x.size(1);
  if (weight) checkParam("layer_norm_2d", "weight", *weight, {c});
  if (bias) checkParam("layer_norm_2d", "bias", *bias, {c});
  Tensor xc = toCompute(x);
  auto stats = var_mean(xc, {1}, 0, true);
  auto n = normalize(xc, stats, eps);
  Tensor y = affine(n.y, weight, bias, [&](Tensor p) { return perChannel(p, x.rank()); });
  return {cast(y, x.dtype()), stats.mean, n.rstd};
}

Tensor layer_norm_2d(Tensor x, std::optional<Tensor> weight, std::optional<Tensor> bias,
                     double eps) {
  return layer_norm_2d_with_stats(x, weight, bias, eps).y;
}

namespace {
// Adds the two gate projections and their optional biases, in the compute dtype.
Tensor combineGates(const char* op, Tensor ig, Tensor hg, std::optional<Tensor> ib,
                    std::optional<Tensor> hb, int n_gates) {
  LOOM_USER_CHECK(ig.rank() == 2 && ig.shape() == hg.shape(), "{}: input_gates {} and "
                  "hidden_gates {} must both be [B, {}*H]", op, ig.value()->typeString(),
                  hg.value()->typeString(), n_gates);
  Tensor g = toCompute(ig) + toCompute(hg);
  if (ib) {
    checkParam(op, "input_bias", *ib, {ig.size(1)});
    g = g + toCompute(*ib);
  }
  if (hb) {
    checkParam(op, "hidden_bias", *hb, {ig.size(1)});
    g = g + toCompute(*hb);
  }
  return g;
}
}  // namespace

namespace {
// The LSTM cell; with `workspace`, also its activated gates side by side in the gates' dtype.
LstmCellWorkspace lstmCell(Tensor input_gates, Tensor hidden_gates, Tensor cx, std::optional<Tensor> input_bias,
                           std::optional<Tensor> hidden_bias, bool workspace) {
  Tensor g = combineGates("lstm_cell", input_gates, hidden_gates, input_bias, hidden_bias, 4);
  auto parts = chunk(g, 4, 1);
  checkParam("lstm_cell", "cx", cx, parts[0].shape());
  Tensor i = sigmoid(parts[0]), f = sigmoid(parts[1]), c = tanh(parts[2]), o = sigmoid(parts[3]);
  Tensor cy = f * toCompute(cx) + i * c;
  Tensor hy = o * tanh(cy);
  LstmCellWorkspace out{cast(hy, input_gates.dtype()), cast(cy, cx.dtype()), {}};
  if (workspace) {
    const DType t = input_gates.dtype();
    out.workspace = concat({cast(i, t), cast(f, t), cast(c, t), cast(o, t)}, 1);
  }
  return out;
}

// The GRU cell; with `workspace`, also r, z, n, hx and the hidden n-gate (with its bias).
GruCellWorkspace gruCell(Tensor input_gates, Tensor hidden_gates, Tensor hx, std::optional<Tensor> input_bias,
                         std::optional<Tensor> hidden_bias, bool workspace) {
  LOOM_USER_CHECK(input_gates.rank() == 2 && input_gates.shape() == hidden_gates.shape(),
                  "gru_cell: input_gates and hidden_gates must both be [B, 3*H]");
  // PyTorch's GRU: r and z use the summed gates; n adds r * (hidden n-gate + its bias).
  auto ic = chunk(input_gates, 3, 1), hc = chunk(hidden_gates, 3, 1);
  checkParam("gru_cell", "hx", hx, ic[0].shape());
  std::vector<Tensor> ib, hb;
  if (input_bias) {
    checkParam("gru_cell", "input_bias", *input_bias, {input_gates.size(1)});
    ib = chunk(*input_bias, 3, 0);
  }
  if (hidden_bias) {
    checkParam("gru_cell", "hidden_bias", *hidden_bias, {input_gates.size(1)});
    hb = chunk(*hidden_bias, 3, 0);
  }
  auto gate = [&](const std::vector<Tensor>& c, const std::vector<Tensor>& b, int k) {
    Tensor t = toCompute(c[static_cast<size_t>(k)]);
    return b.empty() ? t : t + toCompute(b[static_cast<size_t>(k)]);
  };
  Tensor r = sigmoid(gate(ic, ib, 0) + gate(hc, hb, 0));
  Tensor z = sigmoid(gate(ic, ib, 1) + gate(hc, hb, 1));
  Tensor in = gate(ic, ib, 2), hn = gate(hc, hb, 2);
  Tensor n = tanh(in + r * hn);
  Tensor hy = (1.0 - z) * n + z * toCompute(hx);
  GruCellWorkspace out{cast(hy, hx.dtype()), {}};
  if (workspace) {
    const DType t = input_gates.dtype();
    out.workspace = concat({cast(r, t), cast(z, t), cast(n, t), cast(hx, t), cast(hn, t)}, 1);
  }
  return out;
}
}  // namespace

LstmCellResult lstm_cell(Tensor input_gates, Tensor hidden_gates, Tensor cx,
                         std::optional<Tensor> input_bias, std::optional<Tensor> hidden_bias) {
  auto r = lstmCell(input_gates, hidden_gates, cx, input_bias, hidden_bias, false);
  return {r.hy, r.cy};
}

LstmCellWorkspace lstm_cell_with_workspace(Tensor input_gates, Tensor hidden_gates, Tensor cx,
                                           std::optional<Tensor> input_bias, std::optional<Tensor> hidden_bias) {
  return lstmCell(input_gates, hidden_gates, cx, input_bias, hidden_bias, true);
}

Tensor gru_cell(Tensor input_gates, Tensor hidden_gates, Tensor hx,
                std::optional<Tensor> input_bias, std::optional<Tensor> hidden_bias) {
  return gruCell(input_gates, hidden_gates, hx, input_bias, hidden_bias, false).hy;
}

GruCellWorkspace gru_cell_with_workspace(Tensor input_gates, Tensor hidden_gates, Tensor hx,
                                         std::optional<Tensor> input_bias, std::optional<Tensor> hidden_bias) {
  return gruCell(input_gates, hidden_gates, hx, input_bias, hidden_bias, true);
}

}  // namespace loom
