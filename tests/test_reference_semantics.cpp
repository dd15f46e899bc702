// The CPU reference's semantics beyond single ops: f16/bf16 rounding of casts and of
// intermediates, broadcasting, strided inputs, var_mean and empty reductions at their edges,
// aliased outputs, and large tensors evaluated in ranges on several threads.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "frontend/builder.h"
#include "reference/reference.h"
#include "runtime/host_tensor.h"
#include "tests/reference_test_util.h"

using namespace loom;
using loom::test::checkValues;
using loom::test::run;

TEST_CASE("reference: f16 and bf16 rounding of casts", "[reference]") {
  FusionBuilder fb("casts");
  auto x = fb.input("x", DType::F32, {8});
  auto h = cast(x, DType::F16);
  fb.output("h", h);
  fb.output("b", cast(x, DType::BF16));
  fb.output("hb", cast(h, DType::BF16));
  auto f = fb.finish();
  const double t = std::ldexp(1.0, -11);
  auto in = HostTensor::fromValues(DType::F32, {8}, {1 + t, 1 + 3 * t, 65504, 65520, std::ldexp(1.0, -25),
                                                     std::ldexp(3.0, -25), 1 + std::ldexp(1.0, -8), -1e-8});
  auto out = run(*f, {in});
  auto bits = [](const HostTensor& t16, int i) {
    uint16_t v;
    std::memcpy(&v, static_cast<const std::byte*>(t16.data()) + 2 * i, 2);
    return v;
  };
  CHECK(bits(out[0], 0) == 0x3c00);  // 1 + 2^-11: tie, to even -> 1
  CHECK(bits(out[0], 1) == 0x3c02);  // 1 + 3*2^-11: tie, to even -> 1 + 2^-9
  CHECK(bits(out[0], 2) == 0x7bff);  // 65504: the largest f16
  CHECK(bits(out[0], 3) == 0x7c00);  // 65520: rounds to inf
  CHECK(bits(out[0], 4) == 0x0000);  // 2^-25: half the smallest subnormal, to even -> 0
  CHECK(bits(out[0], 5) == 0x0002);  // 3*2^-25 -> 2^-23
  CHECK(bits(out[0], 7) == 0x8000);  // -1e-8 -> -0
  CHECK(bits(out[1], 6) == 0x3f80);  // bf16: 1 + 2^-8 is a tie -> 1
  CHECK(bits(out[1], 0) == 0x3f80);
  CHECK(out[1].getLinear(3) == 65536);  // bf16 has range for it
  CHECK(std::isinf(out[2].getLinear(3)));  // f16 inf stays inf in bf16
}

TEST_CASE("reference: intermediates round to f16 but f32 stays in double", "[reference]") {
  SECTION("f16") {
    FusionBuilder fb("h");
    auto a = fb.input("a", DType::F16, {1});
    auto b = fb.input("b", DType::F16, {1});
    fb.output("y", (a + b) - a);  // 1024 + 0.3 rounds to 1024 in f16
    auto out = run(*fb.finish(), {HostTensor::fromValues(DType::F16, {1}, {1024}),
                                  HostTensor::fromValues(DType::F16, {1}, {0.3})});
    CHECK(out[0].getLinear(0) == 0.0);
  }
  SECTION("f32") {
    FusionBuilder fb("f");
    auto a = fb.input("a", DType::F32, {1});
    fb.output("y", (a + 1.0) - a);  // 1e8 + 1 is not an f32, but the oracle keeps it
    auto out = run(*fb.finish(), {HostTensor::fromValues(DType::F32, {1}, {1e8})});
    CHECK(out[0].getLinear(0) == 1.0);
  }
}

TEST_CASE("reference: broadcasting", "[reference]") {
  FusionBuilder fb("bcast");
  auto col = fb.input("col", DType::F32, {"N", 1});
  auto row = fb.input("row", DType::F32, {"M"});
  auto s = fb.scalarInput("s", DType::F32);
  auto colb = broadcast(squeeze(col, {1}), {false, true});  // [N, 1b]
  fb.output("outer", colb + row);  // row aligns to [1b, M]
  fb.output("scaled", colb * s + row * s);
  fb.output("full_rank0", s + 1.0);
  auto f = fb.finish();
  auto ct = HostTensor::random(DType::F32, {3, 1}, 1);
  auto rt = HostTensor::random(DType::F32, {1531}, 2);
  auto st = HostTensor::fromValues(DType::F32, {}, {-2});
  auto out = run(*f, {ct, rt, st});
  std::vector<double> w0, w1;
  for (int64_t i = 0; i < 3; ++i)
    for (int64_t j = 0; j < 1531; ++j) {
      w0.push_back(ct.get({i, 0}) + rt.get({j}));
      w1.push_back(ct.get({i, 0}) * -2 + rt.get({j}) * -2);
    }
  CHECK(out[0].shape() == std::vector<int64_t>{3, 1531});
  checkValues(out[0], w0, DType::F32, "outer sum");
  checkValues(out[1], w1, DType::F32, "with a rank-0 input");
  CHECK(out[2].shape().empty());
  CHECK(out[2].getLinear(0) == -1);
}

