// The CPU reference driver: binds sizes, reads the inputs through their strides, evaluates the
// ops in order (the families live in reference_pointwise/_reduce/_views.cpp) and writes the
// outputs as contiguous host tensors.
#include "reference/reference.h"

#include <algorithm>
#include <fstream>
#include <optional>

#include "ir/error.h"
#include "reference/reference_internal.h"
#include "runtime/bind_sizes.h"

namespace loom {

namespace reference {

int64_t numelOf(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t s : shape) n *= s;
  return n;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t>& shape,
                                      const std::vector<int64_t>& out) {
  if (shape.empty()) return std::vector<int64_t>(out.size(), 0);
  LOOM_ASSERT(shape.size() == out.size(), "operand of rank {} in a pointwise op of rank {}",
              shape.size(), out.size());
  std::vector<int64_t> s(shape.size(), 0);
  int64_t stride = 1;
  for (int d = static_cast<int>(shape.size()) - 1; d >= 0; --d) {
    size_t ud = static_cast<size_t>(d);
    LOOM_ASSERT(shape[ud] == out[ud] || shape[ud] == 1, "operand dim {} of size {} meets {}", d,
                shape[ud], out[ud]);
    s[ud] = shape[ud] == out[ud] ? stride : 0;
    stride *= shape[ud];
  }
  return s;
}

void roundResult(Dense& d, DType t) {
  if (t == DType::F32 || t == DType::F64) return;
  double* v = d.data.data();
  runtime::parallelForRanges(static_cast<int64_t>(d.data.size()), kParallelRange, [&](int64_t, int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) v[i] = roundTo(t, v[i]);
  });
}

namespace {

// Reads in row-major logical order through the tensor's strides.
Dense load(const HostTensor& t) {
  Dense d{t.shape(), Values(static_cast<size_t>(t.numel()))};
  runtime::parallelForRanges(t.numel(), kParallelRange, [&](int64_t, int64_t begin, int64_t end) {
    t.readLinear(begin, end, d.data.data() + begin);
  });
  return d;
}

Dense create(const ir::Op& op, const std::vector<int64_t>& shape) {
  const auto& a = op.attr<ir::ScalarAttrs>();
  Dense d{shape, Values(static_cast<size_t>(numelOf(shape)), a.value)};
  roundResult(d, a.dtype);
  return d;
}

}  // namespace

}  // namespace reference

namespace {
// The index of the last op that reads each value (by value id), -1 for none; outputs are read
// after the last op.
std::vector<int> lastUses(const ir::Fusion& f) {
  const auto ops = f.ops();
  std::vector<int> last_use(f.values().size(), -1);
  for (size_t i = 0; i < ops.size(); ++i)
    for (const ir::Value* v : ops[i]->inputs()) last_use[static_cast<size_t>(v->id())] = static_cast<int>(i);
  for (const auto& o : f.outputs()) last_use[static_cast<size_t>(o.value->id())] = static_cast<int>(ops.size());
  return last_use;
}
}  // namespace

double referencePeakBytes(const ir::Fusion& f, const Bindings& sizes, bool host_inputs, bool with_bounds) {
  const double copy = with_bounds ? 16 : 8;  // bytes an element of a live value holds
  const auto ops = f.ops();
  // In double: sizes too large for memory must not overflow the sum that says so.
  auto numel = [&](const ir::Value* v) {
    double n = 1;
    for (int64_t e : evalShape(v, sizes)) n *= static_cast<double>(e);
    return n;
  };
  const std::vector<int> last_use = lastUses(f);
  double live = 0;
  for (const ir::Value* v : f.inputs()) {
    live += copy * numel(v);
    if (host_inputs) live += dtypeBytes(v->dtype()) * numel(v);
  }
  double peak = live;
  for (size_t i = 0; i < ops.size(); ++i) {
    for (const ir::Value* out : ops[i]->outputs()) live += copy * numel(out);
    peak = std::max(peak, live);
    for (const ir::Value* out : ops[i]->outputs())
      if (last_use[static_cast<size_t>(out->id())] < 0) live -= copy * numel(out);
    for (const ir::Value* v : ops[i]->inputs())
      if (last_use[static_cast<size_t>(v->id())] == static_cast<int>(i)) live -= copy * numel(v);
  }
  for (const auto& o : f.outputs())
    live += (dtypeBytes(o.value->dtype()) + (with_bounds ? 8 : 0)) * numel(o.value);
  return std::max(peak, live);
}

