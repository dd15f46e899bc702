// CPU-only: the normalization scheduler's tiers (compiler/schedule/norm_tiers.def) as typed
// values, each named once.
#include <catch2/catch.hpp>

#include <set>

#include "compiler/schedule/normalization.h"

using namespace loom;
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
