#pragma once
// Copies and fills on raw device addresses (for tensors that wrap memory loom does not own).
#include <cstddef>
#include <cstdint>

namespace loom::runtime {
void copyToHostRaw(void* dst, std::uintptr_t src, std::size_t bytes);
void copyFromHostRaw(std::uintptr_t dst, const void* src, std::size_t bytes);
void memsetRaw(std::uintptr_t dst, std::uint8_t byte, std::size_t bytes);
}  // namespace loom::runtime
