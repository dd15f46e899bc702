// The reference's error bounds (reference/reference_bounds.cpp) and compareOutputs: an
// ill-conditioned result computed correctly in f32 passes, a wrong one still fails. The "GPU"
// results here are computed on the CPU in float, in blocks then a tree, as a kernel would.
#include <catch2/catch.hpp>

#include <cmath>
#include <limits>
#include <vector>

#include "frontend/internal_api.h"
#include "reference/compare.h"

using namespace loom;

namespace {

// A float sum in blocks of 256 summed serially, then the blocks' sums pairwise: a kernel's order.
float blockedSum(const std::vector<float>& v) {
  std::vector<float> part;
  for (size_t b = 0; b < v.size(); b += 256) {
    float s = 0;
    for (size_t i = b; i < std::min(v.size(), b + 256); ++i) s += v[i];
    part.push_back(s);
  }
  while (part.size() > 1) {
    std::vector<float> next;
    for (size_t i = 0; i < part.size(); i += 2) next.push_back(i + 1 < part.size() ? part[i] + part[i + 1] : part[i]);
    part = next;
  }
  return part.empty() ? 0.0f : part[0];
}

// n values in pairs v, -v (1 + delta) with v in [0.5, 1.5]: their sum is about delta / 2 of
// their magnitude.
std::vector<double> cancelling(int64_t n, double delta) {
  std::vector<double> xv(static_cast<size_t>(n));
  auto v = HostTensor::random(DType::F32, {n / 2}, 17, 0.5, 1.5).toVector();
  for (int64_t k = 0; k < n / 2; ++k) {
    xv[static_cast<size_t>(2 * k)] = v[static_cast<size_t>(k)];
    xv[static_cast<size_t>(2 * k + 1)] = static_cast<float>(-v[static_cast<size_t>(k)] * (1 + delta));
  }
  return xv;
}

std::vector<float> floats(const HostTensor& t) {
  std::vector<float> v;
  for (double d : t.toVector()) v.push_back(static_cast<float>(d));
  return v;
}

}  // namespace

TEST_CASE("reference bounds: each rule on small fusions", "[reference][bounds]") {
  FusionBuilder fb("rules");
  auto x = fb.input("x", DType::F32, {"N"});
  auto y = fb.input("y", DType::F32, {"N"});
  auto i = fb.input("i", DType::I32, {"N"});
  fb.output("sum_xy", x + y);
  auto m = mean(x, {0}, /*keepdim=*/true);
  fb.output("m", m);
  fb.output("inv", reciprocal(x - m));  // x - mean near zero: a pole within the bound
  fb.output("top", amax(x * 3.0, {0}));
  fb.output("isum", sum(i, {0}));
  fb.output("h", cast(x, DType::F16));
  fb.output("h3", cast(x * 3.0, DType::F16));
  auto f = fb.finish();
  std::vector<double> xv = {1.0, 2.0, 3.0, -6.0 + 1e-9};
  auto xt = HostTensor::fromValues(DType::F32, {4}, xv);
  auto yt = HostTensor::fromValues(DType::F32, {4}, {0.5, 0.25, -3.0, 8.0});
  auto it = HostTensor::fromValues(DType::I32, {4}, {1, 2, 3, 4});
  auto rb = evaluateReferenceBounds(*f, {xt, yt, it});
  const double u = std::ldexp(1.0, -24);
  REQUIRE(rb.bounds.size() == 7);
  // The values are evaluateReference's.
  auto plain = evaluateReference(*f, {xt, yt, it});
  for (size_t k = 0; k < plain.size(); ++k) CHECK(rb.values[k].toVector() == plain[k].toVector());
  // Exact inputs: an add's bound is its own rounding, 4 f32 units of the result.
  CHECK(rb.bounds[0].getLinear(0) == Approx(4 * u * 1.5));
  CHECK(rb.bounds[0].getLinear(2) == 0.0);  // an exact 0 (3 + -3) stays exact
  // A mean of 4 values that nearly cancel: (2 + log2 4 + sqrt 4) units of the sum of their
  // magnitudes, over 4, and its own rounding: far more than one unit of the tiny mean.
  const double mu = rb.values[1].getLinear(0);
  CHECK(std::fabs(mu) < 1e-9);
  // Plus as many units of the largest (6): the shift loom's mean sums from may be that one.
  CHECK(rb.bounds[1].getLinear(0) == Approx(6 * u * 12.0 / 4 + 6 * u * 6.0 + 4 * u * std::fabs(mu)));
  // 1 / (x - mean) is finite where x is far from the mean; no bound holds it where the
  // operand's interval would hold 0 (none here), and it grows with 1 / (x - mean)^2.
  CHECK(std::isfinite(rb.bounds[2].getLinear(0)));
  CHECK(rb.bounds[2].getLinear(0) > 0);
  // amax moves as far as the elements that could be the largest: 9 within its own rounding;
  // -18, whose bound is larger, is far below and adds nothing. Integer sums are exact.
  CHECK(rb.bounds[3].getLinear(0) == Approx(4 * u * 9.0));
  CHECK(rb.bounds[4].getLinear(0) == 0.0);
  // A cast of an exact value rounds the same on both sides; of a computed one (3x, itself
  // within 4 units), it adds its own rounding and one f16 step (2 units of 2^-11).
  CHECK(rb.bounds[5].getLinear(1) == 0.0);
  CHECK(rb.bounds[6].getLinear(1) == Approx(4 * u * 6.0 + (4 * u + 2 * std::ldexp(1.0, -11)) * 6.0));
}

