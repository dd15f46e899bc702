#pragma once
// Two error channels: loom::Error is bad user input and says what was wrong, where, and what
// would be right; loom::InternalError is a bug in loom and says so.
#include <stdexcept>
#include <string>

#pragma GCC visibility push(default)
namespace loom {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what);
  ~Error() override;
};

class InternalError : public std::logic_error {
 public:
  explicit InternalError(const std::string& what);
  ~InternalError() override;
};

}  // namespace loom
#pragma GCC visibility pop
