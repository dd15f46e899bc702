// `loom bench` and `loom run` on plans of any number of kernels, the parts that need no GPU:
// each kernel's traffic, and the text and JSON reports (bench/peer.py reads the JSON).
#include <catch2/catch.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "tests/compile_test_util.h"
#include "tools/loom/bench_report.h"
#include "tools/loom/plan_info.h"

using namespace loom;
using namespace loom::cli;

namespace {

CompiledPlan planOf(const ir::Fusion& f, const Bindings& sizes, std::vector<TensorDesc>& inputs,
                    const std::map<std::string, std::vector<int>>& layouts = {}) {
  inputs = test::descsFor(f, sizes, layouts);
  return compilePlan(f, sizes, inputs, CompileOptions{{90, 132}});
}

// The keys of a JSON object's top level, in order (strings hold no braces' meaning).
std::vector<std::string> topKeys(const std::string& js) {
  std::vector<std::string> keys;
  int depth = 0;
  for (size_t i = 0; i < js.size(); ++i) {
    char c = js[i];
    if (c == '"') {
      size_t j = i + 1;
      std::string s;
      for (; js[j] != '"'; ++j) {
        if (js[j] == '\\') ++j;
        s += js[j];
      }
      if (depth == 1 && js.compare(j + 1, 1, ":") == 0) keys.push_back(s);
      i = j;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      --depth;
    }
  }
  CHECK(depth == 0);
  return keys;
}

KernelResult madeUpKernel(const std::string& name, uint64_t read, uint64_t written, double ms) {
  KernelResult k;
  k.info.name = name;
  k.info.grid = 132;
  k.info.block = 256;
  k.info.bytes_read = read;
  k.info.bytes_written = written;
  k.time = Timing{ms, ms * 0.9, ms * 0.95, ms * 1.1, 500};
  return k;
}

BenchResult madeUpResult(int kernels) {
  BenchResult r;
  // (Whole strings moved in: GCC 12's -Wrestrict misreads a short literal assigned here.)
  r.fusion = std::string("f");
  r.dtype = std::string("f16");
  r.device = std::string("NVIDIA H100 (sm_90, 132 SMs)");
  r.gpu = std::string("NVIDIA H100");
  r.input_lines = {descJson("x", TensorDesc{DType::F16, {1000}, {1}})};
  r.output_lines = {descJson("y", TensorDesc{DType::F16, {1000}, {1}}, -1)};
  r.compile_source = std::string("fresh");
  r.bytes = 4000000;
  r.plan = Timing{0.002, 0.0019, 0.00195, 0.0021, 1000};
  r.copy = Timing{0.4, 0.39, 0.395, 0.41, 250};
  r.host_us = 3.5;
  r.host_launches = 200;
  if (kernels == 1) {
    r.kernels.push_back(madeUpKernel("loom_f", 2000000, 2000000, 0.002));
  } else {
    r.kernels.push_back(madeUpKernel("loom_f_s0", 2000000, 6000000, 0.001));  // writes y and a temp
    r.kernels.push_back(madeUpKernel("loom_f_s1", 4000000, 500000, 0.0005));
  }
  return r;
}

// Exit status of python3 reading the JSON as bench/peer.py does (json.loads of the line) and
// checking the fields peer.py and peer_report.py use; -1 where there is no python3.
int peerReads(const std::string& js, int kernels) {
  if (std::system("python3 -c pass >/dev/null 2>&1") != 0) return -1;
  const std::string path = fmt::format("/tmp/loom_bench_report_test_{}.json", getpid());
  std::ofstream(path) << js << "\n";
  const std::string py =
      "import json, sys\n"
      "js = json.loads(open(sys.argv[1]).readline())\n"
      "assert js['ok'] is True and js['kernels'] == int(sys.argv[2]), js\n"
      "for k in ('bytes', 'time_ms', 'gbps', 'fraction_of_copy', 'host_us_per_launch'): float(js[k])\n"
      "float(js['copy']['gbps'])\n"
      "c = js['compile']\n"
      "for k in ('llvm_ptx_ms', 'cold_llvm_ptx_ms', 'load_ms', 'first_call_ms'): float(c[k])\n"
      "assert c['source'] == 'fresh'\n"
      "assert [p['index'] for p in js['plan']] == list(range(js['kernels']))\n"
      "for p in js['plan']: assert abs(p['gbps'] - p['bytes'] / (p['time_ms'] * 1e6)) < 1e-6 * p['gbps']\n";
  std::ofstream(path + ".py") << py;
  const std::string cmd = "python3 " + path + ".py " + path + " " + std::to_string(kernels) + " 2>&1";
  const int st = std::system(cmd.c_str());
  std::remove(path.c_str());
  std::remove((path + ".py").c_str());
  return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}

}  // namespace