TEST_CASE("reference bounds: no slack where the reference is not finite, or far from an extreme",
          "[reference][bounds]") {
  FusionBuilder fb("edges");
  auto x = fb.input("x", DType::F32, {"R", "N"});
  auto m = fb.input("m", DType::F32, {"R", "N"});
  fb.output("s", sum(x, {1}));
  auto vm = var_mean(x, {1}, /*correction=*/1);
  fb.output("var", vm.var);
  auto masked = x + m;  // a mask of -3e38: its own rounding is about 7e31
  fb.output("top", amax(masked, {1}));
  fb.output("shifted", masked - amax(masked, {1}, /*keepdim=*/true));
  auto f = fb.finish();
  const double inf = std::numeric_limits<double>::infinity();
  // Row 0 holds +inf; row 1 is finite, with its last element masked.
  auto xt = HostTensor::fromValues(DType::F32, {2, 3}, {1.0, inf, 2.0, 0.5, 0.25, 0.75});
  auto mt = HostTensor::fromValues(DType::F32, {2, 3}, {0.0, 0.0, 0.0, 0.0, 0.0, -3e38});
  auto rb = evaluateReferenceBounds(*f, {xt, mt});
  // A sum and a variance whose reference is inf or NaN: no slack at all.
  CHECK(std::isinf(rb.values[0].getLinear(0)));
  CHECK(rb.bounds[0].getLinear(0) == 0.0);
  CHECK_FALSE(std::isfinite(rb.values[1].getLinear(0)));
  CHECK(rb.bounds[1].getLinear(0) == 0.0);
  auto got = HostTensor::fromValues(DType::F32, {2}, {0.0, rb.values[0].getLinear(1)});
  auto c = compareOutputs(*f, {xt, mt}, {}, {got, rb.values[1], rb.values[2], rb.values[3]}, rb.values)[0];
  INFO(c.str());
  CHECK_FALSE(c.ok);
  CHECK(c.bad_nonfinite == 1);
  // Row 1's maximum (0.5) moves only by its own rounding: the masked element's huge bound
  // is far below it, and the unmasked results after it stay tight.
  const double u = std::ldexp(1.0, -24);
  CHECK(rb.bounds[2].getLinear(1) == Approx(4 * u * 0.5));
  CHECK(rb.bounds[3].getLinear(3) < 1e-6);
  CHECK(rb.bounds[3].getLinear(4) < 1e-6);
}

