#pragma once
// A reshape that loom accepts is a view: consecutive input axes and consecutive output axes
// pair up into groups of equal size (a split, a merge, or an axis kept). Size-1 axes form
// groups of their own with nothing on the other side.
#include <vector>

#include "ir/extent.h"

namespace loom::ir {

struct ReshapeGroup {
  int in_begin, in_end;    // [begin, end) of input axes
  int out_begin, out_end;  // [begin, end) of output axes
};

// Throws loom::Error when the shapes differ in size or are not a split/merge view.
std::vector<ReshapeGroup> reshapeGroups(const std::vector<Extent>& in,
                                        const std::vector<Extent>& out);

}  // namespace loom::ir
