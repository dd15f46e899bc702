#include "tools/loom/bench_report.h"

#include <cmath>
#include <limits>

#include "ir/dtype.h"
#include "ir/error.h"

namespace loom::cli {

namespace {

std::string jsonNum(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : "null"; }


std::string timingJson(const Timing& t) {
  return fmt::format("\"time_ms\": {}, \"time_ms_min\": {}, \"time_ms_p20\": {}, \"time_ms_p80\": {}, \"reps\": {}",
                     jsonNum(t.median_ms), jsonNum(t.min_ms), jsonNum(t.p20_ms), jsonNum(t.p80_ms), t.reps);
}

std::string kernelJson(size_t index, const KernelResult& k) {
  const KernelInfo& i = k.info;
  return fmt::format("{{\"index\": {}, \"name\": {}, \"grid\": {}, \"block\": {}, \"shared_bytes\": {}, "
                     "\"cluster\": {}, \"cooperative\": {}, \"bytes_read\": {}, \"bytes_written\": {}, "
                     "\"bytes\": {}, {}, \"gbps\": {}}}",
                     index, jsonStr(i.name), i.grid, i.block, i.shared_bytes, i.cluster,
                     i.cooperative ? "true" : "false", i.bytes_read, i.bytes_written, i.bytes(),
                     timingJson(k.time), jsonNum(gbps(i.bytes(), k.time.median_ms)));
}

std::string timingText(const Timing& t) {
  return fmt::format("{:.4f} ms median of {} (min {:.4f}, p20 {:.4f}, p80 {:.4f})", t.median_ms, t.reps,
                     t.min_ms, t.p20_ms, t.p80_ms);
}

}  // namespace

double gbps(uint64_t bytes, double ms) {
  return ms > 0 ? static_cast<double>(bytes) / (ms * 1e6) : std::numeric_limits<double>::infinity();
}

std::string descJson(const std::string& name, const TensorDesc& d, int alias) {
  std::string s = fmt::format("{{\"name\": {}, \"dtype\": {}, \"shape\": {}, \"strides\": {}", jsonStr(name),
                              jsonStr(std::string(dtypeName(d.dtype))), jsonInts(d.shape), jsonInts(d.strides));
  if (alias >= -1) s += fmt::format(", \"aliases_input\": {}", alias);
  return s + "}";
}

std::string benchJson(const BenchResult& r) {
  LOOM_ASSERT(!r.kernels.empty(), "a bench result without kernels");
  const double plan_gbps = gbps(r.bytes, r.plan.median_ms);
  const double copy_gbps = gbps(2 * kCopyBytes, r.copy.median_ms);
  const KernelInfo& first = r.kernels.front().info;
  std::string s = "{";
  s += fmt::format("\"ok\": true, \"fusion\": {}, \"dtype\": {}, \"device\": {}, \"gpu\": {}, ",
                   jsonStr(r.fusion), jsonStr(r.dtype), jsonStr(r.device), jsonStr(r.gpu));
  s += fmt::format("\"inputs_from_files\": {}, ", r.inputs_from_files ? "true" : "false");
  s += fmt::format("\"inputs\": [{}], \"outputs\": [{}], ", fmt::join(r.input_lines, ", "),
                   fmt::join(r.output_lines, ", "));
  s += fmt::format("\"bytes\": {}, {}, \"gbps\": {}, ", r.bytes, timingJson(r.plan), jsonNum(plan_gbps));
  s += fmt::format("\"copy\": {{\"bytes\": {}, \"time_ms\": {}, \"gbps\": {}, \"reps\": {}}}, "
                   "\"fraction_of_copy\": {}, ",
                   2 * kCopyBytes, jsonNum(r.copy.median_ms), jsonNum(copy_gbps), r.copy.reps,
                   jsonNum(plan_gbps / copy_gbps));
  s += fmt::format("\"compile\": {{\"source\": {}, \"llvm_ptx_ms\": {}, \"load_ms\": {}, "
                   "\"first_call_ms\": {}, \"cold_llvm_ptx_ms\": {}, \"cold_compile_ms\": {}}}, ",
                   jsonStr(r.compile_source), jsonNum(r.llvm_ptx_ms), jsonNum(r.load_ms),
                   jsonNum(r.first_total_ms), jsonNum(r.cold_llvm_ptx_ms), jsonNum(r.cold_compile_ms));
  s += fmt::format("\"kernels\": {}, ", r.kernels.size());
  s += fmt::format("\"kernel\": {{\"name\": {}, \"grid\": {}, \"block\": {}}}, ", jsonStr(first.name),
                   first.grid, first.block);
  s += fmt::format("\"host_us_per_launch\": {}, \"host_launches\": {}, \"driver_floor_us\": {}, ",
                   jsonNum(r.host_us), r.host_launches, jsonNum(r.driver_floor_us));
  std::vector<std::string> plan;
  for (size_t k = 0; k < r.kernels.size(); ++k) plan.push_back(kernelJson(k, r.kernels[k]));
  s += fmt::format("\"plan\": [{}]", fmt::join(plan, ", "));
  return s + "}";
}

std::string benchText(const BenchResult& r) {
  LOOM_ASSERT(!r.kernels.empty(), "a bench result without kernels");
  const double plan_gbps = gbps(r.bytes, r.plan.median_ms);
  const double copy_gbps = gbps(2 * kCopyBytes, r.copy.median_ms);
  const size_t n = r.kernels.size();
  std::string s = fmt::format("fusion {} ({}) on {}\n", r.fusion, r.dtype, r.device);
  s += fmt::format("  compile: {} (LLVM->PTX {:.1f} ms, module load {:.1f} ms, first call {:.1f} ms); "
                   "cold compile {:.1f} ms (LLVM->PTX {:.1f} ms)\n",
                   r.compile_source, r.llvm_ptx_ms, r.load_ms, r.first_total_ms, r.cold_compile_ms,
                   r.cold_llvm_ptx_ms);
  if (n == 1) {
    const KernelInfo& k = r.kernels.front().info;
    s += fmt::format("  kernel:  {} grid {} block {} (1 kernel in all)\n", k.name, k.grid, k.block);
  } else {
    s += fmt::format("  plan:    {} kernels launched back to back; each also timed alone below\n", n);
  }
  s += fmt::format("  time:    {}, L2 flushed before each\n", timingText(r.plan));
  s += fmt::format("  traffic: {:.2f} MB -> {:.1f} GB/s = {:.1f}% of copy bandwidth "
                   "({:.1f} GB/s, 512 MiB device copy)\n",
                   static_cast<double>(r.bytes) / 1e6, plan_gbps, 100.0 * plan_gbps / copy_gbps, copy_gbps);
  if (n > 1) {
    double sum_ms = 0;
    for (size_t k = 0; k < n; ++k) {
      const KernelResult& kr = r.kernels[k];
      sum_ms += kr.time.median_ms;
      s += fmt::format("  kernel {}/{}: {}: {}; {:.2f} MB (read {:.2f}, written {:.2f}) -> {:.1f} GB/s\n", k + 1, n,
                       launchText(kr.info), timingText(kr.time), static_cast<double>(kr.info.bytes()) / 1e6,
                       static_cast<double>(kr.info.bytes_read) / 1e6,
                       static_cast<double>(kr.info.bytes_written) / 1e6, gbps(kr.info.bytes(), kr.time.median_ms));
    }
    s += fmt::format("  kernels: {:.4f} ms in all, timed alone (the plan: {:.4f} ms)\n", sum_ms, r.plan.median_ms);
  }
  s += fmt::format("  host:    {:.2f} us per launch{} ({} launches){}\n", r.host_us, n == 1 ? "" : " of the whole plan",
                   r.host_launches,
                   r.driver_floor_us > 0 ? fmt::format("; an empty kernel's launch alone: {:.2f} us", r.driver_floor_us) : "");
  return s;
}

}  // namespace loom::cli
