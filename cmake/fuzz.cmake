# -DLOOM_FUZZ=ON: only the coverage-guided fuzzer of the text format's parser and the IR's
# verifier (tests/fuzz/fuzz_parser.cpp), with clang's libFuzzer, AddressSanitizer and
# UndefinedBehaviorSanitizer over the parser, the composites it expands and the IR (no LLVM, no
# CUDA, no libloom):
#   CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DLOOM_FUZZ=ON && ninja -C build-fuzz
# scripts/fuzz_parser.sh does that and runs it.
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  message(FATAL_ERROR "LOOM_FUZZ needs clang (libFuzzer): configure with CXX=clang++-14")
endif()
set(LOOM_FUZZ_FLAGS -fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined -g -O1)
# The whole frontend: the parser expands composite calls (frontend/text_composites.h) through
# the builder.
file(GLOB LOOM_FUZZ_SOURCES CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/ir/*.cpp ${CMAKE_SOURCE_DIR}/frontend/*.cpp)
add_executable(fuzz_parser ${CMAKE_SOURCE_DIR}/tests/fuzz/fuzz_parser.cpp ${LOOM_FUZZ_SOURCES})
target_include_directories(fuzz_parser PRIVATE ${CMAKE_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/include)
target_compile_options(fuzz_parser PRIVATE ${LOOM_FUZZ_FLAGS})
target_compile_definitions(fuzz_parser PRIVATE LOOM_INTERNAL_API)
target_link_options(fuzz_parser PRIVATE -fsanitize=fuzzer,address,undefined)
target_link_libraries(fuzz_parser PRIVATE fmt::fmt)
