// The PTX backend on hand-written LLVM IR (CPU only, checked with ptxas), and the driver layer
// (on a GPU where there is one; the clear no-GPU error where there is not).
//
// The kernels are LLVM IR text rather than IRBuilder calls because libloom keeps LLVM's
// symbols private (-Wl,--exclude-libs,ALL) and the tests do not link LLVM themselves.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "compiler/codegen/ptx_backend.h"
#include "compiler/codegen/ptxas_check.h"
#include "ir/error.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/environment_options.h"
#include "tests/compile_test_util.h"

using Catch::Matchers::Contains;
using loom::codegen::compileLlvmIrToPtx;
using loom::codegen::PtxOptions;

namespace {

// c[i] = a[i] + b[i] for i < n, one element per thread; and y[i] = expf(x[i]) + erff(x[i])
// through libdevice. Both are kernels by !nvvm.annotations, as loom's codegen marks them.
const char* kKernelsIr = R"(
declare i32 @llvm.nvvm.read.ptx.sreg.tid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
declare i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
declare float @__nv_expf(float)
declare float @__nv_erff(float)

define internal i64 @global_index() {
  %tid = call i32 @llvm.nvvm.read.ptx.sreg.tid.x()
  %ctaid = call i32 @llvm.nvvm.read.ptx.sreg.ctaid.x()
  %ntid = call i32 @llvm.nvvm.read.ptx.sreg.ntid.x()
  %base = mul i32 %ctaid, %ntid
  %i32 = add i32 %base, %tid
  %i = zext i32 %i32 to i64
  ret i64 %i
}

define void @add_f32(ptr %a, ptr %b, ptr %c, i64 %n) {
entry:
  %i = call i64 @global_index()
  %in = icmp slt i64 %i, %n
  br i1 %in, label %body, label %exit
body:
  %pa = getelementptr inbounds float, ptr %a, i64 %i
  %pb = getelementptr inbounds float, ptr %b, i64 %i
  %pc = getelementptr inbounds float, ptr %c, i64 %i
  %va = load float, ptr %pa, align 4
  %vb = load float, ptr %pb, align 4
  %s = fadd float %va, %vb
  store float %s, ptr %pc, align 4
  br label %exit
exit:
  ret void
}

define void @exp_erf_f32(ptr %x, ptr %y, i64 %n) {
entry:
  %i = call i64 @global_index()
  %in = icmp slt i64 %i, %n
  br i1 %in, label %body, label %exit
body:
  %px = getelementptr inbounds float, ptr %x, i64 %i
  %py = getelementptr inbounds float, ptr %y, i64 %i
  %v = load float, ptr %px, align 4
  %e = call float @__nv_expf(float %v)
  %r = call float @__nv_erff(float %v)
  %s = fadd float %e, %r
  store float %s, ptr %py, align 4
  br label %exit
exit:
  ret void
}

!nvvm.annotations = !{!0, !1}
!0 = !{ptr @add_f32, !"kernel", i32 1}
!1 = !{ptr @exp_erf_f32, !"kernel", i32 1}
)";

std::string compile(int sm, double* ms = nullptr) {
  PtxOptions opts;
  opts.sm = sm;
  return compileLlvmIrToPtx(kKernelsIr, opts, ms);
}

}  // namespace

TEST_CASE("PTX backend compiles kernels with libdevice for sm_80 and sm_90", "[ptx]") {
  const loom::codegen::PtxasTool ptxas = loom::ptxasFromEnvironment();
  for (int sm : {80, 90}) {
    DYNAMIC_SECTION("sm_" << sm) {
      double ms = 0;
      std::string ptx = compile(sm, &ms);
      CHECK_THAT(ptx, Contains(".target sm_" + std::to_string(sm)));
      CHECK_THAT(ptx, Contains(sm == 90 ? ".version 8.5" : ".version 8.0"));
      CHECK_THAT(ptx, Contains(".entry add_f32"));
      CHECK_THAT(ptx, Contains(".entry exp_erf_f32"));
      // libdevice linked and inlined: no unresolved __nv_ functions, no reflect calls left.
      CHECK(ptx.find(".extern .func __nv_") == std::string::npos);
      CHECK(ptx.find("__nvvm_reflect") == std::string::npos);
      CHECK(ptx.find("global_index") == std::string::npos);  // internal helper inlined
      CHECK(ms > 0);
      std::printf("LLVM -> PTX for sm_%d (2 kernels, libdevice expf/erff): %.1f ms\n", sm, ms);
      if (!loom::codegen::ptxasAvailable(ptxas)) {
        WARN("ptxas not found at " << ptxas.path << ": PTX not assembled");
      } else {
        CHECK(loom::codegen::ptxasCheck(ptx, sm, ptxas) == "");
      }
    }
  }
}

