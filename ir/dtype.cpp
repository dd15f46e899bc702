#include "ir/dtype.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "ir/error.h"
#include "ir/half.h"

namespace loom {

namespace {
struct DTypeInfo {
  std::string_view name;
  int bytes;
  bool is_float;
  bool is_int;
};
constexpr DTypeInfo kInfo[] = {
#define LOOM_DTYPE(E, name, bytes, is_float, is_int) {name, bytes, is_float, is_int},
#include <loom/dtypes.def>
#undef LOOM_DTYPE
};
const DTypeInfo& info(DType t) { return kInfo[static_cast<int>(t)]; }
}  // namespace

std::string_view dtypeName(DType t) { return info(t).name; }
int dtypeBytes(DType t) { return info(t).bytes; }
bool isFloat(DType t) { return info(t).is_float; }
bool isInt(DType t) { return info(t).is_int; }

std::optional<DType> parseDType(std::string_view name) {
  for (int i = 0; i < static_cast<int>(std::size(kInfo)); ++i)
    if (kInfo[i].name == name) return static_cast<DType>(i);
  return std::nullopt;
}

DType computeDType(DType t) {
  return (t == DType::F16 || t == DType::BF16) ? DType::F32 : t;
}

double roundTo(DType t, double v) {
  switch (t) {
    case DType::Bool: return v != 0.0 ? 1.0 : 0.0;
    case DType::I32:
      if (std::isnan(v)) return 0.0;
      return static_cast<double>(static_cast<int32_t>(
          std::fmax(std::fmin(std::trunc(v), 2147483647.0), -2147483648.0)));
    case DType::I64:
      if (std::isnan(v)) return 0.0;
      return std::trunc(std::fmax(std::fmin(v, 9.2233720368547748e18), -9.2233720368547758e18));
    case DType::F16: return halfToFloat(floatToHalf(static_cast<float>(v)));
    case DType::BF16: return bf16ToFloat(floatToBf16(static_cast<float>(v)));
    case DType::F32: return static_cast<double>(static_cast<float>(v));
    case DType::F64: return v;
  }
  LOOM_ASSERT(false, "unknown dtype {}", static_cast<int>(t));
}

}  // namespace loom
