// CPU-only: rows whose length the vector does not divide (RowKernel::peel): whole vectors from
// each row's first aligned element, the edge one element a thread; which loads and stores stay
// vectors, which tiers take it, and that the kernels pass the IR verifier and ptxas.
#include <catch2/catch.hpp>

#include "tests/compile_test_util.h"

#include "compiler/compile.h"
#include "compiler/schedule/normalization/normalization.h"
#include "compiler/schedule/row_kernel.h"
#include "frontend/examples.h"
#include "frontend/internal_api.h"

using namespace loom;
using loom::test::descsFor;
using loom::test::has;

namespace {

std::optional<schedule::RowKernel> scheduleOf(const ir::Fusion& f, const Bindings& sizes, bool no_peel = false) {
  CompileOptions opts{{90, 132}};
  opts.tuning.no_peel = no_peel;
  std::string why;
  auto k = schedule::scheduleNormalization(f, sizes, descsFor(f, sizes), opts, &why);
  INFO(why);
  REQUIRE(k);
  return k;
}

kir::Access accessOf(const schedule::RowKernel& k, int input) {
  for (const auto& [leaf, a] : k.load_access)
    if (leaf.input == input && leaf.strides.back() != 0) return a;
  FAIL("no load of input " << input << " along the row");
  return kir::Access::Gather;
}

}  // namespace

TEST_CASE("rows of odd length are read in whole vectors from each row's first aligned element", "[norm][peel]") {
  struct Case {
    const char* example;
    DType t;
    int64_t n, d;
    int vec;
  };
  for (const Case& c : {Case{"softmax", DType::F16, 8192, 50257, 8}, Case{"softmax", DType::F32, 333, 50257, 4},
                        Case{"softmax", DType::F16, 1, 50257, 8}, Case{"log_softmax", DType::BF16, 999, 1531, 8},
                        Case{"rms_norm", DType::F16, 77, 4099, 8}, Case{"softmax", DType::F64, 3, 4099, 2},
                        Case{"softmax_backward", DType::F16, 512, 50257, 8},
                        Case{"log_softmax_backward", DType::F32, 512, 50257, 4},
                        Case{"softmax", DType::F16, 64, 110001, 8}}) {
    INFO(c.example << " " << dtypeName(c.t) << " " << c.n << " x " << c.d);
    auto f = findExample(c.example)->build(c.t);
    const Bindings sizes{{"N", c.n}, {"D", c.d}};
    auto k = scheduleOf(*f, sizes);
    INFO(k->reason);
    CHECK(k->peel);
    CHECK(k->vec == c.vec);
    CHECK(has(k->reason, "first aligned element"));
    // Every row (not rms_norm's weight, the same for every row) in vectors.
    for (const auto& [leaf, a] : k->load_access)
      if (leaf.strides.back() == 1 && leaf.strides.front() != 0) CHECK(a == kir::Access::Vector);
    for (const auto& s : k->stores) CHECK(s.access == kir::Access::Vector);
    // The whole kernel: the verifier's bounds hold (compileFusion runs it after each pass).
    auto ck = compileFusion(*f, sizes, descsFor(*f, sizes), CompileOptions{{90, 132}});
    LOOM_CHECK_PTXAS(ck.ptx, 90);
    // LOOM_NO_PEEL: the widest vector dividing the rows, as before.
    CHECK_FALSE(scheduleOf(*f, sizes, true)->peel);
    CHECK(scheduleOf(*f, sizes, true)->vec < c.vec);
  }
}

TEST_CASE("a peeled row's weights and rows of another alignment are read lane by lane", "[norm][peel]") {
  // layer_norm's weight and bias are the same for every row: their columns start where the
  // row's vectors do, unaligned.
  auto ln = findExample("layer_norm")->build(DType::F16);
  auto k = scheduleOf(*ln, {{"N", 333}, {"D", 1531}});
  CHECK(k->peel);
  CHECK(accessOf(*k, 0) == kir::Access::Vector);
  CHECK(accessOf(*k, 1) == kir::Access::Gather);
  CHECK(accessOf(*k, 2) == kir::Access::Gather);
  // The middle third of rows of 3 * 1531: the reference starts 1531 in, rows 4593 apart; the
  // [N, 1531] output's rows start elsewhere modulo 4: stored one lane at a time.
  auto sl = parseFusionFile(std::string(LOOM_SOURCE_DIR) + "/examples/fusions/layer_norm_of_slice.loom");
  const Bindings sizes{{"N", 333}, {"D", 1531}};
  auto ks = scheduleOf(*sl, sizes);
  CHECK(ks->peel);
  CHECK(ks->peel_offset == 1531);
  CHECK(accessOf(*ks, 0) == kir::Access::Vector);
  REQUIRE(ks->stores.size() == 1);
  CHECK(ks->stores[0].access == kir::Access::Gather);
  auto ck = compileFusion(*sl, sizes, descsFor(*sl, sizes), CompileOptions{{90, 132}});
  LOOM_CHECK_PTXAS(ck.ptx, 90);
  // dy and dx start alike, y (a slice) elsewhere: the alignment of most bytes is the reference.
  auto mis = parseFusionFile(std::string(LOOM_SOURCE_DIR) + "/bench/cases/softmax_backward_of_slice.loom");
  for (int64_t d : {1027, 32771, 65537}) {
    INFO("D=" << d);
    auto km = scheduleOf(*mis, {{"N", 4}, {"D", d}});
    CHECK(km->peel);
    CHECK(km->peel_offset == 0);
    CHECK(accessOf(*km, 0) == kir::Access::Vector);  // dy
    CHECK(accessOf(*km, 1) == kir::Access::Gather);  // yy
    CHECK(km->stores[0].access == kir::Access::Vector);
  }
}

TEST_CASE("tiers that cannot take a peeled edge keep narrower vectors", "[norm][peel]") {
  // Rows over the whole grid, and short rows (fewer than 32 whole vectors): not peeled.
  auto f = findExample("softmax")->build(DType::F16);
  for (auto [n, d] : {std::pair<int64_t, int64_t>{3, (int64_t{1} << 20) + 9}, {1000, 255}}) {
    INFO(n << " x " << d);
    auto k = scheduleOf(*f, {{"N", n}, {"D", d}});
    INFO(k->reason);
    CHECK_FALSE(k->peel);
    CHECK(k->vec == 1);
  }
  // Rows with column reductions beside them (layer norm backward's dw, db): not peeled.
  auto lb = findExample("layer_norm_backward")->build(DType::F16);
  auto kb = scheduleOf(*lb, {{"N", 333}, {"D", 1531}});
  CHECK_FALSE(kb->peel);
}
