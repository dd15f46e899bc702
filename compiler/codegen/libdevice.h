#pragma once
#include <string_view>

namespace loom::codegen {
// libdevice.10.bc from the CUDA toolkit found at build time, embedded in libloom.
std::string_view libdeviceBitcode();
}  // namespace loom::codegen
