#pragma once
// loom's norms for autograd: each forward runs the op below autograd (the CUDA kernel directly
// for plain CUDA tensors, else through the dispatcher, which AOT autograd traces) and, where a
// gradient is wanted, hangs a node on y whose backward runs loom's backward op. Registered as
// the ops' Autograd kernels, and called directly by the eager entry points (module.cpp).
#include <ATen/ATen.h>

#include "norm_ops.h"

namespace loom_torch {

// Each returns the op's outputs (y and the statistics, which carry no gradient).
std::vector<at::Tensor> layerNormGrad(const at::Tensor& x, const OptT& w, const OptT& b, double eps,
                                      const std::string& act);
std::vector<at::Tensor> rmsNormGrad(const at::Tensor& x, const OptT& w, double eps);
std::vector<at::Tensor> groupNormGrad(const at::Tensor& x, const OptT& w, const OptT& b, int64_t groups, double eps,
                                      const std::string& act);
std::vector<at::Tensor> instanceNormGrad(const at::Tensor& x, const OptT& w, const OptT& b, double eps);
std::vector<at::Tensor> layerNorm2dGrad(const at::Tensor& x, const OptT& w, const OptT& b, double eps,
                                        const std::string& act);
std::vector<at::Tensor> batchNormGrad(const at::Tensor& x, const OptT& running_mean, const OptT& running_var,
                                      const OptT& w, const OptT& b, const OptT& num_batches_tracked, double momentum,
                                      double eps, const std::string& act);

}  // namespace loom_torch
