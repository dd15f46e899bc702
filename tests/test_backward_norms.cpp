// The norms' backward composites (frontend/composites_backward.h) against the exact derivative
// of their forward: central finite differences of the forward's float64 CPU reference give
// d sum(dy * y) / d x, d w, d b, which dx, dw, db must match, on small odd shapes (rows of 1
// and 3, channels that are no multiple of 8, batch 1). The statistics the backward reads come
// from the *_with_stats forms, which are checked against two-pass statistics computed here.
// Then f32/f16/bf16 inputs (types, and values as float64 math rounded once), channels-last
// inputs (the same values as NCHW), and the user errors for misshapen statistics.
#include <catch2/catch.hpp>

#include <functional>
#include <optional>

#include "frontend/builder.h"
#include "frontend/composites.h"
#include "frontend/composites_backward.h"
#include "ir/error.h"
#include "tests/finite_diff.h"
#include "tests/reference_test_util.h"

using namespace loom;
using loom::test::Vec;

namespace {

using OptT = std::optional<Tensor>;

// One norm: its forward with statistics and its backward, as functions of builder tensors.
struct NormCase {
  std::string name;
  std::vector<int64_t> x_shape, param_shape;  // param_shape: the weight's and bias's
  bool weight = true, bias = true;  // the forward's parameters
  bool bias_arg = true;  // the backward takes the bias (layer_norm); else it returns db always
  bool centered = true;  // false: RMS norm (no mean)
  double eps;
  std::function<NormStats(Tensor x, OptT w, OptT b)> forward;
  std::function<NormGrads(Tensor dy, Tensor x, Tensor mean, Tensor rstd, OptT w, OptT b)> backward;
  // The statistic slot of x's element at row-major index `i`.
  std::function<int64_t(const std::vector<int64_t>& idx)> slot;
};

std::vector<Dim> dims(const std::vector<int64_t>& s) { return {s.begin(), s.end()}; }

std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t>& shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

// The forward with statistics: outputs y, (mean,) rstd.
std::unique_ptr<ir::Fusion> forwardFusion(const NormCase& c, DType t, bool stats) {
  FusionBuilder fb(c.name);
  auto x = fb.input("x", t, dims(c.x_shape));
  OptT w, b;
  if (c.weight) w = fb.input("w", t, dims(c.param_shape));
  if (c.bias) b = fb.input("b", t, dims(c.param_shape));
  NormStats s = c.forward(x, w, b);
  fb.output("y", s.y);
  if (stats && s.mean) fb.output("mean", s.mean);
  if (stats) fb.output("rstd", s.rstd);
  return fb.finish();
}

std::unique_ptr<ir::Fusion> backwardFusion(const NormCase& c, DType t, const std::vector<int64_t>& stat_shape,
                                           DType stat_t) {
  FusionBuilder fb(c.name + "_backward");
  auto dy = fb.input("dy", t, dims(c.x_shape));
  auto x = fb.input("x", t, dims(c.x_shape));
  Tensor mean = c.centered ? fb.input("mean", stat_t, dims(stat_shape)) : Tensor();
  auto rstd = fb.input("rstd", stat_t, dims(stat_shape));
  OptT w, b;
  if (c.weight) w = fb.input("w", t, dims(c.param_shape));
  if (c.bias && c.bias_arg) b = fb.input("b", t, dims(c.param_shape));
  NormGrads g = c.backward(dy, x, mean, rstd, w, b);
  fb.output("dx", g.dx);
  if (g.dw) fb.output("dw", g.dw);
  if (g.db) fb.output("db", g.db);
  return fb.finish();
}

struct Data {
  HostTensor x, w, b, dy;
};
Data randomData(const NormCase& c, DType t, uint64_t seed) {
  Data d{HostTensor::random(t, c.x_shape, seed, -2, 3), {}, {}, HostTensor::random(t, c.x_shape, seed + 1)};
  if (c.weight) d.w = HostTensor::random(t, c.param_shape, seed + 2, 0.5, 1.5);
  if (c.bias) d.b = HostTensor::random(t, c.param_shape, seed + 3);
  return d;
}
std::vector<HostTensor> params(const Data& d) {
  std::vector<HostTensor> v;
  if (d.w.numel()) v.push_back(d.w);
  if (d.b.numel()) v.push_back(d.b);
  return v;
}
// The parameters the backward takes.
std::vector<HostTensor> backwardParams(const NormCase& c, const Data& d) {
  std::vector<HostTensor> v;
  if (c.weight) v.push_back(d.w);
  if (c.bias && c.bias_arg) v.push_back(d.b);
  return v;
}
HostTensor asF64(const HostTensor& t) { return HostTensor::fromValues(DType::F64, t.shape(), t.toVector()); }

// The forward's statistics against two-pass ones computed here; returns the stats' outputs.
std::vector<HostTensor> checkStats(const NormCase& c, const Data& d) {
  auto f = forwardFusion(c, DType::F64, true);
  std::vector<HostTensor> in = {d.x};
  for (const auto& p : params(d)) in.push_back(p);
  auto out = loom::test::run(*f, in);
  auto plain = loom::test::run(*forwardFusion(c, DType::F64, false), in);
  CHECK(out[0].toVector() == plain[0].toVector());  // the same y as the plain forward
  const HostTensor& rstd = out.back();
  std::vector<double> sum(static_cast<size_t>(rstd.numel())), n(sum.size()), sq(sum.size());
  const Vec xv = d.x.toVector();
  for (int64_t i = 0; i < d.x.numel(); ++i) {
    auto s = static_cast<size_t>(c.slot(unravel(i, c.x_shape)));
    sum[s] += xv[static_cast<size_t>(i)];
    n[s] += 1;
  }
  for (int64_t i = 0; i < d.x.numel(); ++i) {
    auto s = static_cast<size_t>(c.slot(unravel(i, c.x_shape)));
    double dev = xv[static_cast<size_t>(i)] - (c.centered ? sum[s] / n[s] : 0.0);
    sq[s] += dev * dev;
  }
  Vec want_mean, want_rstd;
  for (size_t s = 0; s < sum.size(); ++s) {
    want_mean.push_back(sum[s] / n[s]);
    want_rstd.push_back(1 / std::sqrt(sq[s] / n[s] + c.eps));
  }
  if (c.centered) loom::test::checkValues(out[1], want_mean, DType::F64, c.name + " mean", 4);
  loom::test::checkValues(rstd, want_rstd, DType::F64, c.name + " rstd", 4);
  return {out.begin() + 1, out.end()};
}

// dx, dw, db of the float64 backward against finite differences of the forward.
void checkAgainstFiniteDifferences(const NormCase& c, uint64_t seed) {
  Data d = randomData(c, DType::F64, seed);
  auto stats = checkStats(c, d);
  auto bwd = backwardFusion(c, DType::F64, stats.back().shape(), DType::F64);
  std::vector<HostTensor> in = {d.dy, d.x};
  for (const auto& s : stats) in.push_back(s);
  for (const auto& p : backwardParams(c, d)) in.push_back(p);
  auto grads = loom::test::run(*bwd, in);
  REQUIRE(grads.size() == 1 + params(d).size());

  auto fwd = forwardFusion(c, DType::F64, false);
  std::vector<HostTensor> fin = {d.x};
  for (const auto& p : params(d)) fin.push_back(p);
  const std::vector<Vec> cot = {d.dy.toVector()};
  loom::test::checkGrad(grads[0], loom::test::finiteDiffGrad(*fwd, fin, cot, 0), c.name + " dx");
  for (size_t k = 1; k < fin.size(); ++k)
    loom::test::checkGrad(grads[k], loom::test::finiteDiffGrad(*fwd, fin, cot, k),
                          c.name + (k == 1 && c.weight ? " dw" : " db"));
}

// f16/bf16/f32 inputs: the output dtypes, and values as the float64 backward's on the same
// (rounded) inputs, rounded once to the output dtype; channels-last x and dy change nothing.
void checkMixedPrecision(const NormCase& c, DType t, uint64_t seed) {
  Data d = randomData(c, t, seed);
  auto f = forwardFusion(c, t, true);
  std::vector<HostTensor> fin = {d.x};
  for (const auto& p : params(d)) fin.push_back(p);
  auto fo = loom::test::run(*f, fin);
  CHECK(fo[0].dtype() == t);
  for (size_t k = 1; k < fo.size(); ++k) CHECK(fo[k].dtype() == DType::F32);  // statistics in f32
  std::vector<HostTensor> stats(fo.begin() + 1, fo.end());

  auto bwd = backwardFusion(c, t, stats.back().shape(), DType::F32);
  std::vector<HostTensor> in = {d.dy, d.x};
  for (const auto& s : stats) in.push_back(s);
  for (const auto& p : backwardParams(c, d)) in.push_back(p);
  auto got = loom::test::run(*bwd, in);
  // dx in x's dtype, dw and db in the parameters'; db with neither bias nor weight given: in
  // the compute dtype.
  const bool db_alone = !c.bias_arg && !c.weight;
  for (size_t k = 0; k < got.size(); ++k) CHECK(got[k].dtype() == (k == 1 && db_alone ? DType::F32 : t));

  auto bwd64 = backwardFusion(c, DType::F64, stats.back().shape(), DType::F64);
  std::vector<HostTensor> in64;
  for (const auto& h : in) in64.push_back(asF64(h));
  auto want = loom::test::run(*bwd64, in64);
  for (size_t k = 0; k < got.size(); ++k)
    loom::test::checkValues(got[k], want[k].toVector(), got[k].dtype(), c.name + " output " + std::to_string(k) + " " + std::string(dtypeName(t)));

  if (c.x_shape.size() == 4) {
    auto cl = channelsLastOrder(4);
    in[0] = d.dy.withOrder(cl);
    in[1] = d.x.withOrder(cl);
    auto nhwc = loom::test::run(*bwd, in);
    for (size_t k = 0; k < got.size(); ++k) CHECK(nhwc[k].toVector() == got[k].toVector());
  }
}

NormCase layerNormCase(std::vector<int64_t> shape, size_t k, bool weight, bool bias) {
  std::vector<int64_t> ns(shape.end() - static_cast<long>(k), shape.end());
  NormCase c{"layer_norm", shape, ns, weight, bias, true, true, 1e-5, {}, {}, {}};
  c.forward = [ns](Tensor x, OptT w, OptT b) { return layer_norm_with_stats(x, dims(ns), w, b, 1e-5); };
  c.backward = [ns](Tensor dy, Tensor x, Tensor m, Tensor r, OptT w, OptT b) {
    return layer_norm_backward(dy, x, m, r, dims(ns), w, b);
  };
  const size_t lead = shape.size() - k;
  c.slot = [shape, lead](const std::vector<int64_t>& idx) {
    int64_t s = 0;
    for (size_t d = 0; d < lead; ++d) s = s * shape[d] + idx[d];
    return s;
  };
  return c;
}

NormCase rmsNormCase(std::vector<int64_t> shape, bool weight) {
  NormCase c = layerNormCase(shape, 1, weight, false);
  std::vector<int64_t> ns = {shape.back()};
  c.name = "rms_norm";
  c.centered = false;
  c.eps = 1e-6;
  c.forward = [ns](Tensor x, OptT w, OptT) {
    auto s = rms_norm_with_stats(x, dims(ns), w, 1e-6);
    return NormStats{s.y, {}, s.rstd};
  };
  c.backward = [ns](Tensor dy, Tensor x, Tensor, Tensor r, OptT w, OptT) {
    return rms_norm_backward(dy, x, r, dims(ns), w);
  };
  return c;
}

NormCase groupNormCase(std::vector<int64_t> shape, int groups, bool weight) {
  NormCase c{"group_norm", shape, {shape[1]}, weight, true, false, true, 1e-5, {}, {}, {}};
  c.forward = [groups](Tensor x, OptT w, OptT b) { return group_norm_with_stats(x, groups, w, b); };
  c.backward = [groups](Tensor dy, Tensor x, Tensor m, Tensor r, OptT w, OptT) {
    return group_norm_backward(dy, x, m, r, groups, w);
  };
  const int64_t per = shape[1] / groups;
  c.slot = [groups, per](const std::vector<int64_t>& idx) { return idx[0] * groups + idx[1] / per; };
  return c;
}

NormCase batchNormCase(std::vector<int64_t> shape, bool weight) {
  NormCase c{"batch_norm", shape, {shape[1]}, weight, true, false, true, 1e-5, {}, {}, {}};
  c.forward = [](Tensor x, OptT w, OptT b) {
    auto s = batch_norm_with_stats(x, std::nullopt, std::nullopt, w, b);
    return NormStats{s.y, s.save_mean, s.save_invstd};
  };
  c.backward = [](Tensor dy, Tensor x, Tensor m, Tensor r, OptT w, OptT) {
    return batch_norm_backward(dy, x, m, r, w);
  };
  c.slot = [](const std::vector<int64_t>& idx) { return idx[1]; };
  return c;
}

NormCase instanceNormCase(std::vector<int64_t> shape, bool weight) {
  NormCase c{"instance_norm", shape, {shape[1]}, weight, true, false, true, 1e-5, {}, {}, {}};
  c.forward = [](Tensor x, OptT w, OptT b) { return instance_norm_with_stats(x, w, b); };
  c.backward = [](Tensor dy, Tensor x, Tensor m, Tensor r, OptT w, OptT) {
    return instance_norm_backward(dy, x, m, r, w);
  };
  const int64_t ch = shape[1];
  c.slot = [ch](const std::vector<int64_t>& idx) { return idx[0] * ch + idx[1]; };
  return c;
}

NormCase layerNorm2dCase(std::vector<int64_t> shape, bool weight) {
  NormCase c{"layer_norm_2d", shape, {shape[1]}, weight, true, false, true, 1e-6, {}, {}, {}};
  c.forward = [](Tensor x, OptT w, OptT b) { return layer_norm_2d_with_stats(x, w, b); };
  c.backward = [](Tensor dy, Tensor x, Tensor m, Tensor r, OptT w, OptT) {
    return layer_norm_2d_backward(dy, x, m, r, w);
  };
  c.slot = [shape](const std::vector<int64_t>& idx) {
    int64_t s = idx[0];
    for (size_t d = 2; d < shape.size(); ++d) s = s * shape[d] + idx[d];
    return s;
  };
  return c;
}

std::vector<NormCase> allCases() {
  return {
      layerNormCase({3, 7}, 1, true, true),     layerNormCase({1, 5}, 1, true, false),
      layerNormCase({2, 3, 5}, 2, true, true),  layerNormCase({3, 7}, 1, false, false),
      rmsNormCase({3, 7}, true),                rmsNormCase({1, 5}, false),
      groupNormCase({1, 6, 3, 5}, 3, true),     groupNormCase({2, 6, 7}, 2, false),
      batchNormCase({3, 5, 2, 3}, true),        batchNormCase({1, 3, 7}, false),
      instanceNormCase({1, 3, 3, 5}, true),     instanceNormCase({2, 5, 7}, false),
      layerNorm2dCase({2, 5, 3, 3}, true),      layerNorm2dCase({1, 3, 1, 5}, false),
  };
}

std::string describe(const NormCase& c) {
  std::string s = c.name + " [";
  for (size_t i = 0; i < c.x_shape.size(); ++i) s += (i ? ", " : "") + std::to_string(c.x_shape[i]);
  return s + "]" + (c.weight ? " weight" : "") + (c.bias ? " bias" : "");
}

}  // namespace

