#include "ir/error.h"

namespace loom {

// Out of line: the classes' type information and vtables live in libloom, once, so a catch in
// a user's program matches what loom throws.
Error::Error(const std::string& what) : std::runtime_error(what) {}
Error::~Error() = default;

InternalError::InternalError(const std::string& what)
    : std::logic_error("loom internal error (a bug in loom, please report it): " + what) {}
InternalError::~InternalError() = default;

}  // namespace loom
