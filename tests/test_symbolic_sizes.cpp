// CPU-only: LOOM_TUNE_SYMBOLIC: pointwise kernels that
// take their outermost size at run time, one compile per class of sizes whose schedule comes out
// the same, and what the kernel IR, the PTX, the cache and the plan carry for it.
#include <catch2/catch.hpp>

#include <map>
#include <set>
#include <string>

#include "compiler/codegen/kir_to_llvm.h"
#include "compiler/compile.h"
#include "compiler/kir/pipeline.h"
#include "compiler/schedule/scheduler.h"
#include "compiler/segment/segmenter.h"
#include "compiler/kir/printer.h"
#include "compiler/kir/verifier.h"
#include "frontend/internal_api.h"
#include "runtime/dynamic_sizes.h"
#include "runtime/kernel_cache.h"
#include "tests/compile_test_util.h"

using namespace loom;
using loom::test::symbolicOptions;

namespace {

struct Sweep {
  int compiles = 0;
  std::set<std::string> keys;
  std::vector<CompiledPlan> plans;
};

// compilePlan of `name` for every value of `sym` in [lo, hi], through one memory cache.
Sweep sweep(const char* name, const char* sym, int64_t lo, int64_t hi, const CompileOptions& opts,
            const Bindings& others = {}) {
  const auto* e = findExample(name);
  auto f = e->buildDefault();
  std::map<std::string, CompiledKernel> cache;
  Sweep s;
  for (int64_t v = lo; v <= hi; ++v) {
    Bindings sizes = e->default_sizes;
    for (const auto& [k, x] : others) sizes[k] = x;
    sizes[sym] = v;
    auto lookup = [&](const std::string& key) -> std::optional<CompiledKernel> {
      auto it = cache.find(key);
      if (it == cache.end()) return std::nullopt;
      return it->second;
    };
    CompiledPlan p = compilePlan(*f, sizes, test::descsFor(*f, sizes), opts, nullptr, lookup);
    for (const auto& pk : p.kernels) {
      s.keys.insert(pk.key);
      if (!cache.count(pk.key)) {
        ++s.compiles;
        cache[pk.key] = pk.kernel;
      }
    }
    s.plans.push_back(std::move(p));
  }
  return s;
}

}  // namespace

TEST_CASE("symbolic sizes: 100 batch sizes of a pointwise fusion compile once per class", "[symbolic]") {
  // bias_gelu [N, 1024] bf16: every N from 4093 to 4192 has the same schedule.
  Sweep s = sweep("bias_gelu", "N", 4093, 4192, symbolicOptions());
  CHECK(s.compiles == 1);
  REQUIRE(s.plans.size() == 100);
  for (size_t i = 0; i < s.plans.size(); ++i) {
    const int64_t n = 4093 + static_cast<int64_t>(i);
    const PlannedKernel& pk = s.plans[i].kernels.at(0);
    INFO("N = " << n);
    CHECK(pk.kernel.size_args == std::vector<std::string>{"N"});
    CHECK(pk.size_values == std::vector<int64_t>{n});
    CHECK(pk.kernel.grid == static_cast<unsigned>((n * 1024 / 8 + 255) / 256));  // these sizes' grid
    CHECK(s.plans[i].outputs.at(0).shape == std::vector<int64_t>{n, 1024});
  }
  // Without the switch every size is its own kernel.
  CHECK(sweep("bias_gelu", "N", 4093, 4112, CompileOptions{{90, 132}}).compiles == 20);
  // Classes: one row (its dim drops out of the iteration, and D becomes the parameter), below
  // 32 rows blocks of 128 threads, from 32 on 256.
  CHECK(sweep("bias_gelu", "N", 1, 100, symbolicOptions()).compiles == 3);
  // An LSTM cell's batch: gate matrices read as slices, the batch a parameter too.
  CHECK(sweep("lstm_cell", "B", 60, 99, symbolicOptions()).compiles <= 2);
}

