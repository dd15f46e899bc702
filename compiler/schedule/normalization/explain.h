#pragma once
// The schedule dump's English for a normalization kernel (`loom dump --stage schedule`, `loom
// segment`), generated in one place from its tier, its parameters (RowKernel's fields) and the
// reasons of the decisions that chose them.
#include <string>
#include <vector>

#include "compiler/schedule/normalization/threads.h"
#include "compiler/schedule/tiers.h"

namespace loom::schedule::norm_detail {

// What the scheduler decided beyond RowKernel's fields: the tier, the block limit, the values
// a thread would hold in registers and their budget (not the row-vector tiers), the grid tier's
// blocks per SM, and each decision's reason in the order taken.
struct TierChoice {
  NormTier tier = NormTier::Registers;
  BlockLimit limit;
  int held = 0, budget = 0, grid_per_sm = 0;
  std::vector<std::string> why;
  void note(std::string w) {
    if (!w.empty()) why.push_back(std::move(w));
  }
};

// One line: the rows and their elements, threads, chunks, block and grid; the tier and how it
// holds the row; then each decision's reason.
std::string explainNormKernel(const RowKernel& k, const TierChoice& c, const std::vector<TensorDesc>& inputs);

}  // namespace loom::schedule::norm_detail
