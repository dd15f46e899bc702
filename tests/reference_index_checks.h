#pragma once
// The reference's index and bit ops against direct loops (tests/test_reference_ops.cpp asks each
// family of ops.def for its check): bitcast, gather and index_select, argmax and argmin.
#include "ir/op.h"

namespace loom::test {

void checkBitcast();
void checkGather(ir::OpKind k);
void checkArgReduce(ir::OpKind k);

}  // namespace loom::test
