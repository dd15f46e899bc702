#include "ir/extent.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <numeric>

#include "ir/error.h"

namespace loom {

Extent::Extent(int64_t c) : num_(c), den_(1) {
  LOOM_USER_CHECK(c >= 0, "extent {} is negative; extents must be >= 0", c);
}

Extent Extent::symbol(std::string name) {
  bool ok = !name.empty() && (std::isalpha(static_cast<unsigned char>(name[0])) || name[0] == '_');
  for (char c : name) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  LOOM_USER_CHECK(ok, "`{}` is not a valid size name: use letters, digits and `_`, not starting "
                  "with a digit", name);
  Extent e;
  e.syms_.push_back({std::move(name), 1});
  return e;
}

int64_t Extent::constant() const {
  LOOM_ASSERT(isConstant(), "extent {} is not constant", str());
  return num_;
}

void Extent::normalize() {
  if (num_ == 0) {
    syms_.clear();
    den_ = 1;
    return;
  }
  int64_t g = std::gcd(num_, den_);
  num_ /= g;
  den_ /= g;
  std::erase_if(syms_, [](const auto& p) { return p.second == 0; });
}

static std::vector<std::pair<std::string, int>> combine(
    const std::vector<std::pair<std::string, int>>& a,
    const std::vector<std::pair<std::string, int>>& b, int sign) {
  std::map<std::string, int> m(a.begin(), a.end());
  for (const auto& [s, p] : b) m[s] += sign * p;
  std::vector<std::pair<std::string, int>> out;
  for (const auto& [s, p] : m)
    if (p != 0) out.push_back({s, p});
  return out;
}

static int64_t checkedMul(int64_t a, int64_t b) {
  __int128 r = static_cast<__int128>(a) * b;
  LOOM_USER_CHECK(r <= INT64_MAX && r >= INT64_MIN, "extent arithmetic overflows 64 bits ({} * {})",
                  a, b);
  return static_cast<int64_t>(r);
}

Extent Extent::operator*(const Extent& o) const {
  Extent r;
  r.num_ = checkedMul(num_, o.num_);
  r.den_ = checkedMul(den_, o.den_);
  r.syms_ = combine(syms_, o.syms_, 1);
  r.normalize();
  return r;
}

Extent Extent::operator/(const Extent& o) const {
  LOOM_USER_CHECK(o.num_ != 0, "division of extent {} by a zero extent", str());
  Extent r;
  r.num_ = checkedMul(num_, o.den_);
  r.den_ = checkedMul(den_, o.num_);
  r.syms_ = combine(syms_, o.syms_, -1);
  r.normalize();
  return r;
}

bool Extent::divisibleBy(const Extent& o) const {
  if (o.num_ == 0) return false;
  Extent q = *this / o;
  if (q.den_ != 1) return false;
  return std::all_of(q.syms_.begin(), q.syms_.end(), [](const auto& p) { return p.second > 0; });
}

std::optional<Extent> Extent::minus(const Extent& o) const {
  if (num_ == 0) return o.num_ == 0 ? std::optional<Extent>(Extent(0)) : std::nullopt;
  if (o.num_ == 0) return *this;
  if (syms_ != o.syms_) return std::nullopt;
  // a/den_a - b/den_b over the shared monomial.
  int64_t n = checkedMul(num_, o.den_) - checkedMul(o.num_, den_);
  if (n < 0) return std::nullopt;
  Extent r;
  r.num_ = n;
  r.den_ = checkedMul(den_, o.den_);
  r.syms_ = syms_;
  r.normalize();
  return r;
}

std::optional<Extent> Extent::plus(const Extent& o) const {
  if (num_ == 0) return o;
  if (o.num_ == 0) return *this;
  if (syms_ != o.syms_) return std::nullopt;
  Extent r;
  r.num_ = checkedMul(num_, o.den_) + checkedMul(o.num_, den_);
  r.den_ = checkedMul(den_, o.den_);
  r.syms_ = syms_;
  r.normalize();
  return r;
}

std::optional<bool> Extent::lessEqual(const Extent& o) const {
  if (num_ == 0) return true;
  if (o.num_ == 0) return false;
  if (syms_ != o.syms_) return std::nullopt;
  return checkedMul(num_, o.den_) <= checkedMul(o.num_, den_);
}

int64_t Extent::evaluate(const Bindings& b) const {
  __int128 n = num_, d = den_;
  for (const auto& [s, p] : syms_) {
    auto it = b.find(s);
    LOOM_USER_CHECK(it != b.end(), "size `{}` is not known; give it, e.g. `--dim {}=64`", s, s);
    LOOM_USER_CHECK(it->second > 0 || p > 0, "size {}={} divides extent {}", s, it->second, str());
    for (int i = 0; i < std::abs(p); ++i) {
      (p > 0 ? n : d) *= it->second;
      LOOM_USER_CHECK(n <= INT64_MAX && d <= INT64_MAX, "extent {} overflows 64 bits", str());
    }
  }
  LOOM_USER_CHECK(d != 0 && n % d == 0, "extent {} is not a whole number with {}", str(),
                  [&] {
                    std::string s;
                    for (const auto& [k, p] : syms_)
                      if (b.count(k)) s += fmt::format("{}{}={}", s.empty() ? "" : ", ", k, b.at(k));
                    return s;
                  }());
  return static_cast<int64_t>(n / d);
}

std::vector<std::string> Extent::symbols() const {
  std::vector<std::string> out;
  for (const auto& [s, p] : syms_) out.push_back(s);
  return out;
}

std::string Extent::str() const {
  std::string numer, denom;
  if (num_ != 1 || std::none_of(syms_.begin(), syms_.end(), [](auto& p) { return p.second > 0; }))
    numer = std::to_string(num_);
  for (const auto& [s, p] : syms_)
    for (int i = 0; i < p; ++i) numer += (numer.empty() ? "" : "*") + s;
  if (den_ != 1) denom.append("/").append(std::to_string(den_));
  for (const auto& [s, p] : syms_)
    for (int i = 0; i < -p; ++i) denom += "/" + s;
  return numer + denom;
}

std::string shapeStr(const std::vector<Extent>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + shape[i].str();
  return s + "]";
}

}  // namespace loom
