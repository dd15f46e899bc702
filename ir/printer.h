#pragma once
// The text form of a fusion. It parses back (frontend/parser.h) to a structurally equal fusion
// that prints identically again. The format:
//
//   # comments start with '#', anywhere to end of line; blank lines are ignored
//   fusion layer_norm {
//     in x: f16[N, 1024]
//     in eps: f32[]
//     t0: f32[N, 1024] = cast(x, to=f32)
//     var: f32[N, 1b], mean: f32[N, 1b], n: i64[N, 1b] = var_mean(t0, dims=[1], correction=0, keepdim=true)
//     t1: f32[N, 1024] = sub(t0, mean)
//     t2: f32[] = const(1e-05, dtype=f32)
//     out y = t1
//     out x_cast = t0 alias x       # written back into input x, in place
//   }
//
// Each op line is `name: type[, name: type...] = op(operands..., key=value, ...)`. A type is a
// dtype and its axes: extents such as `N`, `1024`, `4*H`, `C/32`, `H*W`, and `1b` for a
// broadcast axis; `f32[]` is a scalar. Attributes, always all printed, in this order:
//   cast: to=DTYPE                     sum, amax, amin, mean: dims=[..], keepdim=BOOL
//   var_mean: dims=[..], correction=NUMBER, keepdim=BOOL (outputs var, mean, count)
//   broadcast: new=[BOOL, ..] (one per output axis)     reshape: shape=[EXTENT, ..]
//   permute: order=[..]   squeeze: dims=[..]   unsqueeze: dim=INT
//   slice: starts=[EXTENT, ..], stops=[EXTENT, ..]   (stop exclusive)
//   const: NUMBER, dtype=DTYPE         full: value=NUMBER, dtype=DTYPE, shape=[EXTENT, ..]
// Numbers print in their shortest exact form (`1e-05`, `3.0000000000000004`, `-0`, `inf`,
// `-inf`, `nan`). A fusion name that is not an identifier prints as a quoted string.
#include <ostream>
#include <string>

#include "ir/fusion.h"

namespace loom::ir {

std::string printFusion(const Fusion& f);
// printFusion's text, kept with a finished fusion (Fusion::derived): printed once.
std::string fusionText(const Fusion& f);
std::ostream& operator<<(std::ostream& os, const Fusion& f);

// One op line without indentation or newline, e.g. `t1: f32[N] = neg(x)`.
std::string printOp(const Op& op);

// A number as the text format writes it: shortest round-tripping form, `inf`, `-inf`, `nan`.
std::string formatNumber(double v);

}  // namespace loom::ir