TEST_CASE("symbolic sizes: layer norm over 100 row counts compiles once; tiers that count row sets do not", "[symbolic]") {
  // The measure: layer_norm with D = 4096 over 100 different N.
  Sweep s = sweep("layer_norm", "N", 4093, 4192, symbolicOptions(), {{"D", 4096}});
  CHECK(s.compiles == 1);
  for (size_t i = 0; i < s.plans.size(); ++i) {
    const PlannedKernel& pk = s.plans[i].kernels.at(0);
    CHECK(pk.size_values == std::vector<int64_t>{4093 + static_cast<int64_t>(i)});
    CHECK(pk.kernel.grid == static_cast<unsigned>(4093 + i));  // one row a block
  }
  CHECK(sweep("layer_norm", "N", 4093, 4112, CompileOptions{{90, 132}}, {{"D", 4096}}).compiles == 20);
  CHECK(sweep("rms_norm", "N", 1000, 1049, symbolicOptions(), {{"D", 1024}}).compiles <= 3);
  CHECK(sweep("softmax", "N", 1000, 1049, symbolicOptions(), {{"D", 1024}}).compiles <= 3);
  // Group norm NCHW: rows over {N, 32}, N the parameter and every row of it guarded (found in
  // review: the guard once took N rows, not 32 N).
  CHECK(sweep("group_norm", "N", 2, 21, symbolicOptions()).compiles <= 3);
  {
    auto gnf = findExample("group_norm")->buildDefault();
    const Bindings gs{{"N", 3}, {"C", 64}, {"H", 9}, {"W", 7}};
    // (Guarded under LOOM_NO_UNGUARDED_ROWS; by default every block's rows are the tensor's, as
    // every size's 32 N rows are whole row sets: no guard.)
    CompileOptions guarded = symbolicOptions();
    guarded.tuning.no_unguarded_rows = true;
    StageText kst, ust;
    compileFusion(*gnf, gs, test::descsFor(*gnf, gs), guarded, &kst);
    CHECK(test::has(kst[DumpStage::KIR], "<u (size.N * 32)"));
    CHECK(test::has(kst[DumpStage::KIR], "size.N * 32 - 1"));
    compileFusion(*gnf, gs, test::descsFor(*gnf, gs), symbolicOptions(), &ust);
    CHECK_FALSE(test::has(ust[DumpStage::KIR], "row_valid"));
  }
  // A size named like a kernel's own locals (`b`, `row`) is bound under its own name.
  {
    auto bf = parseFusion("fusion named {\n  in x: f32[b, row]\n  t1: f32[b, row] = exp(x)\n  out y = t1\n}\n");
    const Bindings bs{{"b", 300}, {"row", 1000}};
    auto bk = compileFusion(*bf, bs, test::descsFor(*bf, bs), symbolicOptions());
    CHECK(bk.size_args == std::vector<std::string>{"b"});
    auto lf = parseFusion(
        "fusion lnb {\n  in x: f32[b, row]\n  t1: f32[b, 1b] = mean(x, dims=[1], keepdim=true)\n"
        "  t2: f32[b, row] = sub(x, t1)\n  out y = t2\n}\n");
    auto lk = compileFusion(*lf, bs, test::descsFor(*lf, bs), symbolicOptions());
    CHECK(lk.size_args == std::vector<std::string>{"b"});
  }
  // Backward passes: dx by rows, dw and db down the columns, the blocks walking row sets up to
  // the parameter (a repeat whose trips are counted at run time).
  Sweep bw = sweep("layer_norm_backward", "N", 4093, 4142, symbolicOptions(), {{"D", 4096}});
  CHECK(bw.compiles == 1);
  for (const auto& p : bw.plans) CHECK(p.kernels.at(0).kernel.grid == bw.plans[0].kernels.at(0).kernel.grid);
  CHECK(sweep("rms_norm_backward", "N", 8000, 8019, symbolicOptions(), {{"D", 1024}}).compiles == 1);
  {
    // A column mean divides by the row count read from the parameter.
    auto cm = parseFusion(
        "fusion colmean {\n  in x: f16[N, D]\n  t0: f32[N, D] = cast(x, to=f32)\n"
        "  m: f32[N, 1b] = mean(t0, dims=[1], keepdim=true)\n  t1: f32[N, D] = sub(t0, m)\n"
        "  y: f16[N, D] = cast(t1, to=f16)\n  c: f32[D] = mean(t1, dims=[0], keepdim=false)\n"
        "  out y = y\n  out c = c\n}\n");
    const Bindings cs{{"N", 4093}, {"D", 1024}};
    StageText cst;
    auto ck = compileFusion(*cm, cs, test::descsFor(*cm, cs), symbolicOptions(), &cst);
    CHECK(ck.size_args == std::vector<std::string>{"N"});
    CHECK(test::has(cst[DumpStage::KIR], "cast<f32>(size.N * 1)"));
    LOOM_CHECK_PTXAS(ck.ptx, 90);
  }
  {
    // Found by fuzz_fusions: rows of one element over {A}, a column reduction over {B}: the walked
    // sets past the last row stay within the index width of the largest size served.
    auto wr = parseFusion(
        "fusion walk {\n  in x: f32[A, B]\n  t3: f32[1b, B] = amax(x, dims=[0], keepdim=true)\n"
        "  t4: f32[A, 1b] = sum(x, dims=[1], keepdim=true)\n  out y0 = t3\n  out y1 = t4\n}\n");
    const Bindings ws{{"A", 1}, {"B", 1048576}};
    auto plan = compilePlan(*wr, ws, test::descsFor(*wr, ws), symbolicOptions());
    for (const auto& pk : plan.kernels) LOOM_CHECK_PTXAS(pk.kernel.ptx, 90);
  }
  // A long row split over the grid's blocks: its groups walk the row sets up to the parameter, so
  // 2 to 40 rows of a million elements take 4 kernels (the split and the groups change with the
  // row count), not 39.
  const auto* e = findExample("layer_norm");
  auto f = e->buildDefault();
  StageText st;
  const Bindings big{{"N", 3}, {"D", 1048584}};
  compileFusion(*f, big, test::descsFor(*f, big), symbolicOptions(), &st);
  CHECK(test::has(st[DumpStage::Schedule], "tier grid"));
  CHECK(test::has(st[DumpStage::Schedule], "sizes: N a kernel parameter"));
  CHECK(sweep("layer_norm", "N", 2, 40, symbolicOptions(), {{"D", 1048584}}).compiles == 4);
  {
    // Found by fuzz_compile: the grid tier counts its grid barriers in 32 bits, which bounds the
    // sizes its class serves (here 33,000 rows of 65,536 on 108 SMs, split over 108 blocks).
    auto ls = findExample("log_softmax")->build(DType::BF16);
    const Bindings many{{"N", 33000}, {"D", 65536}};
    CompileOptions o = symbolicOptions();
    o.device = {86, 108};
    StageText lst;
    auto lk = compileFusion(*ls, many, test::descsFor(*ls, many), o, &lst);
    CHECK(test::has(lst[DumpStage::Schedule], "tier grid"));
    CHECK(lk.size_args == std::vector<std::string>{"N"});
  }
  {
    // Found by fuzz_fusions --symbolic: outputs stored through a reshape of the value iterated
    // ([N, 4, C/4, H, W] written as [N, C, H, W], then permuted): the outermost iterated dim is
    // that value's, not the output's (reading the output's dims past its rank threw bad_alloc).
    auto rf = parseFusion(
        "fusion fz10289 {\n"
        "  in x0: bf16[N, C, H, W]\n"
        "  t1: f32[N, C, H, W] = cast(x0, to=f32)\n"
        "  t2: f32[N, C, H, 1b] = amax(t1, dims=[3], keepdim=true)\n"
        "  t3: f32[N, C, H, W] = cast(x0, to=f32)\n"
        "  t4: f32[N, C, H, W] = gelu(t3)\n"
        "  t5: f32[N, C, H, W] = add(t1, t3)\n"
        "  t6: f32[1b, C, 1b, 1b] = amin(t4, dims=[0, 2, 3], keepdim=true)\n"
        "  t7: f32[1b, C, 1b, 1b] = amin(t3, dims=[0, 2, 3], keepdim=true)\n"
        "  t8: f32[N, 4, C/4, H, W] = reshape(t1, shape=[N, 4, C/4, H, W])\n"
        "  t9: f32[1b, 4, 1b, 1b, W] = sum(t8, dims=[0, 2, 3], keepdim=true)\n"
        "  t10: f32[N, 4, C/4, H, W] = div(t8, t9)\n"
        "  t11: f32[N, C, H, W] = reshape(t10, shape=[N, C, H, W])\n"
        "  t12: f32[N, C, H, 1b] = sum(t5, dims=[3], keepdim=true)\n"
        "  t13: f32[1b, 1b, 1b, W] = amin(t11, dims=[0, 1, 2], keepdim=true)\n"
        "  t14: f32[C, W, N, H] = permute(t11, order=[1, 3, 0, 2])\n"
        "  out y0 = t14\n"
        "  out y1 = t2\n"
        "}\n");
    const Bindings rs{{"N", 3}, {"C", 12}, {"H", 31}, {"W", 31}};
    for (const auto& layout : std::vector<std::map<std::string, std::vector<int>>>{{}, {{"x0", {3, 0, 1, 2}}}}) {
      const auto plan = compilePlan(*rf, rs, test::descsFor(*rf, rs, layout), symbolicOptions());
      CHECK(plan.kernels.size() >= 2);
      for (const auto& pk : plan.kernels) LOOM_CHECK_PTXAS(pk.kernel.ptx, 90);
    }
  }
  // Found by fuzz_compile: group norm of one image addresses its weights by the row itself.
  auto gn = findExample("group_norm")->build(DType::F64);
  const Bindings one{{"N", 1}, {"C", 512}, {"H", 28}, {"W", 28}};
  StageText gst;
  compileFusion(*gn, one, test::descsFor(*gn, one), symbolicOptions(), &gst);
  CHECK(test::has(gst[DumpStage::Schedule], "every size known (N = 1)"));
  // The symbolic PTX assembles.
  const Bindings ln{{"N", 4093}, {"D", 4096}};
  auto k = compileFusion(*f, ln, test::descsFor(*f, ln), symbolicOptions());
  CHECK(k.size_args == std::vector<std::string>{"N"});
  LOOM_CHECK_PTXAS(k.ptx, 90);
}

