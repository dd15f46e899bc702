// The CPU reference on every composite op (frontend/composites.h), against naive loops written
// here (plain nested loops in double, two-pass variance), on random f32 and f16 data. Also the
// cancellation case that breaks E[x^2] - E[x]^2, and NCHW vs channels-last inputs.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <cmath>
#include <functional>
#include <optional>

#include "frontend/builder.h"
#include "frontend/composites.h"
#include "ir/error.h"
#include "reference/reference.h"
#include "runtime/host_tensor.h"

using namespace loom;

namespace {

using Vec = std::vector<double>;

// Tolerance fitting the output dtype: one unit in its last place (the reference rounds its
// double result once to the output dtype; the naive loops here do not round at all), plus a
// small absolute slack for values near zero.
void checkClose(const HostTensor& got, const Vec& want, const std::string& what) {
  REQUIRE(got.numel() == static_cast<int64_t>(want.size()));
  const DType t = got.dtype();
  const int mant = t == DType::F16 ? 10 : t == DType::BF16 ? 7 : t == DType::F32 ? 23 : 52;
  const double atol = t == DType::F16 || t == DType::BF16 ? 1e-6 : 1e-12;
  int64_t bad = 0;
  std::string first;
  for (int64_t i = 0; i < got.numel(); ++i) {
    double g = got.getLinear(i), w = want[static_cast<size_t>(i)];
    double ulp = w == 0 ? 0 : std::ldexp(1.0, std::ilogb(w) - mant);
    bool ok = std::isfinite(w) ? std::fabs(g - w) <= ulp + atol : g == w;
    if (!ok && bad++ == 0) first = fmt::format("element {}: got {:.9g}, want {:.9g}", i, g, w);
  }
  INFO(what << " (" << got.describe() << "): " << bad << " mismatches; first " << first);
  CHECK(bad == 0);
}

struct Stats {
  double mean, var;  // population variance
};
Stats twoPass(const Vec& v) {
  double s = 0;
  for (double x : v) s += x;
  double m = s / static_cast<double>(v.size()), q = 0;
  for (double x : v) q += (x - m) * (x - m);
  return {m, q / static_cast<double>(v.size())};
}

// --- naive composites on row-major value vectors ---

// Rows of `inner` values: layer norm with optional weight/bias of `inner` values.
Vec naiveLayerNorm(const Vec& x, int64_t inner, const Vec* w, const Vec* b, double eps) {
  Vec y(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(inner); ++r) {
    Vec row(x.begin() + static_cast<long>(r * inner), x.begin() + static_cast<long>((r + 1) * inner));
    Stats s = twoPass(row);
    for (int64_t i = 0; i < inner; ++i) {
      double v = (row[static_cast<size_t>(i)] - s.mean) / std::sqrt(s.var + eps);
      if (w) v *= (*w)[static_cast<size_t>(i)];
      if (b) v += (*b)[static_cast<size_t>(i)];
      y[r * static_cast<size_t>(inner) + static_cast<size_t>(i)] = v;
    }
  }
  return y;
}

Vec naiveRmsNorm(const Vec& x, int64_t inner, const Vec* w, double eps) {
  Vec y(x.size());
  for (size_t r = 0; r < x.size() / static_cast<size_t>(inner); ++r) {
    double ss = 0;
    for (int64_t i = 0; i < inner; ++i) ss += x[r * static_cast<size_t>(inner) + static_cast<size_t>(i)] * x[r * static_cast<size_t>(inner) + static_cast<size_t>(i)];
    double scale = 1.0 / std::sqrt(ss / static_cast<double>(inner) + eps);
    for (int64_t i = 0; i < inner; ++i) {
      size_t k = r * static_cast<size_t>(inner) + static_cast<size_t>(i);
      y[k] = x[k] * scale * (w ? (*w)[static_cast<size_t>(i)] : 1.0);
    }
  }
  return y;
}

// [N, C, S] views of NCHW data (S = product of spatial dims).
struct Nc {
  int64_t n, c, s;
  size_t at(int64_t i, int64_t j, int64_t k) const { return static_cast<size_t>((i * c + j) * s + k); }
};

Vec naiveGroupNorm(const Vec& x, Nc d, int64_t groups, const Vec* w, const Vec* b, double eps) {
  Vec y(x.size());
  const int64_t cg = d.c / groups;
  for (int64_t i = 0; i < d.n; ++i)
    for (int64_t g = 0; g < groups; ++g) {
      Vec vals;
      for (int64_t j = g * cg; j < (g + 1) * cg; ++j)
        for (int64_t k = 0; k < d.s; ++k) vals.push_back(x[d.at(i, j, k)]);
      Stats st = twoPass(vals);
      for (int64_t j = g * cg; j < (g + 1) * cg; ++j)
        for (int64_t k = 0; k < d.s; ++k) {
          double v = (x[d.at(i, j, k)] - st.mean) / std::sqrt(st.var + eps);
          if (w) v *= (*w)[static_cast<size_t>(j)];
          if (b) v += (*b)[static_cast<size_t>(j)];
          y[d.at(i, j, k)] = v;
        }
    }
  return y;
}

// Per-channel statistics over (N, S).
std::vector<Stats> channelStats(const Vec& x, Nc d) {
  std::vector<Stats> out;
  for (int64_t j = 0; j < d.c; ++j) {
    Vec vals;
    for (int64_t i = 0; i < d.n; ++i)
      for (int64_t k = 0; k < d.s; ++k) vals.push_back(x[d.at(i, j, k)]);
    out.push_back(twoPass(vals));
  }
  return out;
}

Vec applyChannel(const Vec& x, Nc d, const std::vector<Stats>& st, const Vec* w, const Vec* b,
                 double eps) {
  Vec y(x.size());
  for (int64_t i = 0; i < d.n; ++i)
    for (int64_t j = 0; j < d.c; ++j)
      for (int64_t k = 0; k < d.s; ++k) {
        const Stats& s = st[static_cast<size_t>(j)];
        double v = (x[d.at(i, j, k)] - s.mean) / std::sqrt(s.var + eps);
        if (w) v *= (*w)[static_cast<size_t>(j)];
        if (b) v += (*b)[static_cast<size_t>(j)];
        y[d.at(i, j, k)] = v;
      }
  return y;
}

Vec naiveInstanceNorm(const Vec& x, Nc d, const Vec* w, const Vec* b, double eps) {
  Vec y(x.size());
  for (int64_t i = 0; i < d.n; ++i)
    for (int64_t j = 0; j < d.c; ++j) {
      Vec vals;
      for (int64_t k = 0; k < d.s; ++k) vals.push_back(x[d.at(i, j, k)]);
      Stats st = twoPass(vals);
      for (int64_t k = 0; k < d.s; ++k) {
        double v = (x[d.at(i, j, k)] - st.mean) / std::sqrt(st.var + eps);
        if (w) v *= (*w)[static_cast<size_t>(j)];
        if (b) v += (*b)[static_cast<size_t>(j)];
        y[d.at(i, j, k)] = v;
      }
    }
  return y;
}

Vec naiveLayerNorm2d(const Vec& x, Nc d, const Vec* w, const Vec* b, double eps) {
  Vec y(x.size());
  for (int64_t i = 0; i < d.n; ++i)
    for (int64_t k = 0; k < d.s; ++k) {
      Vec vals;
      for (int64_t j = 0; j < d.c; ++j) vals.push_back(x[d.at(i, j, k)]);
      Stats st = twoPass(vals);
      for (int64_t j = 0; j < d.c; ++j) {
        double v = (x[d.at(i, j, k)] - st.mean) / std::sqrt(st.var + eps);
        if (w) v *= (*w)[static_cast<size_t>(j)];
        if (b) v += (*b)[static_cast<size_t>(j)];
        y[d.at(i, j, k)] = v;
      }
    }
  return y;
}

// Softmax / log-softmax along `dim` of a row-major tensor of `shape`.
Vec naiveSoftmax(const Vec& x, const std::vector<int64_t>& shape, int dim, bool log_form) {
  int64_t outer = 1, len = shape[static_cast<size_t>(dim)], inner = 1;
  for (int d = 0; d < dim; ++d) outer *= shape[static_cast<size_t>(d)];
  for (size_t d = static_cast<size_t>(dim) + 1; d < shape.size(); ++d) inner *= shape[d];
  Vec y(x.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      auto at = [&](int64_t l) { return static_cast<size_t>((o * len + l) * inner + in); };
      double m = -INFINITY;
      for (int64_t l = 0; l < len; ++l) m = std::max(m, x[at(l)]);
      double s = 0;
      for (int64_t l = 0; l < len; ++l) s += std::exp(x[at(l)] - m);
      for (int64_t l = 0; l < len; ++l)
        y[at(l)] = log_form ? x[at(l)] - m - std::log(s) : std::exp(x[at(l)] - m) / s;
    }
  return y;
}

double sigmoidD(double v) { return 1.0 / (1.0 + std::exp(-v)); }

HostTensor rnd(DType t, std::vector<int64_t> shape, uint64_t seed, double lo = -1, double hi = 1) {
  return HostTensor::random(t, std::move(shape), seed, lo, hi);
}

const char* dname(DType t) { return t == DType::F16 ? "f16" : t == DType::BF16 ? "bf16" : "f32"; }

}  // namespace

