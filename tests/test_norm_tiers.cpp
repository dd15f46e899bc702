// CPU-only: the normalization scheduler's tiers (compiler/schedule/norm_tiers.def) as typed
// values: each named once, and each reached by a shape whose schedule dump names it.
#include <catch2/catch.hpp>

#include <set>

#include "tests/compile_test_util.h"

#include "compiler/schedule/normalization.h"
#include "frontend/examples.h"

using namespace loom;
using loom::test::descsFor;
using schedule::NormTier;

TEST_CASE("every normalization tier has a name and a description of its own", "[norm]") {
  std::set<std::string_view> names, whats;
  for (NormTier t : schedule::normTiers()) {
    CHECK_FALSE(schedule::normTierName(t).empty());
    CHECK_FALSE(schedule::normTierWhat(t).empty());
    names.insert(schedule::normTierName(t));
    whats.insert(schedule::normTierWhat(t));
  }
  CHECK(names.size() == schedule::normTiers().size());
  CHECK(whats.size() == schedule::normTiers().size());
}

TEST_CASE("each tier is reached, and the schedule dump names it", "[norm]") {
  struct Case {
    const char* example;
    DType t;
    Bindings sizes;  // empty: the example's own
    std::vector<int> order;  // x's memory order; empty: the default
    NormTier tier;
    int sm = 90;
  };
  const std::vector<int> nhwc = {0, 2, 3, 1};
  const Case cases[] = {
      {"layer_norm", DType::F16, {}, {}, NormTier::Registers},
      {"layer_norm", DType::BF16, {{"N", 9001}, {"D", 256}}, {}, NormTier::ThreadFill},
      {"layer_norm", DType::F64, {{"N", 1024}, {"D", 16384}}, {}, NormTier::SharedMemory},
      {"group_norm", DType::F16, {{"N", 2}, {"C", 512}, {"H", 64}, {"W", 61}}, nhwc, NormTier::Cluster},
      {"group_norm", DType::F16, {{"N", 3}, {"C", 128}, {"H", 127}, {"W", 129}}, nhwc, NormTier::Grid},
      {"layer_norm", DType::F16, {}, {1, 0}, NormTier::RowVectors},
      {"layer_norm_2d", DType::F16, {{"N", 3}, {"C", 96}, {"H", 57}, {"W", 55}}, {}, NormTier::RowPieces},
      {"softmax", DType::F16, {{"N", 2201}, {"D", 4096}}, {1, 0}, NormTier::RowVectorsLargeBlock},
      {"batch_norm", DType::F16, {}, nhwc, NormTier::RowVectorsGrid},
      {"instance_norm", DType::F16, {{"N", 8}, {"C", 33}, {"H", 96}, {"W", 96}}, nhwc, NormTier::RowGridCutShort},
      {"softmax", DType::BF16, {{"N", 33}, {"D", 65537}}, {}, NormTier::SharedWelford},
      {"layer_norm", DType::F16, {{"N", 5}, {"D", 262147}}, {}, NormTier::Streamed},
  };
  std::set<NormTier> reached;
  for (const Case& c : cases) {
    const Example* e = findExample(c.example);
    REQUIRE(e);
    auto f = e->build(c.t);
    const Bindings sizes = c.sizes.empty() ? e->default_sizes : c.sizes;
    std::map<std::string, std::vector<int>> lay;
    if (!c.order.empty()) lay["x"] = c.order;
    std::string why;
    auto k = schedule::scheduleNormalization(*f, sizes, descsFor(*f, sizes, lay), CompileOptions{{c.sm, 132}}, &why);
    REQUIRE(k);
    INFO(c.example << " " << dtypeName(c.t) << ": " << k->reason);
    CHECK(k->tier == c.tier);
    CHECK(k->reason.find(fmt::format("; tier {}: ", schedule::normTierName(c.tier))) != std::string::npos);
    reached.insert(k->tier);
  }
  CHECK(reached.size() == schedule::normTiers().size());
}
