// The C ABI's GPU half (include/loom/loom_c.h): runners over loom::Executor, on the caller's
// device pointers and CUDA stream.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "capi/capi_internal.h"
#include "ir/json.h"
#include "runtime/cuda_driver.h"
#include "runtime/executor.h"

using namespace loom;
using capi::guard;
using capi::need;

struct loom_runner {
  std::shared_ptr<const ir::Fusion> fusion;
  Bindings sizes;
  std::unique_ptr<Executor> exec;
};

namespace {

void needGpu() {
  std::string why;
  if (!runtime::gpuAvailable(&why)) throw capi::NoGpuError("no GPU found: " + why);
}

// The caller's device memory as loom's tensors (wrapped, never freed by loom).
std::vector<DeviceTensor> wrapAll(const loom_tensor* ts, size_t n, const char* what,
                                  const std::vector<std::string>& names) {
  if (n > 0) need(ts, "loom_runner", what);
  std::vector<DeviceTensor> out;
  for (size_t i = 0; i < n; ++i) {
    const std::string where = i < names.size() ? fmt::format("{} `{}`", what, names[i]) : fmt::format("{} {}", what, i);
    const loom_tensor& t = ts[i];
    out.push_back(DeviceTensor::wrap(reinterpret_cast<uintptr_t>(t.data), capi::dtypeOf(t.dtype, where),
                                     capi::shapeOf(t, where), capi::stridesOf(t, where)));
  }
  return out;
}

std::vector<std::string> inputNames(const ir::Fusion& f) {
  std::vector<std::string> n;
  for (const ir::Value* v : f.inputs()) n.push_back(v->name());
  return n;
}

std::vector<std::string> outputNames(const ir::Fusion& f) {
  std::vector<std::string> n;
  for (const auto& o : f.outputs()) n.push_back(o.name);
  return n;
}

std::vector<DeviceTensor> runnerInputs(const loom_runner& r, const loom_tensor* inputs, size_t n) {
  const size_t want = r.fusion->inputs().size();
  LOOM_USER_CHECK(n == want, "fusion `{}` takes {} inputs, {} given", r.fusion->name(), want, n);
  return wrapAll(inputs, n, "input", inputNames(*r.fusion));
}

}  // namespace

extern "C" {

int32_t loom_gpu_available(void) { return runtime::gpuAvailable() ? 1 : 0; }

loom_status loom_runner_create(const loom_fusion* f, const loom_options* o, loom_runner** out) {
  return guard([&] {
    need(f, "loom_runner_create", "fusion");
    need(out, "loom_runner_create", "out");
    auto r = std::make_unique<loom_runner>();
    r->fusion = f->fusion;
    if (o) r->sizes = o->sizes;
    r->exec = std::make_unique<Executor>(*r->fusion, o ? o->tuning : Tuning{});
    *out = r.release();
  });
}

void loom_runner_free(loom_runner* r) { delete r; }

loom_status loom_runner_outputs_json(loom_runner* r, const loom_tensor* inputs, size_t n_inputs, char** out) {
  return guard([&] {
    need(r, "loom_runner_outputs_json", "runner");
    need(out, "loom_runner_outputs_json", "out");
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
    const std::vector<DeviceTensor> ins = runnerInputs(*r, inputs, n_inputs);
    std::vector<DeviceTensor> outs = wrapAll(outputs, n_outputs, "output", outputNames(*r->fusion));
    needGpu();
    r->exec->setStream(stream);
    r->exec->runInto(ins, outs, r->sizes);
  });
}

}  // extern "C"
