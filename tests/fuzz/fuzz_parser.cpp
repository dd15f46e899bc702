// libFuzzer target for the text format's parser and the IR's verifier (cmake/fuzz.cmake builds
// it with clang, -fsanitize=fuzzer,address,undefined; scripts/fuzz_parser.sh runs it). The
// property is parser_property.h's; anything it reports, a sanitizer report or a hang is a
// finding, and each finding is kept in tests/fuzz/regressions/.
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "tests/fuzz/parser_property.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string what =
      loom::fuzz::parserFinding(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!what.empty()) {
    std::fprintf(stderr, "fuzz_parser: %s\n", what.c_str());
    std::abort();
  }
  return 0;
}