TEST_CASE("reference bounds: a variance over n <= correction has no slack", "[reference][bounds]") {
  FusionBuilder fb("one");
  auto x = fb.input("x", DType::F32, {"R", "N"});
  fb.output("var", var_mean(x, {1}, /*correction=*/1).var);
  auto f = fb.finish();
  auto xt = HostTensor::fromValues(DType::F32, {2, 1}, {1.0, 2.0});
  auto rb = evaluateReferenceBounds(*f, {xt});
  CHECK(std::isnan(rb.values[0].getLinear(0)));
  CHECK(rb.bounds[0].getLinear(0) == 0.0);
  auto zeros = HostTensor::fromValues(DType::F32, {2}, {0.0, 0.0});
  CHECK_FALSE(compareOutputs(*f, {xt}, {}, {zeros}, rb.values)[0].ok);
}

TEST_CASE("reference bounds: a pole within an operand's bound is unbounded", "[reference][bounds]") {
  FusionBuilder fb("pole");
  auto x = fb.input("x", DType::F32, {"N"});
  fb.output("r", reciprocal(sum(x, {0})));
  auto f = fb.finish();
  // The sum is 2^-30: less than its bound (a few units of the magnitudes, about 1e-7).
  auto xt = HostTensor::fromValues(DType::F32, {3}, {1.0, -1.0, std::ldexp(1.0, -30)});
  auto rb = evaluateReferenceBounds(*f, {xt});
  CHECK(std::isinf(rb.bounds[0].getLinear(0)));
  // So any answer passes, a NaN or inf included.
  auto got = HostTensor::fromValues(DType::F32, {}, {-std::numeric_limits<double>::infinity()});
  CHECK(compareOutputs(*f, {xt}, {}, {got}, rb.values)[0].ok);
  // A sum exactly 0 in the reference (values k/7 that cancel, each rounded in f32 on the GPU):
  // its reciprocal is inf there, and unbounded, so the GPU's finite 1 / 1e-8 passes too (found
  // by the GPU soak: seed 3, case 6392).
  FusionBuilder fz("zero");
  auto z = fz.input("z", DType::F32, {"N"});
  fz.output("r", maximum(reciprocal(sum(z / 7.0, {0})), 0.0));
  auto g = fz.finish();
  auto zt = HostTensor::fromValues(DType::F32, {4}, {1.0, -1.0, 1.0, -1.0});
  auto zb = evaluateReferenceBounds(*g, {zt});
  CHECK(std::isinf(zb.values[0].getLinear(0)));
  CHECK(std::isinf(zb.bounds[0].getLinear(0)));
  auto finite = HostTensor::fromValues(DType::F32, {}, {1e8});
  CHECK(compareOutputs(*g, {zt}, {}, {finite}, zb.values)[0].ok);
}

