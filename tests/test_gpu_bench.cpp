// [gpu]: plans of several kernels through `loom run` and `loom bench` (the whole plan and each
// kernel timed, --inputs/--save-outputs), and Executor::launchKernel, which bench times with.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <unistd.h>

#include "runtime/device.h"
#include "tests/cli_test_util.h"
#include "tests/gpu_test_util.h"

using namespace loom;

namespace {

namespace fs = std::filesystem;

// examples/fusions/ln_colstats.loom (here, so the test needs no source tree on the GPU machine):
// a layer norm, then each column's statistics of its f32 result: two kernels and an intermediate.
constexpr const char* kLnColstats = R"(fusion ln_colstats {
  in x: f16[N, D]
  t0: f32[N, D] = cast(x, to=f32)
  var: f32[N, 1b], mean: f32[N, 1b], n: i64[N, 1b] = var_mean(t0, dims=[1], correction=0, keepdim=true)
  eps: f32[] = const(1e-05, dtype=f32)
  t1: f32[N, 1b] = add(var, eps)
  t2: f32[N, 1b] = rsqrt(t1)
  t3: f32[N, D] = sub(t0, mean)
  t4: f32[N, D] = mul(t3, t2)
  y: f16[N, D] = cast(t4, to=f16)
  cvar: f32[D], cmean: f32[D], cn: i64[D] = var_mean(t4, dims=[0], correction=0, keepdim=false)
  out y = y
  out cmean = cmean
  out cvar = cvar
}
)";

// One file per test case and process: ctest may run test cases at once.
std::string lnColstatsFile(const std::string& tag) {
  const std::string path = fmt::format("/tmp/loom_gpu_bench_{}_{}.loom", tag, getpid());
  std::ofstream(path) << kLnColstats;
  return path;
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

void checkAll(const ir::Fusion& f, const std::vector<HostTensor>& in, const Bindings& sizes,
              const std::vector<HostTensor>& got, const std::string& what) {
  const auto ref = evaluateReference(f, in, sizes);
  const auto cs = compareOutputs(f, in, sizes, got, ref);
  REQUIRE(cs.size() == f.outputs().size());
  for (size_t i = 0; i < cs.size(); ++i) {
    INFO(what << ": output " << f.outputs()[i].name << ": " << cs[i].str());
    CHECK(cs[i].ok);
  }
}

}  // namespace

TEST_CASE("launchKernel runs one kernel of a plan; in launch order they give the plan's outputs", "[gpu][bench]") {
  if (!test::haveGpu()) return;
  auto f = parseFusion(kLnColstats);
  const Bindings sizes{{"N", 300}, {"D", 1000}};
  const std::vector<HostTensor> host{HostTensor::random(DType::F16, {300, 1000}, 3, -1.0, 1.0)};
  const std::vector<DeviceTensor> dev{DeviceTensor::fromHost(host[0])};
  Executor ex(*f);
  REQUIRE(ex.planFor(dev, sizes).kernels.size() == 2);
  auto toHost = [](const std::vector<DeviceTensor>& ts) {
    std::vector<HostTensor> h;
    for (const auto& t : ts) h.push_back(t.toHost());
    return h;
  };
  std::vector<DeviceTensor> outs = ex.allocateOutputs(dev, sizes, /*poison=*/true);
  ex.launchKernel(dev, outs, 0);
  ex.launchKernel(dev, outs, 1);
  runtime::Device::get().synchronize();
  checkAll(*f, host, sizes, toHost(outs), "kernels 0 then 1");
  // The second kernel alone again reads the intermediate the first left, as bench times it.
  outs[1].poison();
  ex.launchKernel(dev, outs, 1);
  runtime::Device::get().synchronize();
  checkAll(*f, host, sizes, toHost(outs), "kernel 1 again");
  CHECK_THROWS_WITH(ex.launchKernel(dev, outs, 2), Catch::Contains("runs as 2 kernel(s); there is no kernel 2"));
}

