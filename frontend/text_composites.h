#pragma once
// The composites (composites.h, composites_backward.h) as calls of the text format, expanded into
// their primitive ops where they are parsed:
//
//   y, mean, rstd = layer_norm(x, w, b, normalized_shape=[D], eps=1e-05)
//   dx, dw, db = layer_norm_backward(dy, x, mean, rstd, w, b, normalized_shape=[D])
//   grad_gates, grad_cx = lstm_cell_backward(none, dcy, cx, cy, ws, has_bias=false)
//
// Operands are positional, as the C++ functions take them (`none` for an optional one left out,
// trailing optional ones may be omitted); parameters are `key=value`. The names on the left bind
// the results in order, and how many are given picks the form where a composite has two
// (`layer_norm`: y, or y with the mean and rstd its backward reads).
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "frontend/builder.h"

namespace loom::text {

enum class ParamKind { Number, Int, Bool, Extents, Name };
using ParamValue = std::variant<double, int, bool, std::vector<Extent>, std::string>;

struct CompositeParam {
  std::string_view key;
  ParamKind kind;
  bool required;
};

// One call's arguments, as parsed.
struct CompositeArgs {
  std::string_view op;
  std::vector<std::optional<Tensor>> operands;  // one per spec operand; nullopt: `none` or left out
  std::map<std::string, ParamValue, std::less<>> params;
  size_t results = 0;  // how many names the line binds

  Tensor tensor(size_t i) const { return *operands.at(i); }  // a required operand
  const std::optional<Tensor>& opt(size_t i) const { return operands.at(i); }
  double number(std::string_view key, double fallback) const;
  int whole(std::string_view key) const;  // a required Int
  int whole(std::string_view key, int fallback) const;
  bool flag(std::string_view key, bool fallback) const;
  std::string name(std::string_view key, std::string_view fallback) const;  // a Name: an identifier
  std::vector<Dim> dims(std::string_view key) const;  // a required Extents
};

struct NamedResult {
  std::string_view name;  // as documented: `dx`, `dw`, ...
  Tensor value;
};

struct CompositeSpec {
  std::string_view name;
  std::vector<std::string_view> operands;  // a trailing `?` marks an optional one
  std::vector<CompositeParam> params;
  std::string_view results;  // for messages: "y; or y, mean, rstd"
  // Builds the form `args.results` picks (where there are two) and returns its results.
  std::vector<NamedResult> (*build)(const CompositeArgs&);
};

const std::vector<CompositeSpec>& composites();
const CompositeSpec* findComposite(std::string_view name);  // null if none

}  // namespace loom::text
