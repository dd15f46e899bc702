// HostTensor: layouts, views, storage of each dtype, deterministic random data.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <algorithm>
#include <set>
#include <stdexcept>

#include "ir/error.h"
#include "frontend/internal_api.h"
#include "reference/compare.h"
#include "runtime/host_tensor.h"
#include "runtime/parallel.h"

using namespace loom;

namespace {
uint16_t bits16(const HostTensor& t, int64_t elem) {
  uint16_t v;
  std::memcpy(&v, static_cast<const std::byte*>(t.data()) + elem * 2, 2);
  return v;
}
}  // namespace

TEST_CASE("host tensor: contiguous layout and describe", "[reference][host_tensor]") {
  auto t = HostTensor::empty(DType::F16, {4, 1024});
  CHECK(t.describe() == "f16[4, 1024] strides [1024, 1]");
  CHECK(t.numel() == 4096);
  CHECK(t.nbytes() == 4096 * 2);
  CHECK(t.isContiguous());
  CHECK(t.rank() == 2);
  CHECK(t.get({3, 1023}) == 0.0);  // zero-filled
  auto s = HostTensor::empty(DType::F64, {});
  CHECK(s.numel() == 1);
  CHECK(s.describe() == "f64[] strides []");
  s.set({}, 2.5);
  CHECK(s.get({}) == 2.5);
  CHECK(HostTensor().numel() == 0);
}

TEST_CASE("host tensor: channels-last order and strides", "[reference][host_tensor]") {
  CHECK(channelsLastOrder(4) == std::vector<int>{0, 2, 3, 1});
  CHECK(channelsLastOrder(3) == std::vector<int>{0, 2, 1});
  CHECK(channelsLastOrder(5) == std::vector<int>{0, 2, 3, 4, 1});
  auto t = HostTensor::emptyWithOrder(DType::F32, {2, 3, 4, 5}, channelsLastOrder(4));
  CHECK(t.strides() == std::vector<int64_t>{60, 1, 15, 3});
  CHECK_FALSE(t.isContiguous());
  CHECK(t.nbytes() == 120 * 4);
  for (int64_t i = 0; i < t.numel(); ++i) t.setLinear(i, static_cast<double>(i));
  // Logical (n, c, h, w) holds its row-major number whatever the memory order.
  CHECK(t.get({1, 2, 3, 4}) == 1 * 60 + 2 * 20 + 3 * 5 + 4);
  // In memory, channels are innermost: element (0, 1, 0, 0) sits right after (0, 0, 0, 0).
  float mem[2];
  std::memcpy(mem, t.data(), sizeof mem);
  CHECK(mem[0] == 0.0f);
  CHECK(mem[1] == 20.0f);
  auto c = t.contiguous();
  CHECK(c.isContiguous());
  CHECK(c.strides() == std::vector<int64_t>{60, 20, 5, 1});
  CHECK(c.toVector() == t.toVector());
  auto back = c.withOrder(channelsLastOrder(4));
  CHECK(back.strides() == t.strides());
  CHECK(back.toVector() == t.toVector());
  CHECK_THROWS_AS(HostTensor::emptyWithOrder(DType::F32, {2, 3}, {0, 0}), Error);
  CHECK_THROWS_AS(HostTensor::emptyWithOrder(DType::F32, {2, 3}, {0}), Error);
}

TEST_CASE("host tensor: views share storage", "[reference][host_tensor]") {
  auto t = HostTensor::fromValues(DType::F32, {2, 3}, {0, 1, 2, 3, 4, 5});
  auto copy = t;  // a plain value: copies share storage
  copy.set({0, 0}, 42);
  CHECK(t.get({0, 0}) == 42);
  auto p = t.permutedView({1, 0});
  CHECK(p.shape() == std::vector<int64_t>{3, 2});
  CHECK(p.strides() == std::vector<int64_t>{1, 3});
  CHECK(p.get({2, 1}) == 5);
  CHECK(p.toVector() == std::vector<double>{42, 3, 1, 4, 2, 5});
  CHECK_FALSE(p.isContiguous());
  auto s = t.sliceView(1, 1, 3);
  CHECK(s.describe() == "f32[2, 2] strides [3, 1] offset 1");
  CHECK(s.toVector() == std::vector<double>{1, 2, 4, 5});
  CHECK_FALSE(s.isContiguous());
  s.set({1, 0}, -7);
  CHECK(t.get({1, 1}) == -7);
  CHECK(static_cast<const float*>(s.data())[0] == 1.0f);
  auto sc = s.contiguous();
  CHECK(sc.isContiguous());
  CHECK(sc.toVector() == std::vector<double>{1, 2, -7, 5});
  CHECK(sc.nbytes() == 4 * 4);
  CHECK_THROWS_AS(t.sliceView(1, 2, 4), Error);
  CHECK_THROWS_AS(t.get({2, 0}), Error);
  CHECK_THROWS_AS(t.get({0}), Error);
}

