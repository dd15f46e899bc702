#pragma once
// The normalization scheduler's tiers as a typed value (the list: schedule/tiers.def), and the
// shape of its decisions: a value and the reason it was chosen.
#include <string>
#include <string_view>
#include <vector>

namespace loom::schedule {

enum class NormTier {
#define LOOM_NORM_TIER(e, name, what) e,
#include "compiler/schedule/tiers.def"
#undef LOOM_NORM_TIER
};

std::string_view normTierName(NormTier t);  // e.g. "thread fill"
std::string_view normTierWhat(NormTier t);  // its one-line description

// Every tier, in schedule/tiers.def's order.
const std::vector<NormTier>& normTiers();

// One decision of the scheduler: the value chosen and why (English for the schedule dump;
// empty where the value needs no reason beyond itself).
template <typename T>
struct Decision {
  T value{};
  std::string why;
};

}  // namespace loom::schedule
