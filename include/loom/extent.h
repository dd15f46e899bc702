#pragma once
// The extent of an axis: a monomial with a rational coefficient over named symbols, e.g. `N`,
// `1024`, `4*H`, `C/32`, `H*W`, `C/G`. Splits and merges of reshapes stay exact, so group norm's
// `[N, C, H, W] -> [N, 32, C/32, H, W]` is checked symbolically and evaluated once sizes are known.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <loom/export.h>

#pragma GCC visibility push(default)
namespace loom {

using Bindings = std::map<std::string, int64_t>;

class Extent {
 public:
  Extent() = default;  // the constant 1
  Extent(int64_t c);   // NOLINT: constants convert implicitly
  static Extent symbol(std::string name);

  bool isConstant() const { return syms_.empty() && den_ == 1; }
  // The constant value; only when isConstant().
  int64_t constant() const;
  bool isOne() const { return isConstant() && num_ == 1; }

  Extent operator*(const Extent& o) const;
  Extent operator/(const Extent& o) const;
  bool operator==(const Extent& o) const = default;
  // True when this / o is a monomial with integer coefficient and no negative powers.
  bool divisibleBy(const Extent& o) const;
  // For slices: a - b where both are multiples of one monomial, else nullopt.
  std::optional<Extent> minus(const Extent& o) const;
  // For concats: a + b where both are multiples of one monomial, else nullopt.
  std::optional<Extent> plus(const Extent& o) const;
  // Compares `a <= b` where decidable (same monomial, or both constants).
  std::optional<bool> lessEqual(const Extent& o) const;

  // Evaluates with the given sizes; throws loom::Error naming the missing symbol or the
  // inexact division.
  int64_t evaluate(const Bindings& b) const;
  std::vector<std::string> symbols() const;
  std::string str() const;

  // Raw parts, for binding symbols from concrete sizes.
  int64_t num() const { return num_; }
  int64_t den() const { return den_; }
  const std::vector<std::pair<std::string, int>>& powers() const { return syms_; }

 private:
  LOOM_HIDDEN void normalize();
  int64_t num_ = 1, den_ = 1;
  std::vector<std::pair<std::string, int>> syms_;  // sorted by name, nonzero powers
};

std::string shapeStr(const std::vector<Extent>& shape);

}  // namespace loom
#pragma GCC visibility pop