TEST_CASE("reference composites: layer_norm", "[reference][composites]") {
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    SECTION(std::string("one trailing dim, weight and bias, ") + dname(t)) {
      FusionBuilder fb("ln");
      auto x = fb.input("x", t, {"N", "D"});
      auto w = fb.input("w", t, {"D"});
      auto b = fb.input("b", t, {"D"});
      fb.output("y", layer_norm(x, {"D"}, w, b));
      auto f = fb.finish();
      auto xt = rnd(t, {3, 1531}, 1, -2, 3), wt = rnd(t, {1531}, 2), bt = rnd(t, {1531}, 3);
      auto wv = wt.toVector(), bv = bt.toVector();
      checkClose(evaluateReference(*f, {xt, wt, bt})[0], naiveLayerNorm(xt.toVector(), 1531, &wv, &bv, 1e-5), "layer_norm");
    }
    SECTION(std::string("two trailing dims, ") + dname(t)) {
      FusionBuilder fb("ln2");
      auto x = fb.input("x", t, {"N", "H", "W"});
      auto w = fb.input("w", t, {"H", "W"});
      auto b = fb.input("b", t, {"H", "W"});
      fb.output("y", layer_norm(x, {"H", "W"}, w, b, 1e-3));
      auto f = fb.finish();
      auto xt = rnd(t, {4, 6, 7}, 4), wt = rnd(t, {6, 7}, 5), bt = rnd(t, {6, 7}, 6);
      auto wv = wt.toVector(), bv = bt.toVector();
      checkClose(evaluateReference(*f, {xt, wt, bt})[0], naiveLayerNorm(xt.toVector(), 42, &wv, &bv, 1e-3), "layer_norm [H, W]");
    }
    SECTION(std::string("no weight, ") + dname(t)) {
      FusionBuilder fb("ln3");
      auto x = fb.input("x", t, {5, 3});
      fb.output("y", layer_norm(x, {3}));
      auto f = fb.finish();
      auto xt = rnd(t, {5, 3}, 7);
      checkClose(evaluateReference(*f, {xt})[0], naiveLayerNorm(xt.toVector(), 3, nullptr, nullptr, 1e-5), "layer_norm no weight");
    }
  }
}