TEST_CASE("host tensor: storage of each dtype", "[reference][host_tensor]") {
  auto h = HostTensor::fromValues(DType::F16, {4}, {1.0, -2.0, 65504.0, 1.0 + std::ldexp(1.0, -11)});
  CHECK(h.nbytes() == 8);
  CHECK(bits16(h, 0) == 0x3c00);
  CHECK(bits16(h, 1) == 0xc000);
  CHECK(bits16(h, 2) == 0x7bff);
  CHECK(bits16(h, 3) == 0x3c00);  // the tie 1 + 2^-11 rounds to even: 1.0
  CHECK(h.getLinear(3) == 1.0);
  auto b = HostTensor::fromValues(DType::BF16, {3}, {1.0, -0.5, 1.0 + std::ldexp(3.0, -9)});
  CHECK(bits16(b, 0) == 0x3f80);
  CHECK(bits16(b, 1) == 0xbf00);
  CHECK(b.getLinear(2) == 1.0 + std::ldexp(1.0, -7));  // 1 + 1.5 ulp rounds up to 1 + 2 ulp
  auto i = HostTensor::fromValues(DType::I32, {3}, {-5, 2.7, -2.7});
  CHECK(i.toVector() == std::vector<double>{-5, 2, -2});  // truncation toward zero
  CHECK(static_cast<const int32_t*>(i.data())[0] == -5);
  auto l = HostTensor::fromValues(DType::I64, {1}, {-9007199254740992.0});
  CHECK(static_cast<const int64_t*>(l.data())[0] == -9007199254740992LL);
  auto bo = HostTensor::fromValues(DType::Bool, {3}, {0, 2, -0.5});
  CHECK(bo.nbytes() == 3);
  CHECK(bo.toVector() == std::vector<double>{0, 1, 1});
  CHECK(static_cast<const uint8_t*>(bo.data())[1] == 1);
  auto f = HostTensor::fromValues(DType::F32, {1}, {0.1});
  CHECK(f.getLinear(0) == static_cast<double>(0.1f));
  auto d = HostTensor::fromValues(DType::F64, {1}, {0.1});
  CHECK(d.getLinear(0) == 0.1);
  CHECK_THROWS_WITH(HostTensor::fromValues(DType::F32, {2, 2}, {1, 2, 3}),
                    Catch::Contains("3 values given for shape [2, 2] (4 elements)"));
}

TEST_CASE("host tensor: deterministic random data", "[reference][host_tensor]") {
  auto a = HostTensor::random(DType::F32, {3, 1531}, 7);
  auto b = HostTensor::random(DType::F32, {3, 1531}, 7);
  auto c = HostTensor::random(DType::F32, {3, 1531}, 8);
  CHECK(a.toVector() == b.toVector());
  CHECK(a.toVector() != c.toVector());
  double lo = 1e9, hi = -1e9, sum = 0;
  for (double v : a.toVector()) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
    sum += v;
  }
  CHECK(lo >= -1.0);
  CHECK(hi < 1.0);
  CHECK(lo < -0.99);
  CHECK(hi > 0.99);
  CHECK(std::abs(sum / a.numel()) < 0.05);
  auto h = HostTensor::random(DType::F16, {100}, 1, 2.0, 3.0);
  for (double v : h.toVector()) {
    CHECK(v >= 2.0);
    CHECK(v <= 3.0);
    CHECK(roundTo(DType::F16, v) == v);
  }
  auto i = HostTensor::random(DType::I32, {1000}, 3, -3.5, 4.0);
  auto iv = i.toVector();
  std::set<double> seen(iv.begin(), iv.end());
  CHECK(seen == std::set<double>{-3, -2, -1, 0, 1, 2, 3, 4});
  auto bo = HostTensor::random(DType::Bool, {1000}, 3);
  auto bv = bo.toVector();
  CHECK(std::set<double>(bv.begin(), bv.end()) == std::set<double>{0, 1});
  CHECK_THROWS_AS(HostTensor::random(DType::I64, {4}, 1, 0.2, 0.8), Error);
}