TEST_CASE("compareOutputs: ill-conditioned results pass only within their bounds", "[reference][bounds][compare]") {
  const int64_t n = 1 << 18;
  SECTION("the mean of all of them") {
    FusionBuilder fb("cancel_mean");
    auto x = fb.input("x", DType::F32, {"N"});
    fb.output("m", mean(x, {0}));
    auto f = fb.finish();
    // Values that cancel, leaving 1e-7 of their magnitude.
    auto xt = HostTensor::fromValues(DType::F32, {n}, cancelling(n, 1e-7));
    auto ref = evaluateReference(*f, {xt});
    const float gpu = blockedSum(floats(xt)) / static_cast<float>(n);
    auto got = HostTensor::fromValues(DType::F32, {}, {gpu});
    // The plain comparison fails: the float sum's rounding is large against the tiny mean.
    auto plain = compareToReference(got, ref[0], elementTolerance(*f, DType::F32));
    REQUIRE_FALSE(plain.ok);
    auto c = compareOutputs(*f, {xt}, {}, {got}, ref)[0];
    INFO(c.str());
    CHECK(c.ok);
    CHECK(c.bounded);
    // A mean that is off by a thousandth of the values' magnitude is still wrong.
    auto wrong = HostTensor::fromValues(DType::F32, {}, {gpu + 1e-3f});
    auto w = compareOutputs(*f, {xt}, {}, {wrong}, ref)[0];
    INFO(w.str());
    CHECK_FALSE(w.ok);
  }

  SECTION("x divided by the sum of its column") {
    FusionBuilder fb("over_sum");
    auto x = fb.input("x", DType::F32, {"R", "C"});
    fb.output("y", x / sum(x, {0}, /*keepdim=*/true));
    auto f = fb.finish();
    const int64_t rows = 512, cols = n / rows;
    // Each column's values cancel to 1e-4 of their magnitude: its sums are good to about
    // 1e-2 of their value, not to f32's tolerance.
    const std::vector<double> xv = cancelling(n, 2e-4);
    std::vector<double> cv(static_cast<size_t>(n));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c) {  // the positive halves of the pairs first
        const int64_t k = r < rows / 2 ? 2 * r : 2 * (r - rows / 2) + 1;
        cv[static_cast<size_t>(r * cols + c)] = xv[static_cast<size_t>(c * rows + k)];
      }
    auto ct = HostTensor::fromValues(DType::F32, {rows, cols}, cv);
    auto ref = evaluateReference(*f, {ct});
    std::vector<double> out(static_cast<size_t>(n));
    for (int64_t c = 0; c < cols; ++c) {
      std::vector<float> col;
      for (int64_t r = 0; r < rows; ++r) col.push_back(static_cast<float>(cv[static_cast<size_t>(r * cols + c)]));
      const float s = blockedSum(col);
      for (int64_t r = 0; r < rows; ++r) out[static_cast<size_t>(r * cols + c)] = col[static_cast<size_t>(r)] / s;
    }
    auto got = HostTensor::fromValues(DType::F32, {rows, cols}, out);
    REQUIRE_FALSE(compareToReference(got, ref[0], elementTolerance(*f, DType::F32)).ok);
    auto c = compareOutputs(*f, {ct}, {}, {got}, ref)[0];
    INFO(c.str());
    CHECK(c.ok);
    // One element off by 20% of its value fails, bounds or not.
    got.setLinear(12345, out[12345] * 1.2);
    auto w = compareOutputs(*f, {ct}, {}, {got}, ref)[0];
    INFO(w.str());
    CHECK_FALSE(w.ok);
  }
}

TEST_CASE("compareOutputs: a well-conditioned large sum missing a block still fails", "[reference][bounds][compare]") {
  // 2^20 values in [0.5, 1.5]: twice the sum's bound is about 6e-6 of it, less than f32's
  // tolerance, so one block of 256 values left out (2.4e-4 of it) fails with bounds too.
  FusionBuilder fb("big_sum");
  auto x = fb.input("x", DType::F32, {"N"});
  fb.output("s", sum(x, {0}));
  auto f = fb.finish();
  const int64_t n = int64_t{1} << 20;
  auto xt = HostTensor::random(DType::F32, {n}, 5, 0.5, 1.5);
  auto ref = evaluateReference(*f, {xt});
  std::vector<float> v = floats(xt);
  std::fill(v.begin(), v.begin() + 256, 0.0f);
  auto got = HostTensor::fromValues(DType::F32, {}, {static_cast<double>(blockedSum(v))});
  auto c = compareOutputs(*f, {xt}, {}, {got}, ref)[0];
  INFO(c.str());
  CHECK_FALSE(c.ok);
  CHECK(c.bounded);
  // The blocked float sum of all of them passes (without needing the bounds).
  auto right = HostTensor::fromValues(DType::F32, {}, {static_cast<double>(blockedSum(floats(xt)))});
  CHECK(compareOutputs(*f, {xt}, {}, {right}, ref)[0].ok);
}

