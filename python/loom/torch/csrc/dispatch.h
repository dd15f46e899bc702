#pragma once
// Small pieces the ops' kernels share: optional tensors as pointers, and an op found once in
// PyTorch's dispatcher (for tensors the fast path does not take: fakes, functional or batched).
#include <initializer_list>
#include <optional>

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>

namespace loom_torch {

using OptT = std::optional<at::Tensor>;

inline const at::Tensor* opt(const OptT& t) { return t ? &*t : nullptr; }

// The op `name` (loom::...) with the C++ signature Sig; callers keep it in a function static.
template <class Sig>
c10::TypedOperatorHandle<Sig> handle(const char* name) {
  return c10::Dispatcher::singleton().findSchemaOrThrow(name, "").typed<Sig>();
}

// Whether these tensors are all plain CUDA tensors (runner.h plainCuda), absent ones aside.
bool allPlain(std::initializer_list<const at::Tensor*> ts);

}  // namespace loom_torch
