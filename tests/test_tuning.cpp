// CPU-only: the tuning knobs as one typed value (include/loom/tuning.def, include/loom/tuning.h): every
// knob a field, read from its environment variable at the boundary only, checked, and in the
// compile cache key.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <set>
#include <string>

#include "compiler/compile.h"
#include "frontend/internal_api.h"
#include "runtime/environment_options.h"
#include "tests/compile_test_util.h"

using namespace loom;
using Catch::Matchers::Contains;

namespace {

std::string readSource(const std::filesystem::path& p) {
  std::ifstream in(p);
  return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// A valid setting of the knob: its largest value, or 1 for a switch.
std::string validValue(const TuningKnob& k) { return k.on ? "1" : std::to_string(k.hi); }

std::string keyOf(const Tuning& t) {
  auto f = findExample("add")->buildDefault();
  const std::vector<TensorDesc> in = loom::test::descsFor(*f, findExample("add")->default_sizes);
  return compileKey(*f, in, {}, CompileOptions{{90, 132}, t});
}

}  // namespace

TEST_CASE("every tuning knob is a field, set from its variable, in the cache key and docs/schedulers.md", "[tuning]") {
  // A LOOM_TUNE_* or LOOM_NO_* name in the compiler, runtime or CLI but missing from
  // include/loom/tuning.def would be a knob that is no field, and not in the cache key.
  std::set<std::string> registered;
  for (const auto& k : tuningKnobs()) registered.insert(std::string(k.name));
  REQUIRE(registered.size() == tuningKnobs().size());
  const std::regex name(R"(LOOM_(TUNE|NO)_[A-Z0-9_]+)");
  std::set<std::string> named;
  namespace fs = std::filesystem;
  for (const char* dir : {"compiler", "runtime", "tools", "include"})
    for (const auto& e : fs::recursive_directory_iterator(fs::path(LOOM_SOURCE_DIR) / dir)) {
      const auto ext = e.path().extension();
      if (ext != ".cpp" && ext != ".h" && ext != ".def") continue;
      const std::string text = readSource(e.path());
      for (std::sregex_iterator it(text.begin(), text.end(), name), end; it != end; ++it) named.insert(it->str());
    }
  CHECK(named.size() >= 20);
  for (const auto& n : named) {
    INFO(n << " is named in the sources but not listed in include/loom/tuning.def");
    CHECK(registered.count(n) == 1);
  }
  // docs/schedulers.md lists every knob by what it tunes (its "Tuning knobs" section).
  const std::string doc = readSource(fs::path(LOOM_SOURCE_DIR) / "docs" / "schedulers.md");
  REQUIRE(!doc.empty());
  const std::string plain = keyOf(Tuning{});
  std::set<std::string> keys;
  for (const auto& k : tuningKnobs()) {
    INFO(k.name);
    CHECK(doc.find("`" + std::string(k.name) + "`") != std::string::npos);    // the doc lists it
    CHECK((k.number == nullptr) != (k.on == nullptr));                        // a knob or a switch
    CHECK(k.lo <= k.hi);
    // Its variable sets its field, and only that one.
    Tuning t;
    setTuning(t, k.name, validValue(k));
    CHECK(t != Tuning{});
    if (k.on) CHECK(t.*k.on);
    else CHECK(t.*k.number == k.hi);
    const auto settings = tuningSettings(t);
    REQUIRE(settings.size() == 1);
    CHECK(settings[0] == std::string(k.name) + "=" + validValue(k));
    // In the cache key, and a key of its own; but the Executor's policy switch, which changes no
    // kernel's code (only which calls compile with LOOM_TUNE_SYMBOLIC).
    const std::string key = keyOf(t);
    if (k.name == "LOOM_NO_AUTO_SYMBOLIC") {
      CHECK(key == plain);
      continue;
    }
    CHECK(key != plain);
    CHECK(key.find("tuning " + settings[0] + "\n") != std::string::npos);
    keys.insert(key);
  }
  CHECK(keys.size() == tuningKnobs().size() - 1);
  CHECK(plain.find("tuning ") == std::string::npos);  // nothing set: no knob in the key
}

TEST_CASE("a bad tuning value is a user error naming the variable, the value and the range", "[tuning]") {
  Tuning t;
  CHECK_THROWS_AS(setTuning(t, "LOOM_TUNE_CLUSTER", "abc"), Error);
  CHECK_THROWS_WITH(setTuning(t, "LOOM_TUNE_CLUSTER", "abc"),
                    "LOOM_TUNE_CLUSTER=abc is not a valid setting: it takes a whole number from 1 to 16 (blocks "
                    "of a cluster where a row is split (up to a power of two; 16 non-portable))");
  for (const char* bad : {"0", "17", "-1", "", "4x", " 4", "4 ", "2.0", "99999999999999"}) {
    INFO(bad);
    CHECK_THROWS_WITH(setTuning(t, "LOOM_TUNE_CLUSTER", bad),
                      Contains(std::string("LOOM_TUNE_CLUSTER=") + bad) && Contains("from 1 to 16"));
  }
  CHECK_THROWS_WITH(setTuning(t, "LOOM_TUNE_THREADS_PER_ROW", "2048"), Contains("from 1 to 1024"));
  CHECK_THROWS_WITH(setTuning(t, "LOOM_TUNE_ROWVEC_STATS", "2"), Contains("from 0 to 1"));
  // A switch is on at 1 and off unset: 0 or yes would read as either.
  for (const char* bad : {"0", "yes", "", "2"}) {
    INFO(bad);
    CHECK_THROWS_WITH(setTuning(t, "LOOM_NO_GRID", bad),
                      Contains(std::string("LOOM_NO_GRID=") + bad) && Contains("turned on by LOOM_NO_GRID=1"));
  }
  CHECK_THROWS_WITH(setTuning(t, "LOOM_TUNE_NOTHING", "1"), Contains("`LOOM_TUNE_NOTHING` is no tuning knob"));
  CHECK(t == Tuning{});  // nothing was set by the failures
  // The edges of a range are in it.
  setTuning(t, "LOOM_TUNE_CLUSTER", "1");
  setTuning(t, "LOOM_TUNE_CLUSTER", "16");
  CHECK(t.cluster == 16);
  // The same through the environment, read at the boundary.
  loom::test::ScopedEnv bad("LOOM_TUNE_CLUSTER", "abc");
  CHECK_THROWS_AS(tuningFromEnvironment(), Error);
  CHECK_THROWS_WITH(tuningFromEnvironment(), Contains("LOOM_TUNE_CLUSTER=abc") && Contains("from 1 to 16"));
}

TEST_CASE("tuning from a map or the environment round-trips into the cache key", "[tuning]") {
  const std::map<std::string, std::string> values = {
      {"LOOM_NO_GRID", "1"}, {"LOOM_TUNE_THREADS_PER_ROW", "64"}, {"LOOM_TUNE_WIDE_BLOCK", "0"}};
  const Tuning t = tuningFrom(values);
  CHECK(t.threads_per_row == 64);
  CHECK(t.wide_block == 0);
  CHECK(t.no_grid);
  CHECK_FALSE(t.no_cluster);
  CHECK_FALSE(t.cluster.has_value());
  // tuning.def's order, whatever the map's.
  const std::vector<std::string> settings = tuningSettings(t);
  CHECK(settings == std::vector<std::string>{"LOOM_TUNE_THREADS_PER_ROW=64", "LOOM_TUNE_WIDE_BLOCK=0", "LOOM_NO_GRID=1"});
  CHECK_THAT(keyOf(t), Contains("tuning LOOM_TUNE_THREADS_PER_ROW=64\ntuning LOOM_TUNE_WIDE_BLOCK=0\n"
                                "tuning LOOM_NO_GRID=1\n"));
  // The settings parse back to the same value.
  Tuning back;
  for (const auto& s : settings) setTuning(back, s.substr(0, s.find('=')), s.substr(s.find('=') + 1));
  CHECK(back == t);
  // The environment gives the same value, and so the same key.
  std::vector<std::unique_ptr<loom::test::ScopedEnv>> env;
  for (const auto& k : tuningKnobs()) env.push_back(std::make_unique<loom::test::ScopedEnv>(std::string(k.name).c_str(), std::nullopt));
  CHECK(tuningFromEnvironment() == Tuning{});
  for (const auto& [n, v] : values) env.push_back(std::make_unique<loom::test::ScopedEnv>(n.c_str(), v));
  CHECK(tuningFromEnvironment() == t);
  CHECK(keyOf(tuningFromEnvironment()) == keyOf(t));
}

TEST_CASE("options differing in one knob or the device give different keys", "[tuning]") {
  Tuning a, b;
  a.threads_per_row = 64;
  b.threads_per_row = 128;
  CHECK(keyOf(a) != keyOf(b));
  b = a;
  CHECK(keyOf(a) == keyOf(b));
  b.no_subgrid = true;
  CHECK(keyOf(a) != keyOf(b));
  auto f = findExample("add")->buildDefault();
  const std::vector<TensorDesc> in = loom::test::descsFor(*f, findExample("add")->default_sizes);
  CHECK(compileKey(*f, in, {}, CompileOptions{{90, 132}}) != compileKey(*f, in, {}, CompileOptions{{90, 66}}));
  CHECK(compileKey(*f, in, {}, CompileOptions{{90, 132}}) != compileKey(*f, in, {}, CompileOptions{{80, 132}}));
}

TEST_CASE("the compiler follows its options, not the environment", "[tuning]") {
  auto f = findExample("layer_norm")->build(DType::F16);
  const Bindings sizes{{"N", 64}, {"D", 1024}};
  const std::vector<TensorDesc> in = loom::test::descsFor(*f, sizes);
  const std::string plain = compileFusion(*f, sizes, in, CompileOptions{{90, 132}}).ptx;
  CompileOptions tuned{{90, 132}};
  tuned.tuning.threads_per_row = 64;
  const std::string wide = compileFusion(*f, sizes, in, tuned).ptx;
  CHECK(wide != plain);
  // The variable set changes nothing until a boundary reads it into the options.
  loom::test::ScopedEnv env("LOOM_TUNE_THREADS_PER_ROW", "64");
  CHECK(compileFusion(*f, sizes, in, CompileOptions{{90, 132}}).ptx == plain);
  CHECK(compileFusion(*f, sizes, in, CompileOptions{{90, 132}, tuningFromEnvironment()}).ptx == wide);
}

TEST_CASE("threads per row that are no power of two are taken down to one, in every tier", "[tuning]") {
  // Found by review: 48 or 100 reached a combine over that many threads (an internal error).
  for (const char* name : {"layer_norm", "layer_norm_backward", "softmax", "rms_norm_backward"}) {
    auto f = findExample(name)->buildDefault();
    const Bindings sizes{{"N", 4096}, {"D", 4096}};
    for (int t : {3, 48, 100, 1000}) {
      INFO(name << " LOOM_TUNE_THREADS_PER_ROW=" << t);
      CompileOptions o{{90, 132}};
      o.tuning.threads_per_row = t;
      StageText st;
      CHECK_NOTHROW(compilePlan(*f, sizes, test::descsFor(*f, sizes), o, &st));  // (segmented where one kernel does not fit)
      // (Each tier takes the knob's power of two, within its own bounds.)
      std::smatch m;
      const std::string sched = st[DumpStage::Schedule];
      REQUIRE(std::regex_search(sched, m, std::regex("([0-9]+) threads per row")));
      const int got = std::stoi(m[1]);
      CHECK((got & (got - 1)) == 0);
      CHECK(got <= std::max(t, 32));
    }
  }
}