TEST_CASE("bench JSON reads as bench/peer.py reads it, for one kernel and for two", "[cli][bench]") {
  for (int n : {1, 2}) {
    INFO(n << " kernel(s)");
    const int st = peerReads(benchJson(madeUpResult(n)), n);
    if (st < 0) {
      WARN("no python3: skipped");
      return;
    }
    CHECK(st == 0);
  }
}

TEST_CASE("plan traffic: each kernel reads its inputs once and writes its outputs once", "[cli][bench]") {
  SECTION("ln_colstats: two kernels, the intermediate counted where written and where read") {
    auto f = parseFusionFile(std::string(LOOM_SOURCE_DIR) + "/examples/fusions/ln_colstats.loom");
    const Bindings sizes{{"N", 64}, {"D", 256}};
    std::vector<TensorDesc> in;
    const CompiledPlan plan = planOf(*f, sizes, in);
    const auto ks = planKernels(plan, in);
    REQUIRE(ks.size() == 2);
    REQUIRE(plan.temps.size() == 1);
    const uint64_t x = 64 * 256 * 2, y = 64 * 256 * 2, stats = 2 * 256 * 4;
    const uint64_t temp = tensorBytes(plan.temps[0]);
    CHECK(temp == 64 * 256 * 4);  // t4, f32[N, D]
    CHECK(fusionBytes(in, plan.outputs) == x + y + stats);
    CHECK(ks[0].bytes_read == x);
    CHECK(ks[0].bytes_written == y + temp);
    CHECK(ks[1].bytes_read == temp);
    CHECK(ks[1].bytes_written == stats);
    CHECK(ks[0].name != ks[1].name);
    for (const auto& k : ks) CHECK(k.grid >= 1);
  }
  SECTION("ln_colsum: one kernel with column reductions, cooperative") {
    auto f = parseFusionFile(std::string(LOOM_SOURCE_DIR) + "/examples/fusions/ln_colsum.loom");
    const Bindings sizes{{"N", 64}, {"D", 256}};
    std::vector<TensorDesc> in;
    const CompiledPlan plan = planOf(*f, sizes, in);
    const auto ks = planKernels(plan, in);
    REQUIRE(ks.size() == 1);
    CHECK(plan.temps.empty());
    CHECK(ks[0].cooperative);
    CHECK(ks[0].bytes() == fusionBytes(in, plan.outputs));
  }
  SECTION("one kernel: the kernel's bytes are the fusion's, in-place outputs counted as written") {
    for (const char* name : {"layer_norm", "batch_norm", "lstm_cell"}) {
      INFO(name);
      Bindings sizes;
      auto f = loadFusion(name, &sizes);
      std::vector<TensorDesc> in;
      const CompiledPlan plan = planOf(*f, sizes, in);
      const auto ks = planKernels(plan, in);
      REQUIRE(ks.size() == 1);
      CHECK(ks[0].bytes() == fusionBytes(in, plan.outputs));
      CHECK(ks[0].name == plan.kernels[0].kernel.name);
      CHECK(ks[0].block == plan.kernels[0].kernel.block);
    }
  }
}

TEST_CASE("launch text names the kernel, its grid and block, and what else it launches with", "[cli][bench]") {
  KernelInfo k;
  k.name = "loom_k";
  k.grid = 132;
  k.block = 512;
  CHECK(launchText(k) == "loom_k grid 132 block 512");
  k.shared_bytes = 49152;
  k.cluster = 2;
  k.cooperative = true;
  CHECK(launchText(k) == "loom_k grid 132 block 512 shared 49152 B cluster 2 cooperative");
}

TEST_CASE("bench JSON: a one-kernel fusion keeps every field, in order; plan entries follow", "[cli][bench]") {
  const std::string js = benchJson(madeUpResult(1));
  INFO(js);
  const std::vector<std::string> legacy = {
      "ok", "fusion", "dtype", "device", "gpu", "inputs_from_files", "inputs", "outputs", "bytes",
      "time_ms", "time_ms_min", "time_ms_p20", "time_ms_p80", "reps", "gbps", "copy", "fraction_of_copy",
      "compile", "kernels", "kernel", "host_us_per_launch", "host_launches", "driver_floor_us"};
  std::vector<std::string> want = legacy;
  want.push_back("plan");
  CHECK(topKeys(js) == want);
  CHECK(js.find("\"bytes\": 4000000, \"time_ms\": 0.002, \"time_ms_min\": 0.0019, \"time_ms_p20\": 0.00195, "
                "\"time_ms_p80\": 0.0021, \"reps\": 1000, \"gbps\": 2000, ") != std::string::npos);
  CHECK(js.find("\"kernels\": 1, \"kernel\": {\"name\": \"loom_f\", \"grid\": 132, \"block\": 256}, ") !=
        std::string::npos);
  CHECK(js.find("\"outputs\": [{\"name\": \"y\", \"dtype\": \"f16\", \"shape\": [1000], \"strides\": [1], "
                "\"aliases_input\": -1}]") != std::string::npos);
  CHECK(js.find("\"plan\": [{\"index\": 0, \"name\": \"loom_f\", \"grid\": 132, \"block\": 256, "
                "\"shared_bytes\": 0, \"cluster\": 1, \"cooperative\": false, \"bytes_read\": 2000000, "
                "\"bytes_written\": 2000000, \"bytes\": 4000000, \"time_ms\": 0.002, ") != std::string::npos);
  CHECK(js.front() == '{');
  CHECK(js.back() == '}');
  CHECK(js.find('\n') == std::string::npos);
}

