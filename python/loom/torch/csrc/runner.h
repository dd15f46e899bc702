#pragma once
// One loom fusion run on PyTorch tensors: its Executor, and per input signature (dtype, sizes,
// strides, alignment of each input) the wrapped tensors and the output specs, found again by a
// compare of the signature alone (no planning, no descriptions built on a repeated signature).
#include <cstdint>
#include <memory>
#include <mutex>
#include <vector>

#include <ATen/ATen.h>

#include <loom/device_tensor.h>
#include <loom/executor.h>
#include <loom/fusion.h>

namespace loom_torch {

// One output as the plan writes it: at::empty_strided's arguments, or the input it aliases.
struct OutSpec {
  std::vector<int64_t> shape, strides;
  at::ScalarType dtype;
  int alias = -1;  // the input written in place, or -1
};

class Runner {
 public:
  explicit Runner(loom::Fusion fusion);
  const loom::Fusion& fusion() const { return fusion_; }
  size_t inputCount() const { return n_inputs_; }

  // Runs on CUDA tensors on torch's current stream: fresh outputs from torch's caching allocator
  // (an aliased one is its input, updated in place). Throws loom::Error on bad input.
  std::vector<at::Tensor> run(at::ArrayRef<at::Tensor> inputs);
  // The outputs a run on tensors of these dtypes, sizes and strides makes (16-byte aligned
  // data): for fake tensors under torch.compile. Plans on the GPU where the signature is new.
  std::vector<OutSpec> specs(at::ArrayRef<at::Tensor> like);

 private:
  struct Signature {
    std::vector<int64_t> key;
    std::vector<loom::DeviceTensor> ins, outs;
    std::vector<OutSpec> specs;
    at::TensorOptions device;
  };
  Signature& signatureFor(at::ArrayRef<at::Tensor> inputs);
  Signature& addSignature(at::ArrayRef<at::Tensor> inputs, std::vector<int64_t> key);

  loom::Fusion fusion_;
  std::unique_ptr<loom::Executor> exec_;
  size_t n_inputs_ = 0;
  // Most recently used first; a few per fusion in practice (a batch size, a layout).
  std::vector<std::unique_ptr<Signature>> sigs_;
  std::mutex mu_;  // one call at a time: the Executor and the wrapped tensors are shared
};

// loom's dtype of a torch dtype; a loom::Error naming `where` for one loom has not.
loom::DType loomDtype(at::ScalarType t, const char* where);
at::ScalarType torchDtype(loom::DType t);

// Whether `t` is a plain CUDA tensor the fast path takes as it is (not a fake, functional or
// batched tensor, whose ops go through the dispatcher to their own kernels).
bool plainCuda(const at::Tensor& t);

}  // namespace loom_torch
