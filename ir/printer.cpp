#include "ir/printer.h"

#include <fmt/format.h>

#include <cctype>
#include <cmath>

namespace loom::ir {

namespace {

template <typename T, typename F>
std::string list(const std::vector<T>& items, F&& item) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", " : "") + item(items[i]);
  return s + "]";
}

std::string intList(const std::vector<int>& v) {
  return list(v, [](int d) { return std::to_string(d); });
}
std::string boolStr(bool b) { return b ? "true" : "false"; }
std::string extentList(const std::vector<Extent>& v) {
  return list(v, [](const Extent& e) { return e.str(); });
}
std::string dtypeStr(DType t) { return std::string(dtypeName(t)); }

// `key=value` pieces (and the positional value of `const`), in canonical order.
std::vector<std::string> attrStrings(const Op& op) {
  switch (op.family()) {
    case OpFamily::Cast:
    case OpFamily::Bitcast:
      return {"to=" + dtypeStr(op.attr<CastAttrs>().to)};
    case OpFamily::Reduce: {
      const auto& a = op.attr<ReduceAttrs>();
      return {"dims=" + intList(a.dims), "keepdim=" + boolStr(a.keepdim)};
    }
    case OpFamily::VarMean: {
      const auto& a = op.attr<ReduceAttrs>();
      return {"dims=" + intList(a.dims), "correction=" + formatNumber(a.correction),
              "keepdim=" + boolStr(a.keepdim)};
    }
    case OpFamily::ArgReduce: {
      const auto& a = op.attr<ReduceAttrs>();
      return {"dim=" + std::to_string(a.dims.at(0)), "keepdim=" + boolStr(a.keepdim)};
    }
    case OpFamily::Broadcast:
      return {"new=" + list(op.attr<BroadcastAttrs>().is_new, boolStr)};
    case OpFamily::Reshape:
      return {"shape=" + extentList(op.attr<ShapeAttrs>().shape)};
    case OpFamily::Permute:
      return {"order=" + intList(op.attr<DimsAttrs>().dims)};
    case OpFamily::Squeeze:
      return {"dims=" + intList(op.attr<DimsAttrs>().dims)};
    case OpFamily::Unsqueeze:
    case OpFamily::Gather:
    case OpFamily::Concat:
      return {"dim=" + std::to_string(op.attr<DimsAttrs>().dims.at(0))};
    case OpFamily::Slice: {
      const auto& a = op.attr<SliceAttrs>();
      return {"starts=" + extentList(a.starts), "stops=" + extentList(a.stops)};
    }
    case OpFamily::Constant: {
      const auto& a = op.attr<ScalarAttrs>();
      return {formatNumber(a.value), "dtype=" + dtypeStr(a.dtype)};
    }
    case OpFamily::Full: {
      const auto& a = op.attr<ScalarAttrs>();
      return {"value=" + formatNumber(a.value), "dtype=" + dtypeStr(a.dtype),
              "shape=" + extentList(a.shape)};
    }
    case OpFamily::Iota: {
      const auto& a = op.attr<ScalarAttrs>();
      return {"dtype=" + dtypeStr(a.dtype), "shape=" + extentList(a.shape), "dim=" + std::to_string(a.dim)};
    }
    case OpFamily::Random: {
      const auto& a = op.attr<ScalarAttrs>();
      return {"dtype=" + dtypeStr(a.dtype), "shape=" + extentList(a.shape)};
    }
    default:
      return {};
  }
}

bool isIdentifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

// Identifiers print bare; anything else as a string with `\"`, `\\`, `\n`, `\t` escaped.
std::string fusionName(const std::string& name) {
  if (isIdentifier(name)) return name;
  std::string s = "\"";
  for (char c : name) {
    switch (c) {
      case '"': s += "\\\""; break;
      case '\\': s += "\\\\"; break;
      case '\n': s += "\\n"; break;
      case '\t': s += "\\t"; break;
      default: s += c;
    }
  }
  return s + "\"";
}

}  // namespace

std::string formatNumber(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  return fmt::format("{}", v);
}

std::string printOp(const Op& op) {
  std::string lhs;
  for (const Value* v : op.outputs())
    lhs += (lhs.empty() ? "" : ", ") + v->name() + ": " + v->typeString();
  std::string args;
  for (const Value* v : op.inputs()) args += (args.empty() ? "" : ", ") + v->name();
  for (const std::string& a : attrStrings(op)) args += (args.empty() ? "" : ", ") + a;
  return fmt::format("{} = {}({})", lhs, op.name(), args);
}

std::string fusionText(const Fusion& f) {
  return *std::static_pointer_cast<const std::string>(
      f.derived("text", [&] { return std::make_shared<const std::string>(printFusion(f)); }));
}

std::string printFusion(const Fusion& f) {
  std::string s = "fusion " + fusionName(f.name()) + " {\n";
  for (const Value* v : f.inputs()) s += fmt::format("  in {}: {}\n", v->name(), v->typeString());
  for (const Op* op : f.ops()) s += "  " + printOp(*op) + "\n";
  for (const Output& o : f.outputs()) {
    s += fmt::format("  out {} = {}", o.name, o.value->name());
    if (o.alias) s += " alias " + o.alias->name();
    s += "\n";
  }
  return s + "}\n";
}

std::ostream& operator<<(std::ostream& os, const Fusion& f) { return os << printFusion(f); }

}  // namespace loom::ir
