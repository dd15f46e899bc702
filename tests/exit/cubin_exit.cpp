// A process that exits while cubins are still queued (runtime/cubin_worker.h) must exit
// cleanly, with every queued cubin made and stored: nvJitLink's statics once went before the
// worker that was still using them (a crash at exit, after 100 sizes of `loom bench --sizes`).
// No GPU needed. Run twice by ctest (cubin_exit):
//   cubin_exit queue N   compiles N sizes of layer_norm for sm_90, queues each, returns at once
//   cubin_exit check N   every one of them is in the disk cache with its cubin
// Exits 77 (skipped) where no nvJitLink is found.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "compiler/compile.h"
#include "frontend/internal_api.h"
#include "runtime/cubin_worker.h"
#include "runtime/kernel_cache.h"
#include "runtime/ptx_compiler.h"
#include "tests/compile_test_util.h"

using namespace loom;

int main(int argc, char** argv) {
  if (argc != 3 || (std::strcmp(argv[1], "queue") != 0 && std::strcmp(argv[1], "check") != 0)) {
    std::fprintf(stderr, "usage: cubin_exit queue|check N\n");
    return 2;
  }
  const bool queue = std::strcmp(argv[1], "queue") == 0;
  // Only `check` asks for nvJitLink: opened by `queue` before its first cubin, it would hide
  // the order this test is about.
  std::string why;
  if (!queue && !runtime::ptxCompilerAvailable(&why)) {
    std::printf("no nvJitLink: skipped (%s)\n", why.c_str());
    return 77;
  }
  const int n = std::atoi(argv[2]);
  const Example* e = findExample("layer_norm");
  auto f = e->buildDefault();
  int missing = 0;
  for (int i = 0; i < n; ++i) {
    Bindings sizes = e->default_sizes;
    sizes["N"] = 1000 + i;
    const std::string key = "cubin_exit_" + std::to_string(i);
    if (queue) {
      auto k = compileFusion(*f, sizes, test::descsFor(*f, sizes), CompileOptions{{90, 132}});
      runtime::makeCubinLater(key, k, 90);
      continue;
    }
    auto k = runtime::diskCacheLoad(key);
    if (!k || k->cubin_sm != 90 || k->cubin.empty()) {
      std::printf("size %d: %s\n", i, k ? "stored without its cubin" : "not stored");
      ++missing;
    }
  }
  if (!queue) std::printf("%d of %d cubins stored\n", n - missing, n);
  return missing ? 1 : 0;  // queue: returns with the cubins still being made
}
