// CPU-only: the kernel IR's factories, printer, verifier and passes, checked on the parts that
// matter (a loop's mapping, a load's width, where trips' loads go), not on whole kernels.
#include <catch2/catch.hpp>

#include "tests/compile_test_util.h"

#include "compiler/codegen/kir_to_llvm.h"
#include "compiler/compile.h"
#include "compiler/kir/fingerprint.h"
#include "compiler/kir/pipeline.h"
#include "compiler/kir/printer.h"
#include "compiler/kir/unroll.h"
#include "compiler/kir/verifier.h"
#include "compiler/schedule/pointwise/lower.h"
#include "frontend/internal_api.h"


using namespace loom;
using loom::test::has;
using loom::test::descsFor;

namespace {

std::string joined(const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, " | ")); }


// The pointwise schedule of a built-in, lowered to kernel IR (`unroll` trips a thread).
kir::Kernel pointwiseKir(const std::string& name, const Bindings& sizes, int unroll = 1) {
  const Example* e = findExample(name);
  REQUIRE(e != nullptr);
  auto f = e->buildDefault();
  auto descs = descsFor(*f, sizes);
  std::string why;
  auto k = schedule::schedulePointwise(*f, sizes, descs, CompileOptions{DeviceInfo{90, 132}}, &why);
  REQUIRE(k.has_value());
  k->unroll = unroll;
  return schedule::lowerPointwise(*f, *k, descs);
}

// A hand-made kernel: out[i] = in[i] for i in [0, n) by a grid-stride loop.
kir::Kernel copyKernel(int64_t n, int64_t out_extent, int64_t grid = 4, int block = 128) {
  using namespace kir;
  kir::Kernel k;
  k.name = "copy";
  k.scheduler = "test";
  k.params = {{"a", DType::F32, false, n}, {"b", DType::F32, true, out_extent}};
  k.launch = {grid, block};
  auto i = var("i", Type::idx());
  auto sp = [](Special s) { return convert(special(s), Type::idx()); };
  k.body = {let("start", add(mul(sp(Special::CtaidX), intConst(block)), sp(Special::TidX))),
            let("stride", mul(sp(Special::NctaidX), intConst(block))),
            loop("i", var("start", Type::idx()), index(IndexOp::Lt, i, intConst(n)), var("stride", Type::idx()),
                 Mapping::GridStride,
                 {let("x", load(0, DType::F32, i, 1, Access::Gather, 1, Cache::Invariant)),
                  store(1, i, var("x", Type::data(DType::F32, 1)), Access::Gather, 1)})};
  return k;
}

}  // namespace

TEST_CASE("kir: a pointwise kernel is one grid-stride loop of vector loads, math and stores", "[kir]") {
  auto k = pointwiseKir("add", {{"N", 1 << 20}});
  CHECK(kir::verify(k).empty());
  const std::string t = kir::printKernel(k);
  INFO(t);
  CHECK(has(t, "kernel loom_pointwise (pointwise; 32-bit indices)"));
  CHECK(has(t, "launch grid 512, block 256"));
  CHECK(has(t, "for c = start; c < 131072; c += stride  [grid-stride]"));
  CHECK(has(t, "load.v8.nc x["));
  CHECK(has(t, "= add(v0, v1)"));
  CHECK(has(t, "store.v8 z["));
}