TEST_CASE("symbolic sizes: the kernel IR, the PTX and the schedule say which size is a parameter", "[symbolic]") {
  const auto* e = findExample("bias_gelu");
  auto f = e->buildDefault();
  StageText st;
  auto k = compileFusion(*f, e->default_sizes, test::descsFor(*f, e->default_sizes), symbolicOptions(), &st);
  CHECK(test::has(st[DumpStage::Schedule], "N = 256 a kernel parameter (symbolic): this kernel serves N from 1 to "));
  CHECK(test::has(st[DumpStage::Schedule], "sizes: N a kernel parameter, the others compiled in"));
  CHECK(test::has(st[DumpStage::KIR], "size.N: 1 to "));
  CHECK(test::has(st[DumpStage::KIR], "c < size.N * 128"));
  CHECK(test::has(k.ptx, ".param .u64 loom_bias_gelu_param_3"));
  LOOM_CHECK_PTXAS(k.ptx, 90);
  // Without the switch: no size parameter, and the schedule says every size is known only where asked.
  StageText plain;
  auto k0 = compileFusion(*f, e->default_sizes, test::descsFor(*f, e->default_sizes), CompileOptions{{90, 132}}, &plain);
  CHECK_FALSE(test::has(k0.ptx, "_param_3"));
  CHECK(k0.size_args.empty());
  CHECK_FALSE(test::has(plain[DumpStage::Schedule], "symbolic"));
  CHECK(test::has(plain[DumpStage::Schedule], "sizes: every one compiled in (an Executor takes the outermost at run time"));
  // Found by fuzz_fusions: an output permuted to [H, C, W] has C inside H's stride, so the
  // kernel keeps every size (its strides would change with C).
  auto perm = parseFusion(
      "fusion perm {\n  in x: f32[C, H, W]\n  t1: f32[C, H, W] = cos(x)\n"
      "  t2: f32[H, C, W] = permute(t1, order=[1, 0, 2])\n  out y0 = t2\n  out y1 = t1\n}\n");
  const Bindings chw{{"C", 64}, {"H", 64}, {"W", 16}};
  StageText pst;
  compileFusion(*perm, chw, test::descsFor(*perm, chw), symbolicOptions(), &pst);
  CHECK(test::has(pst[DumpStage::Schedule], "every size known (C is not outermost in every tensor's memory)"));
  // A fusion whose outermost dim is not one symbol of every tensor keeps every size.
  auto add = findExample("add")->buildDefault();
  CHECK(symbolicClass(*add, {{"N", 1000}}, test::descsFor(*add, {{"N", 1000}}), symbolicOptions()).has_value());
  CHECK_FALSE(symbolicClass(*add, {{"N", 1000}}, test::descsFor(*add, {{"N", 1000}}), CompileOptions{{90, 132}}));
}

