#include "frontend/composites_backward.h"

#include "frontend/composite_helpers.h"
#include "frontend/composites.h"
#include "ir/error.h"

namespace loom {

using namespace composite;

namespace {

// The gradient of y = xhat * w, xhat = (x - mean) * rstd normalized over `dims` (keepdim), with
// respect to x, given g = dy * w: rstd * (g - mean(g) - xhat * mean(g * xhat)). Without
// centering (RMS norm, xhat = x * rstd): rstd * (g - xhat * mean(g * xhat)).
Tensor normDx(Tensor g, Tensor xhat, Tensor rstd, const std::vector<int>& dims, bool centered) {
  Tensor proj = xhat * mean(g * xhat, dims, true);
  Tensor d = centered ? g - mean(g, dims, true) - proj : g - proj;
  return rstd * d;
}

// sum over `dims` (none: t itself) cast to `to`: a parameter's gradient.
Tensor paramGrad(Tensor t, const std::vector<int>& dims, DType to) {
  return cast(dims.empty() ? t : sum(t, dims), to);
}

// The dtype of db for a norm whose bias is not an argument: the weight's, else the math's.
DType biasGradDType(Tensor x, std::optional<Tensor> weight) {
  return weight ? weight->dtype() : computeDType(x.dtype());
}

// Every dim of `rank` but the channel dim 1: where per-channel parameter gradients sum.
std::vector<int> allButChannel(int rank) {
  std::vector<int> dims = {0};
  for (int d = 2; d < rank; ++d) dims.push_back(d);
  return dims;
}

// dx, dw, db of an affine per-channel norm on [N, C, *S] whose statistics `m` and `r` are
// already broadcast to x's rank, normalized over `dims`.
NormGrads channelNormGrads(Tensor dy, Tensor x, Tensor m, Tensor r, const std::vector<int>& dims,
                           std::optional<Tensor> weight) {
  Tensor xc = toCompute(x), dyc = toCompute(dy);
  Tensor xhat = (xc - m) * r;
  Tensor g = weight ? dyc * perChannel(computeLike(*weight, x), x.rank()) : dyc;
  NormGrads out{cast(normDx(g, xhat, r, dims, true), x.dtype()), {}, {}};
  auto pdims = allButChannel(x.rank());
  if (weight) out.dw = paramGrad(dyc * xhat, pdims, weight->dtype());
  out.db = paramGrad(dyc, pdims, biasGradDType(x, weight));
  return out;
}

// The statistics' shape for layer_norm / rms_norm: x's leading dims, then a 1 per normalized dim.
std::vector<Extent> keepdimStats(Tensor x, int k) {
  auto s = x.shape();
  for (int d = x.rank() - k; d < x.rank(); ++d) s[static_cast<size_t>(d)] = Extent(1);
  return s;
}

const char* kKeepdimMeaning = "x's leading dims followed by a 1 per normalized dim, as "
                              "aten.native_layer_norm saves it";

}  // namespace

NormGrads layer_norm_backward(Tensor dy, Tensor x, Tensor mean, Tensor rstd,
                              const std::vector<Dim>& normalized_shape, std::optional<Tensor> weight,
                              std::optional<Tensor> bias) {
  const char* op = "layer_norm_backward";
  auto ns = trailingDims(op, x, normalized_shape);
  const int k = static_cast<int>(ns.size());
  checkGrad(op, dy, x);
  checkStat(op, "mean", mean, keepdimStats(x, k), kKeepdimMeaning);
  checkStat(op, "rstd", rstd, keepdimStats(x, k), kKeepdimMeaning);
  if (weight) checkParam(op, "weight", *weight, ns);
  if (bias) checkParam(op, "bias", *bias, ns);
  Tensor xc = toCompute(x), dyc = toCompute(dy);
  Tensor m = asBroadcast(computeLike(mean, x)), r = asBroadcast(computeLike(rstd, x));
  Tensor xhat = (xc - m) * r;
  Tensor g = weight ? dyc * broadcastToRank(computeLike(*weight, x), x.rank()) : dyc;
  const auto dims = range(x.rank() - k, x.rank()), lead = range(0, x.rank() - k);
  NormGrads out{cast(normDx(g, xhat, r, dims, true), x.dtype()), {}, {}};
  if (weight) out.dw = paramGrad(dyc * xhat, lead, weight->dtype());
  if (bias) out.db = paramGrad(dyc, lead, bias->dtype());
  return out;
}

NormGrads rms_norm_backward(Tensor dy, Tensor x, Tensor rstd, const std::vector<Dim>& normalized_shape,
                            std::optional<Tensor> weight) {
  const char* op = "rms_norm_backward";
  auto ns = trailingDims(op, x, normalized_shape);
  const int k = static_cast<int>(ns.size());
  checkGrad(op, dy, x);
  checkStat(op, "rstd", rstd, keepdimStats(x, k), kKeepdimMeaning);
  if (weight) checkParam(op, "weight", *weight, ns);
  Tensor xc = toCompute(x), dyc = toCompute(dy);
  Tensor r = asBroadcast(computeLike(rstd, x));
  Tensor xhat = xc * r;
  Tensor g = weight ? dyc * broadcastToRank(computeLike(*weight, x), x.rank()) : dyc;
  const auto dims = range(x.rank() - k, x.rank()), lead = range(0, x.rank() - k);
  NormGrads out{cast(normDx(g, xhat, r, dims, false), x.dtype()), {}, {}};
  if (weight) out.dw = paramGrad(dyc * xhat, lead, weight->dtype());
  return out;
}

Tensor softmax_backward(Tensor dy, Tensor y, int dim) {
  checkGrad("softmax_backward", dy, y);
  dim = normalizeDim(dim, y.rank());
  Tensor dyc = toCompute(dy), yc = toCompute(y);
  return cast(yc * (dyc - sum(dyc * yc, {dim}, true)), dy.dtype());
}

Tensor log_softmax_backward(Tensor dy, Tensor y, int dim) {
  checkGrad("log_softmax_backward", dy, y);
  dim = normalizeDim(dim, y.rank());
  Tensor dyc = toCompute(dy), yc = toCompute(y);
  return cast(dyc - exp(yc) * sum(dyc, {dim}, true), dy.dtype());
}

NormGrads group_norm_backward(Tensor dy, Tensor x, Tensor mean, Tensor rstd, int num_groups,
                              std::optional<Tensor> weight) {
  const char* op = "group_norm_backward";
  checkChannels(op, x);
  const Extent& c = x.size(1);
  LOOM_USER_CHECK(num_groups > 0, "{}: num_groups must be positive, not {}", op, num_groups);
  if (c.isConstant())
    LOOM_USER_CHECK(c.constant() % num_groups == 0, "{}: {} channels do not split into {} groups",
                    op, c.constant(), num_groups);
  checkGrad(op, dy, x);
  const std::vector<Extent> stat = {x.size(0), Extent(num_groups)};
  const std::string meaning = fmt::format("[N, num_groups] = [N, {}], as aten.native_group_norm "
                                          "saves it", num_groups);
  checkStat(op, "mean", mean, stat, meaning);
  checkStat(op, "rstd", rstd, stat, meaning);
  if (weight) checkParam(op, "weight", *weight, {c});
  // As the forward: [N, C, *S] -> [N, G, C/G, *S], statistics over (C/G, *S).
  std::vector<Dim> grouped = {x.size(0), num_groups, c / Extent(num_groups)}, back;
  for (int d = 2; d < x.rank(); ++d) grouped.push_back(x.size(d));
  for (const auto& e : x.shape()) back.push_back(e);
  std::vector<bool> to_grouped(grouped.size(), true);
  to_grouped[0] = to_grouped[1] = false;
  Tensor m = broadcast(computeLike(mean, x), to_grouped);
  Tensor r = broadcast(computeLike(rstd, x), to_grouped);
  Tensor xc = toCompute(x), dyc = toCompute(dy);
  Tensor xhat_g = (reshape(xc, grouped) - m) * r;
  Tensor g = weight ? dyc * perChannel(computeLike(*weight, x), x.rank()) : dyc;
  Tensor dx_g = normDx(reshape(g, grouped), xhat_g, r, range(2, x.rank() + 1), true);
  NormGrads out{cast(reshape(dx_g, back), x.dtype()), {}, {}};
  auto pdims = allButChannel(x.rank());
  if (weight) out.dw = paramGrad(dyc * reshape(xhat_g, back), pdims, weight->dtype());
  out.db = paramGrad(dyc, pdims, biasGradDType(x, weight));
  return out;
}

NormGrads batch_norm_backward(Tensor dy, Tensor x, Tensor save_mean, Tensor save_invstd,
                              std::optional<Tensor> weight) {
  const char* op = "batch_norm_backward";
  checkChannels(op, x);
  checkGrad(op, dy, x);
  const std::vector<Extent> stat = {x.size(1)};
  const char* meaning = "[C], as aten.native_batch_norm saves it in training";
  checkStat(op, "save_mean", save_mean, stat, meaning);
  checkStat(op, "save_invstd", save_invstd, stat, meaning);
  if (weight) checkParam(op, "weight", *weight, {x.size(1)});
  Tensor m = perChannel(computeLike(save_mean, x), x.rank());
  Tensor r = perChannel(computeLike(save_invstd, x), x.rank());
  return channelNormGrads(dy, x, m, r, allButChannel(x.rank()), weight);
}

NormGrads instance_norm_backward(Tensor dy, Tensor x, Tensor mean, Tensor rstd,
                                 std::optional<Tensor> weight) {
  const char* op = "instance_norm_backward";
  checkChannels(op, x);
  LOOM_USER_CHECK(x.rank() >= 3, "{}: input `{}` {} needs spatial dims [N, C, ...]", op, x.name(),
                  x.value()->typeString());
  checkGrad(op, dy, x);
  const std::vector<Extent> stat = {x.size(0), x.size(1)};
  const char* meaning = "[N, C], as instance_norm_with_stats returns it";
  checkStat(op, "mean", mean, stat, meaning);
  checkStat(op, "rstd", rstd, stat, meaning);
  if (weight) checkParam(op, "weight", *weight, {x.size(1)});
  std::vector<bool> spatial(static_cast<size_t>(x.rank()), true);
  spatial[0] = spatial[1] = false;
  Tensor m = broadcast(computeLike(mean, x), spatial), r = broadcast(computeLike(rstd, x), spatial);
  return channelNormGrads(dy, x, m, r, range(2, x.rank()), weight);
}

NormGrads layer_norm_2d_backward(Tensor dy, Tensor x, Tensor mean, Tensor rstd,
                                 std::optional<Tensor> weight) {
  const char* op = "layer_norm_2d_backward";
  checkChannels(op, x);
  checkGrad(op, dy, x);
  auto stat = x.shape();
  stat[1] = Extent(1);
  const char* meaning = "x's shape with C as 1, as layer_norm_2d_with_stats returns it";
  checkStat(op, "mean", mean, stat, meaning);
  checkStat(op, "rstd", rstd, stat, meaning);
  if (weight) checkParam(op, "weight", *weight, {x.size(1)});
  Tensor m = asBroadcast(computeLike(mean, x)), r = asBroadcast(computeLike(rstd, x));
  return channelNormGrads(dy, x, m, r, {1}, weight);
}

namespace {
// a * (1 - a): the derivative of sigmoid at the point whose sigmoid is a.
Tensor sigmoidGrad(Tensor a) { return a * (1.0 - a); }
// 1 - a^2: the derivative of tanh at the point whose tanh is a.
Tensor tanhGrad(Tensor a) { return 1.0 - a * a; }

// Per-gate sums over the batch where has_bias, cast to `to`.
std::vector<Tensor> biasGrads(const std::vector<Tensor>& gates, bool has_bias, DType to) {
  std::vector<Tensor> out;
  if (has_bias)
    for (const Tensor& g : gates) out.push_back(paramGrad(g, {0}, to));
  return out;
}

std::vector<Tensor> castAll(const std::vector<Tensor>& ts, DType to) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(cast(t, to));
  return out;
}

// The workspace's n_gates column blocks [B, H] in the compute dtype; checks its shape.
std::vector<Tensor> workspaceGates(const char* op, Tensor workspace, Tensor like, int n_gates) {
  LOOM_USER_CHECK(like.rank() == 2, "{}: `{}` {} must be [B, H]", op, like.name(),
                  like.value()->typeString());
  checkParam(op, "workspace", workspace, {like.size(0), Extent(n_gates) * like.size(1)});
  LOOM_USER_CHECK(isFloat(workspace.dtype()), "{}: workspace `{}` is {}, not floating point", op,
                  workspace.name(), dtypeName(workspace.dtype()));
  std::vector<Tensor> gates;
  for (const Tensor& t : chunk(workspace, n_gates, 1)) gates.push_back(toCompute(t));
  return gates;
}
}  // namespace