TEST_CASE("kir: the verifier finds unbound names, accesses outside a tensor and overflowing indices", "[kir]") {
  CHECK(kir::verify(copyKernel(1000, 1000)).empty());
  // The output holds 999 elements: the last trip writes the 1000th.
  auto small = kir::verify(copyKernel(1000, 999));
  CHECK(has(joined(small), "a store of `b`[i] may reach elements [0, 999], outside [0, 999)"));
  // 2^31 elements do not fit 32-bit indices; 64-bit ones take them.
  auto big = copyKernel(int64_t{1} << 31, int64_t{1} << 31);
  CHECK(has(joined(kir::verify(big)), "32-bit indices"));
  big.index_bits = 64;
  CHECK(kir::verify(big).empty());
  // A name read before it is bound, and one bound twice.
  auto k = copyKernel(1000, 1000);
  k.body.insert(k.body.begin(), kir::let("early", kir::var("stride", kir::Type::idx())));
  k.body.push_back(kir::let("start", kir::intConst(0)));
  auto p = joined(kir::verify(k));
  CHECK(has(p, "`stride` is used before it is bound"));
  CHECK(has(p, "`start` is bound twice"));
  // A store into an input.
  auto wrong = copyKernel(1000, 1000);
  std::swap(wrong.params[0].output, wrong.params[1].output);
  CHECK(has(joined(kir::verify(wrong)), "a store of `b`, an input"));
  CHECK(has(joined(kir::verify(wrong)), "a load of `a`, an output"));
  CHECK_THROWS_WITH(kir::verifyOrFail(copyKernel(10, 9), "test-pass"),
                    Catch::Contains("after pass `test-pass` does not verify"));
}

TEST_CASE("kir: unroll writes the trips out, every trip's loads before any math, then the rest", "[kir]") {
  auto k = kir::unrollLoops(pointwiseKir("bias_gelu", {{"N", 4096}, {"D", 1000}}, 4));
  INFO(kir::printKernel(k));
  REQUIRE(kir::verify(k).empty());
  const std::string t = kir::printKernel(k);
  CHECK(has(t, "let c_span: index = stride * 3"));
  CHECK(has(t, "for c = start; c + c_span < "));
  CHECK(has(t, "(after: c_rest)"));
  CHECK(has(t, "for c_r = c_rest; c_r < "));
  // In the main loop, the fourth trip's first load comes before the first trip's first math.
  const size_t last_load = t.find("_3: bf16x");
  const size_t first_math = t.find("cast<f32>(");
  CHECK(last_load != std::string::npos);
  CHECK(last_load < first_math);
  // The translator takes it, and ptxas takes what comes out.
  LOOM_CHECK_PTXAS(codegen::translateToPtx(k, 90), 90);
}

TEST_CASE("kir: loom dump --stage kir prints the kernel after every pass", "[kir]") {
  const Example* e = findExample("lstm_cell");
  REQUIRE(e != nullptr);
  auto f = e->buildDefault();
  StageText text;
  compilePlan(*f, e->default_sizes, descsFor(*f, e->default_sizes), CompileOptions{DeviceInfo{90, 132}}, &text);
  const std::string& t = text[DumpStage::KIR];
  CHECK(has(t, "// after pass `pointwise-loop`"));
  CHECK(has(t, "// after pass `unroll`\n(unchanged)"));
  CHECK(has(t, "load.v2.nc hidden_gates[768 + "));
}

TEST_CASE("kir: a layer norm in registers is folds, combines across the row and stores", "[kir]") {
  const Example* e = findExample("layer_norm");
  REQUIRE(e != nullptr);
  auto f = e->buildDefault();
  StageText text;
  compilePlan(*f, e->default_sizes, descsFor(*f, e->default_sizes), CompileOptions{DeviceInfo{90, 132}}, &text);
  const std::string& t = text[DumpStage::KIR];
  INFO(t);
  CHECK(has(t, "// after pass `norm-rows`"));
  CHECK(has(t, "= combine.sum("));
  CHECK(has(t, "over {D}: 128 threads a row"));
  // lower-combines: the butterfly, the warps through shared memory between two barriers.
  const size_t lowered = t.find("// after pass `lower-combines`");
  REQUIRE(lowered != std::string::npos);
  const std::string after = t.substr(lowered);
  CHECK(has(after, "smem red_smem: f32[4]"));
  CHECK(has(after, "shfl.bfly("));
  CHECK(has(after, "barrier.block"));
  CHECK(!has(after, "combine.sum("));
  CHECK(has(after, "store.v8 y["));
}

