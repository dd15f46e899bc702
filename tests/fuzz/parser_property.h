#pragma once
// What the text format promises for ANY bytes, checked by the coverage-guided fuzzer
// (fuzz_parser.cpp) and, for every input it ever found, by the Catch2 test "fuzz regressions":
// parsing gives a fusion or throws loom::Error with a location; a parsed fusion verifies or
// throws loom::Error; a fusion that verifies prints, and its text parses back to the same text.
// Returns "" when the promise holds, else what broke it (an internal error, another exception,
// a round trip that changes the text).
#include <memory>
#include <string>
#include <string_view>

#include "frontend/parser.h"
#include "ir/error.h"
#include "ir/printer.h"

namespace loom::fuzz {

inline std::string parserFinding(std::string_view text) {
  std::unique_ptr<ir::Fusion> f;
  try {
    f = parseFusion(text);
  } catch (const Error& e) {
    const std::string msg = e.what();
    if (msg.rfind("<input>:", 0) != 0 && msg.find("fusion") == std::string::npos)
      return "a parse error that names no place: " + msg;
    return "";
  } catch (const InternalError& e) {
    return std::string("internal error while parsing: ") + e.what();
  } catch (const std::exception& e) {
    return std::string("an exception that is not loom's while parsing: ") + e.what();
  }
  try {
    f->verify();
  } catch (const Error&) {
    return "";  // parsed, but not a fusion that can run (no outputs, ...): a user error
  } catch (const std::exception& e) {
    return std::string("verify threw something other than loom::Error: ") + e.what();
  }
  std::string printed, again;
  try {
    printed = ir::printFusion(*f);
    again = ir::printFusion(*parseFusion(printed));
  } catch (const std::exception& e) {
    return "a verified fusion's text does not parse back: " + std::string(e.what()) + "\n" + printed;
  }
  if (printed != again) return "the text does not round-trip:\n" + printed + "\n---\n" + again;
  return "";
}

}  // namespace loom::fuzz
