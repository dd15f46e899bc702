// Every input the parser's coverage-guided fuzzer ever found (tests/fuzz/regressions/, see
// scripts/fuzz_parser.sh) keeps the text format's promise, in the ordinary build too.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/fuzz/parser_property.h"

TEST_CASE("fuzz regressions: each earlier finding is a fusion or a located error", "[text][fuzz]") {
  namespace fs = std::filesystem;
  const fs::path dir = fs::path(LOOM_SOURCE_DIR) / "tests/fuzz/regressions";
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().filename() != "README.md") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(!files.empty());
  for (const auto& p : files) {
    std::ifstream in(p, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    INFO(p.filename().string());
    CHECK(loom::fuzz::parserFinding(ss.str()).empty());
  }
}
