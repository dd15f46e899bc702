// `loom bench FUSION --sizes K=A:B[:STEP]`: the first call of every size in one process, as a
// training loop with variable batch sizes or sequence lengths makes them. Reports how many
// sizes compiled a kernel, how many found it in loom's disk cache or already in memory, and
// the time of each first call (compile or load, launch and wait) with its planning (segments,
// schedules, kernel IR and keys) beside it.
#include <algorithm>
#include <chrono>
#include <iostream>
#include <map>
#include <set>

#include "runtime/bind_sizes.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "tools/loom/cli.h"

namespace loom::cli {

namespace {

struct SizeRange {
  std::string symbol;
  int64_t first = 0, last = 0, step = 1;
};

SizeRange parseRange(const std::string& spec, const Bindings& sizes) {
  const auto eq = spec.find('=');
  LOOM_USER_CHECK(eq != std::string::npos && eq > 0,
                  "--sizes {}: expected K=FIRST:LAST or K=FIRST:LAST:STEP (e.g. N=1000:1100)", spec);
  SizeRange r;
  r.symbol = spec.substr(0, eq);
  LOOM_USER_CHECK(sizes.count(r.symbol), "--sizes {}: the fusion has no size `{}`", spec, r.symbol);
  std::vector<int64_t> v;
  size_t p = eq + 1;
  while (true) {
    const size_t colon = spec.find(':', p);
    const std::string part = spec.substr(p, colon == std::string::npos ? std::string::npos : colon - p);
    size_t used = 0;
    int64_t x = 0;
    try {
      x = std::stoll(part, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    LOOM_USER_CHECK(used == part.size() && used > 0 && x >= 1,
                    "--sizes {}: `{}` is not a whole number of at least 1", spec, part);
    v.push_back(x);
    if (colon == std::string::npos) break;
    p = colon + 1;
  }
  LOOM_USER_CHECK(v.size() == 2 || v.size() == 3, "--sizes {}: expected FIRST:LAST or FIRST:LAST:STEP", spec);
  r.first = v[0];
  r.last = v[1];
  r.step = v.size() == 3 ? v[2] : 1;
  LOOM_USER_CHECK(r.first <= r.last, "--sizes {}: FIRST is larger than LAST", spec);
  LOOM_USER_CHECK((r.last - r.first) / r.step < 10000, "--sizes {}: more than 10000 sizes", spec);
  return r;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int runBenchSizes(const Args& a, const std::string& spec) {
  for (const char* other : {"json", "iters", "inputs", "save-outputs"})
    LOOM_USER_CHECK(!a.get(other) && !a.flag(other), "--sizes times first calls only: it takes no --{}", other);
  auto l = loadFromArgs(a, "bench");
  auto layouts = layoutsFromArgs(a, *l.fusion);
  const SizeRange range = parseRange(spec, l.sizes);
  auto& dev = gpuFromArgs(a);
  Executor ex(*l.fusion);
  std::map<CompileStats::Source, int> by_source;
  std::vector<double> first_ms, plan_ms, warm_ms, warm_plan_ms;  // warm: every kernel already in memory
  std::vector<double> alloc_ms, run_ms, warm_prepare_ms, warm_sizes_ms, warm_buffers_ms;
  double llvm = 0, load = 0;
  std::set<std::string> kernels;
  int runtime_sized = 0;
  std::cout << fmt::format("fusion {} on {}: {} = {}..{} step {}, every first call in one process\n",
                           l.fusion->name(), dev.describe(), range.symbol, range.first, range.last, range.step);
  for (int64_t v = range.first; v <= range.last; v += range.step) {
    Bindings sizes = l.sizes;
    sizes[range.symbol] = v;
    std::vector<DeviceTensor> in = emptyInputs(*l.fusion, sizes, layouts);
    for (auto& t : in) t.poison(0);
    dev.synchronize();
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<DeviceTensor> outs = ex.allocateOutputs(in, sizes);
    const CompileStats cs = ex.lastCompile();  // this size's first lookup; runInto finds it in memory
    const auto t1 = std::chrono::steady_clock::now();
    ex.runInto(in, outs, sizes);
    dev.synchronize();
    const auto t2 = std::chrono::steady_clock::now();
    const double ms = std::chrono::duration<double, std::milli>(t2 - t0).count();
    // Past its planning and loading: the outputs' allocation (and the plan's scratch), then the
    // launches and the wait for them.
    const double before = std::chrono::duration<double, std::milli>(t1 - t0).count();
    const double alloc = std::max(0.0, before - cs.total_ms);
    const double run = std::chrono::duration<double, std::milli>(t2 - t1).count();
    by_source[cs.source]++;
    llvm += cs.llvm_ptx_ms;
    load += cs.load_ms;
    first_ms.push_back(ms);
    plan_ms.push_back(cs.plan_ms);
    if (cs.source == CompileStats::Source::MemoryCache) {
      warm_ms.push_back(ms);
      warm_plan_ms.push_back(cs.plan_ms);
      warm_prepare_ms.push_back(cs.total_ms);
      warm_sizes_ms.push_back(cs.sizes_ms);
      warm_buffers_ms.push_back(cs.buffers_ms);
      alloc_ms.push_back(alloc);
      run_ms.push_back(run);
    }
    for (const auto& pk : ex.planFor(in, sizes).kernels) kernels.insert(pk.key);
    const char* src = cs.source == CompileStats::Source::Compiled    ? "compiled"
                      : cs.source == CompileStats::Source::DiskCache ? "disk cache"
                                                                     : "memory";
    runtime_sized += cs.runtime_size_kernels > 0;
    std::cout << fmt::format("  {}={:<10} {:<10} first call {:8.2f} ms (plan {:.2f}, LLVM->PTX {:.1f}, load {:.1f}){}\n",
                             range.symbol, v, src, ms, cs.plan_ms, cs.llvm_ptx_ms, cs.load_ms,
                             cs.runtime_size_kernels
                                 ? fmt::format("; {} of {} kernels take sizes at run time", cs.runtime_size_kernels,
                                               cs.kernels)
                                 : "");
  }
  const auto n = first_ms.size();
  std::cout << fmt::format(
      "{} sizes: {} compiled, {} from loom's disk cache, {} already in memory; {} distinct kernels; {} sizes ran "
      "kernels taking sizes at run time\n"
      "first call: median {:.2f} ms, min {:.2f}, max {:.2f} (planning: median {:.2f} ms); in all LLVM->PTX {:.0f} ms, "
      "module loads {:.0f} ms\n",
      n, by_source[CompileStats::Source::Compiled], by_source[CompileStats::Source::DiskCache],
      by_source[CompileStats::Source::MemoryCache], kernels.size(), runtime_sized, median(first_ms),
      *std::min_element(first_ms.begin(), first_ms.end()), *std::max_element(first_ms.begin(), first_ms.end()),
      median(plan_ms), llvm, load);
  if (!warm_ms.empty())
    std::cout << fmt::format("first call of a size whose kernels were compiled already ({} sizes): median {:.2f} ms, "
                             "max {:.2f} (medians: preparing {:.2f} ms, of which binding sizes {:.2f}, planning {:.2f}, "
                             "buffers {:.2f}; allocating the outputs {:.2f}; launching and waiting {:.2f})\n",
                             warm_ms.size(), median(warm_ms), *std::max_element(warm_ms.begin(), warm_ms.end()),
                             median(warm_prepare_ms), median(warm_sizes_ms), median(warm_plan_ms),
                             median(warm_buffers_ms), median(alloc_ms), median(run_ms));
  return 0;
}

}  // namespace loom::cli
