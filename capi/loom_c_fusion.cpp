// The C ABI's library, fusion and options functions, and the reference evaluator
// (include/loom/loom_c.h). Everything that needs no GPU.
#include <algorithm>
#include <cstring>
#include <iterator>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <loom/version.h>

#include "capi/capi_internal.h"
#include "compiler/segment/segmenter.h"
#include "frontend/examples.h"
#include "frontend/framework_ops.h"
#include "frontend/parser.h"
#include "ir/dump.h"
#include "ir/json.h"
#include "ir/printer.h"
#include "reference/reference.h"
#include "runtime/bind_sizes.h"
#include "runtime/environment_options.h"
#include "runtime/memory_order.h"

using namespace loom;
using capi::ArgumentError;
using capi::guard;
using capi::need;

namespace loom::capi {

namespace {
thread_local std::string t_last_error;
}

void setLastError(const std::string& msg) { t_last_error = msg; }
const char* lastError() { return t_last_error.c_str(); }

// loom_dtype's values are include/loom/dtypes.def's order.
#define LOOM_DTYPE(E, name, bytes, is_float, is_int) DType::E,
constexpr DType kDTypes[] = {
#include <loom/dtypes.def>
};
#undef LOOM_DTYPE
static_assert(kDTypes[LOOM_BOOL] == DType::Bool && kDTypes[LOOM_I32] == DType::I32 && kDTypes[LOOM_I64] == DType::I64 &&
              kDTypes[LOOM_F16] == DType::F16 && kDTypes[LOOM_BF16] == DType::BF16 &&
              kDTypes[LOOM_F32] == DType::F32 && kDTypes[LOOM_F64] == DType::F64 &&
              std::size(kDTypes) == 7, "loom_dtype (include/loom/loom_c.h) follows include/loom/dtypes.def");

char* newString(const std::string& s) {
  char* p = static_cast<char*>(std::malloc(s.size() + 1));
  if (!p) throw std::bad_alloc();
  std::memcpy(p, s.c_str(), s.size() + 1);
  return p;
}

DType dtypeOf(int32_t d, const std::string& where) {
  if (d < 0 || d >= static_cast<int32_t>(std::size(kDTypes)))
    throw ArgumentError(fmt::format("{}: dtype {} is not a loom_dtype (0 to {})", where, d, std::size(kDTypes) - 1));
  return kDTypes[d];
}

std::vector<int64_t> shapeOf(const loom_tensor& t, const std::string& where) {
  if (t.ndim < 0 || t.ndim > 64) throw ArgumentError(fmt::format("{}: ndim {} is not from 0 to 64", where, t.ndim));
  if (t.ndim > 0 && !t.shape) throw ArgumentError(fmt::format("{}: `shape` is NULL", where));
  std::vector<int64_t> s(t.shape, t.shape + t.ndim);
  for (int64_t x : s)
    LOOM_USER_CHECK(x >= 0, "{}: shape [{}] has a negative size", where, fmt::join(s, ", "));
  return s;
}

std::vector<int64_t> stridesOf(const loom_tensor& t, const std::string& where) {
  const std::vector<int64_t> shape = shapeOf(t, where);
  if (!t.strides) return rowMajorStrides(shape);
  std::vector<int64_t> s(t.strides, t.strides + t.ndim);
  for (int64_t x : s)
    LOOM_USER_CHECK(x >= 0, "{}: strides [{}] have a negative stride; loom takes strides >= 0", where,
                    fmt::join(s, ", "));
  return s;
}

Bindings sizesFor(const loom_fusion& f, const loom_options* o) {
  Bindings b = f.default_sizes;
  if (o)
    for (const auto& [k, v] : o->sizes) b[k] = v;
  return b;
}

}  // namespace loom::capi

