#pragma once
// Two sizes of one segment whose kernel takes the size at run time lower to the same kernel IR
// where what their lowering reads is the same but for what the size sets: the class of a new
// size is then known without lowering it again (compile.cpp, symbolicClass). Each scheduler says
// which of its parameters the size sets (`blank`); tests/test_class_memo.cpp checks, over
// the built-ins and many sizes, that plans found alike this way have the kernel IR a fresh
// lowering gives.
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

// Planned::lowers_as for a plan lowering `in` (scheduler `name`), where `blank` returns a
// kernel's parameters with those its size sets cleared.
template <class K>
std::function<bool(const Planned&)> lowersAs(std::shared_ptr<const LoweringInput<K>> in, std::string name,
                                             K (*blank)(const ir::Fusion&, const K&)) {
  return [in, name = std::move(name), blank](const Planned& other) {
    if (other.scheduler != name || !other.lowering) return false;
    const auto& o = *static_cast<const LoweringInput<K>*>(other.lowering.get());
    const K& a = *in->kernel;
    const K& b = *o.kernel;
    const std::string& s = a.size_symbol;
    if (in->f != o.f || s.empty() || s != b.size_symbol || !(in->tune == o.tune)) return false;
    if (descsForAnySize(in->f->inputs(), in->inputs, s) != descsForAnySize(o.f->inputs(), o.inputs, s)) return false;
    return blank(*in->f, a) == blank(*o.f, b);
  };
}

}  // namespace loom::schedule