LstmCellGrads lstm_cell_backward(std::optional<Tensor> dhy, std::optional<Tensor> dcy, Tensor cx,
                                 Tensor cy, Tensor workspace, bool has_bias) {
  const char* op = "lstm_cell_backward";
  LOOM_USER_CHECK(dhy || dcy, "{}: give dhy, dcy or both (an absent one is zero)", op);
  auto gates = workspaceGates(op, workspace, cx, 4);
  checkParam(op, "cy", cy, cx.shape());
  if (dhy) checkGrad(op, *dhy, cx);
  if (dcy) checkGrad(op, *dcy, cx);
  const Tensor &i = gates[0], &f = gates[1], &g = gates[2], &o = gates[3];
  Tensor cxc = toCompute(cx), tc = tanh(toCompute(cy));
  // The gradient reaching the cell state: through hy = o * tanh(cy), plus dcy.
  std::optional<Tensor> gc, go;
  if (dhy) {
    Tensor dh = toCompute(*dhy);
    gc = dh * o * tanhGrad(tc);
    go = dh * tc * sigmoidGrad(o);
  }
  if (dcy) gc = gc ? *gc + toCompute(*dcy) : toCompute(*dcy);
  // No dhy: PyTorch's zero dhy through the same product, so the o gate's gradient lies on the
  // cell's own dims (a fill would be a tensor of its own, its concat piece unrelated to the rest).
  if (!go) go = 0.0 * tc * sigmoidGrad(o);
  std::vector<Tensor> grads = {*gc * g * sigmoidGrad(i), *gc * cxc * sigmoidGrad(f),
                               *gc * i * tanhGrad(g), *go};
  LstmCellGrads out;
  out.grad_gates = concat(castAll(grads, workspace.dtype()), 1);
  out.grad_cx = cast(*gc * f, cx.dtype());
  if (has_bias) out.grad_bias = concat(biasGrads(grads, true, workspace.dtype()), 0);
  return out;
}