TEST_CASE("symbolic sizes: the verifier bounds a size by its class, the cache keeps the names", "[symbolic][kir]") {
  kir::Kernel k;
  k.name = "loom_sized";
  k.index_bits = 32;
  k.launch = {1, 32};
  k.params = {{"x", DType::F32, false, 100}};
  k.sizes = {{"N", int64_t{1} << 40}};
  auto problems = kir::verify(k);
  REQUIRE(problems.size() == 1);
  CHECK(test::has(problems[0], "size `N` of at most 1099511627776: not an extent of 32-bit indices"));
  k.sizes = {{"N", 100}};
  CHECK(kir::verify(k).empty());
  // A repeat counted at run time: its trips within [1, its largest count].
  kir::Kernel r = k;
  const auto n = kir::var("N", kir::Type::idx());
  r.body = {kir::repeat("i", 50, {}, {}, {}, {}, 1, n)};
  problems = kir::verify(r);
  REQUIRE(problems.size() == 1);
  CHECK(test::has(problems[0], "repeat `i`: its trips `N` may take [1, 100], outside [1, 50]"));
  r.body = {kir::repeat("i", 100, {}, {}, {}, {}, 1, n)};
  CHECK(kir::verify(r).empty());
  CHECK(test::has(kir::printKernel(r), "for i in [0, N) (at most 100)"));
  // A count some threads see differently (here the thread's id) would split them at a barrier.
  r.body = {kir::repeat("i", 100, {}, {}, {}, {}, 1, kir::convert(kir::special(kir::Special::TidX), kir::Type::idx()))};
  problems = kir::verify(r);
  REQUIRE_FALSE(problems.empty());
  CHECK(test::has(problems[0], "are not of the kernel's sizes alone"));

  CHECK(test::has(kir::printKernel(k), "N: 1 to 100, a size parameter"));

  CompiledKernel ck;
  ck.name = "loom_sized";
  ck.ptx = ".version 8.5\n";
  ck.size_args = {"N", "B"};
  std::string why;
  auto back = runtime::deserializeKernel(runtime::serializeKernel("k", ck), "k", &why);
  INFO(why);
  REQUIRE(back.has_value());
  CHECK(back->size_args == ck.size_args);
}

namespace {
// The PTX of `f`'s one kernel at `sizes`; with `fix`, its size parameters bound to these sizes'
// values by a `let` before anything else, so that LLVM folds them as it folds constants.
std::string kernelPtx(const ir::Fusion& f, const Bindings& sizes, const CompileOptions& opts, bool fix,
                      std::optional<int64_t> bind = std::nullopt,
                      const std::map<std::string, std::vector<int>>& layouts = {}) {
  std::vector<std::string> why;
  auto p = schedule::planSegment(f, sizes, test::descsFor(f, sizes, layouts), opts, "loom_" + f.name(), &why);
  REQUIRE(p.has_value());
  kir::Kernel k = kir::runPasses(p->lower(), p->first_pass, kir::standardPasses(), {});
  if (fix) {
    REQUIRE(k.sizes.size() == 1);  // the kernel does take its size at run time
    REQUIRE(p->size_args.size() == 1);
    kir::Body body;
    for (size_t i = 0; i < k.sizes.size(); ++i)
      body.push_back(kir::let(k.sizes[i].name, kir::intConst(bind ? *bind : p->size_args[i].second)));
    body.insert(body.end(), k.body.begin(), k.body.end());
    k.body = std::move(body);
    k.sizes.clear();
  }
  return codegen::translateToPtx(k, 90);
}
}  // namespace

