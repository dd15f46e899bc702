#include "compiler/tuning.h"

#include <charconv>

#include <fmt/format.h>

#include "ir/error.h"

namespace loom {

const std::vector<TuningKnob>& tuningKnobs() {
  static const std::vector<TuningKnob> knobs = {
#define LOOM_KNOB(name, field, lo, hi, what) {#name, what, &Tuning::field, nullptr, lo, hi},
#define LOOM_SWITCH(name, field, what) {#name, what, nullptr, &Tuning::field, 0, 1},
#include <loom/tuning.def>
#undef LOOM_KNOB
#undef LOOM_SWITCH
  };
  return knobs;
}

namespace {

const TuningKnob& knobNamed(std::string_view name) {
  for (const auto& k : tuningKnobs())
    if (k.name == name) return k;
  fail("`{}` is no tuning knob of loom (include/loom/tuning.def lists them)", name);
}

}  // namespace

void setTuning(Tuning& t, std::string_view name, std::string_view value) {
  const TuningKnob& k = knobNamed(name);
  if (k.on) {
    LOOM_USER_CHECK(value == "1", "{}={} is not a valid setting: it is a switch ({}), turned on by "
                    "{}=1 and off by leaving it unset", name, value, k.what, name);
    t.*k.on = true;
    return;
  }
  int v = 0;
  const char* end = value.data() + value.size();
  auto [p, ec] = std::from_chars(value.data(), end, v);
  LOOM_USER_CHECK(!value.empty() && ec == std::errc() && p == end && v >= k.lo && v <= k.hi,
                  "{}={} is not a valid setting: it takes a whole number from {} to {} ({})", name, value,
                  k.lo, k.hi, k.what);
  t.*k.number = v;
}

Tuning tuningFrom(const TuningLookup& lookup) {
  Tuning t;
  for (const auto& k : tuningKnobs())
    if (auto v = lookup(k.name)) setTuning(t, k.name, *v);
  return t;
}

Tuning tuningFrom(const std::map<std::string, std::string>& values) {
  Tuning t;
  for (const auto& [name, v] : values) setTuning(t, name, v);
  return t;
}

std::vector<std::string> tuningSettings(const Tuning& t) {
  std::vector<std::string> out;
  for (const auto& k : tuningKnobs()) {
    if (k.on && t.*k.on) out.push_back(fmt::format("{}=1", k.name));
    if (k.number && t.*k.number) out.push_back(fmt::format("{}={}", k.name, *(t.*k.number)));
  }
  return out;
}

}  // namespace loom