TEST_CASE("norm backward: dx, dw, db are the forward's exact derivative (float64 finite differences)",
          "[reference][composites][backward]") {
  uint64_t seed = 100;
  for (const NormCase& c : allCases()) {
    DYNAMIC_SECTION(describe(c)) { checkAgainstFiniteDifferences(c, seed); }
    seed += 10;
  }
}

TEST_CASE("norm backward: f32, f16, bf16 inputs, NCHW and channels-last", "[reference][composites][backward]") {
  uint64_t seed = 300;
  for (const NormCase& c : allCases())
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
      DYNAMIC_SECTION(describe(c) << " " << dtypeName(t)) { checkMixedPrecision(c, t, seed); }
      seed += 10;
    }
}

TEST_CASE("norm backward: f32 statistics and parameters beside f16 activations", "[reference][composites][backward]") {
  // As the group_norm_backward built-in: f16 x and dy, f32 weight; dw and db come back in f32.
  FusionBuilder fb("gnb");
  auto dy = fb.input("dy", DType::F16, {"N", "C", "H", "W"});
  auto x = fb.input("x", DType::F16, {"N", "C", "H", "W"});
  auto m = fb.input("mean", DType::F32, {"N", 2});
  auto r = fb.input("rstd", DType::F32, {"N", 2});
  auto w = fb.input("w", DType::F32, {"C"});
  auto g = group_norm_backward(dy, x, m, r, 2, w);
  CHECK(g.dx.dtype() == DType::F16);
  CHECK(g.dw.dtype() == DType::F32);
  CHECK(g.db.dtype() == DType::F32);
  auto n = instance_norm_backward(dy, x, fb.input("m2", DType::F32, {"N", "C"}), fb.input("r2", DType::F32, {"N", "C"}));
  CHECK(n.dx.dtype() == DType::F16);
  CHECK_FALSE(n.dw);
  CHECK(n.db.dtype() == DType::F32);  // no weight: the compute dtype
  auto l = layer_norm_backward(dy, x, fb.input("m3", DType::F32, {"N", 1, 1, 1}),
                               fb.input("r3", DType::F32, {"N", 1, 1, 1}), {"C", "H", "W"});
  CHECK_FALSE(l.dw);
  CHECK_FALSE(l.db);  // layer_norm_backward's db only with a bias
}

