#include "frontend/composite_helpers.h"

#include "ir/error.h"

namespace loom::composite {

std::vector<int> range(int begin, int end) {
  std::vector<int> v;
  for (int i = begin; i < end; ++i) v.push_back(i);
  return v;
}

Tensor perChannel(Tensor p, int rank) {
  std::vector<bool> is_new(static_cast<size_t>(rank), true);
  is_new[1] = false;
  return broadcast(p, is_new);
}

void checkParam(const char* op, const char* what, Tensor p, const std::vector<Extent>& want) {
  LOOM_USER_CHECK(p.shape() == want, "{}: {} `{}` has shape {} but must be {}", op, what, p.name(),
                  shapeStr(p.shape()), shapeStr(want));
}

void checkChannels(const char* op, Tensor x) {
  LOOM_USER_CHECK(x.rank() >= 2, "{}: input `{}` {} needs at least 2 dims [N, C, ...]", op,
                  x.name(), x.value()->typeString());
}

void checkStat(const char* op, const char* what, Tensor s, const std::vector<Extent>& want,
               const std::string& meaning) {
  LOOM_USER_CHECK(s.shape() == want, "{}: {} `{}` has shape {} but must be {} ({})", op, what,
                  s.name(), shapeStr(s.shape()), shapeStr(want), meaning);
  LOOM_USER_CHECK(isFloat(s.dtype()), "{}: {} `{}` is {}; saved statistics are floating point "
                  "(f32 for f16/bf16 inputs)", op, what, s.name(), dtypeName(s.dtype()));
}

void checkGrad(const char* op, Tensor dy, Tensor x) {
  LOOM_USER_CHECK(dy.shape() == x.shape(), "{}: the gradient `{}` {} must have the shape of `{}` "
                  "{}", op, dy.name(), dy.value()->typeString(), x.name(), x.value()->typeString());
  LOOM_USER_CHECK(isFloat(dy.dtype()), "{}: the gradient `{}` is {}, not a floating-point tensor",
                  op, dy.name(), dtypeName(dy.dtype()));
}

Tensor asBroadcast(Tensor s) {
  std::vector<int> ones;
  for (int d = 0; d < s.rank(); ++d)
    if (!s.value()->axis(d).broadcast && s.size(d).isOne()) ones.push_back(d);
  if (ones.empty()) return s;
  std::vector<bool> is_new(static_cast<size_t>(s.rank()), false);
  for (int d : ones) is_new[static_cast<size_t>(d)] = true;
  return broadcast(squeeze(s, ones), is_new);
}

Tensor computeLike(Tensor s, Tensor like) { return cast(s, computeDType(like.dtype())); }

std::vector<Extent> trailingDims(const char* op, Tensor x, const std::vector<Dim>& normalized_shape) {
  const int k = static_cast<int>(normalized_shape.size());
  LOOM_USER_CHECK(k >= 1 && k <= x.rank(), "{}: normalized_shape has {} dims but `{}` has rank {}",
                  op, k, x.name(), x.rank());
  std::vector<Extent> ns;
  for (const auto& d : normalized_shape) ns.push_back(d.extent);
  auto xs = x.shape();
  std::vector<Extent> trailing(xs.end() - k, xs.end());
  LOOM_USER_CHECK(trailing == ns, "{}: normalized_shape {} does not match the trailing dims {} of "
                  "`{}` {}", op, shapeStr(ns), shapeStr(trailing), x.name(), x.value()->typeString());
  return ns;
}

}  // namespace loom::composite