TEST_CASE("reference composites: rms_norm", "[reference][composites]") {
  for (DType t : {DType::F32, DType::F16}) {
    FusionBuilder fb("rms");
    auto x = fb.input("x", t, {"N", "D"});
    auto w = fb.input("w", t, {"D"});
    fb.output("y", rms_norm(x, {"D"}, w));
    fb.output("y_plain", rms_norm(x, {"D"}));
    auto f = fb.finish();
    auto xt = rnd(t, {5, 1531}, 1, -3, 2), wt = rnd(t, {1531}, 2);
    auto wv = wt.toVector();
    auto out = evaluateReference(*f, {xt, wt});
    checkClose(out[0], naiveRmsNorm(xt.toVector(), 1531, &wv, 1e-6), std::string("rms_norm ") + dname(t));
    checkClose(out[1], naiveRmsNorm(xt.toVector(), 1531, nullptr, 1e-6), std::string("rms_norm no weight ") + dname(t));
  }
}

TEST_CASE("reference composites: group_norm, NCHW and channels-last", "[reference][composites]") {
  for (DType t : {DType::F32, DType::F16}) {
    FusionBuilder fb("gn");
    auto x = fb.input("x", t, {"N", "C", "H", "W"});
    auto w = fb.input("w", t, {"C"});
    auto b = fb.input("b", t, {"C"});
    fb.output("y", group_norm(x, 3, w, b));
    auto f = fb.finish();
    auto xt = rnd(t, {2, 6, 5, 7}, 1, -1, 2), wt = rnd(t, {6}, 2), bt = rnd(t, {6}, 3);
    auto wv = wt.toVector(), bv = bt.toVector();
    Vec want = naiveGroupNorm(xt.toVector(), {2, 6, 35}, 3, &wv, &bv, 1e-5);
    auto nchw = evaluateReference(*f, {xt, wt, bt})[0];
    auto cl_in = xt.withOrder(channelsLastOrder(4));
    REQUIRE(cl_in.strides() == std::vector<int64_t>{210, 1, 42, 6});
    auto nhwc = evaluateReference(*f, {cl_in, wt, bt})[0];
    checkClose(nchw, want, std::string("group_norm NCHW ") + dname(t));
    checkClose(nhwc, want, std::string("group_norm channels-last ") + dname(t));
    CHECK(nchw.toVector() == nhwc.toVector());  // identical, not just close
  }
  SECTION("no affine, 3-d input") {
    FusionBuilder fb("gn3");
    auto x = fb.input("x", DType::F32, {"N", "C", "L"});
    fb.output("y", group_norm(x, 2));
    auto f = fb.finish();
    auto xt = rnd(DType::F32, {3, 4, 1531}, 9);
    checkClose(evaluateReference(*f, {xt})[0], naiveGroupNorm(xt.toVector(), {3, 4, 1531}, 2, nullptr, nullptr, 1e-5), "group_norm [N, C, L]");
  }
}

