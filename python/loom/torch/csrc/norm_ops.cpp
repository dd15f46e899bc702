#include "norm_ops.h"

#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>

#include <c10/util/Exception.h>

#include <loom/error.h>

#include "runner.h"

namespace loom_torch {

namespace {

#define LOOM_TORCH_OPS(X)                                                                                    \
  X(layer_norm) X(layer_norm_backward) X(rms_norm) X(rms_norm_backward) X(group_norm) X(group_norm_backward) \
  X(instance_norm) X(instance_norm_backward) X(layer_norm_2d) X(layer_norm_2d_backward) X(batch_norm)        \
  X(batch_norm_backward)

enum class Op {
#define LOOM_TORCH_OP_ENUM(n) n,
  LOOM_TORCH_OPS(LOOM_TORCH_OP_ENUM)
#undef LOOM_TORCH_OP_ENUM
};

const char* opName(Op op) {
  static const char* names[] = {
#define LOOM_TORCH_OP_NAME(n) #n,
      LOOM_TORCH_OPS(LOOM_TORCH_OP_NAME)
#undef LOOM_TORCH_OP_NAME
  };
  return names[static_cast<int>(op)];
}

const char* kActs[] = {"none", "relu", "silu", "gelu", "gelu_tanh", "sigmoid", "tanh"};

int actId(c10::string_view act) {
  for (int i = 0; i < 7; ++i)
    if (act == kActs[i]) return i;
  throw loom::Error("loom.torch: act='" + std::string(act) +
                    "' is not an activation loom fuses (none, relu, silu, gelu, gelu_tanh, sigmoid, tanh)");
}

// What picks a norm's fusion: the op, its tensors' dtypes (-1: not given) and rank, and its
// parameters. Compared as words (the doubles by their bits).
struct Spec {
  int64_t op = 0, x = -1, w = -1, b = -1, running = -1, rank = 0, groups = 0, act = 0, stats = 1, cumulative = 0;
  double eps = 0, momentum = 0;