TEST_CASE("compareOutputs: well-conditioned results gain no slack", "[reference][bounds][compare]") {
  // Layer norm of ordinary data: one element wrong by half the output's scale fails, as it
  // did before bounds, and a correct result never evaluates them (it passes on its own).
  auto f = findExample("layer_norm")->buildDefault();
  const Bindings sizes{{"N", 64}, {"D", 1000}};
  std::vector<HostTensor> in;
  uint64_t seed = 3;
  for (const ir::Value* v : f->inputs()) in.push_back(HostTensor::random(v->dtype(), evalShape(v, sizes), seed++));
  auto ref = evaluateReference(*f, in, sizes);
  auto got = HostTensor::empty(ref[0].dtype(), ref[0].shape());
  for (int64_t k = 0; k < ref[0].numel(); ++k) got.setLinear(k, ref[0].getLinear(k));
  auto ok = compareOutputs(*f, in, sizes, {got}, ref)[0];
  CHECK(ok.ok);
  CHECK_FALSE(ok.bounded);
  got.setLinear(777, ref[0].getLinear(777) + 0.5);
  auto w = compareOutputs(*f, in, sizes, {got}, ref)[0];
  INFO(w.str());
  CHECK_FALSE(w.ok);
  CHECK(w.bounded);
}

TEST_CASE("reference bounds: a function that turns inside an operand's interval", "[reference][bounds]") {
  // x / s with s a mean near zero: x / s is known only to within a few radians, so sin of it
  // may be anything in [-1, 1], though sin takes about the same value at both ends of the
  // interval (found by the GPU soak: seed 1, case 8740).
  FusionBuilder fb("turns");
  auto x = fb.input("x", DType::F32, {"N"});
  auto s = mean(x, {0}, /*keepdim=*/true);
  auto q = x / s;
  fb.output("sin", sin(q));
  fb.output("cos", cos(q));
  fb.output("abs", abs(x - s));
  fb.output("rem", remainder(q, 1.0));
  auto f = fb.finish();
  // The mean is 2^-20 of the magnitudes, q about 1e6 and its bound some radians wide.
  auto xt = HostTensor::fromValues(DType::F32, {4}, {1.0, -1.0, 0.5, -0.5 + std::ldexp(1.0, -18)});
  auto rb = evaluateReferenceBounds(*f, {xt});
  for (int k : {0, 1}) {
    INFO("output " << k);
    const double y = rb.values[k].getLinear(0);
    CHECK(rb.bounds[k].getLinear(0) == Approx(std::max(1 - y, 1 + y)));
  }
  // remainder by 1 of a value known to within radians: anything in [0, 1).
  CHECK(rb.bounds[3].getLinear(0) >= 1.0);
  // abs turns at 0: x - s is far from it here, so only the ends count.
  CHECK(rb.bounds[2].getLinear(0) < 1e-5);
  // A sin whose operand's interval holds one peak: the peak counts, beside the ends.
  FusionBuilder fp("peak");
  auto a = fp.input("a", DType::F32, {"N"});
  auto b = fp.input("b", DType::F32, {"N"});
  fp.output("y", sin(a * b));
  auto g = fp.finish();
  // a * b = pi/2 + 1e-4 in f32: its own rounding is far below 1e-4, so the peak is not inside.
  auto at = HostTensor::fromValues(DType::F32, {1}, {M_PI / 2 + 1e-4});
  auto bt = HostTensor::fromValues(DType::F32, {1}, {1.0});
  auto pb = evaluateReferenceBounds(*g, {at, bt});
  CHECK(pb.bounds[0].getLinear(0) < 1e-6);
}