TEST_CASE("norm backward: misshapen statistics and gradients are user errors that say what is right",
          "[composites][backward]") {
  FusionBuilder fb("bad");
  auto x = fb.input("x", DType::F16, {"N", "D"});
  auto dy = fb.input("dy", DType::F16, {"N", "D"});
  auto flat = fb.input("flat", DType::F32, {"N"});
  auto keep = fb.input("keep", DType::F32, {"N", 1});
  using Catch::Contains;
  CHECK_THROWS_WITH(layer_norm_backward(dy, x, flat, keep, {"D"}),
                    Contains("layer_norm_backward: mean `flat` has shape [N] but must be [N, 1]") &&
                        Contains("as aten.native_layer_norm saves it"));
  CHECK_THROWS_WITH(rms_norm_backward(dy, x, flat, {"D"}), Contains("rstd `flat` has shape [N] but must be [N, 1]"));
  CHECK_THROWS_WITH(layer_norm_backward(fb.input("dy2", DType::F16, {"N", 3}), x, keep, keep, {"D"}),
                    Contains("the gradient `dy2` f16[N, 3] must have the shape of `x` f16[N, D]"));
  CHECK_THROWS_WITH(layer_norm_backward(dy, x, keep, keep, {"E"}),
                    Contains("normalized_shape [E] does not match the trailing dims [D]"));
  CHECK_THROWS_WITH(layer_norm_backward(dy, x, fb.input("ikeep", DType::I32, {"N", 1}), keep, {"D"}),
                    Contains("mean `ikeep` is i32; saved statistics are floating point"));

  auto img = fb.input("img", DType::F32, {"N", "C", "H", "W"});
  auto dimg = fb.input("dimg", DType::F32, {"N", "C", "H", "W"});
  auto nc = fb.input("nc", DType::F32, {"N", "C"});
  auto c = fb.input("c", DType::F32, {"C"});
  CHECK_THROWS_WITH(group_norm_backward(dimg, img, nc, nc, 4),
                    Contains("mean `nc` has shape [N, C] but must be [N, 4] ([N, num_groups] = [N, 4]"));
  CHECK_THROWS_WITH(batch_norm_backward(dimg, img, nc, c), Contains("save_mean `nc` has shape [N, C] but must be [C]"));
  CHECK_THROWS_WITH(instance_norm_backward(dimg, img, c, c), Contains("mean `c` has shape [C] but must be [N, C]"));
  CHECK_THROWS_WITH(layer_norm_2d_backward(dimg, img, nc, nc),
                    Contains("mean `nc` has shape [N, C] but must be [N, 1, H, W] (x's shape with C as 1"));
  CHECK_THROWS_WITH(batch_norm_backward(dimg, img, c, c, nc), Contains("weight `nc` has shape [N, C] but must be [C]"));
  CHECK_THROWS_WITH(group_norm_backward(dimg, fb.input("c6", DType::F32, {2, 6, 3}), nc, nc, 4),
                    Contains("6 channels do not split into 4 groups"));
}

