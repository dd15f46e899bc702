#pragma once
// The tuning knobs of the schedulers and emitters as one typed value (every entry of
// include/loom/tuning.def is a field): unset, each keeps loom's own choice. The compiler reads
// them only from here; where they come from (the environment, a test, a map) is the caller's
// business (tuningFromEnvironment reads the environment).
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#pragma GCC visibility push(default)
namespace loom {

struct Tuning {
#define LOOM_KNOB(name, field, lo, hi, what) std::optional<int> field;
#define LOOM_SWITCH(name, field, what) bool field = false;
#include <loom/tuning.def>
#undef LOOM_KNOB
#undef LOOM_SWITCH
  bool operator==(const Tuning&) const = default;
};

// One entry of include/loom/tuning.def: a knob (a whole number from `lo` to `hi`) or a switch.
struct TuningKnob {
  std::string_view name;  // its environment variable, e.g. LOOM_TUNE_CLUSTER
  std::string_view what;
  std::optional<int> Tuning::*number = nullptr;  // a knob's field, or null
  bool Tuning::*on = nullptr;                    // a switch's field, or null
  int lo = 0, hi = 0;
};

// Every entry of include/loom/tuning.def, in its order.
const std::vector<TuningKnob>& tuningKnobs();

// Sets one knob from its text: a knob takes a whole number in its range, a switch takes 1.
// Anything else, or a name not in tuning.def, is a loom::Error naming the variable, the value
// and what it takes.
void setTuning(Tuning& t, std::string_view name, std::string_view value);

// The knobs `lookup` gives a value (by name; nullopt: unset), each parsed as setTuning does.
using TuningLookup = std::function<std::optional<std::string>(std::string_view name)>;
Tuning tuningFrom(const TuningLookup& lookup);
// The same from NAME -> value (names not in tuning.def are an error).
Tuning tuningFrom(const std::map<std::string, std::string>& values);

// Every knob set, as `NAME=VALUE`, in tuning.def order (a switch: NAME=1); empty when none is.
std::vector<std::string> tuningSettings(const Tuning& t);

// The knobs set in the environment (LOOM_TUNE_*), each checked as setTuning does.
Tuning tuningFromEnvironment();

}  // namespace loom
#pragma GCC visibility pop
