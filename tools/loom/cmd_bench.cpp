// `loom bench FUSION`: times a compiled fusion the way triton.testing.do_bench does (warm-up,
// CUDA events around every launch, L2 flushed before each timed launch, median), reports GB/s
// against the device-to-device copy bandwidth measured the same way in the same process, the
// compile time and the host overhead per launch. With --inputs/--save-outputs it reads inputs
// from and writes outputs to raw files, so bench/peer.py can check loom against PyTorch.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "runtime/bind_sizes.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/executor.h"
#include "tools/loom/cli.h"

namespace loom::cli {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

double msSince(Clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

constexpr size_t kFlushBytes = size_t{256} << 20;  // as triton.testing.do_bench
constexpr size_t kCopyBytes = size_t{512} << 20;
constexpr double kWarmupMs = 25, kRepMs = 100;     // do_bench's defaults
constexpr int kMaxReps = 10000;

struct Timing {
  double median_ms = 0, min_ms = 0, p20_ms = 0, p80_ms = 0;
  int reps = 0;
};

// do_bench: estimate from 5 flushed runs, warm up for ~25 ms, then `reps` runs (default ~100 ms
// worth), each preceded by a 256 MiB memset outside the events; the median of the event times.
template <typename Fn>
Timing timeLikeDoBench(Fn fn, runtime::DeviceBuffer& flush, int fixed_reps) {
  auto& dev = runtime::Device::get();
  fn();
  dev.synchronize();
  runtime::Event s, e;
  s.record();
  for (int i = 0; i < 5; ++i) {
    flush.memset(0);
    fn();
  }
  e.record();
  double est = std::max(runtime::Event::elapsedMs(s, e) / 5.0, 1e-4);
  int warm = std::max(1, static_cast<int>(kWarmupMs / est));
  int reps = fixed_reps > 0 ? fixed_reps : std::clamp(static_cast<int>(kRepMs / est), 1, kMaxReps);
  for (int i = 0; i < warm; ++i) fn();
  std::vector<runtime::Event> starts(static_cast<size_t>(reps)), ends(static_cast<size_t>(reps));
  for (int i = 0; i < reps; ++i) {
    flush.memset(0);
    starts[static_cast<size_t>(i)].record();
    fn();
    ends[static_cast<size_t>(i)].record();
  }
  dev.synchronize();
  std::vector<double> t;
  for (int i = 0; i < reps; ++i)
    t.push_back(runtime::Event::elapsedMs(starts[static_cast<size_t>(i)], ends[static_cast<size_t>(i)]));
  std::sort(t.begin(), t.end());
  auto q = [&](double p) { return t[std::min(t.size() - 1, static_cast<size_t>(p * static_cast<double>(t.size() - 1) + 0.5))]; };
  Timing r;
  r.median_ms = t.size() % 2 ? t[t.size() / 2] : 0.5 * (t[t.size() / 2 - 1] + t[t.size() / 2]);
  r.min_ms = t.front();
  r.p20_ms = q(0.2);
  r.p80_ms = q(0.8);
  r.reps = reps;
  return r;
}

std::string shapeText(const std::vector<int64_t>& s) {
  return s.empty() ? "-" : fmt::format("{}", fmt::join(s, ","));
}

std::string jsonStr(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) o += fmt::format("\\u{:04x}", static_cast<int>(c));
        else o += c;
    }
  }
  return o + "\"";
}

std::string jsonNum(double v) { return std::isfinite(v) ? fmt::format("{:.6g}", v) : "null"; }

std::string jsonInts(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

// One line of a raw-tensor manifest: `name dtype d0,d1,... file` (files are logical row-major,
// little-endian; `-` is the shape of a scalar).
struct ManifestLine {
  std::string dtype, shape, file;
};

std::map<std::string, ManifestLine> readManifest(const fs::path& p) {
  std::ifstream in(p);
  LOOM_USER_CHECK(in.good(), "--inputs: cannot read the manifest `{}` (lines `name dtype "
                  "d0,d1,... file`, as bench/peer.py writes)", p.string());
  std::map<std::string, ManifestLine> m;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ls(line);
    std::string name;
    ManifestLine l;
    LOOM_USER_CHECK(static_cast<bool>(ls >> name >> l.dtype >> l.shape >> l.file),
                    "{}:{}: expected `name dtype d0,d1,... file`, got `{}`", p.string(), n, line);
    m[name] = l;
  }
  return m;
}

