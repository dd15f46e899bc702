// The C ABI's GPU half (include/loom/loom_c.h): runners over loom::Executor, on the caller's
// device pointers and CUDA stream.
#include <mutex>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "capi/capi_internal.h"
#include "ir/json.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/executor.h"

using namespace loom;
using capi::guard;
using capi::need;

struct loom_runner {
  std::shared_ptr<const ir::Fusion> fusion;
  Bindings sizes;
  std::unique_ptr<Executor> exec;
  std::vector<std::string> in_names, out_names;
  // The last run's tensors and their signature (appendTensor): a run whose structs repeat it
  // (repeatsLast) only rebinds the pointers (no names formatted, no vectors built), then runs
  // as any other.
  std::vector<DeviceTensor> ins, outs;
  std::vector<int64_t> signature;
  // A runner serves one call at a time (its tensors above, the Executor's entries and stream):
  // calls from several threads wait their turn instead of racing.
  std::mutex mu;
};

namespace {

// Whether `sig` from `at` on holds `t`'s signature as appendTensor writes it, advancing `at`
// past it; false at the first difference.
bool matchTensor(const loom_tensor& t, const std::vector<int64_t>& sig, size_t& at) {
  auto next = [&](int64_t v) { return at < sig.size() && sig[at++] == v; };
  if (!next(t.dtype) || !next(t.ndim) || t.ndim < 0 || t.ndim > 64) return false;
  if (t.ndim > 0 && !t.shape) return false;
  for (int32_t d = 0; d < t.ndim; ++d)
    if (!next(t.shape[d])) return false;
  if (!next(t.strides ? 1 : -1)) return false;
  for (int32_t d = 0; t.strides && d < t.ndim; ++d)
    if (!next(t.strides[d])) return false;
  return true;
}

// Appends `t`'s dtype, ndim, sizes, then 1 and its strides (-1 for NULL: row-major) to `sig`.
void appendTensor(const loom_tensor& t, std::vector<int64_t>& sig) {
  sig.push_back(t.dtype);
  sig.push_back(t.ndim);
  for (int32_t d = 0; d < t.ndim; ++d) sig.push_back(t.shape[d]);
  sig.push_back(t.strides ? 1 : -1);
  for (int32_t d = 0; t.strides && d < t.ndim; ++d) sig.push_back(t.strides[d]);
}

// Whether these structs have the last run's signature (then the runner's tensors are theirs,
// pointers apart).
bool repeatsLast(const loom_runner& r, const loom_tensor* inputs, size_t n_inputs, const loom_tensor* outputs,
                 size_t n_outputs) {
  if (r.signature.empty() || n_inputs != r.ins.size() || n_outputs != r.outs.size() ||
      n_inputs != r.in_names.size() || n_outputs != r.out_names.size())
    return false;
  if ((n_inputs && !inputs) || (n_outputs && !outputs)) return false;
  size_t at = 0;
  for (size_t i = 0; i < n_inputs; ++i)
    if (!matchTensor(inputs[i], r.signature, at)) return false;
  for (size_t i = 0; i < n_outputs; ++i)
    if (!matchTensor(outputs[i], r.signature, at)) return false;
  return at == r.signature.size();
}

void needGpu() {
  std::string why;
  if (!runtime::gpuAvailable(&why)) throw capi::NoGpuError("no GPU found: " + why);
}

// How errors name tensor `i` of `what` ("input", "output"): by its name where it has one.
std::string tensorWhere(const char* what, const std::vector<std::string>& names, size_t i) {
  return i < names.size() ? fmt::format("{} `{}`", what, names[i]) : fmt::format("{} {}", what, i);
}

// `body`, a user error from it rethrown with `where()` in front.
template <typename Body, typename Where>
void naming(Body&& body, Where&& where) {
  try {
    body();
  } catch (const Error& e) {
    throw Error(fmt::format("{}: {}", where(), e.what()));
  }
}

// The caller's device memory as loom's tensors (wrapped, never freed by loom).
std::vector<DeviceTensor> wrapAll(const loom_tensor* ts, size_t n, const char* what,
                                  const std::vector<std::string>& names) {
  if (n > 0) need(ts, "loom_runner", what);
  std::vector<DeviceTensor> out;
  for (size_t i = 0; i < n; ++i) {
    const std::string where = tensorWhere(what, names, i);
    const loom_tensor& t = ts[i];
    const DType dt = capi::dtypeOf(t.dtype, where);
    std::vector<int64_t> shape = capi::shapeOf(t, where), strides = capi::stridesOf(t, where);
    naming([&] { out.push_back(DeviceTensor::wrap(reinterpret_cast<uintptr_t>(t.data), dt, std::move(shape),
                                                  std::move(strides))); },
           [&] { return where; });
  }
  return out;
}

std::vector<DeviceTensor> runnerInputs(const loom_runner& r, const loom_tensor* inputs, size_t n) {
  const size_t want = r.fusion->inputs().size();
  LOOM_USER_CHECK(n == want, "fusion `{}` takes {} inputs, {} given", r.fusion->name(), want, n);
  return wrapAll(inputs, n, "input", r.in_names);
}

// The call's tensors in the runner: rebound where the structs repeat the last call's signature,
// else wrapped and checked afresh (and that signature kept).
void bindCall(loom_runner& r, const loom_tensor* inputs, size_t n_inputs, const loom_tensor* outputs,
              size_t n_outputs) {
  if (repeatsLast(r, inputs, n_inputs, outputs, n_outputs)) {
    auto rebindAll = [](std::vector<DeviceTensor>& ts, const loom_tensor* cs, const char* what,
                        const std::vector<std::string>& names) {
      for (size_t i = 0; i < ts.size(); ++i)
        naming([&] { ts[i].rebind(reinterpret_cast<uintptr_t>(cs[i].data)); },
               [&] { return tensorWhere(what, names, i); });
    };
    rebindAll(r.ins, inputs, "input", r.in_names);
    rebindAll(r.outs, outputs, "output", r.out_names);
    return;
  }
  r.signature.clear();
  r.ins = runnerInputs(r, inputs, n_inputs);
  r.outs = wrapAll(outputs, n_outputs, "output", r.out_names);
  for (size_t i = 0; i < n_inputs; ++i) appendTensor(inputs[i], r.signature);
  for (size_t i = 0; i < n_outputs; ++i) appendTensor(outputs[i], r.signature);
}

}  // namespace

