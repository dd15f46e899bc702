#pragma once
// The small pieces of the fusion text format: numbers, dtypes, extents, types and `[...]`
// lists. Each reads from a TokenStream and reports `expected X, found Y` where it stops.
#include <vector>

#include "frontend/lexer.h"
#include "ir/value.h"

namespace loom::text {

// `f16[N, 1b, 4*H]`, as written at `loc`.
struct TypeDecl {
  DType dtype;
  std::vector<ir::Axis> axes;
  Loc loc;
};

DType parseDType(TokenStream& ts);
bool parseBool(TokenStream& ts);
int parseInt(TokenStream& ts);  // optionally negative; fits an int
double parseNumber(TokenStream& ts);  // `1.5`, `-2`, `1e-05`, `inf`, `-inf`, `nan`
Extent parseExtent(TokenStream& ts);  // `N`, `1024`, `4*H`, `C/32`, `H*W/G`
TypeDecl parseType(TokenStream& ts);

// `[item, item, ...]`, possibly empty.
template <typename F>
auto parseList(TokenStream& ts, F&& item) -> std::vector<decltype(item())> {
  std::vector<decltype(item())> out;
  ts.expect('[');
  if (ts.accept(']')) return out;
  for (;;) {
    out.push_back(item());
    if (ts.accept(',')) continue;
    if (ts.accept(']')) return out;
    ts.expected("`,` or `]`");
  }
}

}  // namespace loom::text
