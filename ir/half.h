#pragma once
// IEEE fp16 and bfloat16 conversions (round to nearest even), used by the CPU reference and by
// host tensors. Header-only so host code and tests share one definition.
#include <cstdint>
#include <cstring>

namespace loom {

inline uint32_t floatBits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
inline float bitsFloat(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

inline uint16_t floatToBf16(float f) {
  uint32_t u = floatBits(f);
  if ((u & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((u >> 16) | 0x40);  // NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return static_cast<uint16_t>(u >> 16);
}
inline float bf16ToFloat(uint16_t h) { return bitsFloat(static_cast<uint32_t>(h) << 16); }

inline uint16_t floatToHalf(float f) {
  uint32_t u = floatBits(f);
  uint32_t sign = (u >> 16) & 0x8000u;
  uint32_t au = u & 0x7fffffffu;
  if (au > 0x7f800000u) return static_cast<uint16_t>(sign | 0x7e00u);  // NaN
  if (au >= 0x477ff000u) return static_cast<uint16_t>(sign | 0x7c00u);  // overflow -> inf
  if (au < 0x38800000u) {  // subnormal or zero in half
    float a = bitsFloat(au);
    // Scale so that the half subnormal ulp (2^-24) becomes 1, round to nearest even.
    float scaled = a * 16777216.0f;
    uint32_t m = static_cast<uint32_t>(scaled);
    float rem = scaled - static_cast<float>(m);
    if (rem > 0.5f || (rem == 0.5f && (m & 1u))) ++m;
    return static_cast<uint16_t>(sign | m);
  }
  uint32_t exp = ((au >> 23) - 127 + 15);
  uint32_t mant = au & 0x7fffffu;
  uint32_t h = (exp << 10) | (mant >> 13);
  uint32_t rest = mant & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u))) ++h;
  return static_cast<uint16_t>(sign | h);
}

inline float halfToFloat(uint16_t h) {
  uint32_t sign = (static_cast<uint32_t>(h) & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  if (exp == 0) {
    float v = static_cast<float>(mant) / 16777216.0f;
    return sign ? -v : v;
  }
  if (exp == 31) return bitsFloat(sign | 0x7f800000u | (mant << 13));
  return bitsFloat(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

}  // namespace loom
