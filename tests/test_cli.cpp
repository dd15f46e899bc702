// The `loom` CLI as users meet it: exit statuses, one-line errors, the text round trip.
#include <catch2/catch.hpp>
#include <filesystem>

#include <algorithm>
#include <array>
#include <sys/wait.h>
#include <cstdio>
#include <fstream>
#include <string>

#include "runtime/cuda_driver.h"
#include "tests/cli_test_util.h"

namespace {

using Result = loom::test::CliResult;
using loom::test::runLoom;

std::string tmpFile(const std::string& name, const std::string& text) {
  std::string path = "/tmp/loom_cli_test_" + name;
  std::ofstream(path) << text;
  return path;
}

}  // namespace

TEST_CASE("loom examples lists every built-in, one line each", "[cli]") {
  auto r = runLoom("examples");
  CHECK(r.status == 0);
  for (const char* name : {"layer_norm", "rms_norm", "softmax", "group_norm", "batch_norm",
                           "instance_norm", "layer_norm_2d", "lstm_cell", "gru_cell"})
    CHECK(("\n" + r.out).find(std::string("\n") + name + " ") != std::string::npos);
}

TEST_CASE("loom print round-trips through a file", "[cli]") {
  auto a = runLoom("print group_norm");
  REQUIRE(a.status == 0);
  auto b = runLoom("print " + tmpFile("gn.loom", a.out));
  CHECK(b.status == 0);
  CHECK(a.out == b.out);
}

TEST_CASE("a malformed file gives line:col and a non-zero status", "[cli]") {
  std::string path = tmpFile("bad.loom", "fusion bad {\n  in x: f16[N]\n  y: f16[N] = neg(x\n  out y = y\n}\n");
  auto r = runLoom("print " + path);
  CHECK(r.status != 0);
  CHECK(r.out.find(path + ":4:") != std::string::npos);
  CHECK(r.out.find("error:") != std::string::npos);
}

TEST_CASE("a fusion that parses but is not valid is refused by eval as by segment", "[cli]") {
  std::string path = tmpFile("no_outputs.loom", "fusion nothing {\n  in x: f32[N]\n  t: f32[N] = neg(x)\n}\n");
  for (const char* cmd : {"eval", "segment"}) {
    auto r = runLoom(std::string(cmd) + " " + path + " --dim N=4");
    INFO(cmd);
    CHECK(r.status != 0);
    CHECK(r.out.find("has no outputs; declare at least one") != std::string::npos);
  }
}

TEST_CASE("every subcommand has --help and rejects unknown options", "[cli]") {
  for (const char* c : {"examples", "print", "eval", "dump", "segment", "run", "bench"}) {
    INFO(c);
    auto h = runLoom(std::string(c) + " --help");
    CHECK(h.status == 0);
    CHECK(h.out.find("usage: loom") != std::string::npos);
    auto bad = runLoom(std::string(c) + " layer_norm --frobnicate 3");
    CHECK(bad.status != 0);
    CHECK(bad.out.find("no option --frobnicate") != std::string::npos);
  }
  CHECK(runLoom("nonsense").status != 0);
}

TEST_CASE("eval, dump and segment work without a GPU", "[cli]") {
  auto e = runLoom("eval layer_norm --dim N=4 --dim D=64");
  CHECK(e.status == 0);
  CHECK(e.out.find("f16[4, 64]") != std::string::npos);
  auto d = runLoom("dump group_norm --stage domains");
  CHECK(d.status == 0);
  CHECK(d.out.find("atoms: N 32 C/32 H W") != std::string::npos);
  auto p = runLoom("dump bias_gelu --stage ptx --arch sm_90");
  CHECK(p.status == 0);
  CHECK(p.out.find("ld.global.nc.v4") != std::string::npos);
  auto s = runLoom("segment layer_norm --json");
  CHECK(s.status == 0);
  CHECK(s.out.find("\"segments\": [") != std::string::npos);
  // --bounds: each output's error bounds; a mean of all of random data is ill conditioned.
  auto text = tmpFile("mean_all.loom", "fusion m {\n  in x: f32[N]\n  t0: f32[] = mean(x, dims=[0])\n  out y = t0\n}\n");
  auto b = runLoom("eval " + text + " --dim N=100000 --bounds");
  INFO(b.out);
  CHECK(b.status == 0);
  CHECK(b.out.find("error bound: at most") != std::string::npos);
  auto bad = runLoom("eval layer_norm --dim Q=3");
  CHECK(bad.status != 0);
  CHECK(bad.out.find("has no size `Q`") != std::string::npos);
}