TEST_CASE("reference: strided inputs are read through their strides", "[reference]") {
  FusionBuilder fb("strided");
  auto x = fb.input("x", DType::F32, {3, 5});
  fb.output("y", x * 2.0);
  auto f = fb.finish();
  auto base = HostTensor::random(DType::F32, {5, 3}, 1);
  auto transposed = base.permutedView({1, 0});  // [3, 5], strides [1, 3]
  auto big = HostTensor::random(DType::F32, {4, 9}, 2);
  auto sliced = big.sliceView(0, 1, 4).sliceView(1, 2, 7);  // [3, 5] at an offset
  for (const auto& in : {transposed, sliced, transposed.withOrder({0, 1})}) {
    std::vector<double> w;
    for (double v : in.toVector()) w.push_back(2 * v);
    checkValues(run(*f, {in})[0], w, DType::F32, in.describe());
  }
}

TEST_CASE("reference: var_mean edge cases follow torch", "[reference]") {
  FusionBuilder fb("vm");
  auto x = fb.input("x", DType::F32, {"R", "C"});
  auto v1 = var_mean(x, {1}, 1);
  auto v2 = var_mean(x, {1}, 2);
  fb.output("var1", v1.var);
  fb.output("var2", v2.var);
  fb.output("mean", v1.mean);
  auto f = fb.finish();
  auto one = run(*f, {HostTensor::fromValues(DType::F32, {2, 1}, {3, 4})});
  CHECK(std::isnan(one[0].getLinear(0)));  // one element, correction 1: 0/0
  CHECK(one[2].toVector() == std::vector<double>{3, 4});
  auto two = run(*f, {HostTensor::fromValues(DType::F32, {1, 2}, {1, 3})});
  CHECK(two[0].getLinear(0) == 2.0);
  CHECK(std::isinf(two[1].getLinear(0)));  // n - correction = 0 and M2 > 0
}

TEST_CASE("reference: empty reductions", "[reference]") {
  FusionBuilder fb("empty");
  auto x = fb.input("x", DType::F32, {3, "N"});
  fb.output("s", sum(x, {1}));
  fb.output("m", mean(x, {1}));
  auto f = fb.finish();
  auto out = run(*f, {HostTensor::empty(DType::F32, {3, 0})});
  CHECK(out[0].toVector() == std::vector<double>{0, 0, 0});
  CHECK(std::isnan(out[1].getLinear(0)));
  FusionBuilder fb2("empty_max");
  auto y = fb2.input("x", DType::F32, {3, "N"});
  fb2.output("m", amax(y, {1}));
  auto f2 = fb2.finish();
  CHECK_THROWS_WITH(run(*f2, {HostTensor::empty(DType::F32, {3, 0})}), Catch::Contains("zero elements"));
}

TEST_CASE("reference: aliased outputs are returned", "[reference]") {
  FusionBuilder fb("alias");
  auto x = fb.input("x", DType::F32, {4});
  auto acc = fb.input("acc", DType::F32, {4});
  fb.output("acc_out", acc + x, acc);
  auto f = fb.finish();
  auto xt = HostTensor::fromValues(DType::F32, {4}, {1, 2, 3, 4});
  auto at = HostTensor::fromValues(DType::F32, {4}, {10, 20, 30, 40});
  auto out = run(*f, {xt, at});
  CHECK(out[0].toVector() == std::vector<double>{11, 22, 33, 44});
  CHECK(at.toVector() == std::vector<double>{10, 20, 30, 40});  // the input is untouched
}

TEST_CASE("reference: large tensors are evaluated in ranges on threads, exactly", "[reference]") {
  // 700 x 1001 elements: ranges of the evaluator start in the middle of rows. Whole numbers,
  // so every sum is exact in any order.
  FusionBuilder fb("large");
  auto x = fb.input("x", DType::F32, {"R", "C"});
  auto y = fb.input("y", DType::F32, {"C"});
  fb.output("xy", x + y);
  fb.output("down", sum(x, {0}));
  fb.output("across", sum(x, {1}));
  fb.output("top", amax(x, {0}));
  fb.output("t", permute(x, {1, 0}));
  auto f = fb.finish();
  const int64_t R = 700, C = 1001;
  std::vector<double> xv, yv;
  for (int64_t i = 0; i < R * C; ++i) xv.push_back(static_cast<double>((i * 7) % 13 - 6));
  for (int64_t j = 0; j < C; ++j) yv.push_back(static_cast<double>(j % 5));
  auto out = run(*f, {HostTensor::fromValues(DType::F32, {R, C}, xv), HostTensor::fromValues(DType::F32, {C}, yv)});
  std::vector<double> xy, down(static_cast<size_t>(C), 0), across(static_cast<size_t>(R), 0), top(static_cast<size_t>(C), -1e9), t;
  for (int64_t i = 0; i < R; ++i)
    for (int64_t j = 0; j < C; ++j) {
      const double v = xv[static_cast<size_t>(i * C + j)];
      xy.push_back(v + yv[static_cast<size_t>(j)]);
      down[static_cast<size_t>(j)] += v;
      across[static_cast<size_t>(i)] += v;
      top[static_cast<size_t>(j)] = std::max(top[static_cast<size_t>(j)], v);
    }
  for (int64_t j = 0; j < C; ++j)
    for (int64_t i = 0; i < R; ++i) t.push_back(xv[static_cast<size_t>(i * C + j)]);
  CHECK(out[0].toVector() == xy);
  CHECK(out[1].toVector() == down);
  CHECK(out[2].toVector() == across);
  CHECK(out[3].toVector() == top);
  CHECK(out[4].toVector() == t);
}
