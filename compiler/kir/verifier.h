#pragma once
// Checks a whole kernel: every name bound once and before use, with the type it was bound with;
// loads read inputs and stores write outputs; every index fits the kernel's index type; and
// every load and store stays inside its tensor for every iteration of its loops (an interval
// analysis over the launch shape and the loop bounds; an access it cannot bound is refused).
#include <string>
#include <vector>

#include "compiler/kir/kir.h"

namespace loom::kir {

// Every problem found, one sentence each; empty when the kernel is well formed.
std::vector<std::string> verify(const Kernel& k);
// An internal error naming the pass that produced a malformed kernel, with the kernel's text.
void verifyOrFail(const Kernel& k, const std::string& after_pass);

}  // namespace loom::kir