TEST_CASE("run without a GPU fails with one clear line", "[cli]") {
  if (loom::runtime::gpuAvailable()) return;  // on a GPU machine the [gpu] tests cover run
  auto r = runLoom("run lstm_cell");
  CHECK(r.status != 0);
  CHECK(r.out.find("no NVIDIA GPU found") != std::string::npos);
  CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
}

TEST_CASE("bench and run of a two-kernel fusion without a GPU say so, in JSON too", "[cli][bench]") {
  if (loom::runtime::gpuAvailable()) return;  // on a GPU machine test_gpu_bench.cpp covers them
  const std::string f = std::string(LOOM_SOURCE_DIR) + "/examples/fusions/ln_colsum.loom --dim N=64 --dim D=256";
  for (const char* cmd : {"run ", "bench "}) {
    INFO(cmd);
    auto r = runLoom(cmd + f);
    CHECK(r.status == 1);
    CHECK(r.out.rfind("loom: error: no NVIDIA GPU found", 0) == 0);
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  }
  auto j = runLoom("bench " + f + " --json");  // the JSON line on stdout, the error on stderr
  CHECK(j.status == 1);
  CHECK(j.out.find("{\"ok\": false, \"fusion\": \"ln_colsum\", \"error\": \"no NVIDIA GPU found") !=
        std::string::npos);
}

TEST_CASE("bench --sizes: a range of one size symbol, checked before the GPU is asked for", "[cli][bench]") {
  struct Case {
    const char* args;
    const char* says;
  };
  for (const Case& c : std::vector<Case>{
           {"layer_norm --sizes N", "--sizes N: expected K=FIRST:LAST or K=FIRST:LAST:STEP"},
           {"layer_norm --sizes Q=1:3", "--sizes Q=1:3: the fusion has no size `Q`"},
           {"layer_norm --sizes N=5:3", "--sizes N=5:3: FIRST is larger than LAST"},
           {"layer_norm --sizes N=1:3x", "--sizes N=1:3x: `3x` is not a whole number of at least 1"},
           {"layer_norm --sizes N=0:3", "`0` is not a whole number of at least 1"},
           {"layer_norm --sizes N=1:2:3:4", "expected FIRST:LAST or FIRST:LAST:STEP"},
           {"layer_norm --sizes N=1:100000", "more than 10000 sizes"},
           {"layer_norm --sizes N=1:3 --json", "--sizes times first calls only: it takes no --json"},
       }) {
    auto r = runLoom(std::string("bench ") + c.args);
    INFO(c.args << ": " << r.out);
    CHECK(r.status == 1);
    CHECK(r.out.find(c.says) != std::string::npos);
  }
  if (loom::runtime::gpuAvailable()) return;
  auto r = runLoom("bench layer_norm --sizes N=1:3 --dim D=64");
  CHECK(r.status == 1);
  CHECK(r.out.rfind("loom: error: no NVIDIA GPU found", 0) == 0);
}

TEST_CASE("run --batch: every line a case in one process, each with its result line", "[cli]") {
  const std::string path = (std::filesystem::temp_directory_path() / "loom_batch_test.txt").string();
  {
    std::ofstream out(path);
    out << "# a comment, then three cases\n"
        << "add --dim N=1000 --iters 0\n\n"
        << "layer_norm --dim Q=3\n"
        << "add --bogus 1\n";
  }
  auto r = runLoom("run --batch " + path);
  INFO(r.out);
  CHECK(r.out.find("== case 1: add --dim N=1000 --iters 0") != std::string::npos);
  CHECK(r.out.find("== result 2: error: --dim Q=3: fusion `layer_norm` has no size `Q`") != std::string::npos);
  CHECK(r.out.find("== result 3: error: `loom run` has no option --bogus") != std::string::npos);
  CHECK(r.out.find("== 3 cases, 0 mismatched or internal") != std::string::npos);
  CHECK(r.status == 0);
  if (!loom::runtime::gpuAvailable()) CHECK(r.out.find("== result 1: error: no NVIDIA GPU found") != std::string::npos);
  CHECK(runLoom("run --batch /nonexistent/batch.txt").out.find("--batch /nonexistent/batch.txt: cannot read the file") !=
        std::string::npos);
  std::filesystem::remove(path);
}