TEST_CASE("loom run and loom bench run and time every kernel of a two-kernel plan", "[gpu][bench]") {
  if (!test::haveGpu()) return;
  const std::string fusion = lnColstatsFile("run") + " --dim N=4096 --dim D=1024";
  auto run = test::runLoom("run " + fusion);
  INFO(run.out);
  CHECK(run.status == 0);
  CHECK(has(run.out, "  kernel 1/2: "));
  CHECK(has(run.out, "  kernel 2/2: "));
  CHECK(has(run.out, "  plan time "));
  auto text = test::runLoom("bench " + fusion + " --iters 20");
  INFO(text.out);
  CHECK(text.status == 0);
  CHECK(has(text.out, "  plan:    2 kernels launched back to back"));
  CHECK(has(text.out, "GB/s = "));
  CHECK(has(text.out, "  kernel 1/2: "));
  CHECK(has(text.out, "  kernel 2/2: "));
  auto js = test::runLoom("bench " + fusion + " --iters 20 --json");
  INFO(js.out);
  CHECK(js.status == 0);
  CHECK(has(js.out, "{\"ok\": true, \"fusion\": \"ln_colstats\""));
  CHECK(has(js.out, "\"kernels\": 2, "));
  CHECK(has(js.out, "\"plan\": [{\"index\": 0, "));
  CHECK(has(js.out, "{\"index\": 1, "));
  CHECK(!has(js.out, "null"));  // every time and GB/s measured
  auto one = test::runLoom("bench layer_norm --dim N=4096 --dim D=1024 --iters 20 --json");
  INFO(one.out);
  CHECK(one.status == 0);
  CHECK(has(one.out, "\"kernels\": 1, \"kernel\": {\"name\": "));
  CHECK(has(one.out, "\"plan\": [{\"index\": 0, "));
  CHECK(!has(one.out, "{\"index\": 1, "));
}

TEST_CASE("loom bench --inputs/--save-outputs of a two-kernel plan: the outputs saved match the reference",
          "[gpu][bench]") {
  if (!test::haveGpu()) return;
  const int64_t n = 512, d = 768;
  const Bindings sizes{{"N", n}, {"D", d}};
  const fs::path dir = fmt::format("/tmp/loom_gpu_bench_io_{}", getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::vector<HostTensor> host{HostTensor::random(DType::F16, {n, d}, 11, -1.0, 1.0)};
  {
    std::ofstream bin(dir / "input.x.bin", std::ios::binary);
    bin.write(static_cast<const char*>(host[0].data()), static_cast<std::streamsize>(n * d * 2));
    std::ofstream(dir / "inputs.txt") << "x f16 " << n << "," << d << " input.x.bin\n";
  }
  auto r = test::runLoom("bench " + lnColstatsFile("io") + " --dim N=512 --dim D=768 --json --iters 5 --inputs " +
                         dir.string() + " --save-outputs " + dir.string());
  INFO(r.out);
  REQUIRE(r.status == 0);
  CHECK(has(r.out, "\"inputs_from_files\": true"));
  // outputs.txt: `name dtype d0,d1 file` per output, in the fusion's order.
  std::ifstream manifest(dir / "outputs.txt");
  std::vector<HostTensor> got;
  std::string name, dtype, shape, file;
  while (manifest >> name >> dtype >> shape >> file) {
    std::vector<int64_t> dims;
    std::stringstream ss(shape);
    for (std::string s; std::getline(ss, s, ',');) dims.push_back(std::stoll(s));
    HostTensor t = HostTensor::empty(dtype == "f16" ? DType::F16 : DType::F32, dims);
    std::ifstream in(dir / file, std::ios::binary);
    in.read(static_cast<char*>(t.storageData()), static_cast<std::streamsize>(t.nbytes()));
    CHECK(in.good());
    got.push_back(t);
  }
  REQUIRE(got.size() == 3);
  auto f = parseFusion(kLnColstats);
  checkAll(*f, host, sizes, got, "loom bench --save-outputs");
  fs::remove_all(dir);
}
