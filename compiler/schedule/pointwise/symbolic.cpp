// LOOM_TUNE_SYMBOLIC for the pointwise scheduler: the outermost size becomes a kernel parameter
// (schedule/pointwise/pointwise.h, PointwiseKernel::size_symbol), so that one kernel serves every value of
// it whose schedule comes out the same. Which values those are is left to the kernel IR itself:
// the compile key of such a kernel is its kernel IR (its fingerprint: compile.cpp, symbolicClass),
// so a schedule that depends on the size in any way gets a kernel of its own.
#include <algorithm>
#include <limits>

#include <fmt/format.h>

#include "compiler/schedule/pointwise/pointwise.h"
#include "compiler/schedule/symbolic.h"
#include "ir/error.h"
#include "ir/fusion.h"

namespace loom::schedule {

namespace {

// The symbol every tensor's outermost iterated dim is, where it is exactly one symbol that no
// tensor names any other way (a compound extent such as N*C keeps every size known). `iterated`:
// the value whose dims the iteration follows (the outputs', or the value they reshape).
std::optional<std::string> outerSymbol(const ir::Fusion& f, const PointwiseKernel& k, const ir::Value& iterated) {
  const auto dims = iterated.shape();
  if (k.order.empty() || static_cast<size_t>(k.order[0]) >= dims.size()) return std::nullopt;
  const Extent& outer = dims[static_cast<size_t>(k.order[0])];
  const auto syms = outer.symbols();
  if (syms.size() != 1 || !(outer == Extent::symbol(syms[0])) || !symbolOnlyWhole(f, syms[0])) return std::nullopt;
  return syms[0];
}

using Wide = __int128;

// The furthest element a kernel of outer size `n` reaches.
Wide maxOffset(const PointwiseKernel& k, int64_t n) {
  std::vector<int64_t> shape = k.iter_shape;
  shape[0] = n * k.size_factor;
  return furthestReach(shape, k.vec, k.load_access, k.stores);
}

}  // namespace

int64_t pointwiseGrid(const PointwiseKernel& k, int64_t chunks, const CompileOptions& opts) {
  const int64_t per_block = int64_t{k.block} * k.unroll;
  int64_t grid = (chunks + per_block - 1) / per_block;
  if (opts.tuning.pw_blocks_per_sm)
    grid = std::min<int64_t>(grid, int64_t{opts.device.sm_count} * *opts.tuning.pw_blocks_per_sm);
  return std::clamp<int64_t>(grid, 1, std::numeric_limits<int32_t>::max());
}

void makeSymbolic(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs, PointwiseKernel& k,
                  const CompileOptions& opts, const ir::Value& iterated) {
  auto s = outerSymbol(f, k, iterated);
  if (!s) {
    k.reason += "; every size known (no single symbol is the outermost dim of every tensor)";
    return;
  }
  auto it = sizes.find(*s);
  const int64_t n = it == sizes.end() ? 0 : it->second;
  if (n < 1 || k.iter_shape[0] % n != 0) {
    k.reason += fmt::format("; every size known ({} is not the outermost iterated axis)", *s);
    return;
  }
  if (const std::string why = sizeBlocker(f, inputs, k.outputs, k.load_access, *s); !why.empty()) {
    k.reason += "; every size known (" + why + ")";
    return;
  }
  k.size_symbol = *s;
  k.size_value = n;
  k.size_factor = k.iter_shape[0] / n;
  const int64_t per = k.numel() / n;  // elements per unit of the size
  // Sizes whose elements the vector does not divide: the tail, at run time (one axis; more
  // axes keep the innermost a whole number of vectors). (LOOM_NO_PEEL: as before, a kernel
  // serving only sizes whose plans share its vector width.)
  if (per % k.vec != 0 && !opts.tuning.no_peel) {
    LOOM_ASSERT(k.iter_shape.size() == 1, "a symbolic size of {} elements a unit in vectors of {} over {} axes", per,
                k.vec, k.iter_shape.size());
    k.tail = true;
    k.unroll = 1;
  }
  const int64_t per_block = int64_t{k.block} * k.unroll;
  // The sizes this kernel's index width holds: the chunk loop's index and every offset.
  const Wide lim = k.index64 ? (Wide{1} << 62) : (Wide{1} << 31);
  auto fits = [&](int64_t m) {
    const Wide chunks = (Wide{m} * per + k.vec - 1) / k.vec;
    if (Wide{m} * per >= lim) return false;
    const Wide grid = (chunks + per_block - 1) / per_block;
    return chunks + std::min<Wide>(grid, std::numeric_limits<int32_t>::max()) * per_block < lim &&
           maxOffset(k, m) < lim;
  };
  k.size_max = largestFitting(n, fits);
  k.grid_max = pointwiseGrid(k, static_cast<int64_t>((Wide{k.size_max} * per + k.vec - 1) / k.vec), opts);
  k.reason += fmt::format("; {} = {} a kernel parameter (symbolic): this kernel serves {} from 1 to {}",
                          *s, n, *s, k.size_max);
}

PointwiseKernel sizeBlanked(const ir::Fusion& f, const PointwiseKernel& k) {
  PointwiseKernel b = k;
  if (!b.iter_shape.empty()) b.iter_shape[0] = 0;  // (the lowering reads `size_factor` and the parameter)
  b.size_value = 0;
  b.grid = 0;  // (launched at `grid_max` blocks)
  b.reason.clear();
  b.outputs = descsForAnySize(outputValues(f), k.outputs, k.size_symbol);
  return b;
}

}  // namespace loom::schedule
