#pragma once
// Shared by the CPU-only compiler tests: the inputs a run with these sizes and memory orders
// would see (runtime/bind_sizes.h describeInputs).
#include <cstdlib>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/codegen/ptxas_check.h"
#include "compiler/compile_options.h"
#include "compiler/tensor_desc.h"
#include "frontend/internal_api.h"
#include "runtime/environment_options.h"

// ptxas accepts `ptx` (args as loom::test::ptxasErrors's: PTX, sm, and optionally where to put
// the bytes spilled); its complaint is the failure's message.
#define LOOM_CHECK_PTXAS(...)                                         \
  do {                                                                \
    const std::string ptxas_err_ = ::loom::test::ptxasErrors(__VA_ARGS__); \
    INFO(ptxas_err_);                                                 \
    CHECK(ptxas_err_.empty());                                        \
  } while (0)

namespace loom::test {

// codegen::ptxasCheck with the ptxas $LOOM_PTXAS names (else the toolkit's), temp files under
// $TMPDIR: the tests' boundary with the environment.
inline std::string ptxasErrors(const std::string& ptx, int sm, int* spill_bytes = nullptr) {
  return codegen::ptxasCheck(ptx, sm, ptxasFromEnvironment(), spill_bytes);
}

// Whether `text` (a dump, a schedule's reason, PTX) contains `what`.
inline bool has(const std::string& text, const std::string& what) { return text.find(what) != std::string::npos; }

// sm_90 with 132 SMs, kernels taking their leading size at run time (LOOM_TUNE_SYMBOLIC).
inline CompileOptions symbolicOptions() {
  CompileOptions o{{90, 132}};
  o.tuning.symbolic = true;
  return o;
}

inline std::vector<TensorDesc> descsFor(const ir::Fusion& f, const Bindings& sizes,
                                        const std::map<std::string, std::vector<int>>& layouts = {}) {
  return describeInputs(f, sizes, layouts);
}

// Sets (or, with nullopt, unsets) an environment variable for one scope and puts back what was
// there when the scope ends, also when a failed REQUIRE throws through it.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, std::optional<std::string> value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    if (value) setenv(name, value->c_str(), 1);
    else unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_.c_str(), old_->c_str(), 1);
    else unsetenv(name_.c_str());
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  std::string name_;
  std::optional<std::string> old_;
};

}  // namespace loom::test
