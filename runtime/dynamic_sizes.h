#pragma once
// Which calls compile kernels that take a size at run time (LOOM_TUNE_SYMBOLIC's kernels), by
// default: loom's form of torch.compile's "automatic dynamic shapes". A fusion's first sizes
// compile exactly, into its fastest kernels. A later call whose sizes differ from an earlier
// call's only in the value of one size that leads every input naming it (a batch, the rows)
// compiles kernels taking that size at run time, where the two calls' kernels would share their
// class; those serve every later value of their class (their cache key holds no value of it)
// with no compile at all.
#include "compiler/tensor_desc.h"
#include "ir/fusion.h"

namespace loom::runtime {

// Whether `now` differs from `earlier` (complete bindings of the same fusion) in exactly one
// symbol, that symbol is only ever a whole dim (never inside N*C), some input names it, and
// every tensor naming it has it as its first dim and no other. The Executor then compiles
// kernels taking it at run time where the two calls' kernels would share their class
// (compile.h, symbolicClassKeys; a row count that sizes the grid of a persistent kernel below
// the GPU's fill shares it only with counts of as many row sets), or where the earlier call
// already took it at run time.
bool secondValueOfLeadingSize(const ir::Fusion& f, const Bindings& earlier, const Bindings& now);

}  // namespace loom::runtime