TEST_CASE("reference composites: batch_norm", "[reference][composites]") {
  const double momentum = 0.1, eps = 1e-5;
  for (DType t : {DType::F32, DType::F16}) {
    auto xt = rnd(t, {4, 3, 5, 7}, 1, -1, 3), wt = rnd(t, {3}, 2), bt = rnd(t, {3}, 3);
    auto rmt = rnd(DType::F32, {3}, 4), rvt = rnd(DType::F32, {3}, 5, 0.5, 2);
    auto wv = wt.toVector(), bv = bt.toVector(), rm = rmt.toVector(), rv = rvt.toVector();
    const Nc d{4, 3, 35};
    SECTION(std::string("training ") + dname(t)) {
      FusionBuilder fb("bn");
      auto x = fb.input("x", t, {"N", "C", "H", "W"});
      auto m = fb.input("running_mean", DType::F32, {"C"});
      auto v = fb.input("running_var", DType::F32, {"C"});
      auto w = fb.input("w", t, {"C"});
      auto b = fb.input("b", t, {"C"});
      auto r = batch_norm(x, m, v, w, b, true, momentum, eps);
      fb.output("y", r.y);
      fb.output("new_mean", r.running_mean, m);
      fb.output("new_var", r.running_var, v);
      auto f = fb.finish();
      auto out = evaluateReference(*f, {xt, rmt, rvt, wt, bt});
      auto st = channelStats(xt.toVector(), d);
      checkClose(out[0], applyChannel(xt.toVector(), d, st, &wv, &bv, eps), "batch_norm y");
      Vec want_m, want_v;
      const double n = 4 * 35;
      for (size_t j = 0; j < 3; ++j) {
        want_m.push_back((1 - momentum) * rm[j] + momentum * st[j].mean);
        want_v.push_back((1 - momentum) * rv[j] + momentum * st[j].var * n / (n - 1));  // unbiased
      }
      checkClose(out[1], want_m, "batch_norm running_mean");
      checkClose(out[2], want_v, "batch_norm running_var");
    }
    SECTION(std::string("inference ") + dname(t)) {
      FusionBuilder fb("bn_eval");
      auto x = fb.input("x", t, {"N", "C", "H", "W"});
      auto m = fb.input("running_mean", DType::F32, {"C"});
      auto v = fb.input("running_var", DType::F32, {"C"});
      auto w = fb.input("w", t, {"C"});
      auto b = fb.input("b", t, {"C"});
      fb.output("y", batch_norm(x, m, v, w, b, false, momentum, eps).y);
      auto f = fb.finish();
      std::vector<Stats> st;
      for (size_t j = 0; j < 3; ++j) st.push_back({rm[j], rv[j]});
      checkClose(evaluateReference(*f, {xt, rmt, rvt, wt, bt})[0],
                 applyChannel(xt.toVector(), d, st, &wv, &bv, eps), "batch_norm inference");
    }
  }
}

