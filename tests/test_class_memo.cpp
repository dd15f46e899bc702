// CPU-only: a new size of a kernel that takes its size at run time finds its class without
// lowering the kernel IR again where its schedule lowers as an earlier size's
// (schedule::Planned::lowers_as, schedule/same_lowering.h). Checked over every built-in, three
// dtypes, both memory orders of its images and sizes from 2 to 4093: plans found alike have the
// kernel IR that lowering each gives (else a size would run another size's kernel), and plans
// whose kernel IR is the same are found alike (else each new size would lower it again).
#include <catch2/catch.hpp>

#include <map>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "compiler/kir/fingerprint.h"
#include "compiler/schedule/scheduler.h"
#include "compiler/segment/segmenter.h"
#include "frontend/examples.h"
#include "frontend/internal_api.h"
#include "ir/error.h"
#include "tests/compile_test_util.h"

using namespace loom;
using loom::test::symbolicOptions;

namespace {

// The symbol of `f`'s main input's first dim, or "".
std::string leadingSymbol(const ir::Fusion& f) {
  const ir::Value* x = f.findValue("x");
  if (!x || x->shape().empty()) return "";
  const auto syms = x->shape()[0].symbols();
  return syms.size() == 1 && x->shape()[0] == Extent::symbol(syms[0]) ? syms[0] : "";
}

struct Tally {
  int pairs = 0;          // pairs of runtime-sized schedules of one segment compared
  int alike = 0;          // found alike by lowers_as
  int same_ir = 0;        // with the same kernel IR
  std::vector<std::string> unsound, missed;
};

// Every pair of sizes of `sizes` of one case: each segment of the segmentation at `base_size`,
// scheduled at each size, lowered and compared.
void compareFrom(const std::string& what, const ir::Fusion& f, const std::string& sym, Bindings base,
                 int64_t base_size, const std::vector<int64_t>& sizes,
                 const std::map<std::string, std::vector<int>>& layouts, Tally& t) {
  const CompileOptions o = symbolicOptions();
  base[sym] = base_size;
  std::optional<segment::SegmentPlan> first;
  try {
    first = segment::segmentFusion(f, base, test::descsFor(f, base, layouts), o);
  } catch (const Error&) {
    return;  // a case the built-in refuses at these sizes (its tests say why)
  }
  struct At {
    int64_t n;
    segment::SegmentPlan plan;
    std::vector<std::string> fingerprints;  // per segment; "" where it knows every size
  };
  std::vector<At> at;
  for (int64_t n : sizes) {
    Bindings b = base;
    b[sym] = n;
    auto sp = segment::rescheduleSegments(*first, f, b, test::descsFor(f, b, layouts), o);
    if (!sp) continue;
    At a{n, std::move(*sp), {}};
    for (const auto& seg : a.plan.segments)
      a.fingerprints.push_back(seg.planned && !seg.planned->size_args.empty()
                                   ? kir::fingerprint(seg.planned->lower()).hex()
                                   : std::string());
    at.push_back(std::move(a));
  }
  for (size_t i = 0; i < at.size(); ++i)
    for (size_t j = 0; j < at.size(); ++j) {
      if (i == j) continue;
      for (size_t s = 0; s < at[i].plan.segments.size(); ++s) {
        if (at[i].fingerprints[s].empty() || at[j].fingerprints[s].empty()) continue;
        const schedule::Planned& later = *at[j].plan.segments[s].planned;
        const bool alike = later.lowers_as && later.lowers_as(*at[i].plan.segments[s].planned);
        const bool same = at[i].fingerprints[s] == at[j].fingerprints[s];
        ++t.pairs;
        t.alike += alike;
        t.same_ir += same;
        const std::string pair =
            fmt::format("{} k{} of the plan at {}={}: {} and {}", what, s, sym, base_size, at[i].n, at[j].n);
        if (alike && !same) t.unsound.push_back(pair);
        if (same && !alike) t.missed.push_back(pair);
      }
    }
}

// The segmentations at the first and the last size (a plan may change with the size: more
// segments where a sum is split in two), each scheduled at every size.
void compareSizes(const std::string& what, const ir::Fusion& f, const std::string& sym, const Bindings& base,
                  const std::vector<int64_t>& sizes, const std::map<std::string, std::vector<int>>& layouts,
                  Tally& t) {
  compareFrom(what, f, sym, base, sizes.front(), sizes, layouts, t);
  compareFrom(what, f, sym, base, sizes.back(), sizes, layouts, t);
}

}  // namespace

TEST_CASE("schedules found alike at two sizes lower to the same kernel IR, over every built-in",
          "[symbolic][memo]") {
  const std::vector<int64_t> sizes{2, 3, 8, 31, 64, 129, 300, 1000, 4093};
  Tally t;
  for (const Example& e : builtinExamples()) {
    for (DType dt : {DType::F32, DType::F16, DType::BF16}) {
      std::unique_ptr<ir::Fusion> f;
      try {
        f = e.build(dt);
      } catch (const Error&) {
        continue;
      }
      const std::string sym = leadingSymbol(*f);
      if (sym.empty() || !e.default_sizes.count(sym)) continue;
      const std::string what = fmt::format("{} {}", e.name, dtypeName(dt));
      compareSizes(what, *f, sym, e.default_sizes, sizes, {}, t);
      // Images in channels-last order (every 4-d input).
      std::map<std::string, std::vector<int>> nhwc;
      for (const ir::Value* in : f->inputs())
        if (in->shape().size() == 4) nhwc[in->name()] = {0, 2, 3, 1};
      if (!nhwc.empty()) compareSizes(what + " channels-last", *f, sym, e.default_sizes, sizes, nhwc, t);
    }
  }
  // Sizes of other dims the benchmarks time: instance norm backward's weight gradients split in
  // two sums from N = 11 on (their partials [N, C, 1, 1], whose strides of one element grow with N).
  struct Other {
    const char* name;
    DType dtype;
    Bindings dims;
    std::vector<int64_t> sizes;
  };
  for (const Other& o : std::vector<Other>{
           {"instance_norm_backward", DType::F32, {{"C", 64}, {"H", 56}, {"W", 56}}, {2, 3, 11, 12, 13, 31, 33, 41}},
           {"group_norm_backward", DType::F16, {{"C", 256}, {"H", 32}, {"W", 32}}, {2, 3, 5, 17, 33, 51}},
           {"layer_norm_2d_backward", DType::F16, {{"C", 96}, {"H", 56}, {"W", 56}}, {1, 2, 3, 9, 17, 32}},
           {"lstm_cell_backward", DType::F16, {{"H", 1024}}, {200, 255, 256, 299}},
           {"layer_norm_backward", DType::BF16, {{"D", 4096}}, {129, 257, 4093, 4192}}}) {
    auto f = findExample(o.name)->build(o.dtype);
    Bindings base = findExample(o.name)->default_sizes;
    for (const auto& [k, v] : o.dims) base[k] = v;
    compareSizes(fmt::format("{} {}", o.name, dtypeName(o.dtype)), *f, leadingSymbol(*f), base, o.sizes, {}, t);
  }
  INFO(fmt::format("{} pairs, {} with the same kernel IR, {} found alike", t.pairs, t.same_ir, t.alike));
  for (const auto& u : t.unsound) UNSCOPED_INFO("found alike, kernel IR differs: " << u);
  CHECK(t.unsound.empty());
  for (const auto& m : t.missed) UNSCOPED_INFO("same kernel IR, not found alike: " << m);
  CHECK(t.missed.empty());
  // Not vacuous: most built-ins' kernels serve several of these sizes.
  CHECK(t.alike > 1000);
}
