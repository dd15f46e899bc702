#include "tools/loom/bench_timing.h"

#include <algorithm>
#include <vector>

namespace loom::cli {

namespace {
constexpr double kWarmupMs = 25, kRepMs = 100;  // do_bench's defaults
constexpr int kMaxReps = 10000;
}  // namespace

Timing timeLikeDoBench(const std::function<void()>& fn, runtime::DeviceBuffer& flush, int fixed_reps) {
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

}  // namespace loom::cli