TEST_CASE("reference bounds: a result past its dtype's range is unbounded", "[reference][bounds]") {
  // exp2 of 200 is 2^200 exactly, past f32: the GPU's is inf and so log2 of it (found by the
  // GPU soak: seed 2, case 5059). exp2 of 1 stays bounded.
  FusionBuilder fb("over");
  auto x = fb.input("x", DType::F32, {"N"});
  fb.output("y", log2(exp2(x)));
  fb.output("h", cast(x * 1000.0, DType::F16));
  auto f = fb.finish();
  auto xt = HostTensor::fromValues(DType::F32, {2}, {200.0, 1.0});
  auto rb = evaluateReferenceBounds(*f, {xt});
  CHECK(rb.values[0].getLinear(0) == Approx(200.0));
  CHECK(std::isinf(rb.bounds[0].getLinear(0)));
  CHECK(rb.bounds[0].getLinear(1) < 1e-5);
  auto got = HostTensor::fromValues(DType::F32, {2}, {std::numeric_limits<double>::infinity(), rb.values[0].getLinear(1)});
  CHECK(compareOutputs(*f, {xt}, {}, {got, rb.values[1]}, rb.values)[0].ok);
  // A cast past f16's 65504 is inf on both sides: the GPU must match it (no slack).
  CHECK(std::isinf(rb.values[1].getLinear(0)));
  CHECK(rb.bounds[1].getLinear(0) == 0.0);
}

TEST_CASE("reference bounds: gelu's tail is good to units of x, not of its tiny result", "[reference][bounds]") {
  // gelu(-3.5) is about -8e-4, computed as -1.75 (1 + erf(-2.47)) where the sum cancels (found by
  // the GPU soak: seed 2, case 1817, off by 3.6e-4 of the value).
  FusionBuilder fb("tail");
  auto x = fb.input("x", DType::F32, {"N"});
  fb.output("g", gelu(x));
  auto f = fb.finish();
  auto rb = evaluateReferenceBounds(*f, {HostTensor::fromValues(DType::F32, {1}, {-3.5})});
  const double y = rb.values[0].getLinear(0);
  CHECK(rb.bounds[0].getLinear(0) >= 4 * std::ldexp(1.0, -24) * 3.5);
  CHECK(rb.bounds[0].getLinear(0) < 1e-3 * std::fabs(y) * 10);
}

TEST_CASE("reference bounds: a comparison of values equal to within their rounding may flip", "[reference][bounds]") {
  // (x sin x) / x == sin x holds in the reference; in f32 either answer is right (found by the
  // GPU soak: seed 4, case 2914). Values far apart compare the same on both sides.
  FusionBuilder fb("flip");
  auto x = fb.input("x", DType::F32, {"N"});
  auto s = sin(x);
  fb.output("eq", eq((x * s) / x, s));
  fb.output("lt", lt(x, x + 1.0));
  auto f = fb.finish();
  auto xt = HostTensor::fromValues(DType::F32, {2}, {0.75, -0.3});
  auto rb = evaluateReferenceBounds(*f, {xt});
  CHECK(rb.bounds[0].getLinear(0) == 1.0);
  CHECK(rb.bounds[1].getLinear(0) == 0.0);
  auto flipped = HostTensor::fromValues(DType::Bool, {2}, {1.0 - rb.values[0].getLinear(0), 1.0 - rb.values[0].getLinear(1)});
  CHECK(compareOutputs(*f, {xt}, {}, {flipped, rb.values[1]}, rb.values)[0].ok);
  auto wrong = HostTensor::fromValues(DType::Bool, {2}, {1.0, 0.0});
  CHECK_FALSE(compareOutputs(*f, {xt}, {}, {rb.values[0], wrong}, rb.values)[1].ok);
}

TEST_CASE("reference bounds: a mean shifted by an outlier is good to units of the outlier", "[reference][bounds]") {
  // loom's mean is x0 + sum(x - x0) / n with x0 the row's first element: where x0 is an outlier,
  // every x - x0 rounds at its magnitude (soak seed 4, case 5505: 4.9e-4 off a mean near 0).
  const int64_t n = 1024;
  std::vector<double> xv(static_cast<size_t>(n), -8000.0 / 1023.0);
  xv[0] = 8000.0;
  FusionBuilder fb("outlier");
  auto x = fb.input("x", DType::F32, {"N"});
  fb.output("m", mean(x, {0}));
  auto f = fb.finish();
  auto xt = HostTensor::fromValues(DType::F32, {n}, xv);
  const std::vector<float> xf = floats(xt);
  std::vector<float> shifted;
  for (float v : xf) shifted.push_back(v - xf[0]);
  const float gpu = xf[0] + blockedSum(shifted) / static_cast<float>(n);
  auto ref = evaluateReference(*f, {xt});
  auto got = HostTensor::fromValues(DType::F32, {}, {gpu});
  REQUIRE(std::fabs(gpu - ref[0].getLinear(0)) > 1e-5);  // far past f32's tolerance of a mean near 0
  auto c = compareOutputs(*f, {xt}, {}, {got}, ref)[0];
  INFO(c.str());
  CHECK(c.ok);
  auto wrong = HostTensor::fromValues(DType::F32, {}, {gpu + 0.5f});
  CHECK_FALSE(compareOutputs(*f, {xt}, {}, {wrong}, ref)[0].ok);
}

