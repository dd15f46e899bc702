#include "frontend/composites.h"

#include "ir/error.h"

namespace loom {

Tensor toCompute(Tensor t) { return cast(t, computeDType(t.dtype())); }

namespace {

std::vector<int> range(int begin, int end) {
  std::vector<int> v;
  for (int i = begin; i < end; ++i) v.push_back(i);
  return v;
}

// Broadcasts a per-channel [C] tensor to [1b, C, 1b, ...] for an input of `rank` dims.
Tensor perChannel(Tensor p, int rank) {
  std::vector<bool> is_new(static_cast<size_t>(rank), true);
  is_new[1] = false;
  return broadcast(p, is_new);
}

void checkParam(const char* op, const char* what, Tensor p, const std::vector<Extent>& want) {
  LOOM_USER_CHECK(p.shape() == want, "{}: {} `{}` has shape {} but must be {}", op, what, p.name(),
                  shapeStr(p.shape()), shapeStr(want));
}

// y * w + b with w, b cast to the compute dtype; `expand` shapes them to y's rank.
template <typename Expand>
Tensor affine(Tensor y, std::optional<Tensor> w, std::optional<Tensor> b, Expand expand) {
  if (w) y = y * expand(cast(*w, y.dtype()));
  if (b) y = y + expand(cast(*b, y.dtype()));
  return y;
}

Tensor normalize(Tensor xc, const VarMean& s, double eps) {
  return (xc - s.mean) * rsqrt(s.var + eps);
}

void checkChannels(const char* op, Tensor x) {
  LOOM_USER_CHECK(x.rank() >= 2, "{}: input `{}` {} needs at least 2 dims [N, C, ...]", op,
                  x.name(), x.value()->typeString());
}

}  // namespace

Tensor layer_norm(Tensor x, const std::vector<Dim>& normalized_shape, std::optional<Tensor> weight,
                  std::optional<Tensor> bias, double eps) {
  const int k = static_cast<int>(normalized_shape.size());
  LOOM_USER_CHECK(k >= 1 && k <= x.rank(), "layer_norm: normalized_shape has {} dims but `{}` has "
                  "rank {}", k, x.name(), x.rank());
  std::vector<Extent> ns;
  for (const auto& d : normalized_shape) ns.push_back(d.extent);
  auto xs = x.shape();
  std::vector<Extent> trailing(xs.end() - k, xs.end());
  LOOM_USER_CHECK(trailing == ns, "layer_norm: normalized_shape {} does not match the trailing "
                  "dims {} of `{}` {}", shapeStr(ns), shapeStr(trailing), x.name(),
                  x.value()->typeString());
  if (weight) checkParam("layer_norm", "weight", *weight, ns);
  if (bias) checkParam("layer_norm", "bias", *bias, ns);
  Tensor xc = toCompute(x);
  auto stats = var_mean(xc, range(x.rank() - k, x.rank()), 0, true);
  Tensor y = normalize(xc, stats, eps);
  y = affine(y, weight, bias, [&](Tensor p) { return broadcastToRank(p, x.rank()); });
  return cast(y, x.dtype());
}

Tensor rms_norm(Tensor x, const std::vector<Dim>& normalized_shape, std::optional<Tensor> weight,
                double eps) {
  const int k = static_cast<int>(normalized_shape.size());
  LOOM_USER_CHECK(k >= 1 && k <= x.rank(), "rms_norm: normalized_shape has {} dims but `{}` has "
                  "rank {}", k, x.name(), x.rank());
  std::vector<Extent> ns;
  for (const auto& d : normalized_shape) ns.push_back(d.extent);
  if (weight) checkParam("rms_norm", "weight", *weight, ns);
  Tensor xc = toCompute(x);
  Tensor ms = mean(xc * xc, range(x.rank() - k, x.rank()), true);
  Tensor y = xc * rsqrt(ms + eps);
  y = affine(y, weight, std::nullopt, [&](Tensor p) { return broadcastToRank(p, x.rank()); });
  return cast(y, x.dtype());
}

Tensor group_norm(Tensor x, int num_groups, std::optional<Tensor> weight,
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
  Tensor y = reshape(normalize(xg, stats, eps), back);
  y = affine(y, weight, bias, [&](Tensor p) { return perChannel(p, x.rank()); });
  return cast(y, x.dtype());
}

BatchNormResult batch_norm(Tensor x, Tensor running_mean, Tensor running_var,
                           std::optional<Tensor> weight, std::optional<Tensor> bias, bool training,
                           double momentum, double eps) {
  checkChannels("batch_norm", x);
  const Extent& c = x.size(1);
  checkParam("batch_norm", "running_mean", running_mean, {c});
  checkParam("batch_norm", "running_var", running_var, {c});
  if (weight) checkParam("batch_norm", "weight", *weight, {c});
  if (bias) checkParam("batch_norm", "bias", *bias, {c});
  Tensor xc = toCompute(x);
  auto expand = [&](Tensor p) { return perChannel(p, x.rank()); };
  if (!training) {
    Tensor rm = cast(running_mean, xc.dtype()), rv = cast(running_var, xc.dtype());
    Tensor y = (xc - expand(rm)) * rsqrt(expand(rv) + eps);
    y = affine(y, weight, bias, expand);
    return {cast(y, x.dtype()), running_mean, running_var};
  }
  std::vector<int> dims = {0};
  for (int d = 2; d < x.rank(); ++d) dims.push_back(d);
  auto stats = var_mean(xc, dims, 0, false);  // [C]
  Tensor y = (xc - expand(stats.mean)) * rsqrt(expand(stats.var) + eps);
  y = affine(y, weight, bias, expand);
  // Running statistics: the unbiased variance var * n / (n - 1), as PyTorch keeps.
  Tensor n = cast(stats.count, stats.var.dtype());
  Tensor unbiased = stats.var * n / (n - 1.0);
  Tensor rm = cast(running_mean, stats.mean.dtype()), rv = cast(running_var, stats.var.dtype());
  Tensor new_rm = rm * (1.0 - momentum) + stats.mean * momentum;
  Tensor new_rv = rv * (1.0 - momentum) + unbiased * momentum;
  return {cast(y, x.dtype()), cast(new_rm, running_mean.dtype()),
          cast(new_rv, running_var.dtype())};
}

Tensor instance_norm(Tensor x, std::optional<Tensor> weight, std::optional<Tensor> bias,
                     double eps) {
  checkChannels("instance_norm", x);
  LOOM_USER_CHECK(x.rank() >= 3, "instance_norm: input `{}` {} needs spatial dims [N, C, ...]",
                  x.name(), x.value()->typeString());
  const Extent& c = x.size(1);
  if (weight) checkParam("instance_norm", "weight", *weight, {c});
  if (bias) checkParam("instance_norm", "bias", *bias, {c});
  Tensor xc = toCompute(x);
  auto stats = var_mean(xc, range(2, x.rank()), 0, true);
  Tensor y = normalize(xc, stats, eps);
  y = affine(y, weight, bias, [&](Tensor p) { return perChannel(p, x.rank()); });
  return cast(y, x.dtype());
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

Tensor layer_norm_2d(Tensor x, std::optional<Tensor> weight, std::optional<Tensor> bias,
                     double eps) {
  checkChannels("layer_norm_2d", x);
  const Extent& c = x.size(1);
  if (weight) checkParam("layer_norm_2d", "weight", *weight, {c});
  if (bias) checkParam("layer_norm_2d", "bias", *bias, {c});
  Tensor xc = toCompute(x);
  auto stats = var_mean(xc, {1}, 0, true);
  Tensor y = normalize(xc, stats, eps);
  y = affine(y, weight, bias, [&](Tensor p) { return perChannel(p, x.rank()); });
  return cast(y, x.dtype());
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

LstmCellResult lstm_cell(Tensor input_gates, Tensor hidden_gates, Tensor cx,
                         std::optional<Tensor> input_bias, std::optional<Tensor> hidden_bias) {
  Tensor g = combineGates("lstm_cell", input_gates, hidden_gates, input_bias, hidden_bias, 4);
  auto parts = chunk(g, 4, 1);
  checkParam("lstm_cell", "cx", cx, parts[0].shape());
  Tensor i = sigmoid(parts[0]), f = sigmoid(parts[1]), c = tanh(parts[2]), o = sigmoid(parts[3]);
  Tensor cy = f * toCompute(cx) + i * c;
  Tensor hy = o * tanh(cy);
  return {cast(hy, input_gates.dtype()), cast(cy, cx.dtype())};
}

Tensor gru_cell(Tensor input_gates, Tensor hidden_gates, Tensor hx,
                std::optional<Tensor> input_bias, std::optional<Tensor> hidden_bias) {
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
  Tensor n = tanh(gate(ic, ib, 2) + r * gate(hc, hb, 2));
  Tensor hy = (1.0 - z) * n + z * toCompute(hx);
  return cast(hy, hx.dtype());
}

}  // namespace loom
