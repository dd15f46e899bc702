#pragma once
// loom's norms on PyTorch tensors: each forward (with the statistics its backward reads, or y
// alone) and each backward as a loom fusion found in a process-wide cache by the op's
// parameters and dtypes, run through its Runner.
#include <optional>
#include <string>
#include <tuple>

#include <ATen/ATen.h>

namespace loom_torch {

using OptT = std::optional<at::Tensor>;
using Three = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

// Forward ops: stats=false runs the fusion that writes y alone (no gradient wanted), and the
// statistics come back undefined.
Three layerNorm(const at::Tensor& x, const OptT& w, const OptT& b, double eps, const std::string& act, bool stats);
std::tuple<at::Tensor, at::Tensor> rmsNorm(const at::Tensor& x, const OptT& w, double eps, bool stats);
Three groupNorm(const at::Tensor& x, const OptT& w, const OptT& b, int64_t groups, double eps, const std::string& act,
                bool stats);
Three instanceNorm(const at::Tensor& x, const OptT& w, const OptT& b, double eps, bool stats);
Three layerNorm2d(const at::Tensor& x, const OptT& w, const OptT& b, double eps, const std::string& act, bool stats);
// Training statistics; running_mean and running_var (where given) updated in place by the
// kernel; num_batches_tracked given: the cumulative average (momentum=None), 1 / its value.
Three batchNorm(const at::Tensor& x, const OptT& running_mean, const OptT& running_var, const OptT& w, const OptT& b,
                const OptT& num_batches_tracked, double momentum, double eps, const std::string& act, bool stats);

// Backward ops: (dx, dw, db), dw and db empty where their parameter is not given.
Three layerNormBackward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                        const OptT& w, const OptT& b, const std::string& act);
std::tuple<at::Tensor, at::Tensor> rmsNormBackward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& rstd,
                                                   const OptT& w);
Three groupNormBackward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                        const OptT& w, const OptT& b, int64_t groups, const std::string& act);
Three instanceNormBackward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                           const OptT& w);
Three layerNorm2dBackward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& mean, const at::Tensor& rstd,
                          const OptT& w, const OptT& b, const std::string& act);
Three batchNormBackward(const at::Tensor& dy, const at::Tensor& x, const at::Tensor& save_mean,
                        const at::Tensor& save_invstd, const OptT& w, const OptT& b, const std::string& act);

}  // namespace loom_torch