// Inputs from DIR/inputs.txt, checked against what the fusion expects, in the given layouts.
std::vector<HostTensor> loadInputs(const fs::path& dir, const ir::Fusion& f, const Bindings& sizes,
                                   const std::map<std::string, std::vector<int>>& layouts) {
  auto manifest = readManifest(dir / "inputs.txt");
  std::vector<HostTensor> out;
  for (const ir::Value* v : f.inputs()) {
    auto shape = evalShape(v, sizes);
    auto it = manifest.find(v->name());
    LOOM_USER_CHECK(it != manifest.end(), "--inputs {}: inputs.txt has no line for input `{}`",
                    dir.string(), v->name());
    const ManifestLine& l = it->second;
    LOOM_USER_CHECK(l.dtype == dtypeName(v->dtype()) && l.shape == shapeText(shape),
                    "--inputs {}: input `{}` is {} [{}] in inputs.txt but the fusion needs {} [{}] "
                    "(check --dim and --dtype)", dir.string(), v->name(), l.dtype, l.shape,
                    dtypeName(v->dtype()), shapeText(shape));
    HostTensor h = HostTensor::empty(v->dtype(), shape);
    fs::path file = dir / l.file;
    std::error_code ec;
    auto fsize = fs::file_size(file, ec);
    LOOM_USER_CHECK(!ec && fsize == h.nbytes(), "--inputs: `{}` should hold {} bytes ({} [{}]), {}",
                    file.string(), h.nbytes(), l.dtype, l.shape,
                    ec ? "but cannot be read" : fmt::format("but holds {}", fsize));
    std::ifstream in(file, std::ios::binary);
    in.read(static_cast<char*>(h.storageData()), static_cast<std::streamsize>(h.nbytes()));
    LOOM_USER_CHECK(in.good(), "--inputs: reading `{}` failed", file.string());
    auto lay = layouts.find(v->name());
    out.push_back(lay == layouts.end() ? h : h.withOrder(lay->second));
  }
  return out;
}

// Each output as DIR/output.NAME.bin (logical row-major) and a line of DIR/outputs.txt.
void saveOutputs(const fs::path& dir, const ir::Fusion& f, const std::vector<HostTensor>& outs) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::ofstream manifest(dir / "outputs.txt");
  LOOM_USER_CHECK(manifest.good(), "--save-outputs: cannot write `{}`", (dir / "outputs.txt").string());
  for (size_t i = 0; i < outs.size(); ++i) {
    const std::string& name = f.outputs()[i].name;
    HostTensor c = outs[i].contiguous();
    std::string file = "output." + name + ".bin";
    std::ofstream o(dir / file, std::ios::binary);
    size_t bytes = static_cast<size_t>(c.numel()) * static_cast<size_t>(dtypeBytes(c.dtype()));
    o.write(static_cast<const char*>(c.data()), static_cast<std::streamsize>(bytes));
    LOOM_USER_CHECK(o.good(), "--save-outputs: writing `{}` failed", (dir / file).string());
    manifest << name << ' ' << dtypeName(c.dtype()) << ' ' << shapeText(c.shape()) << ' ' << file << '\n';
  }
}

struct BenchResult {
  std::string fusion, dtype, device, gpu;
  std::vector<std::string> input_lines, output_lines;  // JSON objects
  std::string compile_source;
  double llvm_ptx_ms = 0, load_ms = 0, first_total_ms = 0, cold_llvm_ptx_ms = 0, cold_compile_ms = 0;
  std::string kernel_name;
  int kernels = 1;
  unsigned grid = 0, block = 0;
  size_t bytes = 0;
  Timing kernel, copy;
  double host_us = 0;
  int host_launches = 0;
  bool inputs_from_files = false;
};

