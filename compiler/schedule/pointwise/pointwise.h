#pragma once
// The pointwise scheduler: a fusion without reductions becomes one kernel over the shared shape
// of its outputs. Each thread handles `vec` neighbouring elements along the innermost iteration
// axis (16-byte vector loads/stores where alignment and contiguity allow), `unroll` chunks per
// loop trip (1 unless a tuning override says otherwise), in a grid-stride loop whose grid takes
// every chunk in one trip (a smaller grid only past the launch limit or under an override).
#include <optional>
#include <string>
#include <vector>

#include "compiler/compile_options.h"
#include "compiler/kir/kir.h"
#include "compiler/lower/strided_expr.h"
#include "compiler/tensor_desc.h"

namespace loom::schedule {

// Per load/store, over the `vec` lanes: the kernel IR's access kinds.
using kir::Access;
using kir::accessName;
// How `vec` neighbouring elements along the innermost kernel axis are read or written: one
// aligned vector when that axis has stride 1 and every other stride, the offset and the base
// keep vector alignment; one element for all lanes when the stride is 0; else one by one.
Access chooseAccess(DType t, int64_t offset, const std::vector<int64_t>& strides, int align_bytes,
                    int vec);

struct PointwiseKernel {
  std::string name = "loom_pointwise";
  std::vector<int64_t> iter_shape;      // collapsed iteration axes, outer to inner
  std::vector<int> order;               // output dims, outer to inner, the iteration follows
  int vec = 1, unroll = 1, block = 256;
  // One collapsed axis whose length `vec` does not divide (at this size, or at another the
  // kernel serves with a symbolic size): the elements past its last whole vector (fewer than
  // `vec`) one at a time, by the thread of the chunk after the last whole one.
  bool tail = false;
  int64_t grid = 1;
  bool index64 = false;
  int num_inputs = 0;
  struct Store {
    int output;                 // index into the fusion's outputs
    int64_t offset = 0;
    std::vector<int64_t> strides;  // over iter_shape
    DType dtype;
    Access access = Access::Vector;
    lower::ExprRef value;       // leaves' strides are over iter_shape too
    bool operator==(const Store&) const = default;
  };
  std::vector<Store> stores;
  std::vector<TensorDesc> outputs;  // what the runtime allocates (or the aliased input)
  std::vector<int> output_alias;    // input index an output writes into, or -1
  std::map<lower::Leaf, Access> load_access;
  std::string reason;               // why these parameters, for dumps
  // A symbolic outermost size (LOOM_TUNE_SYMBOLIC): the kernel takes `size_symbol` at run time,
  // iter_shape[0] being `size_factor` times it, for every value from 1 to `size_max` (the class
  // keeps its index width; `grid_max` is the grid at that size). Empty: every size is known.
  std::string size_symbol;
  int64_t size_value = 0, size_factor = 1, size_max = 0, grid_max = 0;

  bool operator==(const PointwiseKernel&) const = default;
  int64_t numel() const {
    int64_t n = 1;
    for (auto e : iter_shape) n *= e;
    return n;
  }
};

// Schedules the fusion for the given inputs, the target and the tuning knobs of `opts`;
// nullopt with `why_not` set when it has a reduction or its outputs differ in shape.
// The launch grid for `chunks` chunks of `k` (one chunk per thread a trip; capped by the
// tuning's blocks per SM and the launch limit).
int64_t pointwiseGrid(const PointwiseKernel& k, int64_t chunks, const CompileOptions& opts);

// LOOM_TUNE_SYMBOLIC (schedule/pointwise/symbolic.cpp): makes the outermost size of `k` a kernel
// parameter where every tensor names it as one symbol, and says so (or why not) in its reason.
// `iterated`: the value whose dims `k.order` names (the outputs', or the value they reshape).
void makeSymbolic(const ir::Fusion& f, const Bindings& sizes, const std::vector<TensorDesc>& inputs, PointwiseKernel& k,
                  const CompileOptions& opts, const ir::Value& iterated);

// `k` with the parameters its symbolic size sets cleared (same_lowering.h).
PointwiseKernel sizeBlanked(const ir::Fusion& f, const PointwiseKernel& k);

std::optional<PointwiseKernel> schedulePointwise(const ir::Fusion& f, const Bindings& sizes,
                                                 const std::vector<TensorDesc>& inputs,
                                                 const CompileOptions& opts, std::string* why_not);

// The kernel IR as text (loom dump --stage kernel).
std::string printKernel(const ir::Fusion& f, const PointwiseKernel& k);

}  // namespace loom::schedule