TEST_CASE("reference composites: instance_norm and layer_norm_2d", "[reference][composites]") {
  for (DType t : {DType::F32, DType::F16}) {
    FusionBuilder fb("in");
    auto x = fb.input("x", t, {"N", "C", "H", "W"});
    auto w = fb.input("w", t, {"C"});
    auto b = fb.input("b", t, {"C"});
    fb.output("inorm", instance_norm(x, w, b));
    fb.output("inorm_plain", instance_norm(x));
    fb.output("ln2d", layer_norm_2d(x, w, b));
    auto f = fb.finish();
    auto xt = rnd(t, {2, 3, 5, 7}, 1, -2, 1), wt = rnd(t, {3}, 2), bt = rnd(t, {3}, 3);
    auto wv = wt.toVector(), bv = bt.toVector();
    const Nc d{2, 3, 35};
    for (const auto& in : {xt, xt.withOrder(channelsLastOrder(4))}) {
      auto out = evaluateReference(*f, {in, wt, bt});
      checkClose(out[0], naiveInstanceNorm(xt.toVector(), d, &wv, &bv, 1e-5), std::string("instance_norm ") + dname(t));
      checkClose(out[1], naiveInstanceNorm(xt.toVector(), d, nullptr, nullptr, 1e-5), std::string("instance_norm plain ") + dname(t));
      checkClose(out[2], naiveLayerNorm2d(xt.toVector(), d, &wv, &bv, 1e-6), std::string("layer_norm_2d ") + dname(t));
    }
  }
}

TEST_CASE("reference composites: softmax and log_softmax", "[reference][composites]") {
  for (DType t : {DType::F32, DType::F16}) {
    FusionBuilder fb("sm");
    auto x = fb.input("x", t, {"N", "D"});
    auto z = fb.input("z", t, {2, 3, 5});
    fb.output("last", softmax(x, -1));
    fb.output("first", softmax(x, 0));
    fb.output("mid", softmax(z, 1));
    fb.output("log_last", log_softmax(x, 1));
    fb.output("log_mid", log_softmax(z, -2));
    auto f = fb.finish();
    auto xt = rnd(t, {3, 1531}, 1, -8, 8), zt = rnd(t, {2, 3, 5}, 2, -30, 30);
    auto out = evaluateReference(*f, {xt, zt});
    auto xv = xt.toVector(), zv = zt.toVector();
    std::string s = dname(t);
    checkClose(out[0], naiveSoftmax(xv, {3, 1531}, 1, false), "softmax dim -1 " + s);
    checkClose(out[1], naiveSoftmax(xv, {3, 1531}, 0, false), "softmax dim 0 " + s);
    checkClose(out[2], naiveSoftmax(zv, {2, 3, 5}, 1, false), "softmax dim 1 of 3 " + s);
    checkClose(out[3], naiveSoftmax(xv, {3, 1531}, 1, true), "log_softmax dim 1 " + s);
    checkClose(out[4], naiveSoftmax(zv, {2, 3, 5}, 1, true), "log_softmax dim -2 " + s);
  }
}