TEST_CASE("bench JSON: several kernels, the plan's time and GB/s on top and each kernel's in plan", "[cli][bench]") {
  const std::string js = benchJson(madeUpResult(2));
  INFO(js);
  auto keys = topKeys(js);
  REQUIRE(!keys.empty());
  CHECK(keys.back() == "plan");
  CHECK(js.find("\"time_ms\": 0.002, ") != std::string::npos);  // the whole plan's
  CHECK(js.find("\"gbps\": 2000, ") != std::string::npos);       // fusion bytes / plan time
  CHECK(js.find("\"kernels\": 2, \"kernel\": {\"name\": \"loom_f_s0\"") != std::string::npos);
  // Each kernel's GB/s from its own bytes and time: 8 MB in 1 us, 4.5 MB in 0.5 us.
  CHECK(js.find("{\"index\": 0, \"name\": \"loom_f_s0\"") != std::string::npos);
  CHECK(js.find("\"bytes_read\": 2000000, \"bytes_written\": 6000000, \"bytes\": 8000000, \"time_ms\": 0.001, "
                "\"time_ms_min\": 0.0009, \"time_ms_p20\": 0.00095, \"time_ms_p80\": 0.0011, \"reps\": 500, "
                "\"gbps\": 8000}") != std::string::npos);
  CHECK(js.find("{\"index\": 1, \"name\": \"loom_f_s1\"") != std::string::npos);
  CHECK(js.find("\"bytes\": 4500000, \"time_ms\": 0.0005, ") != std::string::npos);
  CHECK(js.find("\"gbps\": 9000}]}") != std::string::npos);
}

TEST_CASE("bench text: one kernel as before; several kernels get a line each", "[cli][bench]") {
  SECTION("one kernel: the lines loom bench always printed") {
    const std::string want =
        "fusion f (f16) on NVIDIA H100 (sm_90, 132 SMs)\n"
        "  compile: fresh (LLVM->PTX 0.0 ms, module load 0.0 ms, first call 0.0 ms); cold compile 0.0 ms "
        "(LLVM->PTX 0.0 ms)\n"
        "  kernel:  loom_f grid 132 block 256 (1 kernel in all)\n"
        "  time:    0.0020 ms median of 1000 (min 0.0019, p20 0.0019, p80 0.0021), L2 flushed before each\n"
        "  traffic: 4.00 MB -> 2000.0 GB/s = 74.5% of copy bandwidth (2684.4 GB/s, 512 MiB device copy)\n"
        "  host:    3.50 us per launch (200 launches)\n";
    CHECK(benchText(madeUpResult(1)) == want);
  }
  SECTION("two kernels") {
    const std::string t = benchText(madeUpResult(2));
    INFO(t);
    CHECK(t.find("  plan:    2 kernels launched back to back") != std::string::npos);
    CHECK(t.find("  time:    0.0020 ms median of 1000") != std::string::npos);
    CHECK(t.find("-> 2000.0 GB/s = 74.5% of copy bandwidth") != std::string::npos);
    CHECK(t.find("  kernel 1/2: loom_f_s0 grid 132 block 256: 0.0010 ms median of 500 (min 0.0009, p20 "
                 "0.0009, p80 0.0011); 8.00 MB (read 2.00, written 6.00) -> 8000.0 GB/s\n") != std::string::npos);
    CHECK(t.find("  kernel 2/2: loom_f_s1 grid 132 block 256: 0.0005 ms") != std::string::npos);
    CHECK(t.find("-> 9000.0 GB/s\n") != std::string::npos);
    CHECK(t.find("  kernels: 0.0015 ms in all, timed alone (the plan: 0.0020 ms)\n") != std::string::npos);
    CHECK(t.find("us per launch of the whole plan") != std::string::npos);
    // Scripts grep the plan's `GB/s = N%` first: no kernel line has it.
    CHECK(t.find("GB/s = ") == t.find("2000.0 GB/s = ") + 7);
  }
}
