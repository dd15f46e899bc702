#include "frontend/framework_ops.h"

#include <charconv>
#include <cmath>
#include <functional>
#include <optional>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "frontend/activations.h"
#include "frontend/builder.h"
#include "frontend/composite_helpers.h"
#include "frontend/composites.h"
#include "frontend/composites_backward.h"
#include "ir/error.h"

namespace loom {

namespace {

// An op's parameters, read once each; whatever is left unread at the end is an error.
class Params {
 public:
  Params(std::string op, const OpParams& p) : op_(std::move(op)), p_(p) {}

  DType dtype(const std::string& key) {
    auto d = optDtype(key);
    LOOM_USER_CHECK(d.has_value(), "op `{}`: parameter `{}` (a dtype) is needed", op_, key);
    return *d;
  }
  // A tensor's dtype, or nullopt where it is not given ("none" or absent).
  std::optional<DType> optDtype(const std::string& key) {
    const auto v = take(key);
    if (!v || *v == "none") return std::nullopt;
    auto d = parseDType(*v);
    LOOM_USER_CHECK(d.has_value(), "op `{}`: {}={} is not a dtype (bool, i32, i64, f16, bf16, f32, f64, none)", op_,
                    key, *v);
    return d;
  }
  double number(const std::string& key, double fallback) {
    const auto v = take(key);
    if (!v) return fallback;
    double x = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
    LOOM_USER_CHECK(ec == std::errc() && p == v->data() + v->size() && std::isfinite(x),
                    "op `{}`: {}={} is not a number", op_, key, *v);
    return x;
  }
  int whole(const std::string& key) {
    const auto v = take(key);
    LOOM_USER_CHECK(v.has_value(), "op `{}`: parameter `{}` (a whole number) is needed", op_, key);
    int x = 0;
    auto [p, ec] = std::from_chars(v->data(), v->data() + v->size(), x);
    LOOM_USER_CHECK(ec == std::errc() && p == v->data() + v->size() && x > 0,
                    "op `{}`: {}={} is not a positive whole number", op_, key, *v);
    return x;
  }
  // act=: the activation ending the norm (none where not given).
  Activation act() {
    const auto v = take("act");
    return v ? parseActivation(op_, *v) : Activation::none;
  }
  // A 0/1 switch, `fallback` where not given.
  bool flag(const std::string& key, bool fallback) {
    const auto v = take(key);
    if (!v) return fallback;
    LOOM_USER_CHECK(*v == "0" || *v == "1", "op `{}`: {}={} is not 0 or 1", op_, key, *v);
    return *v == "1";
  }
  // x's rank: `lo` to 8, `fallback` where not given.
  int rank(int fallback, int lo) {
    if (p_.find("rank") == p_.end()) {
      read_.insert("rank");
      return fallback;
    }
    const int r = whole("rank");
    LOOM_USER_CHECK(r >= lo && r <= 8, "op `{}`: rank={} is not from {} to 8", op_, r, lo);
    return r;
  }
  void done() const {
    for (const auto& [k, v] : p_)
      LOOM_USER_CHECK(read_.count(k), "op `{}` takes no parameter `{}`; it takes: {}", op_, k, fmt::join(read_, ", "));
  }

