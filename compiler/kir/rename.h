#pragma once
// Renaming in the kernel IR: copies of a body whose names carry a suffix (unrolled trips), with
// the references to them, and to any other renamed name, rewritten. Shares what is unchanged.
#include <map>
#include <set>
#include <string>

#include "compiler/kir/kir.h"

namespace loom::kir {

using Renames = std::map<std::string, std::string>;

ExprP rename(const ExprP& e, const Renames& r);
// Every name `body` binds (lets and loop variables, nested ones too).
std::set<std::string> boundNames(const Body& body);
// `body` with every name it binds given `suffix`, and the names of `r` renamed.
Body renameBody(const Body& body, const std::string& suffix, Renames r);

}  // namespace loom::kir