TEST_CASE("PTX backend rejects what it cannot compile with a loom::Error", "[ptx]") {
  PtxOptions opts;
  opts.sm = 75;
  CHECK_THROWS_WITH(compileLlvmIrToPtx(kKernelsIr, opts),
                    Contains("sm_75") && Contains("sm_80, sm_86, sm_89, sm_90"));
  opts.sm = 90;
  opts.opt_level = 4;
  CHECK_THROWS_AS(compileLlvmIrToPtx(kKernelsIr, opts), loom::Error);
  opts.opt_level = 3;
  CHECK_THROWS_WITH(compileLlvmIrToPtx("define void @f( {", opts), Contains("does not parse"));
  CHECK_THROWS_WITH(compileLlvmIrToPtx("define void @f() {\n  ret void\n}\n", opts),
                    Contains("no kernel"));
}

TEST_CASE("PTX backend: opt level 0 still links libdevice and assembles", "[ptx]") {
  PtxOptions opts;
  opts.opt_level = 0;
  std::string ptx = compileLlvmIrToPtx(kKernelsIr, opts);
  CHECK(ptx.find(".extern .func __nv_") == std::string::npos);
  const loom::codegen::PtxasTool ptxas = loom::ptxasFromEnvironment();
  if (loom::codegen::ptxasAvailable(ptxas)) CHECK(loom::codegen::ptxasCheck(ptx, 90, ptxas) == "");
}

TEST_CASE("ptxasCheck reports ptxas's complaint", "[ptx]") {
  const loom::codegen::PtxasTool ptxas = loom::ptxasFromEnvironment();
  if (!loom::codegen::ptxasAvailable(ptxas)) {
    WARN("ptxas not found at " << ptxas.path << ": skipped");
    return;
  }
  std::string bad = ".version 8.0\n.target sm_80\n.address_size 64\n.visible .entry k() { "
                    "bogus.instruction; }\n";
  std::string err = loom::codegen::ptxasCheck(bad, 80, ptxas);
  CHECK_THAT(err, Contains("ptxas -arch=sm_80 failed"));
  CHECK_THAT(err, Contains("bogus"));
}

TEST_CASE("ptxasCheck runs the ptxas and writes its temp files where it is told", "[ptx]") {
  loom::codegen::PtxasTool tool;
  tool.temp_dir = "/nonexistent-loom-dir";
  CHECK_THAT(loom::codegen::ptxasCheck(".version 8.0\n", 80, tool), Contains("cannot create a temp file"));
  tool = {};
  tool.path = "/nonexistent-loom-dir/ptxas";
  CHECK_FALSE(loom::codegen::ptxasAvailable(tool));
  CHECK_THAT(loom::codegen::ptxasCheck(".version 8.0\n", 80, tool), Contains("/nonexistent-loom-dir/ptxas"));
  // The environment's are read at the boundary.
  {
    loom::test::ScopedEnv p("LOOM_PTXAS", "/elsewhere/ptxas"), d("TMPDIR", "/elsewhere/tmp");
    const loom::codegen::PtxasTool env = loom::ptxasFromEnvironment();
    CHECK(env.path == "/elsewhere/ptxas");
    CHECK(env.temp_dir == "/elsewhere/tmp");
  }
  loom::test::ScopedEnv p("LOOM_PTXAS", std::nullopt), d("TMPDIR", "");
  CHECK(loom::ptxasFromEnvironment().path == loom::codegen::defaultPtxasPath());
  CHECK(loom::ptxasFromEnvironment().temp_dir == "/tmp");
}

TEST_CASE("PTX target for a device's compute capability", "[ptx]") {
  using loom::codegen::ptxTargetFor;
  CHECK(ptxTargetFor(8, 0) == 80);
  CHECK(ptxTargetFor(8, 6) == 86);
  CHECK(ptxTargetFor(8, 7) == 86);
  CHECK(ptxTargetFor(8, 9) == 89);
  CHECK(ptxTargetFor(9, 0) == 90);
  CHECK(ptxTargetFor(12, 0) == 90);  // newer GPUs JIT sm_90 PTX
  CHECK_THROWS_WITH(ptxTargetFor(7, 5), Contains("sm_80 or newer"));
}

TEST_CASE("Without a GPU the runtime says so clearly", "[runtime]") {
  std::string why;
  if (loom::runtime::gpuAvailable(&why)) {
    CHECK(why.empty());
    return;
  }
  CHECK_THAT(why, Contains("no NVIDIA GPU"));
  CHECK_THROWS_WITH(loom::runtime::Device::get(), Contains("no NVIDIA GPU"));
  CHECK_THROWS_AS(loom::runtime::DeviceBuffer(16), loom::Error);
}

