#pragma once
// A memory order named in text, for tools and the C ABI: "nchw" (or "contiguous"), "nhwc" (or
// "channels_last"), or a permutation of the dims listed outer to inner ("0,2,3,1").
#include <string>
#include <vector>

#include "ir/fusion.h"

namespace loom {

// The memory order of input `input` of `f` from `layout` (dims outer to inner); a loom::Error
// starting with `where` (e.g. "--layout x=nhwc") says what was wrong and what would be right.
std::vector<int> parseMemoryOrder(const ir::Fusion& f, const std::string& input, const std::string& layout,
                                  const std::string& where);

}  // namespace loom