TEST_CASE("symbolic sizes: a symbolic kernel with its size bound is the specialized kernel, instruction for instruction", "[symbolic]") {
  // The evidence, short of a GPU, that taking a size at run time changes nothing else: bind the
  // parameter to the size's value and LLVM gives the very PTX the specialized kernel has.
  struct Case {
    const char* name;
    Bindings sizes;
  };
  for (const Case& c : std::vector<Case>{{"bias_gelu", {{"N", 4093}, {"D", 1024}}},
                                         // (1001: a tail, as every size of the symbolic kernel may have;
                                         // at 1000 the specialized kernel has none.)
                                         {"add", {{"N", 1001}}},
                                         {"lstm_cell", {{"B", 97}, {"H", 256}}},
                                         {"layer_norm", {{"N", 4093}, {"D", 4096}}},
                                         {"rms_norm", {{"N", 1531}, {"D", 1000}}},
                                         // (peeled rows; 101, not a multiple of the block's rows:
                                         // the specialized kernel then guards its rows, as the
                                         // symbolic one always does for a class of any row count)
                                         {"softmax", {{"N", 101}, {"D", 333}}},
                                         {"log_softmax", {{"N", 97}, {"D", 50257}}},
                                         {"group_norm", {{"N", 3}, {"C", 64}, {"H", 9}, {"W", 7}}},
                                         // (Rows whose last trip fills the grid: a specialized
                                         // column kernel takes fewer blocks where it would not.)
                                         {"layer_norm_backward", {{"N", 32771}, {"D", 1024}}},
                                         {"rms_norm_backward", {{"N", 8000}, {"D", 4096}}}}) {
    INFO(c.name);
    auto f = findExample(c.name)->buildDefault();
    const std::string symbolic = kernelPtx(*f, c.sizes, symbolicOptions(), true);
    const std::string specialized = kernelPtx(*f, c.sizes, CompileOptions{{90, 132}}, false);
    CHECK(symbolic.size() > 1000);
    CHECK(symbolic == specialized);
  }
  // The tiers that walk or split their rows: the grid tier (a long row over a cooperative grid
  // of one group), rows over a cluster, vectors of rows (NCHW LayerNorm2d, channels-last
  // instance norm). (A grid of several groups, channels-last group norm's, tests each set
  // against the count where the specialized kernel knows they divide: that kernel differs by
  // that test, and runs on the GPU in the [gpu] symbolic test.)
  struct Tier {
    const char* name;
    DType t;
    Bindings sizes;
    std::map<std::string, std::vector<int>> layouts;
  };
  const std::vector<int> nhwc{0, 2, 3, 1};
  for (const Tier& c : std::vector<Tier>{{"layer_norm", DType::F32, {{"N", 3}, {"D", 1048584}}, {}},
                                         {"layer_norm", DType::F16, {{"N", 3}, {"D", 65544}}, {}},
                                         {"layer_norm_2d", DType::F16, {{"N", 3}, {"C", 5}, {"H", 6}, {"W", 10}}, {}},
                                         {"instance_norm", DType::F32, {{"N", 3}, {"C", 96}, {"H", 13}, {"W", 8}}, {{"x", nhwc}}}}) {
    INFO(c.name << " " << dtypeName(c.t));
    auto f = findExample(c.name)->build(c.t);
    const std::string symbolic = kernelPtx(*f, c.sizes, symbolicOptions(), true, std::nullopt, c.layouts);
    const std::string specialized = kernelPtx(*f, c.sizes, CompileOptions{{90, 132}}, false, std::nullopt, c.layouts);
    CHECK(symbolic == specialized);
  }
  // And the sharing itself: the kernel compiled at one size, bound to another size of its class,
  // is the kernel specialized for that other size.
  struct Other {
    const char* name;
    Bindings sizes;
    const char* sym;
    int64_t other;
  };
  for (const Other& c : std::vector<Other>{{"layer_norm", {{"N", 4093}, {"D", 4096}}, "N", 4192},
                                           {"bias_gelu", {{"N", 4093}, {"D", 1024}}, "N", 61},
                                           {"lstm_cell", {{"B", 97}, {"H", 256}}, "B", 1531},
                                           {"layer_norm_backward", {{"N", 4093}, {"D", 1024}}, "N", 30000}}) {
    INFO(c.name << " " << c.sym << " = " << c.other);
    auto f = findExample(c.name)->buildDefault();
    Bindings other = c.sizes;
    other[c.sym] = c.other;
    const auto a = symbolicClass(*f, c.sizes, test::descsFor(*f, c.sizes), symbolicOptions());
    const auto b = symbolicClass(*f, other, test::descsFor(*f, other), symbolicOptions());
    REQUIRE(a.has_value());
    REQUIRE(b.has_value());
    CHECK(a->key == b->key);  // one class
    CHECK(kernelPtx(*f, c.sizes, symbolicOptions(), true, c.other) == kernelPtx(*f, other, CompileOptions{{90, 132}}, false));
  }
}