GruCellGrads gru_cell_backward(Tensor dhy, Tensor workspace, bool has_bias) {
  const char* op = "gru_cell_backward";
  auto ws = workspaceGates(op, workspace, dhy, 5);
  LOOM_USER_CHECK(isFloat(dhy.dtype()), "{}: dhy `{}` is {}, not floating point", op, dhy.name(),
                  dtypeName(dhy.dtype()));
  const Tensor &r = ws[0], &z = ws[1], &n = ws[2], &hx = ws[3], &hn = ws[4];
  Tensor dh = toCompute(dhy);
  // hy = (1 - z) * n + z * hx, n = tanh(in + r * hn).
  Tensor gn = dh * (1.0 - z) * tanhGrad(n);
  Tensor gz = dh * (hx - n) * sigmoidGrad(z);
  Tensor gr = gn * hn * sigmoidGrad(r);
  Tensor ghn = gn * r;
  const DType t = workspace.dtype();
  GruCellGrads out;
  const std::vector<Tensor> input_gates = castAll({gr, gz, gn}, t);
  out.grad_input_gates = concat(input_gates, 1);
  // r's and z's gradients are the same for the input and the hidden gates.
  out.grad_hidden_gates = concat({input_gates[0], input_gates[1], cast(ghn, t)}, 1);
  out.grad_hx = cast(dh * z, dhy.dtype());
  if (has_bias) {
    const std::vector<Tensor> input_bias = biasGrads({gr, gz, gn}, true, t);
    out.grad_input_bias = concat(input_bias, 0);
    out.grad_hidden_bias = concat({input_bias[0], input_bias[1], paramGrad(ghn, {0}, t)}, 0);
  }
  return out;
}

}  // namespace loom