namespace {

const loom_fusion& fusionArg(const loom_fusion* f, const char* fn) { return *need(f, fn, "fusion"); }

// What segments and dumps compile for: the sizes bound, the inputs in their layouts.
struct CompileView {
  Bindings sizes;
  std::vector<TensorDesc> descs;
  CompileOptions opts;
};

CompileView compileView(const loom_fusion& f, const loom_options* o) {
  dumpsFromEnvironment();
  CompileView v;
  std::map<std::string, std::vector<int>> orders;
  if (o)
    for (const auto& [name, lay] : o->layouts)
      orders[name] = parseMemoryOrder(*f.fusion, name, lay, fmt::format("layout `{}` of input `{}`", lay, name));
  const Bindings given = capi::sizesFor(f, o);
  // Sizes the inputs do not show are checked by the binding, as a run would.
  v.descs = describeInputs(*f.fusion, given, orders);
  std::vector<DType> dtypes;
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& d : v.descs) {
    dtypes.push_back(d.dtype);
    shapes.push_back(d.shape);
  }
  v.sizes = bindShapes(*f.fusion, dtypes, shapes, given);
  v.opts = CompileOptions{{o ? o->sm : 90, o ? o->sm_count : 132}, o ? o->tuning : Tuning{}};
  return v;
}

std::string signatureJson(const loom_fusion& lf) {
  const ir::Fusion& f = *lf.fusion;
  auto shapeJson = [](const ir::Value* v) {
    std::vector<std::string> s;
    for (const auto& a : v->axes()) s.push_back(jsonStr(a.broadcast ? "1b" : a.extent.str()));
    return fmt::format("[{}]", fmt::join(s, ", "));
  };
  std::vector<std::string> syms, ins, outs, sizes;
  for (const auto& s : f.symbols()) syms.push_back(jsonStr(s));
  for (const ir::Value* v : f.inputs())
    ins.push_back(fmt::format("{{\"name\": {}, \"dtype\": {}, \"shape\": {}}}", jsonStr(v->name()),
                              jsonStr(std::string(dtypeName(v->dtype()))), shapeJson(v)));
  for (const auto& o : f.outputs())
    outs.push_back(fmt::format("{{\"name\": {}, \"dtype\": {}, \"shape\": {}, \"alias\": {}}}", jsonStr(o.name),
                               jsonStr(std::string(dtypeName(o.value->dtype()))), shapeJson(o.value),
                               o.alias ? jsonStr(o.alias->name()) : "null"));
  for (const auto& [k, v] : lf.default_sizes) sizes.push_back(fmt::format("{}: {}", jsonStr(k), v));
  return fmt::format("{{\"name\": {}, \"symbols\": [{}], \"inputs\": [{}], \"outputs\": [{}], \"sizes\": {{{}}}}}",
                     jsonStr(f.name()), fmt::join(syms, ", "), fmt::join(ins, ", "), fmt::join(outs, ", "),
                     fmt::join(sizes, ", "));
}

// A contiguous host copy of a caller's tensor (any strides), checked.
HostTensor hostCopy(const loom_tensor& t, const std::string& where) {
  const DType dt = capi::dtypeOf(t.dtype, where);
  const std::vector<int64_t> shape = capi::shapeOf(t, where), strides = capi::stridesOf(t, where);
  HostTensor h = HostTensor::empty(dt, shape);
  const int64_t n = h.numel();
  if (n == 0) return h;
  if (!t.data) throw ArgumentError(fmt::format("{}: `data` is NULL", where));
  const size_t eb = static_cast<size_t>(dtypeBytes(dt));
  auto* dst = static_cast<std::byte*>(h.data());
  const auto* src = static_cast<const std::byte*>(t.data);
  std::vector<int64_t> idx(shape.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < shape.size(); ++d) off += idx[d] * strides[d];
    std::memcpy(dst + static_cast<size_t>(i) * eb, src + static_cast<size_t>(off) * eb, eb);
    for (size_t d = shape.size(); d-- > 0;) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return h;
}

}  // namespace

