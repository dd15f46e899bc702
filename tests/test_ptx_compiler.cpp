// CPU-only: PTX -> cubin through nvJitLink (runtime/ptx_compiler.h), with no GPU. Where no
// nvJitLink is found the tests say so and check the reason instead.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "compiler/compile.h"
#include "frontend/internal_api.h"
#include "runtime/cubin_worker.h"
#include "runtime/kernel_cache.h"
#include "runtime/module_image.h"
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

TEST_CASE("a register cap goes on every entry that has none", "[cubin]") {
  const std::string ptx = ".visible .entry a(\n.param .u64 p\n)\n.maxntid 256, 1, 1\n{\n ret;\n}\n"
                          ".visible .entry b(\n)\n.maxnreg 64\n{\n ret;\n}\n";
  const std::string capped = runtime::withMaxRegisters(ptx, 92);
  CHECK(capped == ".visible .entry a(\n.param .u64 p\n)\n.maxntid 256, 1, 1\n.maxnreg 92\n{\n ret;\n}\n"
                  ".visible .entry b(\n)\n.maxnreg 64\n{\n ret;\n}\n");
  CHECK(runtime::withMaxRegisters("no entry", 92) == "no entry");
}

TEST_CASE("nvJitLink's cubin is held to the registers the driver's JIT gives the same PTX", "[cubin]") {
  // nvJitLink compiles PTX as relocatable code: uncapped, this kernel took 128 registers a thread
  // (167 with its rows a kernel parameter) where the JIT and whole-program ptxas take 91-92, and
  // ran 35% slower on the H200. Held to 92, it takes no more and spills nothing.
  if (!haveNvJitLink()) return;
  for (bool symbolic : {false, true}) {
    FusionBuilder fb("ln");
    auto x = fb.input("x", DType::BF16, {"N", 16384});
    auto w = fb.input("w", DType::BF16, {16384});
    auto b = fb.input("b", DType::BF16, {16384});
    fb.output("y", layer_norm(x, {16384}, w, b));
    auto f = fb.finish();
    const Bindings sizes{{"N", 32768}};
    Tuning t;
    t.symbolic = symbolic;
    auto k = compileFusion(*f, sizes, test::descsFor(*f, sizes), CompileOptions{{90, 132}, t});
    std::string why;
    auto free_regs = runtime::compileCubin(k.ptx, 90, k.name, &why);
    auto held = runtime::compileCubin(k.ptx, 90, k.name, &why, 92);
    INFO("symbolic " << symbolic << ": " << why);
    REQUIRE(free_regs.has_value());
    REQUIRE(held.has_value());
    CHECK(free_regs->registers > 0);
    CHECK(held->registers > 0);
    CHECK(held->registers <= 92);
    CHECK(held->spill_bytes == 0);
    // attachCubin keeps it against the JIT's 92 registers and no local memory.
    CompiledKernel with = k;
    CHECK(runtime::attachCubin(with, 90, {92, 0}));
    CHECK(!with.cubin.empty());
  }
}

TEST_CASE("a cubin worse than the driver JIT's is not kept", "[cubin]") {
  // softmax with its rows a kernel parameter: held to the JIT's 79 registers, nvJitLink's
  // relocatable code spills (68 bytes) and keeps a 72-byte stack for the IEEE reciprocal's
  // slow path; from the disk cache it ran at 3590 GB/s against the PTX's 4087 on the H200.
  if (!haveNvJitLink()) return;
  auto f = findExample("softmax")->build(DType::BF16);
  const Bindings sizes{{"N", 32768}, {"D", 16384}};
  Tuning t;
  t.symbolic = true;
  auto k = compileFusion(*f, sizes, test::descsFor(*f, sizes), CompileOptions{{90, 132}, t});
  std::string why;
  auto held = runtime::compileCubin(k.ptx, 90, k.name, &why, 79);
  REQUIRE(held.has_value());
  CHECK(held->registers > 0);  // the log was read: refused for what it says, not for silence
  CHECK(held->registers <= 79);
  CHECK(held->stack_bytes + held->spill_bytes > 0);
  CompiledKernel worse = k;
  CHECK(runtime::attachCubin(worse, 90, {79, 0}));  // changed: marked refused, to be stored
  CHECK(worse.cubin.empty());
  CHECK(worse.cubin_sm == -90);
  CHECK_FALSE(runtime::attachCubin(worse, 90, {79, 0}));  // never made again
  // The mark survives the disk cache, and a later process queues nothing for it.
  const std::string dir = (std::filesystem::temp_directory_path() / "loom-refused-cubin").string();
  std::filesystem::remove_all(dir);
  {
    test::ScopedEnv cache_dir("LOOM_CACHE_DIR", dir);
    test::ScopedEnv disk("LOOM_DISK_CACHE", "1");
    runtime::diskCacheStore("refused", worse);
    auto back = runtime::diskCacheLoad("refused");
    REQUIRE(back.has_value());
    CHECK(back->cubin_sm == -90);
    CHECK(back->cubin.empty());
  }
  std::filesystem::remove_all(dir);
  // Without a profile (no kernel loaded: nothing to compare with) it is made as before.
  CompiledKernel any = k;
  CHECK(runtime::attachCubin(any, 90));
}