TEST_CASE("by default a second value of a leading size, and only that, compiles kernels taking it at run time",
          "[symbolic]") {
  using runtime::secondValueOfLeadingSize;
  auto ln = findExample("layer_norm")->buildDefault();  // x[N, D], w[D], b[D]
  // N leads x: a new batch of rows.
  CHECK(secondValueOfLeadingSize(*ln, {{"N", 4096}, {"D", 1024}}, {{"N", 4093}, {"D", 1024}}));
  // D leads w but not x; the same sizes; both changed: exact kernels.
  CHECK_FALSE(secondValueOfLeadingSize(*ln, {{"N", 4096}, {"D", 1024}}, {{"N", 4096}, {"D", 768}}));
  CHECK_FALSE(secondValueOfLeadingSize(*ln, {{"N", 4096}, {"D", 1024}}, {{"N", 4096}, {"D", 1024}}));
  CHECK_FALSE(secondValueOfLeadingSize(*ln, {{"N", 4096}, {"D", 1024}}, {{"N", 8}, {"D", 768}}));
  // Group norm's N leads x; C and H are inner dims of x (and C also inside C/32 of its reshape).
  auto gn = findExample("group_norm")->buildDefault();
  const Bindings g{{"N", 8}, {"C", 64}, {"H", 9}, {"W", 7}};
  Bindings g2 = g;
  g2["N"] = 3;
  CHECK(secondValueOfLeadingSize(*gn, g, g2));
  g2 = g;
  g2["C"] = 128;
  CHECK_FALSE(secondValueOfLeadingSize(*gn, g, g2));
  g2 = g;
  g2["H"] = 10;  // H is the third dim of x
  CHECK_FALSE(secondValueOfLeadingSize(*gn, g, g2));
  // A backward pass: N leads dy, x, mean and rstd (w names D only).
  auto lnb = findExample("layer_norm_backward")->buildDefault();
  CHECK(secondValueOfLeadingSize(*lnb, {{"N", 4096}, {"D", 1024}}, {{"N", 17}, {"D", 1024}}));
  // N both leading and inner (a square matrix), or inside N*C: no batch of rows.
  auto square = parseFusion("fusion sq {\n  in x: f32[N, N]\n  y: f32[N, N] = exp(x)\n  out y = y\n}\n");
  CHECK_FALSE(secondValueOfLeadingSize(*square, {{"N", 64}}, {{"N", 65}}));
  auto flat = parseFusion("fusion fl {\n  in x: f32[N, C]\n  y: f32[N*C] = reshape(x, shape=[N*C])\n  out y = y\n}\n");
  CHECK_FALSE(secondValueOfLeadingSize(*flat, {{"N", 64}, {"C", 3}}, {{"N", 65}, {"C", 3}}));
}

TEST_CASE("two row counts share a kernel class where the kernel does not size its grid by them", "[symbolic]") {
  auto keys = [](const char* name, const Bindings& sizes) {
    auto f = findExample(name)->buildDefault();
    return symbolicClassKeys(*f, sizes, test::descsFor(*f, sizes), symbolicOptions());
  };
  // A block a row: one class for every row count.
  const auto a = keys("layer_norm", {{"N", 1531}, {"D", 1000}});
  REQUIRE(a.size() == 1);
  CHECK(!a[0].empty());
  CHECK(a == keys("layer_norm", {{"N", 61}, {"D", 1000}}));
  CHECK(a != keys("layer_norm", {{"N", 61}, {"D", 1024}}));
  // Column kernels: a grid of one block a row set below the GPU's fill, whole above it.
  CHECK(keys("layer_norm_backward", {{"N", 61}, {"D", 1024}}) != keys("layer_norm_backward", {{"N", 97}, {"D", 1024}}));
  CHECK(keys("layer_norm_backward", {{"N", 4093}, {"D", 1024}}) ==
        keys("layer_norm_backward", {{"N", 8192}, {"D", 1024}}));
}

TEST_CASE("a plan's kernels that know every size anyway compile as exact ones, with the same keys", "[symbolic]") {
  // Means over N (a column held whole: N compiled in) and over D (rows over N: N at run time).
  auto f = parseFusion(
      "fusion two {\n  in x: f32[N, D]\n  m0: f32[1b, D] = mean(x, dims=[0], keepdim=true)\n"
      "  y0: f32[N, D] = sub(x, m0)\n  m1: f32[N, 1b] = mean(x, dims=[1], keepdim=true)\n"
      "  y1: f32[N, D] = sub(x, m1)\n  out y0 = y0\n  out y1 = y1\n}\n");
  const Bindings sizes{{"N", 8}, {"D", 64}};
  const auto in = test::descsFor(*f, sizes);
  const CompiledPlan sym = compilePlan(*f, sizes, in, symbolicOptions());
  const CompiledPlan exact = compilePlan(*f, sizes, in, CompileOptions{{90, 132}});
  REQUIRE(sym.kernels.size() == 2);
  REQUIRE(exact.kernels.size() == 2);
  CHECK(sym.kernels[0].kernel.size_args.empty());
  CHECK(sym.kernels[0].key == exact.kernels[0].key);
  CHECK(sym.kernels[0].kernel.ptx == exact.kernels[0].kernel.ptx);
  CHECK_FALSE(sym.kernels[1].kernel.size_args.empty());
  CHECK(sym.kernels[1].key != exact.kernels[1].key);
  // The schedule dump still says why the knob's kernel would have taken no size at run time.
  StageText st;
  compilePlan(*f, sizes, in, symbolicOptions(), &st);
  CHECK(test::has(st[DumpStage::Schedule], "sizes under LOOM_TUNE_SYMBOLIC: every size known (D is not outermost"));
  CHECK(test::has(st[DumpStage::Schedule], "; compiled as an exact kernel"));
  // Batch statistics held on chip: the dump says the batch is in each row's length.
  auto bn = findExample("batch_norm")->buildDefault();
  const Bindings bs = findExample("batch_norm")->default_sizes;
  StageText bst;
  compilePlan(*bn, bs, test::descsFor(*bn, bs), symbolicOptions(), &bst);
  CHECK(test::has(bst[DumpStage::Schedule], "N is reduced, each row holding all of it: the row's length is compiled in"));
}