extern "C" {

int32_t loom_gpu_available(void) { return runtime::gpuAvailable() ? 1 : 0; }

loom_status loom_select_device(int32_t device) {
  return guard([&] {
    needGpu();
    runtime::selectDevice(device);
  });
}

int32_t loom_selected_device(void) { return runtime::selectedDevice(); }

loom_status loom_pointer_device(const void* ptr, int32_t* device) {
  return guard([&] {
    need(device, "loom_pointer_device", "device");
    if (!ptr) throw capi::ArgumentError("loom_pointer_device: `ptr` is NULL");
    needGpu();
    *device = runtime::pointerDevice(ptr, "loom_pointer_device: ptr");
  });
}

loom_status loom_runner_create(const loom_fusion* f, const loom_options* o, loom_runner** out) {
  return guard([&] {
    need(f, "loom_runner_create", "fusion");
    need(out, "loom_runner_create", "out");
    auto r = std::make_unique<loom_runner>();
    r->fusion = f->fusion;
    if (o) r->sizes = o->sizes;
    r->exec = std::make_unique<Executor>(*r->fusion, o ? o->tuning : Tuning{});
    for (const ir::Value* v : r->fusion->inputs()) r->in_names.push_back(v->name());
    for (const auto& o : r->fusion->outputs()) r->out_names.push_back(o.name);
    *out = r.release();
  });
}

void loom_runner_free(loom_runner* r) { delete r; }

loom_status loom_runner_outputs_json(loom_runner* r, const loom_tensor* inputs, size_t n_inputs, char** out) {
  return guard([&] {
    need(r, "loom_runner_outputs_json", "runner");
    need(out, "loom_runner_outputs_json", "out");
    std::lock_guard<std::mutex> lock(r->mu);
    const std::vector<DeviceTensor> ins = runnerInputs(*r, inputs, n_inputs);
    needGpu();
    const CompiledPlan& plan = r->exec->planFor(ins, r->sizes);
    std::vector<std::string> outs;
    for (size_t i = 0; i < plan.outputs.size(); ++i) {
      const TensorDesc& d = plan.outputs[i];
      outs.push_back(fmt::format("{{\"name\": {}, \"dtype\": {}, \"shape\": {}, \"strides\": {}, \"alias\": {}}}",
                                 jsonStr(r->fusion->outputs()[i].name), jsonStr(std::string(dtypeName(d.dtype))),
                                 jsonInts(d.shape), jsonInts(d.strides), plan.output_alias[i]));
    }
    *out = capi::newString(
        fmt::format("{{\"outputs\": [{}], \"kernels\": {}}}", fmt::join(outs, ", "), plan.kernels.size()));
  });
}

loom_status loom_runner_run(loom_runner* r, const loom_tensor* inputs, size_t n_inputs, const loom_tensor* outputs,
                            size_t n_outputs, uintptr_t stream) {
  return guard([&] {
    need(r, "loom_runner_run", "runner");
    std::lock_guard<std::mutex> lock(r->mu);
    try {
      bindCall(*r, inputs, n_inputs, outputs, n_outputs);
      needGpu();
      r->exec->setStream(stream);
      r->exec->runInto(r->ins, r->outs, r->sizes);
    } catch (...) {
      r->signature.clear();  // a call refused: the next one checks every struct again
      throw;
    }
  });
}

}  // extern "C"