TEST_CASE("reference composites: lstm_cell and gru_cell", "[reference][composites]") {
  const int64_t B = 3, H = 17;
  for (DType t : {DType::F32, DType::F16}) {
    for (bool biases : {true, false}) {
      DYNAMIC_SECTION(dname(t) << (biases ? " with biases" : " without biases")) {
        auto ig = rnd(t, {B, 4 * H}, 1, -3, 3), hg = rnd(t, {B, 4 * H}, 2, -3, 3);
        auto ib = rnd(t, {4 * H}, 3), hb = rnd(t, {4 * H}, 4), cx = rnd(t, {B, H}, 5, -2, 2);
        FusionBuilder fb("lstm");
        auto igv = fb.input("ig", t, {"B", Extent(4) * Extent::symbol("H")});
        auto hgv = fb.input("hg", t, {"B", Extent(4) * Extent::symbol("H")});
        auto cxv = fb.input("cx", t, {"B", "H"});
        std::vector<HostTensor> in = {ig, hg, cx};
        std::optional<Tensor> ibv, hbv;
        if (biases) {
          ibv = fb.input("ib", t, {Extent(4) * Extent::symbol("H")});
          hbv = fb.input("hb", t, {Extent(4) * Extent::symbol("H")});
          in.push_back(ib);
          in.push_back(hb);
        }
        auto r = lstm_cell(igv, hgv, cxv, ibv, hbv);
        fb.output("hy", r.hy);
        fb.output("cy", r.cy);
        auto out = evaluateReference(*fb.finish(), in);
        Vec want_h, want_c;
        for (int64_t i = 0; i < B; ++i)
          for (int64_t j = 0; j < H; ++j) {
            auto gate = [&](int64_t k) {
              double g = ig.get({i, k * H + j}) + hg.get({i, k * H + j});
              if (biases) g += ib.get({k * H + j}) + hb.get({k * H + j});
              return g;
            };
            double ii = sigmoidD(gate(0)), ff = sigmoidD(gate(1)), gg = std::tanh(gate(2)), oo = sigmoidD(gate(3));
            double c = ff * cx.get({i, j}) + ii * gg;
            want_c.push_back(c);
            want_h.push_back(oo * std::tanh(c));
          }
        checkClose(out[0], want_h, "lstm hy");
        checkClose(out[1], want_c, "lstm cy");

        auto gi = rnd(t, {B, 3 * H}, 6, -3, 3), gh = rnd(t, {B, 3 * H}, 7, -3, 3);
        auto gib = rnd(t, {3 * H}, 8), ghb = rnd(t, {3 * H}, 9), hx = rnd(t, {B, H}, 10);
        FusionBuilder gb("gru");
        auto giv = gb.input("ig", t, {"B", Extent(3) * Extent::symbol("H")});
        auto ghv = gb.input("hg", t, {"B", Extent(3) * Extent::symbol("H")});
        auto hxv = gb.input("hx", t, {"B", "H"});
        std::vector<HostTensor> gin = {gi, gh, hx};
        std::optional<Tensor> gibv, ghbv;
        if (biases) {
          gibv = gb.input("ib", t, {Extent(3) * Extent::symbol("H")});
          ghbv = gb.input("hb", t, {Extent(3) * Extent::symbol("H")});
          gin.push_back(gib);
          gin.push_back(ghb);
        }
        gb.output("hy", gru_cell(giv, ghv, hxv, gibv, ghbv));
        auto gout = evaluateReference(*gb.finish(), gin);
        Vec want;
        for (int64_t i = 0; i < B; ++i)
          for (int64_t j = 0; j < H; ++j) {
            auto part = [&](const HostTensor& g, const HostTensor& bias, int64_t k) {
              return g.get({i, k * H + j}) + (biases ? bias.get({k * H + j}) : 0.0);
            };
            double rr = sigmoidD(part(gi, gib, 0) + part(gh, ghb, 0));
            double zz = sigmoidD(part(gi, gib, 1) + part(gh, ghb, 1));
            double nn = std::tanh(part(gi, gib, 2) + rr * part(gh, ghb, 2));
            want.push_back((1 - zz) * nn + zz * hx.get({i, j}));
          }
        checkClose(gout[0], want, "gru hy");
      }
    }
  }
}

namespace {
// Per-row mean and population std of a [rows, inner] row-major vector.
std::vector<Stats> rowStats(const Vec& v, int64_t inner) {
  std::vector<Stats> out;
  for (size_t r = 0; r < v.size() / static_cast<size_t>(inner); ++r)
    out.push_back(twoPass(Vec(v.begin() + static_cast<long>(r * inner), v.begin() + static_cast<long>((r + 1) * inner))));
  return out;
}
}  // namespace