 private:
  std::optional<std::string> take(const std::string& key) {
    read_.insert(key);
    auto it = p_.find(key);
    if (it == p_.end()) return std::nullopt;
    return it->second;
  }
  std::string op_;
  const OpParams& p_;
  std::set<std::string> read_;
};

// f32 statistics for f16/bf16/f32 inputs, f64 for f64 (the composites' compute dtype).
DType statsDtype(DType x) { return x == DType::F64 ? DType::F64 : DType::F32; }

using Dims = std::vector<Dim>;

// x's dims for a norm over the last dim, of `rank` dims: [N, D] at rank 2, else [N0, N1, ..., D].
Dims rowDims(int rank) {
  Dims d;
  for (int i = 0; i + 1 < rank; ++i) d.push_back(Extent::symbol(rank == 2 ? std::string("N") : fmt::format("N{}", i)));
  d.push_back("D");
  return d;
}
// The statistics of a norm over the last dim: x's leading dims and a 1.
Dims rowStatDims(int rank) {
  Dims d = rowDims(rank);
  d.back() = 1;
  return d;
}
// LayerNorm2d's statistics: [N, 1, spatial...].
Dims ln2dStatDims(int rank);

// x's dims for a norm over channels: [N, C, S] at rank 3, else [N, C, S0, S1, ...].
Dims spatialDims(int rank) {
  Dims d{"N", "C"};
  for (int i = 2; i < rank; ++i) d.push_back(Extent::symbol(rank == 3 ? std::string("S") : fmt::format("S{}", i - 2)));
  return d;
}

std::optional<Tensor> optInput(FusionBuilder& fb, const std::string& name, std::optional<DType> t, const Dims& dims) {
  if (!t) return std::nullopt;
  return fb.input(name, *t, dims);
}

void outputGrads(FusionBuilder& fb, const NormGrads& g) {
  fb.output("dx", g.dx);
  if (g.dw) fb.output("dw", g.dw);
  if (g.db) fb.output("db", g.db);
}

// A norm's y ended by `act` (rounded to y's dtype between the two, as PyTorch's separate norm
// and activation modules round).
Tensor activated(Tensor y, Activation act) {
  return act == Activation::none ? y : cast(applyActivation(toCompute(y), act), y.dtype());
}

// `s` with its y ended by `act`.
NormStats withActivation(NormStats s, Activation act) {
  s.y = activated(s.y, act);
  return s;
}

// The forward's outputs: y, then (stats=1, the default) what its backward reads.
void outputStats(FusionBuilder& fb, Params& p, NormStats s) {
  fb.output("y", s.y);
  if (!p.flag("stats", true)) return;
  fb.output("mean", s.mean);
  fb.output("rstd", s.rstd);
}

// The gradient at a norm's output before its activation (act=): dy * act'(z), z the norm's
// output recomputed from the statistics (`z`, compute dtype) rounded as the forward stored it.
Tensor throughActivation(Tensor dy, Tensor x, Activation act, const std::function<Tensor()>& z) {
  if (act == Activation::none) return dy;
  Tensor zq = toCompute(cast(z(), x.dtype()));
  return cast(activationGrad(toCompute(dy), zq, act), x.dtype());
}

// z = xhat * w + b of a per-channel affine norm (w, b [C] given or not).
Tensor channelAffine(Tensor xhat, const std::optional<Tensor>& w, const std::optional<Tensor>& b, Tensor x) {
  if (w) xhat = xhat * composite::perChannel(composite::computeLike(*w, x), x.rank());
  if (b) xhat = xhat + composite::perChannel(composite::computeLike(*b, x), x.rank());
  return xhat;
}

// Spatial norms: x [N, C, S], per-channel weight and bias [C].
struct Spatial {
  Tensor x;
  std::optional<Tensor> w, b;
};
Spatial spatialInputs(FusionBuilder& fb, Params& p, DType xt, int rank, bool bias) {
  Spatial s{fb.input("x", xt, spatialDims(rank)), optInput(fb, "w", p.optDtype("w"), {"C"}), std::nullopt};
  if (bias) s.b = optInput(fb, "b", p.optDtype("b"), {"C"});
  return s;
}

Dims ln2dStatDims(int rank) {
  Dims d = spatialDims(rank);
  d[1] = 1;
  return d;
}

// group_norm_backward where act ends the forward: dy * act'(z) and the norm's gradient all in
// x's grouped shape [N, G, C/G, S...], as group_norm_backward reads x against the [N, G]
// statistics (reshaping a gradient back to x's shape and grouping it again would split C twice).
NormGrads groupNormActBackward(Tensor dy, const Spatial& s, Tensor mu, Tensor rstd, int groups, Activation act) {
  const int r = s.x.rank();
  std::vector<Dim> grouped{s.x.size(0), groups, s.x.size(1) / Extent(groups)}, full, params{groups, s.x.size(1) / Extent(groups)};
  for (int d = 2; d < r; ++d) grouped.push_back(s.x.size(d));
  for (const Extent& e : s.x.shape()) full.push_back(e);
  std::vector<bool> to_grouped(grouped.size(), true), param_new(grouped.size(), true);
  to_grouped[0] = to_grouped[1] = false;
  param_new[1] = param_new[2] = false;
  auto grouped_param = [&](Tensor t) { return broadcast(reshape(composite::computeLike(t, s.x), params), param_new); };
  Tensor m = broadcast(composite::computeLike(mu, s.x), to_grouped);
  Tensor rs = broadcast(composite::computeLike(rstd, s.x), to_grouped);
  Tensor xhat = (reshape(toCompute(s.x), grouped) - m) * rs;
  Tensor z = s.w ? xhat * grouped_param(*s.w) : xhat;
  if (s.b) z = z + grouped_param(*s.b);
  const DType xt = s.x.dtype();
  // The gradient at the norm's output, rounded to x's dtype as the module's activation returns it.
  Tensor dz = toCompute(cast(activationGrad(reshape(toCompute(dy), grouped), toCompute(cast(z, xt)), act), xt));
  Tensor gz = s.w ? dz * grouped_param(*s.w) : dz;
  std::vector<int> dims;
  for (int d = 2; d <= r; ++d) dims.push_back(d);
  Tensor dx = rs * (gz - loom::mean(gz, dims, true) - xhat * loom::mean(gz * xhat, dims, true));
  std::vector<int> pdims = {0};
  for (int d = 2; d < r; ++d) pdims.push_back(d);
  NormGrads out{cast(reshape(dx, full), xt), {}, {}};
  if (s.w) out.dw = cast(sum(reshape(dz * xhat, full), pdims), s.w->dtype());
  out.db = cast(sum(reshape(dz, full), pdims), s.w ? s.w->dtype() : statsDtype(xt));
  return out;
}

using Build = std::function<void(FusionBuilder&, Params&)>;

struct OpDef {
  const char* name;
  const char* summary;
  Build build;
};

const std::vector<OpDef>& opDefs() {
  static const std::vector<OpDef> defs = {
      {"layer_norm", "x [N, D], w and b [D] (optional): y, mean and rstd [N, 1]; params x, w, b, eps (1e-5), act (none), stats (1; 0: y alone)",
       [](FusionBuilder& fb, Params& p) {
         const DType xt = p.dtype("x");
         const int r = p.rank(2, 1);
         auto x = fb.input("x", xt, rowDims(r));
         auto w = optInput(fb, "w", p.optDtype("w"), {"D"});
         auto b = optInput(fb, "b", p.optDtype("b"), {"D"});
         outputStats(fb, p, withActivation(layer_norm_with_stats(x, {"D"}, w, b, p.number("eps", 1e-5)), p.act()));
       }},
      {"layer_norm_backward", "dy, x [N, D], mean, rstd [N, 1], w, b [D] (optional): dx, dw, db; params x, w, b, act (none: the forward's act, recomputed from the statistics)",
       [](FusionBuilder& fb, Params& p) {
         const DType xt = p.dtype("x");
         const int r = p.rank(2, 1);
         auto dy = fb.input("dy", xt, rowDims(r));
         auto x = fb.input("x", xt, rowDims(r));
         auto mean = fb.input("mean", statsDtype(xt), rowStatDims(r));
         auto rstd = fb.input("rstd", statsDtype(xt), rowStatDims(r));
         auto w = optInput(fb, "w", p.optDtype("w"), {"D"});
         auto b = optInput(fb, "b", p.optDtype("b"), {"D"});
         Tensor g = throughActivation(dy, x, p.act(), [&] {
           Tensor z = (toCompute(x) - composite::asBroadcast(composite::computeLike(mean, x))) *
                      composite::asBroadcast(composite::computeLike(rstd, x));
           if (w) z = z * composite::computeLike(*w, x);
           return b ? z + composite::computeLike(*b, x) : z;
         });
         outputGrads(fb, layer_norm_backward(g, x, mean, rstd, {"D"}, w, b));
       }},
      {"rms_norm", "x [N, D], w [D] (optional): y, rstd [N, 1]; params x, w, eps (1e-6), stats (1; 0: y alone)",
       [](FusionBuilder& fb, Params& p) {
         const DType xt = p.dtype("x");
         const int r = p.rank(2, 1);
         auto x = fb.input("x", xt, rowDims(r));
         auto w = optInput(fb, "w", p.optDtype("w"), {"D"});
         auto out = rms_norm_with_stats(x, {"D"}, w, p.number("eps", 1e-6));
         fb.output("y", out.y);
         if (p.flag("stats", true)) fb.output("rstd", out.rstd);
       }},
      {"rms_norm_backward", "dy, x [N, D], rstd [N, 1], w [D] (optional): dx, dw; params x, w",
       [](FusionBuilder& fb, Params& p) {
         const DType xt = p.dtype("x");
         const int r = p.rank(2, 1);
         auto dy = fb.input("dy", xt, rowDims(r));
         auto x = fb.input("x", xt, rowDims(r));
         auto rstd = fb.input("rstd", statsDtype(xt), rowStatDims(r));
         auto w = optInput(fb, "w", p.optDtype("w"), {"D"});
         outputGrads(fb, rms_norm_backward(dy, x, rstd, {"D"}, w));
       }},
      {"group_norm", "x [N, C, S], w and b [C] (optional): y, mean and rstd [N, G]; params x, groups, w, b, eps (1e-5), act (none), stats (1)",
       [](FusionBuilder& fb, Params& p) {
         const DType xt = p.dtype("x");
         const int r = p.rank(3, 2);
         const int g = p.whole("groups");
         auto s = spatialInputs(fb, p, xt, r, true);
         outputStats(fb, p, withActivation(group_norm_with_stats(s.x, g, s.w, s.b, p.number("eps", 1e-5)), p.act()));
       }},
      {"group_norm_backward", "dy, x [N, C, S], mean, rstd [N, G], w [C] (optional): dx, dw, db; params x, groups, w, act (none; b [C] an input where given)",
       [](FusionBuilder& fb, Params& p) {
         const DType xt = p.dtype("x");
         const int r = p.rank(3, 2);
         const int g = p.whole("groups");
         auto dy = fb.input("dy", xt, spatialDims(r));
         const Activation act = p.act();
         auto s = spatialInputs(fb, p, xt, r, act != Activation::none);
         auto mean = fb.input("mean", statsDtype(xt), {"N", g});
         auto rstd = fb.input("rstd", statsDtype(xt), {"N", g});
         if (act != Activation::none) {
           outputGrads(fb, groupNormActBackward(dy, s, mean, rstd, g, act));
           return;
         }
         outputGrads(fb, group_norm_backward(dy, s.x, mean, rstd, g, s.w));
       }},
      {"batch_norm", "x [N, C, S], running_mean and running_var [C] (optional, updated in place), w and b [C] "
                     "(optional): y, save_mean, save_invstd [C]; params x, running, w, b, momentum (0.1), eps (1e-5), inplace (1; 0: "
                     "the updated statistics as outputs), cumulative (0; 1: momentum 1 / num_batches_tracked, an i64 "
                     "scalar input), act (none), stats (1)",
       [](FusionBuilder& fb, Params& p) {
         const DType xt = p.dtype("x");
         const int r = p.rank(3, 2);
         auto x = fb.input("x", xt, spatialDims(r));
         const auto rt = p.optDtype("running");
         auto rm = optInput(fb, "running_mean", rt, {"C"});
         auto rv = optInput(fb, "running_var", rt, {"C"});
         auto w = optInput(fb, "w", p.optDtype("w"), {"C"});
         auto b = optInput(fb, "b", p.optDtype("b"), {"C"});
         const double eps = p.number("eps", 1e-5), momentum = p.number("momentum", 0.1);
         // cumulative=1: PyTorch's momentum=None, 1 / num_batches_tracked (read at run time).
         auto out = p.flag("cumulative", false)
                        ? batch_norm_with_stats(x, rm, rv, w, b,
                                                1.0 / cast(fb.scalarInput("num_batches_tracked", DType::I64), statsDtype(xt)),
                                                eps)
                        : batch_norm_with_stats(x, rm, rv, w, b, momentum, eps);
         // inplace=0: the updated statistics as outputs of their own (a functional op's).
         const bool inplace = p.number("inplace", 1) != 0;
         const Activation act = p.act();
         fb.output("y", activated(out.y, act));
         if (p.flag("stats", true)) {
           fb.output("save_mean", out.save_mean);
           fb.output("save_invstd", out.save_invstd);
         }
         if (rm) fb.output("new_running_mean", out.running_mean, inplace ? rm : std::optional<Tensor>());
         if (rv) fb.output("new_running_var", out.running_var, inplace ? rv : std::optional<Tensor>());
       }},
      {"batch_norm_eval", "x [N, C, S], running_mean and running_var [C], w and b [C] (optional): y; params x, "
                          "running, w, b, eps (1e-5)",
       [](FusionBuilder& fb, Params& p) {
         const DType xt = p.dtype("x");
         const int r = p.rank(3, 2);
         auto x = fb.input("x", xt, spatialDims(r));
         const DType rt = p.dtype("running");
         auto rm = fb.input("running_mean", rt, {"C"});
         auto rv = fb.input("running_var", rt, {"C"});
         auto w = optInput(fb, "w", p.optDtype("w"), {"C"});
         auto b = optInput(fb, "b", p.optDtype("b"), {"C"});
         fb.output("y", batch_norm(x, rm, rv, w, b, false, 0.0, p.number("eps", 1e-5)).y);
       }},
      {"batch_norm_backward", "dy, x [N, C, S], save_mean, save_invstd [C], w [C] (optional): dx, dw, db; params x, w, act (none; b [C] an input where given)",
       [](FusionBuilder& fb, Params& p) {
         const DType xt = p.dtype("x");
         const int r = p.rank(3, 2);
         auto dy = fb.input("dy", xt, spatialDims(r));
         const Activation act = p.act();
         auto s = spatialInputs(fb, p, xt, r, act != Activation::none);
         auto mean = fb.input("save_mean", statsDtype(xt), {"C"});
         auto invstd = fb.input("save_invstd", statsDtype(xt), {"C"});
         Tensor g = throughActivation(dy, s.x, act, [&] {
           Tensor xhat = (toCompute(s.x) - composite::perChannel(composite::computeLike(mean, s.x), r)) *
                         composite::perChannel(composite::computeLike(invstd, s.x), r);
           return channelAffine(xhat, s.w, s.b, s.x);
         });
         outputGrads(fb, batch_norm_backward(g, s.x, mean, invstd, s.w));
       }},
      {"instance_norm", "x [N, C, S], w and b [C] (optional): y, mean and rstd [N, C]; params x, w, b, eps (1e-5), stats (1)",
       [](FusionBuilder& fb, Params& p) {
         const DType xt = p.dtype("x");
         const int r = p.rank(3, 3);
         auto s = spatialInputs(fb, p, xt, r, true);
         outputStats(fb, p, instance_norm_with_stats(s.x, s.w, s.b, p.number("eps", 1e-5)));
       }},
      {"instance_norm_backward", "dy, x [N, C, S], mean, rstd [N, C], w [C] (optional): dx, dw, db; params x, w",
       [](FusionBuilder& fb, Params& p) {
         const DType xt = p.dtype("x");
         const int r = p.rank(3, 3);
         auto dy = fb.input("dy", xt, spatialDims(r));
         auto s = spatialInputs(fb, p, xt, r, false);
         auto mean = fb.input("mean", statsDtype(xt), {"N", "C"});
         auto rstd = fb.input("rstd", statsDtype(xt), {"N", "C"});
         outputGrads(fb, instance_norm_backward(dy, s.x, mean, rstd, s.w));
       }},
      {"layer_norm_2d", "x [N, C, S], w and b [C] (optional): y, mean and rstd [N, 1, S]; params x, w, b, eps (1e-6), act (none), stats (1)",
       [](FusionBuilder& fb, Params& p) {
         const DType xt = p.dtype("x");
         const int r = p.rank(3, 3);
         auto s = spatialInputs(fb, p, xt, r, true);
         outputStats(fb, p, withActivation(layer_norm_2d_with_stats(s.x, s.w, s.b, p.number("eps", 1e-6)), p.act()));
       }},
      {"layer_norm_2d_backward", "dy, x [N, C, S], mean, rstd [N, 1, S], w [C] (optional): dx, dw, db; params x, w, act (none; b [C] an input where given)",
       [](FusionBuilder& fb, Params& p) {
         const DType xt = p.dtype("x");
         const int r = p.rank(3, 3);
         auto dy = fb.input("dy", xt, spatialDims(r));
         const Activation act = p.act();
         auto s = spatialInputs(fb, p, xt, r, act != Activation::none);
         auto mean = fb.input("mean", statsDtype(xt), ln2dStatDims(r));
         auto rstd = fb.input("rstd", statsDtype(xt), ln2dStatDims(r));
         Tensor g = throughActivation(dy, s.x, act, [&] {
           Tensor xhat = (toCompute(s.x) - composite::asBroadcast(composite::computeLike(mean, s.x))) *
                         composite::asBroadcast(composite::computeLike(rstd, s.x));
           return channelAffine(xhat, s.w, s.b, s.x);
         });
         outputGrads(fb, layer_norm_2d_backward(g, s.x, mean, rstd, s.w));
       }},
  };
  return defs;
}

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

}  // namespace

std::unique_ptr<ir::Fusion> buildFrameworkOp(const std::string& op, const OpParams& params) {
  for (const OpDef& d : opDefs()) {
    if (op != d.name) continue;
    Params p(op, params);
    FusionBuilder fb(op);
    d.build(fb, p);
    p.done();
    return fb.finish();
  }
  std::vector<std::string> names;
  for (const OpDef& d : opDefs()) names.push_back(d.name);
  fail("`{}` is not a framework op; they are: {}", op, fmt::join(names, ", "));
}

OpParams parseOpParams(const std::string& text) {
  OpParams out;
  size_t p = 0;
  while (p < text.size()) {
    size_t c = text.find(',', p);
    if (c == std::string::npos) c = text.size();
    const std::string piece = text.substr(p, c - p);
    const size_t eq = piece.find('=');
    LOOM_USER_CHECK(eq != std::string::npos && !trim(piece.substr(0, eq)).empty(),
                    "op parameters `{}`: `{}` must look like key=value", text, piece);
    const std::string key = trim(piece.substr(0, eq));
    LOOM_USER_CHECK(!out.count(key), "op parameters `{}`: `{}` is given twice", text, key);
    out[key] = trim(piece.substr(eq + 1));
    p = c + 1;
  }
  return out;
}

const std::vector<FrameworkOpInfo>& frameworkOps() {
  static const std::vector<FrameworkOpInfo> info = [] {
    std::vector<FrameworkOpInfo> v;
    for (const OpDef& d : opDefs()) v.push_back({d.name, d.summary});
    return v;
  }();
  return info;
}

}  // namespace loom