TEST_CASE("host tensor: random data drawn on threads and in any layout matches one sequential stream",
          "[reference][host_tensor]") {
  // splitmix64 one draw after another, as the seeds' values were defined.
  const uint64_t seed = 5;
  uint64_t s = seed * 0x2545f4914f6cdd1dull + 0x1234567ull;
  auto next = [&] {
    uint64_t z = (s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  };
  // 3 x 5 x 7 x 40000: more than one 1M-element range, so several threads draw it.
  const std::vector<int64_t> shape{3, 5, 7, 40000};
  auto a = HostTensor::random(DType::F32, shape, seed);
  auto nhwc = HostTensor::random(DType::F32, shape, seed, -1.0, 1.0, {0, 2, 3, 1});
  CHECK(nhwc.strides() == std::vector<int64_t>{5 * 7 * 40000, 1, 40000 * 5, 5});
  auto av = a.toVector(), nv = nhwc.toVector();
  size_t mismatches = 0;
  for (size_t i = 0; i < av.size(); ++i) {
    const double want = roundTo(DType::F32, -1.0 + 2.0 * static_cast<double>(next() >> 11) * 0x1.0p-53);
    mismatches += av[i] != want || nv[i] != want;
  }
  CHECK(mismatches == 0);
  CHECK(a.withOrder({0, 2, 3, 1}).toVector() == av);
  CHECK(nhwc.contiguous().toVector() == av);
}

TEST_CASE("compare: a few wrong elements of a large output fail though the L2 norm dilutes them",
          "[reference][compare]") {
  auto scaled = [](const HostTensor& t, double by) {
    auto r = HostTensor::empty(t.dtype(), t.shape());
    for (int64_t i = 0; i < t.numel(); ++i) r.setLinear(i, t.getLinear(i) * by);
    return r;
  };
  // 2^20 values in [-2, 2): one wrong row of 64 moves ||out - ref|| / ||ref|| by about
  // 0.8 / 128 = 6e-3, inside bf16's 1.6e-2.
  auto ref = HostTensor::random(DType::BF16, {16384, 64}, 7, -2.0, 2.0);
  auto got = scaled(ref, 1.0);
  auto c = compareToReference(got, ref);
  CHECK(c.ok);
  CHECK(c.worst == 0.0);
  for (int64_t i = 0; i < 64; ++i) got.setLinear(5000 * 64 + i, ref.getLinear(5000 * 64 + i) * 0.2);
  c = compareToReference(got, ref);
  CHECK(c.rel_l2 < toleranceFor(DType::BF16));
  CHECK_FALSE(c.ok);
  CHECK(c.worst > kElementFactor);
  CHECK(c.worst_index / 64 == 5000);
  CHECK(c.str().find("MISMATCH") != std::string::npos);
  // Every element off by a few parts in a thousand (and rounded to bf16) stays well inside.
  c = compareToReference(scaled(ref, 1.004), ref);
  CHECK(c.ok);
  CHECK(c.worst < 1.0);
  // An all-zero reference is compared absolutely.
  auto z = HostTensor::empty(DType::F32, {8});
  auto zg = HostTensor::empty(DType::F32, {8});
  zg.setLinear(3, 1e-6);
  CHECK(compareToReference(zg, z).ok);
  zg.setLinear(3, 1.0);
  CHECK_FALSE(compareToReference(zg, z).ok);
}

TEST_CASE("compare: the element check's unit is the coarsest float a value was rounded to",
          "[reference][compare]") {
  // f16 in, f32 out through an f16 intermediate: f16's tolerance; an f16 input alone (exact)
  // leaves f32's.
  FusionBuilder fb("through_f16");
  auto x = fb.input("x", DType::F16, {"N"});
  fb.output("y", cast(exp(x), DType::F32));
  fb.output("z", exp(cast(x, DType::F32)));
  auto f = fb.finish();
  CHECK(elementTolerance(*f, DType::F32) == toleranceFor(DType::F16));
  FusionBuilder gb("f32_only");
  auto u = gb.input("u", DType::F16, {"N"});
  gb.output("v", exp(cast(u, DType::F32)));
  CHECK(elementTolerance(*gb.finish(), DType::F32) == toleranceFor(DType::F32));
  // One f16 step (2^-10 near 1) of an f32 output: fails against f32's unit, passes f16's.
  auto ref = HostTensor::random(DType::F32, {4096}, 5, 1.0, 1.9);
  auto got = HostTensor::empty(DType::F32, {4096});
  for (int64_t i = 0; i < ref.numel(); ++i) got.setLinear(i, ref.getLinear(i));
  got.setLinear(77, ref.getLinear(77) + std::ldexp(1.0, -10));
  CHECK_FALSE(compareToReference(got, ref).ok);
  CHECK(compareToReference(got, ref, toleranceFor(DType::F16)).ok);
  // Subnormal f16 results one step apart (softmax of a million columns) pass.
  auto tiny = HostTensor::random(DType::F16, {4096}, 9, 5e-7, 2e-6);
  auto tg = HostTensor::empty(DType::F16, {4096});
  for (int64_t i = 0; i < tiny.numel(); ++i) tg.setLinear(i, tiny.getLinear(i));
  tg.setLinear(100, tiny.getLinear(100) + std::ldexp(1.0, -24));
  CHECK(compareToReference(tg, tiny).ok);
  tg.setLinear(100, tiny.getLinear(100) + std::ldexp(1.0, -20));
  CHECK_FALSE(compareToReference(tg, tiny).ok);
}

TEST_CASE("compare: strided outputs, ranges on threads, the first worst element and NaNs found anywhere",
          "[reference][compare]") {
  // 2^21 values in channels-last storage: several of the comparison's ranges.
  const std::vector<int64_t> shape{4, 64, 64, 128};
  auto ref = HostTensor::random(DType::F32, shape, 3, -1.0, 1.0);
  auto got = ref.withOrder({0, 2, 3, 1});
  std::vector<double> part(1000);
  got.readLinear(1500000, 1501000, part.data());
  for (int64_t k = 0; k < 1000; k += 97) CHECK(part[static_cast<size_t>(k)] == ref.getLinear(1500000 + k));
  auto c = compareToReference(got, ref);
  CHECK(c.ok);
  CHECK(c.worst_index == -1);
  // The same error at two elements of the same value in different ranges: the first one is
  // reported.
  for (int64_t i : {int64_t{1900000}, int64_t{700001}}) {
    ref.setLinear(i, 0.25);
    got.setLinear(i, 0.75);
  }
  c = compareToReference(got, ref);
  CHECK_FALSE(c.ok);
  CHECK(c.worst_index == 700001);
  // A NaN where the reference is finite, in the last range.
  got = ref.withOrder({0, 2, 3, 1});
  got.setLinear(ref.numel() - 1, std::nan(""));
  c = compareToReference(got, ref);
  CHECK_FALSE(c.ok);
  CHECK(c.bad_nonfinite == 1);
}

TEST_CASE("parallel ranges: every range once, and a range's exception reaches the caller", "[reference]") {
  std::vector<int> seen(37, 0);
  runtime::parallelForRanges(370, 10, [&](int64_t r, int64_t begin, int64_t end) {
    CHECK(begin == r * 10);
    CHECK(end == std::min<int64_t>(370, begin + 10));
    ++seen[static_cast<size_t>(r)];
  });
  CHECK(std::all_of(seen.begin(), seen.end(), [](int s) { return s == 1; }));
  CHECK_THROWS_WITH(runtime::parallelForRanges(1000, 10, [&](int64_t r, int64_t, int64_t) {
                      if (r == 57) throw std::runtime_error("range 57 failed");
                    }),
                    "range 57 failed");
}