TEST_CASE("nvJitLink's and ptxas's resource logs read the same", "[cubin]") {
  runtime::Cubin a, b;
  runtime::readResourceLog("ptxas         .     72 bytes stack frame, 68 bytes spill stores, 68 bytes spill loads\n"
                           "ptxas info    : Used 79 registers, used 1 barriers, 64 bytes smem\n", a);
  CHECK(a.registers == 79);
  CHECK(a.stack_bytes == 72);
  CHECK(a.spill_bytes == 68);
  runtime::readResourceLog("info    : used 95 registers, used 1 barriers, 24 stack, 1088 bytes smem, 552 bytes cmem[0], 0 bytes lmem\n", b);
  CHECK(b.registers == 95);
  CHECK(b.stack_bytes == 24);
  CHECK(b.spill_bytes == 0);
  runtime::Cubin none;
  runtime::readResourceLog("", none);
  CHECK(none.registers == 0);
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

TEST_CASE("cubins made in the background land in the disk cache for the next process", "[cubin][cache]") {
  if (!haveNvJitLink()) return;
  const std::string dir = (std::filesystem::temp_directory_path() / "loom_cubin_worker_test").string();
  std::filesystem::remove_all(dir);
  test::ScopedEnv cache_dir("LOOM_CACHE_DIR", dir);
  auto f = findExample("layer_norm")->buildDefault();
  const auto& sizes = findExample("layer_norm")->default_sizes;
  auto k = compileFusion(*f, sizes, test::descsFor(*f, sizes), CompileOptions{{90, 132}});
  runtime::diskCacheStore("key-bg", k);  // as the Executor stores a fresh kernel: PTX only
  const int before = runtime::finishCubins();
  runtime::makeCubinLater("key-bg", k, 90);
  // An sm_89 GPU runs PTX made for sm_80, and gets its own cubin from it.
  auto k80 = compileFusion(*f, sizes, test::descsFor(*f, sizes), CompileOptions{{80, 132}});
  runtime::makeCubinLater("key-bg-89", k80, 89);
  CHECK(runtime::finishCubins() == before + 2);
  auto hit = runtime::diskCacheLoad("key-bg");
  REQUIRE(hit.has_value());
  CHECK(hit->cubin_sm == 90);
  CHECK(hit->cubin.compare(0, 4, "\x7f" "ELF") == 0);
  CHECK(hit->ptx == k.ptx);
  auto hit89 = runtime::diskCacheLoad("key-bg-89");
  REQUIRE(hit89.has_value());
  CHECK(hit89->cubin_sm == 89);
  // An entry that has its cubin already, or a process whose disk cache is off: nothing queued.
  runtime::makeCubinLater("key-bg", *hit, 90);
  {
    test::ScopedEnv off("LOOM_DISK_CACHE", "0");
    runtime::makeCubinLater("key-off", k, 90);
  }
  CHECK(runtime::finishCubins() == before + 2);
  CHECK_FALSE(runtime::diskCacheLoad("key-off").has_value());
  std::filesystem::remove_all(dir);
}