TEST_CASE("kir: the verifier wants a barrier between a buffer's write and another thread's read", "[kir]") {
  using namespace kir;
  kir::Kernel k;
  k.name = "share";
  k.scheduler = "test";
  k.params = {{"out", DType::F32, true, 32}};
  k.launch = {1, 32};
  k.buffers = {{"s", "s", Place::Smem, DType::F32, 32, 8}};
  auto tid = var("tid", Type::i32());
  auto mirror = index(IndexOp::Sub, i32Const(31), tid);
  auto body = [&](bool with_barrier, bool under_if) {
    Body b = {let("tid", special(Special::TidX)), bufStore("s", tid, dataConst(DType::F32, 1, 1))};
    if (with_barrier) {
      if (under_if) b.push_back(ifThen(index(IndexOp::Eq, tid, i32Const(0)), "one", {barrier(Barrier::Block)}));
      else b.push_back(barrier(Barrier::Block));
    }
    b.push_back(let("v", bufLoad("s", DType::F32, mirror)));
    b.push_back(store(0, convert(tid, Type::idx()), var("v", Type::data(DType::F32, 1)), Access::Gather, 1));
    return b;
  };
  k.body = body(true, false);
  CHECK(verify(k).empty());
  LOOM_CHECK_PTXAS(codegen::translateToPtx(k, 80), 80);
  k.body = body(false, false);
  CHECK(has(joined(verify(k)), "buffer `s` is read after a write with no barrier between them"));
  k.body = body(true, true);
  CHECK(has(joined(verify(k)), "a block barrier under `if`"));
  // A slot past the buffer's end.
  k.buffers[0].count = 16;
  k.body = body(true, false);
  CHECK(has(joined(verify(k)), "`s`[tid] may reach slots [0, 31], outside [0, 16)"));
}

TEST_CASE("kir: a kernel's fingerprint is the same for the same kernel and differs with any field", "[kir]") {
  using namespace kir;
  const Fingerprint base = fingerprint(copyKernel(1000, 1000));
  CHECK(base == fingerprint(copyKernel(1000, 1000)));
  CHECK(base.hex().size() == 32);
  CHECK_FALSE(base == fingerprint(copyKernel(1001, 1000)));  // a loop bound
  CHECK_FALSE(base == fingerprint(copyKernel(1000, 1001)));  // a parameter's extent
  CHECK_FALSE(base == fingerprint(copyKernel(1000, 1000, 8)));  // the launch
  // Fields the printer does not show: a combine's grid level, a constant's sign of zero.
  auto with = [](const StmtP& s) {
    Kernel k = copyKernel(1000, 1000);
    k.body.push_back(s);
    return fingerprint(k);
  };
  CombineSpec spec{Combine::Sum, "{D}", 64, 1, "t_in_row", "row_in_block", "lane", 1, {}};
  const ExprP x = var("x", Type::data(DType::F32, 1));
  const Fingerprint plain = with(combine("total", x, spec));
  spec.grid.blocks = 4;
  CHECK_FALSE(plain == with(combine("total", x, spec)));
  CHECK_FALSE(with(let("z", dataConst(DType::F32, 0.0, 1))) == with(let("z", dataConst(DType::F32, -0.0, 1))));
  // A sign bit and a bit of a word four on (a reviewer's collision of an earlier mixing).
  auto rep = [&](double v, const char* result) {
    return with(repeat("i", 4, {{"acc", dataConst(DType::F32, 0.0, 1)}}, {}, {dataConst(DType::F32, v, 1)}, {result}, 1));
  };
  CHECK_FALSE(rep(0.5, "sum1") == rep(-0.5, "sum!"));
  // Names and kinds: a let of `y` is not a let of `z`, nor a store.
  CHECK_FALSE(with(let("y", x)) == with(let("z", x)));
  CHECK_FALSE(with(let("y", x)) == with(store(1, intConst(0), x, Access::Gather, 1)));
}
