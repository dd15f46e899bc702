#pragma once
// A 128-bit digest of a kernel's IR, every field of every node: what a kernel taking sizes at
// run time is cached under (its class key), computed without printing the kernel.
#include <cstdint>
#include <string>

#include "compiler/kir/kir.h"

namespace loom::kir {

struct Fingerprint {
  std::uint64_t hi = 0, lo = 0;
  bool operator==(const Fingerprint&) const = default;
  std::string hex() const;  // 32 hex digits
};

Fingerprint fingerprint(const Kernel& k);

}  // namespace loom::kir
