// Random numbers and iota in the reference and the text format: Philox's published answers,
// the numbers' distribution, dropout's edges, and the errors of malformed calls.
#include <catch2/catch.hpp>

#include <cmath>
#include <vector>

#include "frontend/builder.h"
#include "frontend/parser.h"
#include "ir/error.h"
#include "ir/philox.h"
#include "ir/printer.h"
#include "runtime/host_tensor.h"
#include "tests/reference_test_util.h"

using namespace loom;
using loom::test::run;

namespace {

HostTensor scalarI64(int64_t v) { return HostTensor::fromValues(DType::I64, {}, {static_cast<double>(v)}); }

std::vector<double> randomValues(bool normal, DType t, int64_t n, int64_t seed, int64_t offset) {
  FusionBuilder fb("r");
  auto s = fb.input("seed", DType::I64, {});
  auto o = fb.input("offset", DType::I64, {});
  fb.output("r", normal ? randNormal(s, o, {"N"}, t) : randUniform(s, o, {"N"}, t));
  return run(*fb.finish(), {scalarI64(seed), scalarI64(offset)}, {{"N", n}})[0].toVector();
}

}  // namespace

TEST_CASE("random: Philox4x32-10 gives the published known answers", "[reference][random]") {
  // Random123's kat_vectors for philox4x32 with 10 rounds.
  CHECK(ir::philox4x32({0, 0, 0, 0}, {0, 0}) == ir::PhiloxWords{0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8});
  CHECK(ir::philox4x32({0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}) ==
        ir::PhiloxWords{0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd});
  CHECK(ir::philox4x32({0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344}, {0xa4093822, 0x299f31d0}) ==
        ir::PhiloxWords{0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1});
}

TEST_CASE("random: uniform numbers are exact in their dtype and fill the unit interval evenly", "[reference][random]") {
  const int64_t n = 200000;
  for (DType t : {DType::F16, DType::BF16, DType::F32, DType::F64}) {
    INFO(dtypeName(t));
    const std::vector<double> u = randomValues(false, t, n, 1234, 0);
    const double q = std::ldexp(1.0, ir::uniformBits(t));
    double sum = 0, sq = 0;
    std::vector<int64_t> bins(16, 0);
    for (double v : u) {
      REQUIRE(v >= 0);
      REQUIRE(v < 1);
      REQUIRE(v * q == std::floor(v * q));  // a multiple of 2^-bits
      sum += v;
      sq += v * v;
      ++bins[static_cast<size_t>(v * 16)];
    }
    const double mean = sum / n, var = sq / n - mean * mean;
    CHECK(std::abs(mean - 0.5) < 0.005);
    CHECK(std::abs(var - 1.0 / 12) < 0.002);
    double chi2 = 0;  // 15 degrees of freedom: above 37.7 one time in a thousand
    for (int64_t b : bins) chi2 += std::pow(static_cast<double>(b) - n / 16.0, 2) / (n / 16.0);
    CHECK(chi2 < 37.7);
  }
}

TEST_CASE("random: the same seed and offset give the same numbers and the offset shifts them", "[reference][random]") {
  const std::vector<double> a = randomValues(false, DType::F32, 1000, 99, 0);
  CHECK(randomValues(false, DType::F32, 1000, 99, 0) == a);
  const std::vector<double> shifted = randomValues(false, DType::F32, 990, 99, 10);
  CHECK(std::vector<double>(a.begin() + 10, a.end()) == shifted);
  CHECK(randomValues(false, DType::F32, 1000, 100, 0) != a);
}

TEST_CASE("random: normal numbers have mean 0 and variance 1", "[reference][random]") {
  for (DType t : {DType::F32, DType::F64}) {
    INFO(dtypeName(t));
    const int64_t n = 200000;
    const std::vector<double> z = randomValues(true, t, n, 5, 77);
    double sum = 0, sq = 0;
    for (double v : z) {
      REQUIRE(std::isfinite(v));
      sum += v;
      sq += v * v;
    }
    CHECK(std::abs(sum / n) < 0.01);
    CHECK(std::abs(sq / n - 1) < 0.015);
  }
}

TEST_CASE("random: dropout keeps 1 - p of x scaled by 1 / (1 - p)", "[reference][random]") {
  const int64_t n = 100000;
  for (double p : {0.0, 0.1, 0.5, 1.0}) {
    INFO("p = " << p);
    FusionBuilder fb("dropout");
    auto x = fb.input("x", DType::F32, {"N"});
    auto s = fb.input("seed", DType::I64, {});
    auto o = fb.input("offset", DType::I64, {});
    fb.output("y", dropout(x, p, s, o));
    std::vector<double> ones(static_cast<size_t>(n), 1.0);
    const std::vector<double> y =
        run(*fb.finish(), {HostTensor::fromValues(DType::F32, {n}, ones), scalarI64(3), scalarI64(0)}, {{"N", n}})[0]
            .toVector();
    int64_t kept = 0;
    for (double v : y) {
      if (v != 0) {
        REQUIRE(v == Approx(1 / (1 - p)));
        ++kept;
      }
    }
    if (p == 0) CHECK(kept == n);
    if (p == 1) CHECK(kept == 0);
    CHECK(std::abs(static_cast<double>(kept) / n - (1 - p)) < 0.01);
  }
}

TEST_CASE("random: the text format round-trips iota and random ops", "[reference][random][text]") {
  const std::string text = R"(fusion noise {
  in seed: i64[]
  in offset: i64[]
  in x: f32[N, 4]
  u = rand_uniform(seed, offset, dtype=f32, shape=[N, 4])
  z = rand_normal(seed, offset, dtype=bf16, shape=[3])
  i = iota(dtype=i64, shape=[N, 4], dim=1)
  xu = mul(x, u)
  fi = cast(i, to=f32)
  y = add(xu, fi)
  out y = y
  out z = z
}
)";
  auto f = parseFusion(text);
  const std::string printed = ir::printFusion(*f);
  CHECK(ir::printFusion(*parseFusion(printed)) == printed);
  CHECK(printed.find("iota(dtype=i64, shape=[N, 4], dim=1)") != std::string::npos);
  CHECK(printed.find("rand_normal(seed, offset, dtype=bf16, shape=[3])") != std::string::npos);
}

TEST_CASE("random: malformed calls say what is wrong", "[reference][random]") {
  FusionBuilder fb("bad");
  auto seed = fb.input("seed", DType::I64, {});
  auto wide = fb.input("wide", DType::I64, {4});
  auto f32 = fb.input("f", DType::F32, {});
  CHECK_THROWS_WITH(randUniform(seed, wide, {4}, DType::F32), Catch::Contains("offset (operand 1) must be an i64 scalar"));
  CHECK_THROWS_WITH(randUniform(f32, seed, {4}, DType::F32), Catch::Contains("seed (operand 0) must be an i64 scalar"));
  CHECK_THROWS_WITH(randNormal(seed, seed, {4}, DType::I32), Catch::Contains("dtype i32 is not one"));
  CHECK_THROWS_WITH(iota(fb, {4, 5}, 2), Catch::Contains("counts along dim 2, but its shape has 2 dims"));
  CHECK_THROWS_WITH(iota(fb, {4}, 0, DType::Bool), Catch::Contains("not bool"));
  CHECK_THROWS_WITH(dropout(f32, 1.5, seed, seed), Catch::Contains("p = 1.5 is not a probability"));
}