TEST_CASE("numeric options out of range or malformed name the option and the range", "[cli]") {
  // Before: `--sms 0` compiled for no SMs, `--seed -1` wrapped around, `--seed x` said only
  // "stoull", `--arch sm_90x` passed as sm_90, `--iters 5x` as 5.
  struct Case {
    const char* args;
    const char* says;
  };
  for (const Case& c : {Case{"dump layer_norm --stage ptx --sms 0", "--sms `0` must be a whole number from 1 to 1024"},
                        Case{"dump layer_norm --stage ptx --sms 99999999999", "--sms `99999999999` must be a whole number"},
                        Case{"dump layer_norm --stage ptx --arch sm_90x", "--arch `sm_90x` must look like sm_90"},
                        Case{"eval layer_norm --seed -1", "--seed `-1` must be a whole number from 0"},
                        Case{"eval layer_norm --seed x", "--seed `x` must be a whole number"},
                        Case{"bench layer_norm --iters 5x", "--iters `5x` must be a whole number from 1 to 1000000"},
                        Case{"run layer_norm --iters x", "--iters `x` must be a whole number from 0 to 1000000"},
                        Case{"eval layer_norm --dtype f8", "try f16, bf16, f32 or f64"}}) {
    INFO(c.args);
    auto r = runLoom(c.args);
    CHECK(r.status == 1);
    CHECK_THAT(r.out, Catch::StartsWith("loom: error: ") && Catch::Contains(c.says));
    CHECK(std::count(r.out.begin(), r.out.end(), '\n') == 1);
  }
  CHECK(runLoom("dump layer_norm --stage schedule --sms 7").status == 0);
}

TEST_CASE("a fusion with no outputs, or whose output is an input, is a user error everywhere", "[cli]") {
  // `loom segment` crashed on both (scripts/fuzz_text.py); `loom dump` and `run` refused them.
  const std::string none = tmpFile("no_outputs.loom", "fusion f {\n  in x: f16[N]\n  t0: f16[N] = neg(x)\n}\n");
  const std::string same = tmpFile("identity.loom", "fusion g {\n  in x: f16[N]\n  out y = x\n}\n");
  for (const char* cmd : {"segment", "dump"}) {
    INFO(cmd);
    const std::string stage = std::string(cmd) == "dump" ? " --stage ptx" : "";
    auto a = runLoom(std::string(cmd) + " " + none + " --dim N=8" + stage);
    CHECK(a.status == 1);
    CHECK(a.out.find("has no outputs") != std::string::npos);
    auto b = runLoom(std::string(cmd) + " " + same + " --dim N=8" + stage);
    CHECK(b.status == 1);
    CHECK(b.out.find("output `y` is input `x` itself") != std::string::npos);
  }
}

TEST_CASE("a tuning knob set in the environment takes effect, and a bad one is a user error", "[cli]") {
  auto plain = runLoom("dump layer_norm --stage ptx");
  REQUIRE(plain.status == 0);
  auto tuned = runLoom("dump layer_norm --stage ptx", "LOOM_TUNE_THREADS_PER_ROW=64");
  CHECK(tuned.status == 0);
  CHECK(tuned.out != plain.out);
  for (const char* env : {"LOOM_TUNE_THREADS_PER_ROW=abc", "LOOM_TUNE_THREADS_PER_ROW=0"}) {
    auto bad = runLoom("dump layer_norm --stage ptx", env);
    INFO(bad.out);
    CHECK(bad.status == 1);
    CHECK(bad.out.find(std::string("loom: error: ") + env + " is not a valid setting: it takes a whole number "
                       "from 1 to 1024") != std::string::npos);
  }
  auto sw = runLoom("dump layer_norm --stage schedule", "LOOM_NO_SMEM_ROWS=yes");
  CHECK(sw.status == 1);
  CHECK(sw.out.find("LOOM_NO_SMEM_ROWS=yes is not a valid setting") != std::string::npos);
}