namespace {
// Linux's estimate of the memory that can be allocated without swapping, or -1.
int64_t availableBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  int64_t kib = 0;
  std::string unit;
  while (in >> key >> kib >> unit)
    if (key == "MemAvailable:") return kib * 1024;
  return -1;
}
}  // namespace

void checkReferenceFits(const ir::Fusion& f, const Bindings& sizes, bool host_inputs, const std::string& hint,
                        bool with_bounds) {
  const int64_t avail = availableBytes();
  if (avail < 0) return;
  const double need = referencePeakBytes(f, sizes, host_inputs, with_bounds);
  constexpr double kGiB = 1024.0 * 1024.0 * 1024.0;
  LOOM_USER_CHECK(need <= static_cast<double>(avail),
                  "the CPU reference for `{}` at these sizes would hold about {:.1f} GiB at once (a float64 "
                  "copy of each live value), more than the {:.1f} GiB this machine has available; {}",
                  f.name(), need / kGiB, static_cast<double>(avail) / kGiB, hint);
}

namespace {

// The evaluation, with each value's error bounds beside it where `bounds` is given (one float64
// tensor per output, in output order).
std::vector<HostTensor> evaluate(const ir::Fusion& f, const std::vector<HostTensor>& inputs,
                                 const Bindings& given, std::vector<HostTensor>* bounds) {
  using reference::Dense;
  const Bindings b = bindSizes(f, inputs, given);
  checkReferenceFits(f, b, /*host_inputs=*/false, "evaluate smaller inputs", bounds != nullptr);
  const auto values = f.values();
  const auto ops = f.ops();

  // Free each intermediate after its last use; outputs are kept.
  const std::vector<int> last_use = lastUses(f);

  std::vector<std::optional<Dense>> env(values.size()), benv(values.size());
  auto slotOf = [&](std::vector<std::optional<Dense>>& e, const ir::Value* v) -> std::optional<Dense>& {
    return e[static_cast<size_t>(v->id())];
  };
  for (size_t i = 0; i < inputs.size(); ++i) {
    Dense d = reference::load(inputs[i]);
    if (bounds)  // inputs are exact
      slotOf(benv, f.inputs()[i]) = reference::zeros(d.shape);
    slotOf(env, f.inputs()[i]) = std::move(d);
  }

  for (size_t i = 0; i < ops.size(); ++i) {
    const ir::Op& op = *ops[i];
    std::vector<const Dense*> in, in_bound;
    for (const ir::Value* v : op.inputs()) {
      const auto& slot = slotOf(env, v);
      LOOM_ASSERT(slot.has_value(), "`{}` is used by `{}` before it is computed", v->name(), op.name());
      in.push_back(&*slot);
      if (bounds) in_bound.push_back(&*slotOf(benv, v));
    }
    const std::vector<int64_t> shape = evalShape(op.output(), b);
    // A view of `e`'s slot for op input 0: its data moved where nothing reads it again.
    auto view = [&](std::vector<std::optional<Dense>>& e) {
      auto& slot = slotOf(e, op.input(0));
      const bool same_data = op.family() != ir::OpFamily::Permute && op.family() != ir::OpFamily::Slice;
      if (same_data && last_use[static_cast<size_t>(op.input(0)->id())] == static_cast<int>(i))
        return Dense{shape, std::move(slot->data)};
      return reference::evalView(op, *slot, shape, b);
    };
    std::vector<Dense> results, result_bounds;
    if (ir::isPointwise(op.kind())) {
      results.push_back(reference::evalPointwise(op, in, shape));
    } else if (ir::isReduction(op.kind())) {
      results = reference::evalReduction(op, *in[0], shape);
    } else if (ir::isView(op.kind())) {
      if (bounds) result_bounds.push_back(view(benv));
      results.push_back(view(env));
    } else if (op.family() == ir::OpFamily::Concat) {
      results.push_back(reference::evalConcat(op, in, shape));
      if (bounds) result_bounds.push_back(reference::evalConcat(op, in_bound, shape));
    } else if (op.family() == ir::OpFamily::Gather) {
      Dense b;
      results.push_back(reference::evalGather(op, *in[0], *in[1], shape, bounds ? in_bound[0] : nullptr,
                                              bounds ? in_bound[1] : nullptr, bounds ? &b : nullptr));
      if (bounds) result_bounds.push_back(std::move(b));
    } else if (op.family() == ir::OpFamily::Iota) {
      results.push_back(reference::createIota(op, shape));
      if (bounds) result_bounds.push_back(reference::zeros(shape));
    } else if (op.family() == ir::OpFamily::Random) {
      results.push_back(reference::createRandom(op, *in[0], *in[1], shape));
      if (bounds) result_bounds.push_back(reference::boundRandom(op, results.back()));
    } else {
      LOOM_ASSERT(op.family() == ir::OpFamily::Constant || op.family() == ir::OpFamily::Full,
                  "the reference has no rule for `{}`", op.name());
      results.push_back(reference::create(op, shape));
      if (bounds) result_bounds.push_back(reference::zeros(shape));
    }
    LOOM_ASSERT(results.size() == op.outputs().size(), "`{}` gave {} results for {} outputs",
                op.name(), results.size(), op.outputs().size());
    for (size_t k = 0; k < results.size(); ++k) {
      const ir::Value* out = op.output(k);
      LOOM_ASSERT(results[k].shape == evalShape(out, b) &&
                      static_cast<int64_t>(results[k].data.size()) == reference::numelOf(results[k].shape),
                  "`{}` produced a result of the wrong shape for `{}`", op.name(), out->name());
      reference::roundResult(results[k], out->dtype());
    }
    if (bounds && ir::isPointwise(op.kind()))
      result_bounds.push_back(reference::boundPointwise(op, in, in_bound, results[0]));
    else if (bounds && ir::isReduction(op.kind()))
      result_bounds = reference::boundReduction(op, *in[0], *in_bound[0], results);
    for (size_t k = 0; k < results.size(); ++k) {
      const ir::Value* out = op.output(k);
      if (last_use[static_cast<size_t>(out->id())] < 0) continue;  // nothing reads it
      slotOf(env, out) = std::move(results[k]);
      if (bounds) slotOf(benv, out) = std::move(result_bounds[k]);
    }
    for (const ir::Value* v : op.inputs())
      if (last_use[static_cast<size_t>(v->id())] == static_cast<int>(i)) {
        slotOf(env, v).reset();
        slotOf(benv, v).reset();
      }
  }

  std::vector<HostTensor> outs;
  for (const auto& o : f.outputs()) {
    const auto& d = slotOf(env, o.value);
    LOOM_ASSERT(d.has_value(), "output `{}` was never computed", o.name);
    outs.push_back(HostTensor::fromValues(o.value->dtype(), d->shape, d->data.data(), static_cast<int64_t>(d->data.size())));
    if (bounds) {
      const auto& e = slotOf(benv, o.value);
      bounds->push_back(HostTensor::fromValues(DType::F64, e->shape, e->data.data(), static_cast<int64_t>(e->data.size())));
    }
  }
  return outs;
}

}  // namespace

// A fusion is verified before it is evaluated, as before it is compiled: one that parsed but is no
// valid fusion (no outputs, an alias of the wrong shape) is a user error here too.
std::vector<HostTensor> evaluateReference(const ir::Fusion& f, const std::vector<HostTensor>& inputs,
                                          const Bindings& given) {
  f.verify();
  return evaluate(f, inputs, given, nullptr);
}

ReferenceWithBounds evaluateReferenceBounds(const ir::Fusion& f, const std::vector<HostTensor>& inputs,
                                            const Bindings& given) {
  f.verify();
  ReferenceWithBounds r;
  r.values = evaluate(f, inputs, given, &r.bounds);
  return r;
}

}  // namespace loom
