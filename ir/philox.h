#pragma once
// Counter-based random numbers as loom's random ops define them: Philox4x32-10 (Salmon, Moraes,
// Dror and Shaw, SC 2011) keyed by the seed, its counter the offset plus the element's linear
// index in the op's shape. The CPU reference computes them here; compiler/codegen emits the
// same rounds, so every element gets the same bits whatever kernel, tier or vector width.
#include <array>
#include <cmath>
#include <cstdint>

#include "ir/dtype.h"

namespace loom::ir {

constexpr uint32_t kPhiloxM0 = 0xD2511F53u, kPhiloxM1 = 0xCD9E8D57u;
constexpr uint32_t kPhiloxW0 = 0x9E3779B9u, kPhiloxW1 = 0xBB67AE85u;
constexpr int kPhiloxRounds = 10;

using PhiloxWords = std::array<uint32_t, 4>;

inline PhiloxWords philox4x32(PhiloxWords c, std::array<uint32_t, 2> k) {
  for (int r = 0; r < kPhiloxRounds; ++r) {
    if (r > 0) {
      k[0] += kPhiloxW0;
      k[1] += kPhiloxW1;
    }
    const uint64_t p0 = uint64_t{kPhiloxM0} * c[0], p1 = uint64_t{kPhiloxM1} * c[2];
    c = {static_cast<uint32_t>(p1 >> 32) ^ c[1] ^ k[0], static_cast<uint32_t>(p1),
         static_cast<uint32_t>(p0 >> 32) ^ c[3] ^ k[1], static_cast<uint32_t>(p0)};
  }
  return c;
}

// The four words of the element at linear `index` of a random op of this seed and offset (the
// counter wraps modulo 2^64).
inline PhiloxWords randomWords(int64_t seed, int64_t offset, int64_t index) {
  const uint64_t c = static_cast<uint64_t>(offset) + static_cast<uint64_t>(index);
  const uint64_t s = static_cast<uint64_t>(seed);
  return philox4x32({static_cast<uint32_t>(c), static_cast<uint32_t>(c >> 32), 0, 0},
                    {static_cast<uint32_t>(s), static_cast<uint32_t>(s >> 32)});
}

// The significand bits a uniform number of `t` takes, so that each is exact in `t` and below 1.
inline int uniformBits(DType t) {
  switch (t) {
    case DType::F16: return 11;
    case DType::BF16: return 8;
    case DType::F64: return 53;
    default: return 24;
  }
}

inline uint64_t philoxWide(uint32_t lo, uint32_t hi) { return (uint64_t{hi} << 32 | lo) >> 11; }

// rand_uniform: k * 2^-bits for the top `bits` bits k of the first word (f64: of the first two).
inline double uniformOf(const PhiloxWords& w, DType t) {
  const int bits = uniformBits(t);
  if (bits == 53) return std::ldexp(static_cast<double>(philoxWide(w[0], w[1])), -53);
  return std::ldexp(static_cast<double>(w[0] >> (32 - bits)), -bits);
}

// rand_normal: Box-Muller of two uniforms, u1 in (0, 1] so that its log is finite; 24 bits each
// (53 for f64, from all four words). The GPU computes it in f32 (f64 for f64), so it agrees with
// this float64 value to the rounding of those libdevice calls, not bit for bit.
inline void normalUniforms(const PhiloxWords& w, DType t, double* u1, double* u2) {
  if (t == DType::F64) {
    *u1 = std::ldexp(static_cast<double>(philoxWide(w[0], w[1]) + 1), -53);
    *u2 = std::ldexp(static_cast<double>(philoxWide(w[2], w[3])), -53);
  } else {
    *u1 = std::ldexp(static_cast<double>((w[0] >> 8) + 1), -24);
    *u2 = std::ldexp(static_cast<double>(w[1] >> 8), -24);
  }
}

inline double normalOf(const PhiloxWords& w, DType t) {
  double u1 = 0, u2 = 0;
  normalUniforms(w, t, &u1, &u2);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
}

}  // namespace loom::ir
