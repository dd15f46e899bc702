#pragma once
// Two error channels (DESIGN.md): loom::Error is bad user input and says what was wrong, where,
// and what would be right; loom::InternalError is a compiler bug and says so.
#include <fmt/format.h>

#include <stdexcept>
#include <string>

namespace loom {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what)
      : std::logic_error("loom internal error (a bug in loom, please report it): " + what) {}
};

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
