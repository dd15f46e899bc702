// The bytes of the CUDA toolkit's libdevice bitcode, found at build time and embedded so that
// libloom needs no CUDA toolkit at run time (see CMakeLists.txt: LOOM_LIBDEVICE_PATH).
#include "compiler/codegen/libdevice.h"

__asm__(".section .rodata\n"
        ".balign 16\n"
        "loom_libdevice_begin:\n"
        ".incbin \"" LOOM_LIBDEVICE_PATH "\"\n"
        "loom_libdevice_end:\n"
        ".previous\n");

extern "C" const char loom_libdevice_begin[] __asm__("loom_libdevice_begin");
extern "C" const char loom_libdevice_end[] __asm__("loom_libdevice_end");

namespace loom::codegen {
std::string_view libdeviceBitcode() {
  return {loom_libdevice_begin, static_cast<std::size_t>(loom_libdevice_end - loom_libdevice_begin)};
}
}  // namespace loom::codegen