  bool operator==(const Spec& o) const { return std::memcmp(this, &o, sizeof(Spec)) == 0; }
};

struct SpecHash {
  size_t operator()(const Spec& s) const {
    const auto* p = reinterpret_cast<const unsigned char*>(&s);
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < sizeof(Spec); ++i) h = (h ^ p[i]) * 1099511628211ull;
    return static_cast<size_t>(h);
  }
};

int64_t dt(const at::Tensor& t) { return static_cast<int64_t>(loomDtype(t.scalar_type(), "loom.torch")); }
int64_t dt(const OptT& t) { return t ? dt(*t) : -1; }

const char* dtName(int64_t d) {
  static const char* names[] = {"bool", "i32", "i64", "f16", "bf16", "f32", "f64"};
  return d < 0 ? "none" : names[d];
}

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// The framework op's parameter text (frontend/framework_ops.cpp takes each op's own keys).
std::string paramsOf(const Spec& s) {
  const Op op = static_cast<Op>(s.op);
  const bool backward = std::string(opName(op)).find("_backward") != std::string::npos;
  std::string p = std::string("x=") + dtName(s.x) + ",rank=" + std::to_string(s.rank);
  p += std::string(",w=") + dtName(s.w);
  // Bias: every forward but RMS norm's, layer norm's backward, and the spatial backward ops that
  // recompute an activation's input.
  const bool has_b = (!backward && op != Op::rms_norm) || op == Op::layer_norm_backward || (backward && s.act != 0);
  if (has_b) p += std::string(",b=") + dtName(s.b);
  if (op == Op::group_norm || op == Op::group_norm_backward) p += ",groups=" + std::to_string(s.groups);
  if (!backward) p += ",eps=" + num(s.eps) + ",stats=" + std::to_string(s.stats);
  const bool has_act = op != Op::rms_norm && op != Op::rms_norm_backward && op != Op::instance_norm &&
                       op != Op::instance_norm_backward;
  if (has_act) p += std::string(",act=") + kActs[s.act];
  if (op == Op::batch_norm)
    p += std::string(",running=") + dtName(s.running) + ",momentum=" + num(s.momentum) +
         ",cumulative=" + std::to_string(s.cumulative) + ",inplace=1";
  return p;
}

// The fusion of `s`, made once a process (an Executor each: its kernels are shared by all).
Runner& runnerFor(const Spec& s) {
  // Never destroyed: the Runners' kernels and memory live as long as the process (destructors run
  // at exit would call the driver after PyTorch and the CUDA runtime have shut down).
  static std::mutex& mu = *new std::mutex;
  static auto& runners = *new std::unordered_map<Spec, std::unique_ptr<Runner>, SpecHash>;
  std::lock_guard<std::mutex> lock(mu);
  auto it = runners.find(s);
  if (it != runners.end()) return *it->second;
  const Op op = static_cast<Op>(s.op);
  auto r = std::make_unique<Runner>(loom::Fusion::frameworkOp(opName(op), paramsOf(s)));
  return *runners.emplace(s, std::move(r)).first->second;
}

// x as loom reads a norm over channels: NCHW or channels-last as it is, any other strides
// made contiguous.
at::Tensor dense(const at::Tensor& x) {
  if (x.is_contiguous()) return x;
  if (x.dim() == 4 && x.is_contiguous(at::MemoryFormat::ChannelsLast)) return x;
  if (x.dim() == 5 && x.is_contiguous(at::MemoryFormat::ChannelsLast3d)) return x;
  return x.contiguous();
}

// dy in the memory format loom reads x in (so dx comes out in it, as the fake says).
at::Tensor like(const at::Tensor& dy, const at::Tensor& x) {
  if (x.is_contiguous()) return dy.contiguous();
  if (x.dim() == 4 && x.is_contiguous(at::MemoryFormat::ChannelsLast))
    return dy.contiguous(at::MemoryFormat::ChannelsLast);
  if (x.dim() == 5 && x.is_contiguous(at::MemoryFormat::ChannelsLast3d))
    return dy.contiguous(at::MemoryFormat::ChannelsLast3d);
  return dy.contiguous();
}

void push(std::vector<at::Tensor>& v, const OptT& t) {
  if (t) v.push_back(t->contiguous());
}

at::Tensor none(const at::Tensor& x) { return at::empty({0}, x.options()); }

void checkRank(const char* op, const at::Tensor& x, int64_t lo) {
  TORCH_CHECK(x.dim() >= lo && x.dim() <= 8, "loom.torch.", op, ": x has ", x.dim(), " dims; it takes ", lo, " to 8");
}

Three stats3(const std::vector<at::Tensor>& o, bool stats) {
  return stats ? Three{o[0], o[1], o[2]} : Three{o[0], at::Tensor(), at::Tensor()};
}

// The backward's (dx, dw, db) from the fusion's dx, [dw], [db].
Three grads(const std::vector<at::Tensor>& o, bool has_dw, bool has_db, const at::Tensor& x) {
  size_t i = 1;
  at::Tensor dw = has_dw ? o[i++] : none(x);
  at::Tensor db = has_db ? o[i++] : none(x);
  return {o[0], dw, db};
}

}  // namespace

Three layerNorm(const at::Tensor& x, const OptT& w, const OptT& b, double eps, const std::string& act, bool stats) {
  checkRank("layer_norm", x, 1);
  Spec s;
  s.op = static_cast<int64_t>(Op::layer_norm);
  s.x = dt(x), s.w = dt(w), s.b = dt(b), s.rank = x.dim(), s.eps = eps, s.act = actId(act), s.stats = stats;
  std::vector<at::Tensor> in{x.contiguous()};
  push(in, w);
  push(in, b);
  return stats3(runnerFor(s).run(in), stats);
}