TEST_CASE("reference bounds: a NaN whose operand may land where the function is defined", "[reference][bounds]") {
  // silu(-200) is -2.8e-85 exactly, so its sqrt is NaN; in f32 it underflows to -0, whose sqrt
  // is -0 (found by the GPU soak: seed 5, case 4325). The sqrt of -1 stays NaN on both sides.
  FusionBuilder fb("edge");
  auto x = fb.input("x", DType::F32, {"N"});
  fb.output("r", sqrt(silu(x)));
  auto f = fb.finish();
  // silu(-89) is -2e-37, a normal f32, but exp(89) overflows f32, so the GPU's (and PyTorch's)
  // x / (1 + exp(-x)) is -0 there too (the same case, on the GPU after the first fix).
  auto xt = HostTensor::fromValues(DType::F32, {3}, {-200.0, -1.0, -89.0});
  auto rb = evaluateReferenceBounds(*f, {xt});
  CHECK(std::isnan(rb.values[0].getLinear(0)));
  CHECK(std::isinf(rb.bounds[0].getLinear(0)));
  CHECK(rb.bounds[0].getLinear(1) == 0.0);
  CHECK(std::isnan(rb.values[0].getLinear(2)));
  CHECK(std::isinf(rb.bounds[0].getLinear(2)));
  auto got = HostTensor::fromValues(DType::F32, {3}, {-0.0, rb.values[0].getLinear(1), -0.0});
  CHECK(compareOutputs(*f, {xt}, {}, {got}, rb.values)[0].ok);
  auto wrong = HostTensor::fromValues(DType::F32, {3}, {-0.0, 0.0, -0.0});
  CHECK_FALSE(compareOutputs(*f, {xt}, {}, {wrong}, rb.values)[0].ok);
  // Above -88.72 exp(-x) is finite and the f32 result keeps its sign: sqrt(silu(-88)) stays NaN.
  auto near = HostTensor::fromValues(DType::F32, {1}, {-88.0});
  CHECK(evaluateReferenceBounds(*f, {near}).bounds[0].getLinear(0) == 0.0);
}

TEST_CASE("reference bounds: an exact 0 keeps no slack, so 1 / (x - x) must be inf", "[reference][bounds]") {
  // (A floor of 2^-126 on every result once made every pole fed an exact 0 unbounded: a GPU
  // answering 0 or NaN for rsqrt(x - x) would have passed.)
  FusionBuilder fb("exact0");
  auto x = fb.input("x", DType::F32, {"N"});
  fb.output("r", rsqrt(x - x));
  fb.output("l", log(relu(x)));
  auto f = fb.finish();
  auto xt = HostTensor::fromValues(DType::F32, {2}, {0.5, -0.5});
  auto rb = evaluateReferenceBounds(*f, {xt});
  CHECK(std::isinf(rb.values[0].getLinear(0)));
  CHECK(rb.bounds[0].getLinear(0) == 0.0);
  CHECK(std::isinf(rb.values[1].getLinear(1)));  // log(relu(-0.5)) = log(0)
  CHECK(rb.bounds[1].getLinear(1) == 0.0);
  auto zero = HostTensor::fromValues(DType::F32, {2}, {0.0, 0.0});
  CHECK_FALSE(compareOutputs(*f, {xt}, {}, {zero, rb.values[1]}, rb.values)[0].ok);
}
