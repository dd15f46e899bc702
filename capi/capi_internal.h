#pragma once
// What the C ABI's files (capi/*.cpp) share: the handles behind include/loom/loom_c.h's opaque
// types, the guard that turns C++ exceptions into a status and the thread's last error, and
// the checks of the caller's arguments.
#include <loom/loom_c.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "compiler/compile.h"
#include "ir/error.h"
#include "ir/fusion.h"
#include "runtime/host_tensor.h"

struct loom_fusion {
  std::shared_ptr<const loom::ir::Fusion> fusion;
  loom::Bindings default_sizes;  // a built-in's; empty for text
};

struct loom_options {
  loom::Bindings sizes;
  std::map<std::string, std::string> layouts;  // input name -> layout text
  int sm = 90, sm_count = 132;
  loom::Tuning tuning;
};

struct loom_results {
  std::vector<loom::HostTensor> tensors;
};

namespace loom::capi {

// A bad argument (a NULL pointer, a count out of range): LOOM_ERROR_ARGUMENT.
struct ArgumentError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};
// Running needs a GPU: LOOM_ERROR_NO_GPU.
struct NoGpuError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs `fn`, returning LOOM_OK, or the status of what it threw with the message kept as the
// thread's last error. Nothing escapes: C callers cannot catch.
template <typename Fn>
loom_status guard(Fn&& fn) noexcept;

void setLastError(const std::string& msg);
const char* lastError();

// `p` is not NULL, else an ArgumentError naming the function and the parameter.
template <typename T>
T* need(T* p, const char* fn, const char* param) {
  if (!p) throw ArgumentError(std::string(fn) + ": `" + param + "` is NULL");
  return p;
}

// A new string for `char** out` (the caller frees it with loom_string_free).
char* newString(const std::string& s);

// The DType of a loom_tensor's dtype field, or an ArgumentError naming `where`.
DType dtypeOf(int32_t d, const std::string& where);
// The shape and strides (row-major where NULL) of `t`, checked: 0 <= ndim <= 64, sizes >= 0,
// strides >= 0.
std::vector<int64_t> shapeOf(const loom_tensor& t, const std::string& where);
std::vector<int64_t> stridesOf(const loom_tensor& t, const std::string& where);

// The sizes for compile-only calls: the options' over a built-in's defaults.
Bindings sizesFor(const loom_fusion& f, const loom_options* o);

template <typename Fn>
loom_status guard(Fn&& fn) noexcept {
  try {
    fn();
    return LOOM_OK;
  } catch (const ArgumentError& e) {
    setLastError(e.what());
    return LOOM_ERROR_ARGUMENT;
  } catch (const NoGpuError& e) {
    setLastError(e.what());
    return LOOM_ERROR_NO_GPU;
  } catch (const Error& e) {
    setLastError(e.what());
    return LOOM_ERROR_INPUT;
  } catch (const InternalError& e) {
    setLastError(e.what());
    return LOOM_ERROR_INTERNAL;
  } catch (const std::bad_alloc&) {
    setLastError("out of host memory");
    return LOOM_ERROR_INPUT;
  } catch (const std::exception& e) {
    setLastError(std::string("loom internal error (a bug in loom, please report it): ") + e.what());
    return LOOM_ERROR_INTERNAL;
  } catch (...) {
    setLastError("loom internal error (a bug in loom, please report it): an unknown exception");
    return LOOM_ERROR_INTERNAL;
  }
}

}  // namespace loom::capi
