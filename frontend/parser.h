#pragma once
// The fusion text format (described in ir/printer.h) parsed back into a fusion:
//
//   auto f = loom::parseFusion("fusion f {\n in x: f32[N]\n t0: f32[N] = neg(x)\n out y = t0\n}");
//
// Errors are loom::Error: `SOURCE:LINE:COL: error: expected X, found Y` (or what the IR found
// wrong: a dtype mismatch, a reshape that is not a view, an unknown value...), then the source
// line and a caret under the column. Declared output types must match the inferred ones; they
// may be left out (`t0 = neg(x)`), as may `keepdim` (false) and `correction` (0).
// The result is not verify()'d, so a fusion without outputs parses; Fusion::verify checks it.
#include <memory>
#include <string>
#include <string_view>

#include "ir/fusion.h"

namespace loom {

// Parses exactly one `fusion NAME { ... }`; `source_name` prefixes diagnostics.
std::unique_ptr<ir::Fusion> parseFusion(std::string_view text,
                                        std::string_view source_name = "<input>");

// Reads and parses a file; diagnostics name `path`. An unreadable file is a loom::Error naming
// the path and the OS's reason.
std::unique_ptr<ir::Fusion> parseFusionFile(const std::string& path);

}  // namespace loom