TEST_CASE("batch_norm_with_stats: batch_norm's outputs and running statistics, plus save_mean and save_invstd",
          "[reference][composites][backward]") {
  FusionBuilder fb("bn");
  auto x = fb.input("x", DType::F16, {"N", "C", "H", "W"});
  auto rm = fb.input("running_mean", DType::F32, {"C"});
  auto rv = fb.input("running_var", DType::F32, {"C"});
  auto w = fb.input("w", DType::F32, {"C"});
  auto b = fb.input("b", DType::F32, {"C"});
  auto plain = batch_norm(x, rm, rv, w, b, true, 0.1, 1e-5);
  auto s = batch_norm_with_stats(x, rm, rv, w, b, 0.1, 1e-5);
  CHECK(s.save_mean.dtype() == DType::F32);
  CHECK(s.save_invstd.shape() == std::vector<Extent>{Extent::symbol("C")});
  for (auto [name, t] : {std::pair{"y", plain.y}, {"rm", plain.running_mean}, {"rv", plain.running_var},
                         {"y2", s.y}, {"rm2", s.running_mean}, {"rv2", s.running_var},
                         {"mean", s.save_mean}, {"invstd", s.save_invstd}})
    fb.output(name, t);
  auto f = fb.finish();
  auto xt = HostTensor::random(DType::F16, {3, 5, 2, 3}, 1, -1, 2);
  std::vector<HostTensor> in = {xt, HostTensor::random(DType::F32, {5}, 2), HostTensor::random(DType::F32, {5}, 3, 0.5, 1),
                                HostTensor::random(DType::F32, {5}, 4), HostTensor::random(DType::F32, {5}, 5)};
  auto out = loom::test::run(*f, in);
  for (size_t k = 0; k < 3; ++k) CHECK(out[k].toVector() == out[k + 3].toVector());
  Vec want_mean, want_invstd;
  const Vec xv = xt.toVector();
  for (int64_t c = 0; c < 5; ++c) {
    double sum = 0, sq = 0;
    for (int64_t n = 0; n < 3; ++n)
      for (int64_t i = 0; i < 6; ++i) sum += xv[static_cast<size_t>((n * 5 + c) * 6 + i)];
    double m = sum / 18;
    for (int64_t n = 0; n < 3; ++n)
      for (int64_t i = 0; i < 6; ++i) sq += std::pow(xv[static_cast<size_t>((n * 5 + c) * 6 + i)] - m, 2);
    want_mean.push_back(m);
    want_invstd.push_back(1 / std::sqrt(sq / 18 + 1e-5));
  }
  loom::test::checkValues(out[6], want_mean, DType::F32, "save_mean");
  loom::test::checkValues(out[7], want_invstd, DType::F32, "save_invstd");
}