std::tuple<at::Tensor, at::Tensor> rmsNorm(const at::Tensor& x, const OptT& w, double eps, bool stats) {
  checkRank("rms_norm", x, 1);
  Spec s;
  s.op = static_cast<int64_t>(Op::rms_norm);
  s.x = dt(x), s.w = dt(w), s.rank = x.dim(), s.eps = eps, s.stats = stats;
  std::vector<at::Tensor> in{x.contiguous()};
  push(in, w);
  auto o = runnerFor(s).run(in);
  return {o[0], stats ? o[1] : at::Tensor()};
}

Three groupNorm(const at::Tensor& x, const OptT& w, const OptT& b, int64_t groups, double eps, const std::string& act,
                bool stats) {
  checkRank("group_norm", x, 2);
  Spec s;
  s.op = static_cast<int64_t>(Op::group_norm);
  s.x = dt(x), s.w = dt(w), s.b = dt(b), s.rank = x.dim(), s.groups = groups, s.eps = eps, s.act = actId(act);
  s.stats = stats;
  std::vector<at::Tensor> in{dense(x)};
  push(in, w);
  push(in, b);
  return stats3(runnerFor(s).run(in), stats);
}

Three instanceNorm(const at::Tensor& x, const OptT& w, const OptT& b, double eps, bool stats) {
  checkRank("instance_norm", x, 3);
  Spec s;
  s.op = static_cast<int64_t>(Op::instance_norm);
  s.x = dt(x), s.w = dt(w), s.b = dt(b), s.rank = x.dim(), s.eps = eps, s.stats = stats;
  std::vector<at::Tensor> in{dense(x)};
  push(in, w);
  push(in, b);
  return stats3(runnerFor(s).run(in), stats);
}

Three layerNorm2d(const at::Tensor& x, const OptT& w, const OptT& b, double eps, const std::string& act, bool stats) {
  checkRank("layer_norm_2d", x, 3);
  Spec s;
  s.op = static_cast<int64_t>(Op::layer_norm_2d);
  s.x = dt(x), s.w = dt(w), s.b = dt(b), s.rank = x.dim(), s.eps = eps, s.act = actId(act), s.stats = stats;
  std::vector<at::Tensor> in{dense(x)};
  push(in, w);
  push(in, b);
  return stats3(runnerFor(s).run(in), stats);
}

Three batchNorm(const at::Tensor& x, const OptT& running_mean, const OptT& running_var, const OptT& w, const OptT& b,
                const OptT& num_batches_tracked, double momentum, double eps, const std::string& act, bool stats) {
  checkRank("batch_norm", x, 2);
  TORCH_CHECK(running_mean.has_value() == running_var.has_value(),
              "loom.torch.batch_norm: running_mean and running_var are given together or not at all");
  const int64_t per_channel = x.size(1) ? x.numel() / x.size(1) : 0;
  TORCH_CHECK_VALUE(per_channel != 1, "Expected more than 1 value per channel when training, got input size ",
                    x.sizes());
  const int64_t c = x.size(1);
  const at::TensorOptions so = x.options().dtype(x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat);
  if (x.numel() == 0) {
    // As PyTorch: an empty y, the statistics unset, the running ones left as they are.
    return {at::empty_like(x), stats ? at::empty({c}, so) : at::Tensor(), stats ? at::empty({c}, so) : at::Tensor()};
  }
  Spec s;
  s.op = static_cast<int64_t>(Op::batch_norm);
  s.x = dt(x), s.w = dt(w), s.b = dt(b), s.running = dt(running_mean), s.rank = x.dim(), s.eps = eps;
  s.momentum = num_batches_tracked ? 0.0 : momentum, s.cumulative = num_batches_tracked.has_value();
  s.act = actId(act), s.stats = stats;
  std::vector<at::Tensor> in{dense(x)};
  if (running_mean) {
    TORCH_CHECK(running_mean->is_contiguous() && running_var->is_contiguous(),
                "loom.torch.batch_norm: the running statistics are updated in place and must be contiguous");
    in.push_back(*running_mean);
    in.push_back(*running_var);
  }
  push(in, w);
  push(in, b);
  if (num_batches_tracked) {
    TORCH_CHECK(num_batches_tracked->dim() == 0 && num_batches_tracked->scalar_type() == at::kLong,
                "loom.torch.batch_norm: num_batches_tracked must be a 0-dim int64 tensor");
    in.push_back(*num_batches_tracked);
  }
  auto o = runnerFor(s).run(in);
  if (running_mean) {
    running_mean->unsafeGetTensorImpl()->bump_version();
    running_var->unsafeGetTensorImpl()->bump_version();
  }
  return stats3(o, stats);
}

