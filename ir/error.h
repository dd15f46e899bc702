#pragma once
// The error channels (include/loom/error.h; docs/contributing.md, "Code style") and how loom's code raises them.
#include <fmt/format.h>

#include <loom/error.h>

namespace loom {

template <typename... Args>
[[noreturn]] void fail(fmt::format_string<Args...> f, Args&&... args) {
  throw Error(fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace loom

// A user error: `LOOM_USER_CHECK(cond, "fmt", args...)` throws loom::Error.
#define LOOM_USER_CHECK(cond, ...)     \
  do {                                 \
    if (!(cond)) ::loom::fail(__VA_ARGS__); \
  } while (0)

// An internal invariant: failing it is a loom bug, never the user's fault.
#define LOOM_ASSERT(cond, ...)                                                           \
  do {                                                                                   \
    if (!(cond))                                                                         \
      throw ::loom::InternalError(fmt::format("{}:{}: `{}` failed: {}", __FILE__, __LINE__, \
                                              #cond, fmt::format(__VA_ARGS__)));         \
  } while (0)
