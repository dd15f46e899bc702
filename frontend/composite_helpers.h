#pragma once
// What the forward and backward composites share: argument checks with user-facing messages,
// per-channel broadcasts, and the affine tail. Internal to frontend/composites*.cpp.
#include <optional>
#include <string>
#include <vector>

#include "frontend/builder.h"

namespace loom::composite {

// begin, begin + 1, ..., end - 1.
std::vector<int> range(int begin, int end);

// Broadcasts a per-channel [C] tensor to [1b, C, 1b, ...] for an input of `rank` dims.
Tensor perChannel(Tensor p, int rank);

// `op`: parameter `what` must have shape `want`.
void checkParam(const char* op, const char* what, Tensor p, const std::vector<Extent>& want);

// `op`: `x` must be [N, C, ...].
void checkChannels(const char* op, Tensor x);

// `op`: the saved statistic `what` must be a float tensor of shape `want`; `meaning` says what
// shape that is (e.g. "x's leading dims [N] followed by 1s").
void checkStat(const char* op, const char* what, Tensor s, const std::vector<Extent>& want,
               const std::string& meaning);

// `op`: dy must have x's shape.
void checkGrad(const char* op, Tensor dy, Tensor x);

// `s` with every constant extent-1 dim made a broadcast dim, so that it stretches against a
// full tensor of its rank (a saved statistic read as an input is [N, 1], not [N, 1b]).
Tensor asBroadcast(Tensor s);

// `s` cast to the dtype math on `like` runs in.
Tensor computeLike(Tensor s, Tensor like);

// The normalized dims of layer_norm / rms_norm: checks normalized_shape against x's trailing
// dims and returns it as extents.
std::vector<Extent> trailingDims(const char* op, Tensor x, const std::vector<Dim>& normalized_shape);

// y * w + b with w, b cast to the compute dtype; `expand` shapes them to y's rank.
template <typename Expand>
Tensor affine(Tensor y, std::optional<Tensor> w, std::optional<Tensor> b, Expand expand) {
  if (w) y = y * expand(cast(*w, y.dtype()));
  if (b) y = y + expand(cast(*b, y.dtype()));
  return y;
}

}  // namespace loom::composite
