// Means and variances of rows that hold inf or NaN, on every statistics path of the
// normalization scheduler: the GPU must give the reference's inf, -inf or NaN, never a NaN
// where the mean is infinite (the shifted mean's first element and Chan's merge of two
// infinite means both made inf - inf; found by the GPU soak, seed 1, cases 1429 and 8404).
#include <cmath>
#include <limits>

#include "tests/gpu_test_util.h"

using namespace loom;

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// x[R, D] (its rows strided along D where `columns`: x is [D, R] in memory, reduced over its
// outer dim) with mean and var_mean over D. Rows 0..4: +inf first, +inf last, -inf in the
// middle, +inf and -inf (NaN), NaN; the rest random.
void checkRows(int64_t R, int64_t D, bool columns, DType dt) {
  FusionBuilder fb("nonfinite");
  auto x = columns ? fb.input("x", dt, {"D", "R"}) : fb.input("x", dt, {"R", "D"});
  const int red = columns ? 0 : 1;
  auto xf = cast(x, DType::F32);
  fb.output("m", mean(xf, {red}));
  auto vm = var_mean(xf, {red}, /*correction=*/1);
  fb.output("var", vm.var);
  fb.output("vmean", vm.mean);
  auto f = fb.finish();
  const Bindings sizes{{"R", R}, {"D", D}};
  auto host = test::randomHostInputs(*f, sizes, {}, 7);
  auto at = [&](int64_t r, int64_t d) { return columns ? std::vector<int64_t>{d, r} : std::vector<int64_t>{r, d}; };
  host[0].set(at(0, 0), kInf);
  host[0].set(at(1, D - 1), kInf);
  host[0].set(at(2, D / 2), -kInf);
  host[0].set(at(3, 0), kInf);
  host[0].set(at(3, D - 1), -kInf);
  host[0].set(at(4, D / 3), std::numeric_limits<double>::quiet_NaN());
  INFO("R=" << R << " D=" << D << (columns ? " (rows strided)" : "") << " " << dtypeName(dt));
  test::checkOnGpuWith(*f, sizes, host);
}

}  // namespace

TEST_CASE("gpu: means and variances of rows holding inf and NaN, every statistics path", "[gpu][nonfinite]") {
  if (!test::haveGpu()) return;
  // The tiers `loom segment` gave these on an H100 (sm_90, 132 SMs).
  checkRows(64, 6, false, DType::F32);        // registers, a chunk of 2 a thread (case 8404)
  checkRows(37, 1531, false, DType::F16);     // registers
  checkRows(9001, 256, false, DType::BF16);   // thread fill
  checkRows(6, 65544, false, DType::F16);     // shared memory
  checkRows(5, 65544, false, DType::BF16);    // cluster
  checkRows(5, 1048584, false, DType::F32);   // grid
  checkRows(512, 127, true, DType::F32);      // vectors of rows (case 1429)
  checkRows(64, 262147, true, DType::F16);    // vectors of rows over the grid
  checkRows(5, 200003, true, DType::F32);     // grid sets cut short
  checkRows(8, 1000003, true, DType::F16);    // streamed: Welford's merges
}
