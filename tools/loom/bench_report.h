#pragma once
// What `loom bench` measured, and its two forms: the text report and the one-line JSON object
// (bench/peer.py reads the latter). Needs no GPU: tests format made-up results.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/tensor_desc.h"
#include "ir/json.h"
#include "tools/loom/bench_timing.h"
#include "tools/loom/plan_info.h"

namespace loom::cli {

// One kernel of the plan, timed alone (in a plan of one kernel: the plan's own timing).
struct KernelResult {
  KernelInfo info;
  Timing time;
};

struct BenchResult {
  std::string fusion, dtype, device, gpu;
  std::vector<std::string> input_lines, output_lines;  // JSON objects (descJson)
  std::string compile_source;
  double llvm_ptx_ms = 0, load_ms = 0, first_total_ms = 0, cold_llvm_ptx_ms = 0, cold_compile_ms = 0;
  std::vector<KernelResult> kernels;  // the plan's kernels in launch order
  uint64_t bytes = 0;                 // the fusion's inputs read once + outputs written once
  Timing plan, copy;                  // the whole plan (every launch back to back); the copy
  double host_us = 0;                 // per launch of the whole plan
  int host_launches = 0;
  double driver_floor_us = 0;         // an empty kernel's launches alone: the driver's share
  bool inputs_from_files = false;
};

// GB/s of `bytes` moved in `ms` (infinite for 0 ms: JSON writes null).
double gbps(uint64_t bytes, double ms);

// {"name", "dtype", "shape", "strides"} and, where alias >= -1, "aliases_input".
std::string descJson(const std::string& name, const TensorDesc& d, int alias = -2);

// The one-line JSON object. The fields of a one-kernel fusion are those loom bench always
// wrote, in the same order ("time_ms", "gbps", ... are the whole plan's; "kernel" is the
// first kernel; "kernels" the count), then "plan": one object per kernel, timed alone.
std::string benchJson(const BenchResult& r);
// The text report: the plan's time and GB/s, and a line per kernel where there are several.
std::string benchText(const BenchResult& r);

}  // namespace loom::cli