TEST_CASE("reference composites: no cancellation at a large offset", "[reference][composites]") {
  // x = 1e4 + U(0, 1) in f32: the variance (1/12) is 1e-9 of E[x^2] (1e8).
  auto xt = HostTensor::random(DType::F32, {4, 1024}, 42, 1e4, 1e4 + 1);
  SECTION("layer_norm normalizes to mean 0, std 1") {
    FusionBuilder fb("ln");
    auto x = fb.input("x", DType::F32, {"N", "D"});
    fb.output("y", layer_norm(x, {"D"}));
    auto y = evaluateReference(*fb.finish(), {xt})[0].toVector();
    for (const Stats& s : rowStats(y, 1024)) {
      CHECK(std::fabs(s.mean) < 1e-3);
      CHECK(std::fabs(std::sqrt(s.var) - 1) < 1e-3);
    }
  }
  SECTION("group_norm normalizes each group to mean 0, std 1") {
    auto gt = HostTensor::random(DType::F32, {2, 8, 16, 16}, 43, 1e4, 1e4 + 1);
    FusionBuilder fb("gn");
    auto x = fb.input("x", DType::F32, {"N", "C", "H", "W"});
    fb.output("y", group_norm(x, 4));
    auto f = fb.finish();
    for (const auto& in : {gt, gt.withOrder(channelsLastOrder(4))}) {
      // Group (n, g) is a contiguous run of 2 * 256 values in NCHW order.
      auto y = evaluateReference(*f, {in})[0].toVector();
      for (const Stats& s : rowStats(y, 2 * 16 * 16)) {
        CHECK(std::fabs(s.mean) < 1e-3);
        CHECK(std::fabs(std::sqrt(s.var) - 1) < 1e-3);
      }
    }
  }
  SECTION("the naive E[x^2] - E[x]^2 in float32 fails on this data") {
    // So the two sections above cannot pass with a sum / sum-of-squares algorithm.
    auto v = xt.toVector();
    int failing_rows = 0;
    for (size_t r = 0; r < 4; ++r) {
      float s = 0, s2 = 0;
      Vec row;
      for (size_t i = 0; i < 1024; ++i) {
        float x = static_cast<float>(v[r * 1024 + i]);
        s += x;
        s2 += x * x;
        row.push_back(x);
      }
      float mean = s / 1024.0f;
      float var_naive = s2 / 1024.0f - mean * mean;
      double var_true = twoPass(row).var;
      CHECK(var_true == Approx(1.0 / 12).epsilon(0.1));
      // The std a naive normalization would produce: sqrt(var_true / (var_naive + eps)).
      double std_naive = std::sqrt(var_true / (static_cast<double>(var_naive) + 1e-5));
      INFO("row " << r << ": naive var " << var_naive << ", true var " << var_true);
      if (!(std::fabs(std_naive - 1) < 1e-3)) ++failing_rows;  // NaN counts as failing
    }
    CHECK(failing_rows == 4);
  }
}

TEST_CASE("the reference refuses sizes whose float64 copies would not fit memory, saying how much", "[reference]") {
  // Found by scripts/fuzz_fusions.py: an evaluation of 2^31 elements was killed by the kernel
  // for want of memory instead of failing with a message.
  FusionBuilder fb("ln");
  auto x = fb.input("x", DType::F16, {"N", "D"});
  fb.output("y", layer_norm(x, {"D"}));
  auto f = fb.finish();
  const Bindings small{{"N", 4}, {"D", 8}};
  // At least the float64 copy of x and of its f32 cast at once, plus the output; the caller's
  // f16 inputs on top with host_inputs.
  const double n = 32;
  CHECK(referencePeakBytes(*f, small, false) >= 8 * n * 2 + 2 * n);
  CHECK(referencePeakBytes(*f, small, true) == referencePeakBytes(*f, small, false) + 2 * n);
  CHECK_NOTHROW(checkReferenceFits(*f, small, true, "smaller"));
  const Bindings huge{{"N", int64_t{1} << 30}, {"D", int64_t{1} << 20}};  // 2^50 elements: petabytes
  CHECK(referencePeakBytes(*f, huge, false) > 1e16);
  try {
    checkReferenceFits(*f, huge, true, "give smaller sizes");
    SUCCEED("no /proc/meminfo here: nothing to check against");
  } catch (const loom::Error& e) {
    CHECK_THAT(e.what(), Catch::Contains("the CPU reference for `ln`") && Catch::Contains("GiB at once") &&
                             Catch::EndsWith("give smaller sizes"));
  }
}
