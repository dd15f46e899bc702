// CPU-only: PTX -> cubin through nvJitLink (runtime/ptx_compiler.h), with no GPU. Where no
// nvJitLink is found the tests say so and check the reason instead.
#include <catch2/catch.hpp>

#include <string>

#include "compiler/compile.h"
#include "include/loom/loom.h"
#include "runtime/ptx_compiler.h"
#include "tests/compile_test_util.h"

using namespace loom;

namespace {
bool haveNvJitLink() {
  std::string why;
  if (runtime::ptxCompilerAvailable(&why)) return true;
  WARN("no nvJitLink: skipped (" << why << ")");
  CHECK(why.find("no nvJitLink found (tried ") == 0);
  return false;
}
}  // namespace

TEST_CASE("nvJitLink compiles loom's PTX to a cubin for the SM asked", "[cubin]") {
  if (!haveNvJitLink()) return;
  CHECK(runtime::ptxCompilerVersion().rfind("nvJitLink ", 0) == 0);
  for (const char* name : {"layer_norm", "lstm_cell", "layer_norm_backward"}) {
    const auto* e = findExample(name);
    REQUIRE(e);
    auto f = e->buildDefault();
    // PTX for sm_80 runs on every later SM: its cubin is made for the device's own SM.
    for (auto [ptx_sm, sm] : {std::pair{90, 90}, std::pair{80, 80}, std::pair{80, 89}}) {
      auto k = compileFusion(*f, e->default_sizes, test::descsFor(*f, e->default_sizes),
                             CompileOptions{{ptx_sm, 132}});
      std::string why;
      auto c = runtime::compileCubin(k.ptx, sm, k.name, &why);
      INFO(name << " sm_" << sm << ": " << why);
      REQUIRE(c.has_value());
      CHECK(c->sm == sm);
      CHECK(c->ms > 0);
      CHECK(c->image.compare(0, 4, "\x7f" "ELF") == 0);
      CHECK(c->image.find(k.name) != std::string::npos);  // the kernel's symbol
    }
  }
}

TEST_CASE("nvJitLink's refusal comes back with its log, never thrown", "[cubin]") {
  if (!haveNvJitLink()) return;
  std::string why;
  auto c = runtime::compileCubin(".version 8.5\n.target sm_90\n.address_size 64\n.entry broken( {\n  bogus;\n}\n",
                                 90, "loom_broken", &why);
  CHECK_FALSE(c.has_value());
  CHECK(why.find("loom_broken") != std::string::npos);
  // Not an SM version at all.
  auto add = findExample("add")->buildDefault();
  auto k = compileFusion(*add, findExample("add")->default_sizes,
                         test::descsFor(*add, findExample("add")->default_sizes), CompileOptions{{90, 132}});
  CHECK_FALSE(runtime::compileCubin(k.ptx, 3, k.name, &why).has_value());
  CHECK(why == "sm_3 is no GPU's SM version");
}