TEST_CASE("kernel replay lists a kernel whose PTX changed and fails", "[cli]") {
  const std::string corpus = tmpFile("replay_corpus.txt",
                                     "# two fusions\nln layer_norm f16 N=64,D=1024 -\nadd add f32 N=1000 -\n");
  const std::string base = "/tmp/loom_cli_test_replay_base.txt";
  const std::string common = corpus + " --target sm_90/132 --baseline " + base;
  auto w = runLoom("replay " + common + " --update");
  REQUIRE(w.status == 0);
  auto same = runLoom("replay " + common);
  CHECK(same.status == 0);
  CHECK(same.out.find("2 kernels, 0 kernels changed") != std::string::npos);
  // Other generated code for the layer norm (a tuning override), the baseline untouched.
  auto other = runLoom("replay " + common, "LOOM_TUNE_THREADS_PER_ROW=64");
  CHECK(other.status == 1);
  CHECK(other.out.find("changed  sm_90/132 ln k0") != std::string::npos);
  CHECK(other.out.find("add k0") == std::string::npos);
  CHECK(other.out.find("2 kernels, 1 kernels changed") != std::string::npos);
  // A kernel the baseline lacks, and one it has that the corpus no longer makes.
  std::ofstream(corpus) << "ln layer_norm f16 N=64,D=1024 -\nsm softmax f16 - -\n";
  auto moved = runLoom("replay " + common);
  CHECK(moved.status == 1);
  CHECK(moved.out.find("new      sm_90/132 sm k0") != std::string::npos);
  CHECK(moved.out.find("gone     sm_90/132 add k0") != std::string::npos);
  auto bad = runLoom("replay " + corpus + " --baseline " + base);
  CHECK(bad.status == 1);
  CHECK(bad.out.find("needs --target ARCH/SMS") != std::string::npos);
  // `+symbolic`: the kernels taking their leading size at run time, against the exact baseline:
  // the layer norm's rows are a parameter of its kernel there.
  auto sym = runLoom("replay " + corpus + " --target sm_90/132+symbolic --baseline " + base);
  CHECK(sym.status == 1);
  CHECK(sym.out.find("changed  sm_90/132+symbolic ln k0") != std::string::npos);
  auto variant = runLoom("replay " + corpus + " --target sm_90/132+fast --baseline " + base);
  CHECK(variant.status == 1);
  CHECK(variant.out.find("the one variant after `+` is `symbolic`") != std::string::npos);
}

TEST_CASE("sizes at the limits: counts that do not fit are clear errors naming the tensor", "[cli]") {
  auto past = runLoom("segment layer_norm --dim N=4611686018427387904 --dim D=4");
  CHECK(past.status == 1);
  CHECK(past.out.find("`x` f16[N, D] = f16[4611686018427387904, 4] has more than 2^63 - 1 elements") !=
        std::string::npos);
  auto bytes = runLoom("dump add --dim N=9223372036854775807 --stage ptx");
  CHECK(bytes.status == 1);
  CHECK(bytes.out.find("would take 18446744073709551614 bytes, past the 140737488355328 bytes (2^47") !=
        std::string::npos);
  CHECK(bytes.out.find(".entry") == std::string::npos);
  // 2^31 - 1, 2^31 and 2^32 elements compile (32- and 64-bit indexing), as does the last size
  // whose bytes fit.
  for (const char* n : {"2147483647", "2147483648", "4294967296", "70368744177663"}) {
    auto ok = runLoom(std::string("dump add --stage ptx --dim N=") + n);
    INFO(n << ": " << ok.out.substr(0, 300));
    CHECK(ok.status == 0);
    CHECK(ok.out.find(".entry loom_add") != std::string::npos);
  }
  // 2^46 f16 elements take exactly 2^47 bytes; one more is past them.
  CHECK(runLoom("dump add --stage ptx --dim N=70368744177664").status == 0);
  auto one_more = runLoom("dump add --stage ptx --dim N=70368744177665");
  CHECK(one_more.status == 1);
  CHECK(one_more.out.find("`x` f16[N] = f16[70368744177665] would take 140737488355330 bytes") != std::string::npos);
  // A normalization kernel's blocks past the launch limit: 2^38 rows of 4, 128 rows a block, is
  // 2^31 blocks; 2^38 - 128 rows is the last size that launches.
  auto grid = runLoom("dump layer_norm --stage ptx --dim N=274877906944 --dim D=4");
  CHECK(grid.status == 1);
  CHECK(grid.out.find("would launch 2147483648 blocks at these sizes, past the 2147483647 (2^31 - 1)") !=
        std::string::npos);
  CHECK(runLoom("segment layer_norm --dim N=274877906944 --dim D=4").status == 1);
  CHECK(runLoom("dump layer_norm --stage schedule --dim N=274877906816 --dim D=4").status == 0);
}
