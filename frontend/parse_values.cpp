#include "frontend/parse_values.h"

#include <charconv>
#include <cmath>
#include <limits>

namespace loom::text {

namespace {

std::string dtypeNames() {
  std::string s;
#define LOOM_DTYPE(E, name, bytes, is_float, is_int) s += std::string(s.empty() ? "" : ", ") + name;
#include <loom/dtypes.def>
#undef LOOM_DTYPE
  return s;
}

bool isInteger(const Token& t) {
  return t.kind == TokKind::Number &&
         t.text.find_first_not_of("0123456789") == std::string::npos;
}

// A non-negative integer literal.
int64_t parseNatural(TokenStream& ts, std::string_view what) {
  if (!isInteger(ts.peek())) ts.expected(what);
  const Token& t = ts.next();
  int64_t v = 0;
  auto [end, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
  if (ec != std::errc()) ts.error(t.loc, fmt::format("integer `{}` is too large", t.text));
  return v;
}

Extent parseExtentTerm(TokenStream& ts) {
  constexpr std::string_view what = "an extent (a size such as `N`, `1024`, `4*H` or `C/32`)";
  const Token& t = ts.peek();
  if (t.isIdent()) return Extent::symbol(ts.next().text);
  Loc at = t.loc;
  int64_t v = parseNatural(ts, what);
  return ts.located(at, [&] { return Extent(v); });
}

}  // namespace

DType parseDType(TokenStream& ts) {
  const Token& t = ts.peek();
  std::optional<DType> d = t.isIdent() ? loom::parseDType(t.text) : std::nullopt;
  if (!d) ts.expected("a dtype (" + dtypeNames() + ")");
  ts.next();
  return *d;
}

bool parseBool(TokenStream& ts) {
  const Token& t = ts.peek();
  if (!t.isIdent("true") && !t.isIdent("false")) ts.expected("`true` or `false`");
  return ts.next().text == "true";
}

int parseInt(TokenStream& ts) {
  Loc at = ts.peek().loc;
  bool neg = ts.accept('-');
  int64_t v = parseNatural(ts, "an integer");
  if (v > std::numeric_limits<int>::max())
    ts.error(at, fmt::format("integer {}{} is out of range", neg ? "-" : "", v));
  return static_cast<int>(neg ? -v : v);
}

double parseNumber(TokenStream& ts) {
  bool neg = ts.accept('-');
  const Token& t = ts.peek();
  double v = 0;
  if (t.isIdent("inf")) {
    v = std::numeric_limits<double>::infinity();
  } else if (t.isIdent("nan")) {
    v = std::numeric_limits<double>::quiet_NaN();
  } else if (t.kind == TokKind::Number) {
    const char* end = t.text.data() + t.text.size();
    auto [ptr, ec] = std::from_chars(t.text.data(), end, v);
    if (ptr != end) ts.expected("a number");
    if (ec != std::errc()) ts.error(t.loc, fmt::format("number `{}` is out of range", t.text));
  } else {
    ts.expected("a number");
  }
  ts.next();
  return neg ? -v : v;
}

Extent parseExtent(TokenStream& ts) {
  Extent e = parseExtentTerm(ts);
  while (ts.peek().is('*') || ts.peek().is('/')) {
    const Token& op = ts.next();
    Extent rhs = parseExtentTerm(ts);
    e = ts.located(op.loc, [&] { return op.is('*') ? e * rhs : e / rhs; });
  }
  return e;
}

TypeDecl parseType(TokenStream& ts) {
  Loc at = ts.peek().loc;
  DType dtype = parseDType(ts);
  auto axes = parseList(ts, [&] {
    if (ts.peek().kind == TokKind::Number && ts.peek().text == "1b") {
      ts.next();
      return ir::Axis::bcast();
    }
    return ir::Axis::iter(parseExtent(ts));
  });
  return {dtype, std::move(axes), at};
}

}  // namespace loom::text
