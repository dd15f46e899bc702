#include "compiler/schedule/tiers.h"

namespace loom::schedule {

std::string_view normTierName(NormTier t) {
  switch (t) {
#define LOOM_NORM_TIER(e, name, what) case NormTier::e: return name;
#include "compiler/schedule/tiers.def"
#undef LOOM_NORM_TIER
  }
  return "?";
}

std::string_view normTierWhat(NormTier t) {
  switch (t) {
#define LOOM_NORM_TIER(e, name, what) case NormTier::e: return what;
#include "compiler/schedule/tiers.def"
#undef LOOM_NORM_TIER
  }
  return "?";
}

const std::vector<NormTier>& normTiers() {
  static const std::vector<NormTier> all = {
#define LOOM_NORM_TIER(e, name, what) NormTier::e,
#include "compiler/schedule/tiers.def"
#undef LOOM_NORM_TIER
  };
  return all;
}

}  // namespace loom::schedule