std::string toJson(const BenchResult& r) {
  double gbps = static_cast<double>(r.bytes) / (r.kernel.median_ms * 1e6);
  double copy_gbps = 2.0 * static_cast<double>(kCopyBytes) / (r.copy.median_ms * 1e6);
  std::string s = "{";
  s += fmt::format("\"ok\": true, \"fusion\": {}, \"dtype\": {}, \"device\": {}, \"gpu\": {}, ",
                   jsonStr(r.fusion), jsonStr(r.dtype), jsonStr(r.device), jsonStr(r.gpu));
  s += fmt::format("\"inputs_from_files\": {}, ", r.inputs_from_files ? "true" : "false");
  s += fmt::format("\"inputs\": [{}], \"outputs\": [{}], ", fmt::join(r.input_lines, ", "),
                   fmt::join(r.output_lines, ", "));
  s += fmt::format("\"bytes\": {}, \"time_ms\": {}, \"time_ms_min\": {}, \"time_ms_p20\": {}, "
                   "\"time_ms_p80\": {}, \"reps\": {}, \"gbps\": {}, ",
                   r.bytes, jsonNum(r.kernel.median_ms), jsonNum(r.kernel.min_ms),
                   jsonNum(r.kernel.p20_ms), jsonNum(r.kernel.p80_ms), r.kernel.reps, jsonNum(gbps));
  s += fmt::format("\"copy\": {{\"bytes\": {}, \"time_ms\": {}, \"gbps\": {}, \"reps\": {}}}, "
                   "\"fraction_of_copy\": {}, ",
                   2 * kCopyBytes, jsonNum(r.copy.median_ms), jsonNum(copy_gbps), r.copy.reps,
                   jsonNum(gbps / copy_gbps));
  s += fmt::format("\"compile\": {{\"source\": {}, \"llvm_ptx_ms\": {}, \"load_ms\": {}, "
                   "\"first_call_ms\": {}, \"cold_llvm_ptx_ms\": {}, \"cold_compile_ms\": {}}}, ",
                   jsonStr(r.compile_source), jsonNum(r.llvm_ptx_ms), jsonNum(r.load_ms),
                   jsonNum(r.first_total_ms), jsonNum(r.cold_llvm_ptx_ms), jsonNum(r.cold_compile_ms));
  s += fmt::format("\"kernels\": {}, ", r.kernels);
  s += fmt::format("\"kernel\": {{\"name\": {}, \"grid\": {}, \"block\": {}}}, ", jsonStr(r.kernel_name),
                   r.grid, r.block);
  s += fmt::format("\"host_us_per_launch\": {}, \"host_launches\": {}", jsonNum(r.host_us),
                   r.host_launches);
  return s + "}";
}

std::string descJson(const std::string& name, const TensorDesc& d, int alias = -2) {
  std::string s = fmt::format("{{\"name\": {}, \"dtype\": {}, \"shape\": {}, \"strides\": {}", jsonStr(name),
                              jsonStr(std::string(dtypeName(d.dtype))), jsonInts(d.shape), jsonInts(d.strides));
  if (alias >= -1) s += fmt::format(", \"aliases_input\": {}", alias);
  return s + "}";
}