TEST_CASE("symbolic sizes: reductions over the batch take it at run time, one kernel a power of two", "[symbolic]") {
  // Weight and bias gradients summed over N (columns: the outer layout), a full sum (the inner
  // layout, N*D elements a row), a mean over N (divided by the count read at run time).
  auto wgrad = parseFusion(
      "fusion wgrad {\n  in dy: f16[N, C]\n  in x: f16[N, C]\n  t0: f32[N, C] = cast(dy, to=f32)\n"
      "  t1: f32[N, C] = cast(x, to=f32)\n  t2: f32[N, C] = mul(t0, t1)\n"
      "  t3: f32[C] = sum(t2, dims=[0], keepdim=false)\n  t4: f32[C] = sum(t0, dims=[0], keepdim=false)\n"
      "  out dw = t3\n  out db = t4\n}\n");
  auto total = parseFusion("fusion total {\n  in x: f32[N, D]\n  s: f32[] = sum(x, dims=[0, 1], keepdim=false)\n  out s = s\n}\n");
  auto colmean = parseFusion(
      "fusion colmean {\n  in x: bf16[N, C]\n  t0: f32[N, C] = cast(x, to=f32)\n"
      "  m: f32[C] = mean(t0, dims=[0], keepdim=false)\n  out m = m\n}\n");
  struct Case {
    const ir::Fusion* f;
    Bindings sizes;
    const char* kir;  // what the kernel IR counts by
  };
  for (const Case& c : std::vector<Case>{{wgrad.get(), {{"N", 64}, {"C", 1024}}, "<u (size.N * 1)"},
                                         {wgrad.get(), {{"N", 4096}, {"C", 96}}, "<u (size.N * 1)"},
                                         {total.get(), {{"N", 1024}, {"D", 4096}}, "size.N * 1024"},
                                         {colmean.get(), {{"N", 256}, {"C", 512}}, "cast<f32>(size.N * 1)"}}) {
    INFO(c.f->name() << " N = " << c.sizes.at("N"));
    StageText st;
    auto k = compileFusion(*c.f, c.sizes, test::descsFor(*c.f, c.sizes), symbolicOptions(), &st);
    CHECK(k.size_args == std::vector<std::string>{"N"});
    CHECK(test::has(st[DumpStage::Schedule], "reduction: "));
    CHECK(test::has(st[DumpStage::Schedule], "sizes: N a kernel parameter"));
    CHECK(test::has(st[DumpStage::KIR], c.kir));
    LOOM_CHECK_PTXAS(k.ptx, 90);
    // At a power of two the class's shape is the exact one's: bound to N, the very same PTX.
    CHECK(kernelPtx(*c.f, c.sizes, symbolicOptions(), true) == kernelPtx(*c.f, c.sizes, CompileOptions{{90, 132}}, false));
    // Another N of the class: the same key, and bound to it the same kernel as compiled there.
    Bindings other = c.sizes;
    other["N"] = c.sizes.at("N") * 3 / 2 + 1;
    const auto a = symbolicClass(*c.f, c.sizes, test::descsFor(*c.f, c.sizes), symbolicOptions());
    const auto b = symbolicClass(*c.f, other, test::descsFor(*c.f, other), symbolicOptions());
    REQUIRE(a.has_value());
    REQUIRE(b.has_value());
    CHECK(a->key == b->key);
    CHECK(a->grid == b->grid);
  }
  // Without the switch, and where the batch is not outermost in memory (x[C, N]), every size known.
  CHECK(compileFusion(*wgrad, {{"N", 64}, {"C", 1024}}, test::descsFor(*wgrad, {{"N", 64}, {"C", 1024}}),
                      CompileOptions{{90, 132}}).size_args.empty());
  auto inner = parseFusion(
      "fusion inner {\n  in x: f32[C, N]\n  s: f32[C] = sum(x, dims=[1], keepdim=false)\n  out s = s\n}\n");
  StageText ist;
  compileFusion(*inner, {{"N", 4096}, {"C", 64}}, test::descsFor(*inner, {{"N", 4096}, {"C", 64}}), symbolicOptions(), &ist);
  CHECK(test::has(ist[DumpStage::Schedule], "every size known (N is not outermost in every tensor's memory)"));

  // The backward built-ins over 40 batch sizes: their plans' reductions over N (group
  // norm's and instance norm's weight gradients, channels-last batch norm's statistics) and the
  // LSTM cell's bias gradient no longer compile per size.
  CHECK(sweep("group_norm_backward", "N", 33, 72, symbolicOptions(), {{"C", 64}, {"H", 16}, {"W", 16}}).compiles <= 5);
  CHECK(sweep("instance_norm_backward", "N", 33, 72, symbolicOptions(), {{"C", 64}, {"H", 16}, {"W", 16}}).compiles <= 5);
  CHECK(sweep("layer_norm_2d_backward", "N", 33, 72, symbolicOptions(), {{"C", 96}, {"H", 14}, {"W", 14}}).compiles <= 5);
  CHECK(sweep("lstm_cell_backward", "B", 60, 99, symbolicOptions(), {{"H", 256}}).compiles <= 2);
  CHECK(sweep("gru_cell_backward", "B", 60, 99, symbolicOptions(), {{"H", 256}}).compiles <= 2);
  // Fewer images, whose channels' sums would each take one block unsplit (the normalization
  // scheduler held such a channel, so its length: a kernel per N): one block a channel, looping
  // to the count read at run time.
  Sweep few = sweep("group_norm_backward", "N", 2, 31, symbolicOptions(), {{"C", 64}, {"H", 16}, {"W", 16}});
  CHECK(few.compiles <= 6);
  for (const auto& p : few.plans) {
    REQUIRE(p.kernels.size() == 2);
    CHECK(p.kernels[1].kernel.size_args == std::vector<std::string>{"N"});
  }
  CHECK(sweep("instance_norm_backward", "N", 2, 31, symbolicOptions(), {{"C", 64}, {"H", 16}, {"W", 16}}).compiles <= 6);
  {
    // Found in review: where the count cannot be taken at run time after all (past the index range
    // a class allows), such sums stay the normalization scheduler's, as an exact compile finds them.
    auto lb = findExample("layer_norm_2d_backward")->buildDefault();
    const Bindings huge{{"N", 2}, {"C", 2097152}, {"H", 16}, {"W", 16}};
    const auto plan = segment::segmentFusion(*lb, huge, test::descsFor(*lb, huge), symbolicOptions());
    REQUIRE(plan.segments.size() == 2);
    CHECK(plan.segments[1].scheduler == "normalization");
  }
  // Row and column reductions in one kernel over fewer rows than a full grid: the row sets
  // rounded up to a quarter of their power of two, not one grid (so one kernel) a row count.
  Sweep lnb = sweep("layer_norm_backward", "N", 256, 355, symbolicOptions(), {{"D", 1024}});
  CHECK(lnb.compiles <= 3);
  CHECK(lnb.plans[0].kernels.at(0).kernel.grid == 128);  // N = 256: 128 sets of two rows
  CHECK(lnb.plans[1].kernels.at(0).kernel.grid == 160);  // N = 257: 129 sets
  CHECK(lnb.plans[99].kernels.at(0).kernel.grid == 192);  // N = 355: 178 sets
  CHECK(sweep("rms_norm_backward", "N", 256, 355, symbolicOptions(), {{"D", 1024}}).compiles <= 3);
}

