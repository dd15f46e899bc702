#pragma once
// Pass `norm-rows`: the normalization schedule as kernel IR, for the tiers written in it so far:
// rows held in registers by threads of one block (each thread's chunks of its row loaded once,
// every reduction a fold of the thread's lanes and chunks then a combine across the row's
// threads, the outputs stored from the registers). nullopt, with the reason, for the other
// tiers, which compiler/codegen's normalization emitter still makes.
#include <optional>
#include <string>

#include "compiler/kir/kir.h"
#include "compiler/tuning.h"
#include "compiler/schedule/normalization.h"

namespace loom::schedule {

// Why kernel IR does not express this schedule yet; empty when it does.
std::string normKirGap(const NormKernel& k);

std::optional<kir::Kernel> lowerNormalization(const ir::Fusion& f, const NormKernel& k,
                                              const std::vector<TensorDesc>& inputs, const Tuning& tune);

}  // namespace loom::schedule