Three layerNormBackward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                        const OptT& w, const OptT& b, const std::string& act) {
  Spec s;
  s.op = static_cast<int64_t>(Op::layer_norm_backward);
  s.x = dt(x), s.w = dt(w), s.b = dt(b), s.rank = x.dim(), s.act = actId(act);
  std::vector<at::Tensor> in{dy.contiguous(), x.contiguous(), mean.contiguous(), rstd.contiguous()};
  push(in, w);
  push(in, b);
  return grads(runnerFor(s).run(in), w.has_value(), b.has_value(), x);
}

std::tuple<at::Tensor, at::Tensor> rmsNormBackward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                                                   const OptT& w) {
  Spec s;
  s.op = static_cast<int64_t>(Op::rms_norm_backward);
  s.x = dt(x), s.w = dt(w), s.rank = x.dim();
  std::vector<at::Tensor> in{dy.contiguous(), x.contiguous(), rstd.contiguous()};
  push(in, w);
  auto o = runnerFor(s).run(in);
  return {o[0], w ? o[1] : none(x)};
}

namespace {
// The spatial norms' backward: dy, x, [w], [b where act], then the statistics.
Three spatialBackward(Spec s, const at::Tensor& dy, const at::Tensor& x, const at::Tensor& m, const at::Tensor& r,
                      const OptT& w, const OptT& b) {
  const at::Tensor xd = dense(x);
  s.x = dt(x), s.w = dt(w), s.rank = x.dim();
  std::vector<at::Tensor> in{like(dy, xd), xd};
  push(in, w);
  if (s.act != 0) push(in, b);
  s.b = s.act != 0 ? dt(b) : -1;
  in.push_back(m.contiguous());
  in.push_back(r.contiguous());
  return grads(runnerFor(s).run(in), w.has_value(), true, x);
}
}  // namespace

Three groupNormBackward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                        const OptT& w, const OptT& b, int64_t groups, const std::string& act) {
  Spec s;
  s.op = static_cast<int64_t>(Op::group_norm_backward);
  s.groups = groups, s.act = actId(act);
  return spatialBackward(s, dy, x, mean, rstd, w, b);
}

Three instanceNormBackward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                           const OptT& w) {
  Spec s;
  s.op = static_cast<int64_t>(Op::instance_norm_backward);
  return spatialBackward(s, dy, x, mean, rstd, w, std::nullopt);
}

Three layerNorm2dBackward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                          const OptT& w, const OptT& b, const std::string& act) {
  Spec s;
  s.op = static_cast<int64_t>(Op::layer_norm_2d_backward);
  s.act = actId(act);
  return spatialBackward(s, dy, x, mean, rstd, w, b);
}

Three batchNormBackward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& save_mean,
                        const at::Tensor& save_invstd, const OptT& w, const OptT& b, const std::string& act) {
  Spec s;
  s.op = static_cast<int64_t>(Op::batch_norm_backward);
  s.act = actId(act);
  return spatialBackward(s, dy, x, save_mean, save_invstd, w, b);
}

}  // namespace loom_torch