TEST_CASE("a new size of runtime-sized kernels takes the earlier plan's segments where their classes are compiled",
          "[symbolic]") {
  struct Case {
    const char* name;
    Bindings a, b;  // two sizes of one class of every kernel
    std::map<std::string, std::vector<int>> layouts = {};
  };
  const std::vector<int> nhwc{0, 2, 3, 1};
  for (const Case& c : std::vector<Case>{
           {"group_norm_backward", {{"N", 40}, {"C", 64}, {"H", 16}, {"W", 16}}, {{"N", 50}, {"C", 64}, {"H", 16}, {"W", 16}}},
           // (8232 and 9800 elements a channel: one power of two)
           {"batch_norm_backward", {{"N", 42}, {"C", 64}, {"H", 14}, {"W", 14}}, {{"N", 50}, {"C", 64}, {"H", 14}, {"W", 14}},
            {{"x", nhwc}, {"dy", nhwc}}},
           {"layer_norm_backward", {{"N", 4093}, {"D", 1024}}, {{"N", 4000}, {"D", 1024}}},
           {"lstm_cell_backward", {{"B", 70}, {"H", 256}}, {{"B", 99}, {"H", 256}}}}) {
    INFO(c.name);
    auto f = findExample(c.name)->buildDefault();
    std::map<std::string, CompiledKernel> cache;
    auto lookup = [&](const std::string& key) -> std::optional<CompiledKernel> {
      auto it = cache.find(key);
      if (it == cache.end()) return std::nullopt;
      return it->second;
    };
    const auto da = test::descsFor(*f, c.a, c.layouts), db = test::descsFor(*f, c.b, c.layouts);
    CompiledPlan pa = compilePlan(*f, c.a, da, symbolicOptions(), nullptr, lookup);
    for (const auto& pk : pa.kernels) cache[pk.key] = pk.kernel;
    // Not compiled yet under other options (exact kernels): no plan taken over.
    CHECK_FALSE(replanLike(pa, *f, c.b, db, CompileOptions{{90, 132}}, lookup));
    auto re = replanLike(pa, *f, c.b, db, symbolicOptions(), lookup);
    REQUIRE(re.has_value());
    const CompiledPlan fresh = compilePlan(*f, c.b, db, symbolicOptions(), nullptr, lookup);
    REQUIRE(re->kernels.size() == fresh.kernels.size());
    for (size_t k = 0; k < fresh.kernels.size(); ++k) {
      INFO("kernel " << k);
      CHECK(re->kernels[k].key == fresh.kernels[k].key);
      CHECK(re->kernels[k].kernel.grid == fresh.kernels[k].kernel.grid);
      CHECK(re->kernels[k].size_values == fresh.kernels[k].size_values);
      CHECK(re->kernels[k].args == fresh.kernels[k].args);
      CHECK(re->kernels[k].kernel.outputs == fresh.kernels[k].kernel.outputs);
    }
    CHECK(re->temps == fresh.temps);
    CHECK(re->outputs == fresh.outputs);
    CHECK(test::has(re->segments, "the segments of an earlier size of this signature"));
    // A kernel of the class not compiled: the plan is made anew.
    cache.erase(pa.kernels.back().key);
    CHECK_FALSE(replanLike(pa, *f, c.b, db, symbolicOptions(), lookup));
  }
}