int benchImpl(const Args& a, BenchResult& r) {
  auto l = loadFromArgs(a, "bench");
  auto layouts = layoutsFromArgs(a, *l.fusion);
  r.fusion = l.fusion->name();
  const int fixed_reps = static_cast<int>(intOption(a, "iters", 0, 1, 1000000));
  std::string why;
  LOOM_USER_CHECK(runtime::gpuAvailable(&why), "{}", why);
  auto& dev = runtime::Device::get();
  r.device = dev.describe();
  r.gpu = dev.name();

  // This process's first compile, through the Executor (it may hit the disk cache), on input
  // buffers of the right shapes and layouts but no data yet: a fusion no scheduler accepts
  // fails here, before gigabytes of inputs are read.
  std::vector<DeviceTensor> dev_in;
  for (const ir::Value* v : l.fusion->inputs()) {
    auto shape = evalShape(v, l.sizes);
    auto lay = layouts.find(v->name());
    dev_in.push_back(DeviceTensor::allocate(
        v->dtype(), shape, lay == layouts.end() ? contiguousStrides(shape) : stridesForOrder(shape, lay->second)));
  }
  r.dtype = dev_in.empty() ? "" : std::string(dtypeName(dev_in[0].dtype()));
  const Tuning tuning = tuningFromEnvironment();
  Executor ex(*l.fusion, tuning);
  ex.planFor(dev_in, l.sizes);  // compiles now; throws when no scheduler accepts the fusion
  const CompileStats cs = ex.lastCompile();
  r.compile_source = cs.source == CompileStats::Source::Compiled    ? "fresh"
                     : cs.source == CompileStats::Source::DiskCache ? "disk cache"
                                                                    : "memory cache";
  r.llvm_ptx_ms = cs.llvm_ptx_ms;
  r.load_ms = cs.load_ms;
  r.first_total_ms = cs.total_ms;
  // A compile straight through compileFusion, which reports LLVM->PTX even when the Executor
  // found the kernel in the disk cache (LLVM is initialized by now; it fills no cache).
  {
    std::vector<TensorDesc> descs;
    std::vector<DType> dtypes;
    std::vector<std::vector<int64_t>> shapes;
    for (const auto& t : dev_in) {
      descs.push_back(t.desc());
      dtypes.push_back(t.dtype());
      shapes.push_back(t.shape());
    }
    Bindings bound = bindShapes(*l.fusion, dtypes, shapes, l.sizes);
    auto t0 = Clock::now();
    CompiledKernel k = compileFusion(*l.fusion, bound, descs, CompileOptions{currentDevice(), tuning});
    r.cold_compile_ms = msSince(t0);
    r.cold_llvm_ptx_ms = k.llvm_ptx_ms;
  }

  // The data: from files or seeded random values, uploaded with the same layouts (the
  // Executor finds the kernel compiled above for them).
  dev_in.clear();
  {
    std::vector<HostTensor> host_in;
    if (auto dir = a.get("inputs")) {
      host_in = loadInputs(*dir, *l.fusion, l.sizes, layouts);
      r.inputs_from_files = true;
    } else {
      host_in = randomInputs(*l.fusion, l.sizes, layouts, 0);
    }
    for (const auto& h : host_in) dev_in.push_back(DeviceTensor::fromHost(h));
  }
  const CompiledPlan& plan = ex.planFor(dev_in, l.sizes);
  const CompiledKernel& meta = plan.kernels.front().kernel;
  r.kernel_name = meta.name;
  r.kernels = static_cast<int>(plan.kernels.size());
  r.grid = meta.grid;
  r.block = meta.block;

  // Outputs: poisoned, aliased ones are their inputs (updated in place).
  std::vector<DeviceTensor> outs = ex.allocateOutputs(dev_in, l.sizes, /*poison=*/true);
  for (size_t i = 0; i < outs.size(); ++i)
    r.output_lines.push_back(descJson(l.fusion->outputs()[i].name, outs[i].desc(), plan.output_alias[i]));
  for (size_t i = 0; i < dev_in.size(); ++i)
    r.input_lines.push_back(descJson(l.fusion->inputs()[i]->name(), dev_in[i].desc()));
  r.bytes = 0;
  for (const auto& t : dev_in) r.bytes += static_cast<size_t>(t.numel()) * static_cast<size_t>(dtypeBytes(t.dtype()));
  for (const auto& t : outs) r.bytes += static_cast<size_t>(t.numel()) * static_cast<size_t>(dtypeBytes(t.dtype()));

  // One run on the given inputs, saved before timing updates aliased outputs again.
  ex.runInto(dev_in, outs, l.sizes);
  dev.synchronize();
  if (auto dir = a.get("save-outputs")) {
    std::vector<HostTensor> h;
    for (const auto& t : outs) h.push_back(t.toHost());
    saveOutputs(*dir, *l.fusion, h);
  }

  runtime::DeviceBuffer flush(kFlushBytes);
  r.kernel = timeLikeDoBench([&] { ex.launch(dev_in, outs); }, flush, fixed_reps);
  {
    runtime::DeviceBuffer src(kCopyBytes), dst(kCopyBytes);
    src.memset(1);
    r.copy = timeLikeDoBench([&] { dst.copyFrom(src); }, flush, 0);
  }

  // Host overhead: back-to-back launches of the cached kernel, in batches short enough never
  // to fill the launch queue (so host time is not GPU time), synchronizing between batches.
  constexpr int kBatch = 100;
  int launches = std::clamp(static_cast<int>(300.0 / std::max(r.kernel.median_ms, 1e-3)), kBatch, 2000);
  launches = launches / kBatch * kBatch;
  double host_ms = 0;
  dev.synchronize();
  for (int b = 0; b < launches / kBatch; ++b) {
    auto t0 = Clock::now();
    for (int i = 0; i < kBatch; ++i) ex.launch(dev_in, outs);
    host_ms += msSince(t0);
    dev.synchronize();
  }
  r.host_us = host_ms * 1e3 / launches;
  r.host_launches = launches;
  return 0;
}

