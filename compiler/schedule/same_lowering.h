#pragma once
// Two sizes of one segment whose kernel takes the size at run time lower to the same kernel IR
// where what their lowering reads is the same but for what the size sets: the class of a new
// size is then known without lowering it again (compile.cpp, symbolicClass). Each scheduler says
// which of its parameters the size sets (`sizeBlanked`); tests/test_class_memo.cpp checks, over
// the built-ins and many sizes, that plans found alike this way have the kernel IR a fresh
// lowering gives.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "compiler/schedule/scheduler.h"
#include "compiler/schedule/symbolic.h"

namespace loom::schedule {

// What a scheduler's lowering reads: the segment's fusion, the kernel's parameters (a kernel
// type K with `size_symbol` and `==`), the inputs and the tuning.
template <class K>
struct LoweringInput {
  const ir::Fusion* f = nullptr;
  std::shared_ptr<const K> kernel;
  std::vector<TensorDesc> inputs;
  Tuning tune;
};

// Whether plans lowering `a` and `b` lower alike; `sizeBlanked(f, K)` (found beside K) returns a
// kernel's parameters with those its size sets cleared.
template <class K>
bool lowerAlike(const LoweringInput<K>& a, const LoweringInput<K>& b) {
  const std::string& s = a.kernel->size_symbol;
  if (a.f != b.f || s.empty() || s != b.kernel->size_symbol || !(a.tune == b.tune)) return false;
  if (descsForAnySize(a.f->inputs(), a.inputs, s) != descsForAnySize(b.f->inputs(), b.inputs, s)) return false;
  return sizeBlanked(*a.f, *a.kernel) == sizeBlanked(*b.f, *b.kernel);
}

// Sets `p.lower` to `lower(in)` over what it reads, and, for a kernel taking its size at run
// time, `p.lowers_as` (plans of the same scheduler, `p.scheduler`, set first).
template <class K, class Lower>
void setLowering(Planned& p, const ir::Fusion& f, std::shared_ptr<const K> kernel, const std::vector<TensorDesc>& inputs,
                 const Tuning& tune, Lower lower) {
  auto in = std::make_shared<const LoweringInput<K>>(LoweringInput<K>{&f, std::move(kernel), inputs, tune});
  p.lower = [in, lower]() { return lower(*in); };
  p.lowering = in;
  if (in->kernel->size_symbol.empty()) return;
  p.lowers_as = [in, name = p.scheduler](const Planned& other) {
    return other.scheduler == name && other.lowering &&
           lowerAlike(*in, *static_cast<const LoweringInput<K>*>(other.lowering.get()));
  };
}

}  // namespace loom::schedule
