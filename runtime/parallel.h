#pragma once
// fn(r, begin, end) for the ranges r = 0, 1, ... of `range` elements that cover [0, n), on up
// to the machine's cores. Each range is visited once, in no particular order: callers that
// combine results keep one per range and combine them in range order, so that the answer does
// not depend on the number of threads. An exception thrown by fn stops the handing out of
// ranges, and the first one is rethrown here once every thread has joined.
#include <algorithm>
#include <atomic>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <vector>

namespace loom::runtime {

template <typename Fn>
void parallelForRanges(int64_t n, int64_t range, Fn fn) {
  const int64_t ranges = (n + range - 1) / range;
  const int64_t workers = std::min<int64_t>(ranges, std::max(1u, std::thread::hardware_concurrency()));
  if (workers <= 1) {
    for (int64_t r = 0; r < ranges; ++r) fn(r, r * range, std::min(n, (r + 1) * range));
    return;
  }
  std::atomic<int64_t> next{0};
  std::exception_ptr error;
  std::mutex error_mu;
  std::vector<std::thread> pool;
  for (int64_t w = 0; w < workers; ++w)
    pool.emplace_back([&] {
      try {
        for (int64_t r; (r = next++) < ranges;) fn(r, r * range, std::min(n, (r + 1) * range));
      } catch (...) {
        std::lock_guard<std::mutex> lock(error_mu);
        if (!error) error = std::current_exception();
        next = ranges;  // hand out no more
      }
    });
  for (auto& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace loom::runtime
