#include "ir/op.h"

#include "ir/error.h"

namespace loom::ir {

namespace {
struct OpInfo {
  std::string_view name;
  OpFamily family;
};
constexpr OpInfo kOps[] = {
#define LOOM_OP(E, name, family) {name, OpFamily::family},
#include "ir/ops.def"
#undef LOOM_OP
};
}  // namespace

std::string_view opName(OpKind k) { return kOps[static_cast<int>(k)].name; }
OpFamily opFamily(OpKind k) { return kOps[static_cast<int>(k)].family; }

bool parseOpKind(std::string_view name, OpKind* out) {
  for (size_t i = 0; i < std::size(kOps); ++i)
    if (kOps[i].name == name) {
      *out = static_cast<OpKind>(i);
      return true;
    }
  return false;
}

const std::vector<OpKind>& allOpKinds() {
  static const std::vector<OpKind> all = [] {
    std::vector<OpKind> v;
    for (size_t i = 0; i < std::size(kOps); ++i) v.push_back(static_cast<OpKind>(i));
    return v;
  }();
  return all;
}

bool isPointwise(OpKind k) {
  switch (opFamily(k)) {
    case OpFamily::Unary: case OpFamily::UnaryAny: case OpFamily::Predicate:
    case OpFamily::LogicalNot: case OpFamily::Binary: case OpFamily::BinaryFloat:
    case OpFamily::Compare: case OpFamily::Logical: case OpFamily::Where: case OpFamily::Cast:
    case OpFamily::Bitcast:
      return true;
    default:
      return false;
  }
}

bool isReduction(OpKind k) {
  const OpFamily f = opFamily(k);
  return f == OpFamily::Reduce || f == OpFamily::VarMean || f == OpFamily::ArgReduce;
}

bool isView(OpKind k) {
  switch (opFamily(k)) {
    case OpFamily::Broadcast: case OpFamily::Reshape: case OpFamily::Permute:
    case OpFamily::Squeeze: case OpFamily::Unsqueeze: case OpFamily::Slice:
      return true;
    default:
      return false;
  }
}

bool isCreation(OpKind k) {
  const OpFamily f = opFamily(k);
  return f == OpFamily::Full || f == OpFamily::Iota || f == OpFamily::Random;
}

}  // namespace loom::ir