void printHuman(const BenchResult& r) {
  double gbps = static_cast<double>(r.bytes) / (r.kernel.median_ms * 1e6);
  double copy_gbps = 2.0 * static_cast<double>(kCopyBytes) / (r.copy.median_ms * 1e6);
  std::cout << fmt::format("fusion {} ({}) on {}\n", r.fusion, r.dtype, r.device);
  std::cout << fmt::format("  compile: {} (LLVM->PTX {:.1f} ms, module load {:.1f} ms, first call {:.1f} ms); "
                           "cold compile {:.1f} ms (LLVM->PTX {:.1f} ms)\n",
                           r.compile_source, r.llvm_ptx_ms, r.load_ms, r.first_total_ms,
                           r.cold_compile_ms, r.cold_llvm_ptx_ms);
  std::cout << fmt::format("  kernel:  {} grid {} block {} ({} kernel{} in all)\n", r.kernel_name, r.grid,
                           r.block, r.kernels, r.kernels == 1 ? "" : "s");
  std::cout << fmt::format("  time:    {:.4f} ms median of {} (min {:.4f}, p20 {:.4f}, p80 {:.4f}), "
                           "L2 flushed before each\n",
                           r.kernel.median_ms, r.kernel.reps, r.kernel.min_ms, r.kernel.p20_ms,
                           r.kernel.p80_ms);
  std::cout << fmt::format("  traffic: {:.2f} MB -> {:.1f} GB/s = {:.1f}% of copy bandwidth "
                           "({:.1f} GB/s, 512 MiB device copy)\n",
                           static_cast<double>(r.bytes) / 1e6, gbps, 100.0 * gbps / copy_gbps, copy_gbps);
  std::cout << fmt::format("  host:    {:.2f} us per launch ({} launches)\n", r.host_us, r.host_launches);
}

}  // namespace

int runBench(const Args& a) {
  BenchResult r;
  bool json = a.flag("json");
  try {
    benchImpl(a, r);
  } catch (const std::exception& e) {
    // With --json the reason also goes to stdout, so a harness reading JSON gets it.
    if (json)
      std::cout << fmt::format("{{\"ok\": false, \"fusion\": {}, \"error\": {}}}\n",
                               jsonStr(r.fusion.empty() && !a.positionals().empty() ? a.positionals()[0]
                                                                                     : r.fusion),
                               jsonStr(e.what()));
    throw;
  }
  if (json) std::cout << toJson(r) << "\n";
  else printHuman(r);
  return 0;
}

}  // namespace loom::cli