extern "C" {

int32_t loom_abi_version(void) { return LOOM_C_ABI_VERSION; }
const char* loom_version(void) { return LOOM_VERSION; }
const char* loom_last_error(void) { return capi::lastError(); }
void loom_string_free(char* s) { std::free(s); }

const char* loom_dtype_name(int32_t dtype) {
  try {
    return dtypeName(capi::dtypeOf(dtype, "")).data();
  } catch (...) {
    return nullptr;
  }
}

loom_status loom_builtins_json(char** out) {
  return guard([&] {
    need(out, "loom_builtins_json", "out");
    std::vector<std::string> items;
    for (const Example& e : builtinExamples()) {
      std::vector<std::string> sizes;
      for (const auto& [k, v] : e.default_sizes) sizes.push_back(fmt::format("{}: {}", jsonStr(k), v));
      items.push_back(fmt::format("{{\"name\": {}, \"summary\": {}, \"dtype\": {}, \"sizes\": {{{}}}}}",
                                  jsonStr(e.name), jsonStr(e.summary),
                                  jsonStr(std::string(dtypeName(e.default_dtype))), fmt::join(sizes, ", ")));
    }
    std::vector<std::string> ops;
    for (const FrameworkOpInfo& o : frameworkOps())
      ops.push_back(fmt::format("{{\"name\": {}, \"summary\": {}}}", jsonStr(o.name), jsonStr(o.summary)));
    *out = capi::newString(
        fmt::format("{{\"builtins\": [{}], \"ops\": [{}]}}", fmt::join(items, ", "), fmt::join(ops, ", ")));
  });
}

loom_status loom_fusion_from_text(const char* text, size_t len, loom_fusion** out) {
  return guard([&] {
    need(out, "loom_fusion_from_text", "out");
    if (len > 0) need(text, "loom_fusion_from_text", "text");
    auto f = parseFusion(std::string_view(text ? text : "", len));
    *out = new loom_fusion{std::shared_ptr<const ir::Fusion>(std::move(f)), {}};
  });
}

loom_status loom_fusion_builtin(const char* name, const char* dtype, loom_fusion** out) {
  return guard([&] {
    need(name, "loom_fusion_builtin", "name");
    need(out, "loom_fusion_builtin", "out");
    const Example* e = findExample(name);
    if (!e) {
      std::vector<std::string> names;
      for (const Example& x : builtinExamples()) names.push_back(x.name);
      fail("`{}` is not a built-in fusion; the built-ins are: {}", name, fmt::join(names, ", "));
    }
    DType dt = e->default_dtype;
    if (dtype) {
      auto d = parseDType(dtype);
      LOOM_USER_CHECK(d.has_value(), "dtype `{}` is not a dtype; try f16, bf16, f32 or f64", dtype);
      dt = *d;
    }
    *out = new loom_fusion{std::shared_ptr<const ir::Fusion>(e->build(dt)), e->default_sizes};
  });
}

loom_status loom_fusion_op(const char* op, const char* params, loom_fusion** out) {
  return guard([&] {
    need(op, "loom_fusion_op", "op");
    need(out, "loom_fusion_op", "out");
    auto f = buildFrameworkOp(op, parseOpParams(params ? params : ""));
    *out = new loom_fusion{std::shared_ptr<const ir::Fusion>(std::move(f)), {}};
  });
}

void loom_fusion_free(loom_fusion* f) { delete f; }

loom_status loom_fusion_text(const loom_fusion* f, char** out) {
  return guard([&] {
    const loom_fusion& lf = fusionArg(f, "loom_fusion_text");
    need(out, "loom_fusion_text", "out");
    *out = capi::newString(ir::printFusion(*lf.fusion));
  });
}

loom_status loom_fusion_signature_json(const loom_fusion* f, char** out) {
  return guard([&] {
    const loom_fusion& lf = fusionArg(f, "loom_fusion_signature_json");
    need(out, "loom_fusion_signature_json", "out");
    *out = capi::newString(signatureJson(lf));
  });
}

loom_status loom_fusion_segments_json(const loom_fusion* f, const loom_options* o, char** out) {
  return guard([&] {
    const loom_fusion& lf = fusionArg(f, "loom_fusion_segments_json");
    need(out, "loom_fusion_segments_json", "out");
    const CompileView v = compileView(lf, o);
    *out = capi::newString(segment::segmentFusion(*lf.fusion, v.sizes, v.descs, v.opts).json(*lf.fusion));
  });
}

loom_status loom_fusion_dump(const loom_fusion* f, const char* stage, const loom_options* o, char** out) {
  return guard([&] {
    const loom_fusion& lf = fusionArg(f, "loom_fusion_dump");
    need(stage, "loom_fusion_dump", "stage");
    need(out, "loom_fusion_dump", "out");
    const DumpStage st = parseDumpStage(stage);
    if (st == DumpStage::IR) {
      *out = capi::newString(ir::printFusion(*lf.fusion));
      return;
    }
    LOOM_USER_CHECK(st != DumpStage::Launch, "stage `launch` happens only while running");
    const CompileView v = compileView(lf, o);
    StageText text;
    compilePlan(*lf.fusion, v.sizes, v.descs, v.opts, &text);
    auto it = text.find(st);
    LOOM_USER_CHECK(it != text.end(), "stage `{}` has nothing to show for `{}`", stage, lf.fusion->name());
    *out = capi::newString(it->second);
  });
}

loom_status loom_options_create(loom_options** out) {
  return guard([&] { *need(out, "loom_options_create", "out") = new loom_options; });
}

void loom_options_free(loom_options* o) { delete o; }

loom_status loom_options_set_size(loom_options* o, const char* name, int64_t value) {
  return guard([&] {
    need(o, "loom_options_set_size", "options");
    need(name, "loom_options_set_size", "name");
    LOOM_USER_CHECK(*name, "size names are not empty");
    LOOM_USER_CHECK(value >= 0, "size {}={}: sizes must be 0 or more", name, value);
    o->sizes[name] = value;
  });
}

loom_status loom_options_set_layout(loom_options* o, const char* input, const char* layout) {
  return guard([&] {
    need(o, "loom_options_set_layout", "options");
    need(input, "loom_options_set_layout", "input");
    need(layout, "loom_options_set_layout", "layout");
    o->layouts[input] = layout;  // checked against the fusion where it is used
  });
}

loom_status loom_options_set_target(loom_options* o, int32_t sm, int32_t sm_count) {
  return guard([&] {
    need(o, "loom_options_set_target", "options");
    const auto ok = supportedSms();
    LOOM_USER_CHECK(std::find(ok.begin(), ok.end(), sm) != ok.end(), "target sm_{}: loom emits PTX for sm_{}", sm,
                    fmt::join(ok, ", sm_"));
    LOOM_USER_CHECK(sm_count >= 1 && sm_count <= 1024, "target with {} SMs: give 1 to 1024", sm_count);
    o->sm = sm;
    o->sm_count = sm_count;
  });
}

loom_status loom_options_set_knob(loom_options* o, const char* name, int64_t value) {
  return guard([&] {
    need(o, "loom_options_set_knob", "options");
    need(name, "loom_options_set_knob", "name");
    setTuning(o->tuning, name, std::to_string(value));
  });
}

loom_status loom_fusion_eval(const loom_fusion* f, const loom_tensor* inputs, size_t n_inputs,
                             const loom_options* o, loom_results** out) {
  return guard([&] {
    const loom_fusion& lf = fusionArg(f, "loom_fusion_eval");
    need(out, "loom_fusion_eval", "out");
    if (n_inputs > 0) need(inputs, "loom_fusion_eval", "inputs");
    const auto& want = lf.fusion->inputs();
    LOOM_USER_CHECK(n_inputs == want.size(), "fusion `{}` takes {} inputs, {} given", lf.fusion->name(),
                    want.size(), n_inputs);
    std::vector<HostTensor> hs;
    for (size_t i = 0; i < n_inputs; ++i)
      hs.push_back(hostCopy(inputs[i], fmt::format("input `{}`", want[i]->name())));
    auto r = std::make_unique<loom_results>();
    r->tensors = evaluateReference(*lf.fusion, hs, o ? o->sizes : Bindings{});
    *out = r.release();
  });
}

size_t loom_results_count(const loom_results* r) { return r ? r->tensors.size() : 0; }

loom_status loom_results_get(const loom_results* r, size_t i, loom_tensor* out) {
  return guard([&] {
    need(r, "loom_results_get", "results");
    need(out, "loom_results_get", "out");
    if (i >= r->tensors.size())
      throw ArgumentError(fmt::format("loom_results_get: output {} of {}", i, r->tensors.size()));
    const HostTensor& h = r->tensors[i];
    out->data = const_cast<void*>(h.data());
    out->dtype = static_cast<int32_t>(h.dtype());
    out->ndim = h.rank();
    out->shape = h.shape().data();
    out->strides = h.strides().data();
  });
}

void loom_results_free(loom_results* r) { delete r; }

}  // extern "C"
