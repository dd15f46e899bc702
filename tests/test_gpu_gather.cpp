// [gpu]: gather and index_select on the GPU equal the reference's values exactly (the picked
// elements, NaN and -0 included), and a row's cross-entropy loss beside them to tolerance, in
// every case of tests/gather_fusions.h.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstring>

#include "tests/gather_fusions.h"
#include "tests/gpu_test_util.h"

using namespace loom;

TEST_CASE("gather and index_select on the GPU pick the reference's elements", "[gpu][gather]") {
  if (!test::haveGpu()) return;
  for (const auto& c : test::gatherCases()) {
    std::string sizes;
    for (const auto& [k, v] : c.sizes) sizes += fmt::format("{}={} ", k, v);
    INFO(c.f->name() << " " << dtypeName(c.f->inputs()[0]->dtype()) << " " << sizes);
    std::vector<HostTensor> host = test::randomHostInputs(*c.f, c.sizes, {}, 5, -4.0, 4.0);
    // Indices over the whole dim, its first and last elements included.
    const int64_t extent = c.sizes.at(c.picks_from);
    HostTensor& index = host[1];
    for (int64_t i = 0; i < index.numel(); ++i) {
      const uint64_t h = (static_cast<uint64_t>(i) + 1) * 0x9e3779b97f4a7c15ULL;
      index.setLinear(i, i == 0 ? static_cast<double>(extent - 1) : static_cast<double>((h >> 17) % static_cast<uint64_t>(extent)));
    }
    HostTensor& x = host[0];
    if (isFloat(x.dtype()) && x.numel() > 4) {
      x.setLinear(0, std::nan(""));
      x.setLinear(1, -0.0);
    }
    const auto ref = evaluateReference(*c.f, host, c.sizes);
    Executor ex(*c.f);
    for (int launch = 1; launch <= 2; ++launch) {
      INFO("launch " << launch);
      const std::vector<HostTensor> outs = test::runCheckedOutputs(ex, *c.f, c.sizes, host, ref);
      // The picked elements bit for bit (the loss is a computation, checked to tolerance above).
      for (size_t i = 0; i < outs.size(); ++i) {
        if (c.f->outputs()[i].name == "loss") continue;
        const HostTensor& got = outs[i];
        size_t bad = 0;
        for (int64_t j = 0; j < got.numel(); ++j) {
          const double a = got.getLinear(j), b = ref[i].getLinear(j);
          if (!((std::isnan(a) && std::isnan(b)) || (a == b && std::signbit(a) == std::signbit(b)))) ++bad;
        }
        INFO("output " << c.f->outputs()[i].name << ": " << bad << " of " << got.numel() << " differ");
        CHECK(bad == 0);
      }
    }
  }
}
