// [gpu]: argmax and argmin on the GPU equal the reference's indices exactly (first extreme of
// ties, the first NaN where a row has one, infinities, -0 and 0 as equals), in every case of tests/arg_fusions.h;
// the other outputs of their kernels to tolerance.
#include <catch2/catch.hpp>

#include "tests/arg_fusions.h"
#include "tests/gpu_test_util.h"

using namespace loom;

namespace {

// Random values (ties are common once rounded to f16), with NaN, +inf and -inf each at about one
// element in 3 * `reduced`: about a third of the reductions meet one. In `zeros` mode the values
// are in [lo, hi) (one side of zero) with -0 and 0 as often, so that a row's extreme is a zero and
// the first zero wins whatever its sign.
std::vector<HostTensor> inputsWithSpecials(const ir::Fusion& f, const Bindings& sizes,
                                           const std::map<std::string, std::vector<int>>& layouts, int64_t reduced,
                                           bool zeros, double lo, double hi) {
  std::vector<HostTensor> host = test::randomHostInputs(f, sizes, layouts, 7, lo, hi);
  HostTensor& x = host[0];
  if (!isFloat(x.dtype())) return host;
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> specials = zeros ? std::vector<double>{-0.0, 0.0, -0.0} : std::vector<double>{std::nan(""), inf, -inf};
  const uint64_t every = static_cast<uint64_t>(3 * std::max<int64_t>(reduced, 1));
  for (int64_t i = 0; i < x.numel(); ++i) {
    const uint64_t h = (static_cast<uint64_t>(i) + 1) * 0x9e3779b97f4a7c15ULL;
    if ((h >> 20) % every < 3) x.setLinear(i, specials[(h >> 12) % 3]);
  }
  return host;
}

}  // namespace

TEST_CASE("argmax and argmin on the GPU are the reference's indices", "[gpu][arg]") {
  if (!test::haveGpu()) return;
  for (const auto& c : test::argCases()) {
    std::string sizes;
    for (const auto& [k, v] : c.sizes) sizes += fmt::format("{}={} ", k, v);
    const std::vector<int> order = c.layouts.count("x") ? c.layouts.at("x") : std::vector<int>{};
    INFO(c.f->name() << " " << dtypeName(c.f->inputs()[0]->dtype()) << " " << sizes << "order "
                     << (order.empty() ? 0 : order[1]));
    const int64_t reduced = c.f->name() == "arg_extremes_4d" ? c.sizes.at("C") : c.sizes.at("D");
    Executor ex(*c.f);
    // Launch 1 and 2: the same specials twice; 3 and 4: zeros as the largest, then the smallest.
    for (int launch = 1; launch <= 4; ++launch) {
      INFO("launch " << launch);
      const bool zeros = launch > 2;
      const auto host = inputsWithSpecials(*c.f, c.sizes, c.layouts, reduced, zeros, launch == 3 ? -4.0 : zeros ? 1.0 : -4.0,
                                           launch == 3 ? -1.0 : 4.0);
      const auto ref = evaluateReference(*c.f, host, c.sizes);
      const std::vector<HostTensor> outs = test::runCheckedOutputs(ex, *c.f, c.sizes, host, ref);
      for (size_t i = 0; i < outs.size(); ++i) {
        if (ref[i].dtype() != DType::I64) continue;
        const std::vector<double> got = outs[i].toVector(), want = ref[i].toVector();
        REQUIRE(got.size() == want.size());
        size_t bad = 0, first = got.size();
        for (size_t j = 0; j < got.size(); ++j)
          if (got[j] != want[j] && bad++ == 0) first = j;
        INFO("output " << c.f->outputs()[i].name << ": " << bad << " of " << got.size() << " indices differ"
                       << (bad ? fmt::format("; first at {}: {} for {}", first, got[first], want[first]) : ""));
        CHECK(bad == 0);
      }
    }
  }
}
