#pragma once
// Element types (include/loom/dtypes.def lists them) and what loom knows of each.
#include <cstdint>
#include <optional>
#include <string_view>

#pragma GCC visibility push(default)
namespace loom {

enum class DType : uint8_t {
#define LOOM_DTYPE(E, name, bytes, is_float, is_int) E,
#include <loom/dtypes.def>
#undef LOOM_DTYPE
};

std::string_view dtypeName(DType t);
std::optional<DType> parseDType(std::string_view name);
int dtypeBytes(DType t);
bool isFloat(DType t);
bool isInt(DType t);
// The dtype math runs in for a storage dtype: f16/bf16 compute in f32 (AMP style).
DType computeDType(DType t);
// Rounds a double to the nearest value representable in `t` (the CPU reference's casts).
double roundTo(DType t, double v);

}  // namespace loom
#pragma GCC visibility pop
