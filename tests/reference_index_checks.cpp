// The reference's bitcast, gather, index_select, argmax and argmin against direct loops.
#include "tests/reference_index_checks.h"

#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>
#include <functional>
#include <numeric>

#include "frontend/builder.h"
#include "ir/error.h"
#include "reference/reference.h"
#include "runtime/host_tensor.h"
#include "tests/reference_test_util.h"

namespace loom::test {

using ir::OpKind;

void checkBitcast() {
  // Signed zeros, infinities, a NaN, subnormals and ordinary values, against memcpy's bits.
  std::vector<double> v = {0.0, -0.0, 1.0, -1.0, kInf, -kInf, kNaN, std::ldexp(1.0, -149), -3.5e38, 0.1};
  auto u = HostTensor::random(DType::F32, {1021}, 11, -1e4, 1e4).toVector();
  v.insert(v.end(), u.begin(), u.end());
  const int64_t n = static_cast<int64_t>(v.size());
  std::vector<double> bits;
  for (double x : v) {
    const float f = static_cast<float>(x);
    int32_t i = 0;
    std::memcpy(&i, &f, 4);
    bits.push_back(i);
  }
  FusionBuilder fb("bitcast");
  auto x = fb.input("x", DType::F32, {n});
  auto i = fb.input("i", DType::I32, {n});
  fb.output("x_bits", bitcast(x, DType::I32));
  fb.output("i_float", bitcast(i, DType::F32));
  fb.output("round_trip", bitcast(bitcast(x, DType::I32), DType::F32));
  auto f = fb.finish();
  auto out = run(*f, {HostTensor::fromValues(DType::F32, {n}, v), HostTensor::fromValues(DType::I32, {n}, bits)});
  checkValues(out[0], bits, DType::I32, "bitcast f32 -> i32", 0);
  for (int64_t k = 0; k < n; ++k) {
    INFO("element " << k << ": " << v[static_cast<size_t>(k)]);
    const double a = out[1].getLinear(k), b = out[2].getLinear(k), want = static_cast<float>(v[static_cast<size_t>(k)]);
    CHECK(((std::isnan(want) && std::isnan(a) && std::isnan(b)) ||
           (a == want && b == want && std::signbit(a) == std::signbit(want))));
  }
  FusionBuilder bad("bitcast_f16");
  auto h = bad.input("h", DType::F16, {4});
  CHECK_THROWS_WITH(bitcast(h, DType::I32), Catch::Contains("bitcast reads the bits of f32 as i32 or of i32 as f32"));
}

// gather and index_select against direct loops: every dim, repeated and boundary indices, i32
// and i64 indices, bool and float values (NaN and -0 kept as they are); out-of-range indices
// refused with their position.
void checkGather(OpKind k) {
  const std::vector<int64_t> shape = {3, 5, 7};
  std::vector<double> xs = HostTensor::random(DType::F32, {3 * 5 * 7}, 21, -2.0, 2.0).toVector();
  xs[3] = kNaN;
  xs[8] = -0.0;
  const HostTensor x = HostTensor::fromValues(DType::F32, shape, xs);
  const HostTensor b = HostTensor::random(DType::Bool, shape, 22);
  auto at = [&](const HostTensor& t, int64_t i, int64_t j, int64_t l) { return t.getLinear((i * 5 + j) * 7 + l); };
  for (int dim = 0; dim < 3; ++dim) {
    for (DType it : {DType::I32, DType::I64}) {
      INFO(ir::opName(k) << " dim " << dim << " index " << dtypeName(it));
      const int64_t extent = shape[static_cast<size_t>(dim)];
      std::vector<int64_t> ishape = k == OpKind::Gather ? shape : std::vector<int64_t>{4};
      ishape[static_cast<size_t>(k == OpKind::Gather ? dim : 0)] = 4;  // four picks along dim
      std::vector<double> iv;
      for (int64_t n = 0; n < std::accumulate(ishape.begin(), ishape.end(), int64_t{1}, std::multiplies<>()); ++n) iv.push_back(static_cast<double>((n * 7 + 3) % extent));
      iv[0] = static_cast<double>(extent - 1);
      const HostTensor index = HostTensor::fromValues(it, ishape, iv);
      FusionBuilder fb("gather");
      auto tx = fb.input("x", DType::F32, {3, 5, 7});
      auto tb = fb.input("b", DType::Bool, {3, 5, 7});
      std::vector<Dim> idims(ishape.begin(), ishape.end());
      auto ti = fb.input("i", it, idims);
      fb.output("y", k == OpKind::Gather ? gather(tx, dim, ti) : index_select(tx, dim, ti));
      fb.output("yb", k == OpKind::Gather ? gather(tb, dim, ti) : index_select(tb, dim, ti));
      auto f = fb.finish();
      const auto out = run(*f, {x, b, index});
      std::vector<int64_t> oshape = shape;
      oshape[static_cast<size_t>(dim)] = 4;
      REQUIRE(out[0].shape() == oshape);
      int64_t n = 0;
      for (int64_t i = 0; i < oshape[0]; ++i)
        for (int64_t j = 0; j < oshape[1]; ++j)
          for (int64_t l = 0; l < oshape[2]; ++l, ++n) {
            const int64_t c[3] = {i, j, l};
            const int64_t pick = static_cast<int64_t>(k == OpKind::Gather ? index.getLinear(n) : index.getLinear(c[dim]));
            int64_t src[3] = {i, j, l};
            src[dim] = pick;
            const double want = at(x, src[0], src[1], src[2]), got = out[0].getLinear(n);
            CHECK(((std::isnan(want) && std::isnan(got)) || (got == want && std::signbit(got) == std::signbit(want))));
            CHECK(out[1].getLinear(n) == at(b, src[0], src[1], src[2]));
          }
      // An index past the dim, and a negative one, are refused with where they are.
      for (double wrong : {static_cast<double>(extent), -1.0}) {
        std::vector<double> bad = iv;
        bad.back() = wrong;
        CHECK_THROWS_WITH(run(*f, {x, b, HostTensor::fromValues(it, ishape, bad)}),
                          Catch::Contains(fmt::format("outside dim {} of extent {}", dim, extent)));
      }
    }
  }
  FusionBuilder fb("gather_bad");
  auto tx = fb.input("x", DType::F32, {3, 5});
  auto tf = fb.input("f", DType::F32, {3, 5});
  auto t1 = fb.input("one", DType::I64, {3});
  auto t3 = fb.input("wide", DType::I64, {4, 5});
  CHECK_THROWS_WITH(gather(tx, 1, tf), Catch::Contains("indices are i32 or i64"));
  if (k == OpKind::Gather) {
    // An index broadcast outside dim stretches to x's extent there.
    FusionBuilder bb("gather_broadcast");
    auto bx = bb.input("x", DType::F32, {3, 5});
    auto bi = bb.input("i", DType::I64, {2});
    bb.output("y", gather(bx, 1, broadcast(bi, {true, false})));
    auto bf = bb.finish();
    const HostTensor xv = HostTensor::random(DType::F32, {3, 5}, 23);
    const auto got = run(*bf, {xv, HostTensor::fromValues(DType::I64, {2}, {4.0, 1.0})})[0];
    REQUIRE(got.shape() == std::vector<int64_t>{3, 2});
    for (int64_t i = 0; i < 3; ++i) {
      CHECK(got.getLinear(i * 2) == xv.getLinear(i * 5 + 4));
      CHECK(got.getLinear(i * 2 + 1) == xv.getLinear(i * 5 + 1));
    }
    CHECK_THROWS_WITH(gather(tx, 1, t1), Catch::Contains("gather takes an index of x's rank"));
    CHECK_THROWS_WITH(gather(tx, 1, t3), Catch::Contains("outside dim 1 they must match"));
  } else {
    CHECK_THROWS_WITH(index_select(tx, 0, t3), Catch::Contains("index_select takes a 1-d index"));
  }
}

// argmax and argmin: the first extreme wins ties, a NaN is the extreme, along either dim and
// with keepdim; integers; the operands they refuse.
void checkArgReduce(OpKind k) {
  const bool largest = k == OpKind::ArgMax;
  const double nan = std::nan(""), inf = std::numeric_limits<double>::infinity();
  auto along = [&](Tensor x, int dim, bool keep) { return largest ? argmax(x, dim, keep) : argmin(x, dim, keep); };
  FusionBuilder fb("arg");
  auto x = fb.input("x", DType::F16, {4, 3});
  auto i = fb.input("i", DType::I32, {2, 3});
  fb.output("rows", along(x, 1, false));
  fb.output("cols", along(x, 0, true));
  fb.output("ints", along(i, -1, false));
  const std::vector<double> xv = {2, 5, 5,  -inf, nan, inf,  -1, -1, -1,  nan, 0, nan};
  auto out = run(*fb.finish(), {HostTensor::fromValues(DType::F16, {4, 3}, xv),
                                HostTensor::fromValues(DType::I32, {2, 3}, {7, -3, 7, -3, 9, -3})});
  CHECK(out[0].dtype() == DType::I64);
  CHECK(out[1].shape() == std::vector<int64_t>{1, 3});
  if (largest) {
    checkValues(out[0], {1, 1, 0, 0}, DType::I64, "argmax along rows");
    checkValues(out[1], {3, 1, 3}, DType::I64, "argmax along columns");
    checkValues(out[2], {0, 1}, DType::I64, "argmax of integers");
  } else {
    checkValues(out[0], {0, 1, 0, 0}, DType::I64, "argmin along rows");
    checkValues(out[1], {3, 1, 3}, DType::I64, "argmin along columns");
    checkValues(out[2], {1, 0}, DType::I64, "argmin of integers");
  }
  FusionBuilder bad("bad");
  auto b = bad.input("b", DType::Bool, {4});
  auto y = bad.input("y", DType::F32, {4, 2});
  CHECK_THROWS_WITH(along(b, 0, false), Catch::Contains("needs a numeric operand"));
  CHECK_THROWS_WITH(bad.fusion().addOp(k, {y.value()}, ir::ReduceAttrs{{0, 1}, false}),
                    Catch::Contains("takes one dim, got 2"));
  FusionBuilder empty("empty");
  auto e = empty.input("e", DType::F32, {3, "D"});
  empty.output("a", along(e, 1, false));
  CHECK_THROWS_WITH(run(*empty.finish(), {HostTensor::fromValues(DType::F32, {3, 0}, std::vector<double>{})}),
                    Catch::Contains("reduces over zero elements"));
}

}  // namespace loom::test