TEST_CASE("A failing driver call names the call", "[runtime]") {
  // 1 is CUDA_ERROR_INVALID_VALUE; without a driver only its number can be shown.
  CHECK_THROWS_WITH(loom::runtime::checkCu(1, "cuMemAlloc_v2"),
                    Contains("cuMemAlloc_v2") && Contains("failed"));
  CHECK_NOTHROW(loom::runtime::checkCu(0, "cuInit"));
}

TEST_CASE("add and libdevice kernels run on the GPU", "[gpu]") {
  using namespace loom::runtime;
  std::string why;
  if (!gpuAvailable(&why)) {
    WARN("no GPU: skipped (" << why << ")");
    return;
  }
  Device& dev = Device::get();
  std::printf("device: %s\n", dev.describe().c_str());
  int sm = loom::codegen::ptxTargetFor(dev.ccMajor(), dev.ccMinor());
  double compile_ms = 0;
  Module module(compile(sm, &compile_ms), "test kernels");
  std::printf("LLVM -> PTX %.1f ms, cuModuleLoadDataEx %.1f ms\n", compile_ms, module.loadMs());
  CHECK(lastModuleLoadMs() == module.loadMs());

  const std::int64_t n = 1531;  // not a multiple of the block: the bounds check matters
  std::mt19937 rng(1234);
  std::uniform_real_distribution<float> dist(-3.0f, 3.0f);
  std::vector<float> a(n), b(n), out(n);
  for (auto& v : a) v = dist(rng);
  for (auto& v : b) v = dist(rng);
  const std::size_t bytes = n * sizeof(float);
  DeviceBuffer da(bytes), db(bytes), dc(bytes + 64);  // dc: 16 floats past n must stay as poisoned
  da.copyFromHost(a.data(), bytes);
  db.copyFromHost(b.data(), bytes);
  dc.fill32(0x7fc00001u);  // a NaN: any element not written fails the check below

  LaunchConfig cfg;
  cfg.block.x = 128;
  cfg.grid.x = static_cast<unsigned>((n + 127) / 128);
  std::uint64_t pa = da.ptr(), pb = db.ptr(), pc = dc.ptr();
  std::int64_t nn = n;
  {
    void* args[] = {&pa, &pb, &pc, &nn};
    Event start, stop;
    start.record();
    launch(module.getKernel("add_f32"), cfg, args);
    stop.record();
    CHECK(Event::elapsedMs(start, stop) >= 0);
  }
  std::vector<float> tail(16);
  dc.copyToHost(out.data(), bytes);
  dc.copyToHost(tail.data(), 64, bytes);
  int wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += out[i] != a[i] + b[i];  // fadd is exact IEEE
  CHECK(wrong == 0);
  for (float t : tail) CHECK(std::isnan(t));

  // libdevice expf + erff against float64, within a few float ulps.
  {
    void* args[] = {&pa, &pc, &nn};
    launch(module.getKernel("exp_erf_f32"), cfg, args);
    dev.synchronize();
  }
  dc.copyToHost(out.data(), bytes);
  double err2 = 0, ref2 = 0;
  for (std::int64_t i = 0; i < n; ++i) {
    double ref = std::exp(double(a[i])) + std::erf(double(a[i]));
    err2 += (out[i] - ref) * (out[i] - ref);
    ref2 += ref * ref;
  }
  CHECK(std::sqrt(err2 / ref2) < 1e-6);

  // Kernel attributes, a stream of our own, and the buffer helpers.
  Kernel add = module.getKernel("add_f32");
  CHECK(add.numRegs() > 0);
  CHECK(add.maxThreadsPerBlock() >= 128);
  CHECK(add.localBytes() == 0);
  CHECK(add.maxActiveBlocksPerSm(128, 0) > 0);
  DeviceBuffer copy(bytes);
  copy.copyFrom(db);
  dc.memset(0xff);
  {
    Stream stream;
    std::uint64_t pcopy = copy.ptr();
    void* args[] = {&pa, &pcopy, &pc, &nn};
    launch(add, cfg, args, stream.handle());
    stream.synchronize();
  }
  dc.copyToHost(out.data(), bytes);
  wrong = 0;
  for (std::int64_t i = 0; i < n; ++i) wrong += out[i] != a[i] + b[i];
  CHECK(wrong == 0);
  CHECK_THROWS_WITH(dc.copyToHost(out.data(), bytes, 128), Contains("outside a device buffer"));

  CHECK_THROWS_WITH(module.getKernel("nope"), Contains("no kernel named \"nope\""));
  CHECK_THROWS_WITH(Module(".version 8.0\n.target sm_80\n.address_size 64\nbogus;\n", "bad"),
                    Contains("rejected the PTX of bad") && Contains("JIT log"));
}
