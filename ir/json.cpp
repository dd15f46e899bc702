#include "ir/json.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace loom {

std::string jsonStr(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    switch (c) {
      case '"': o += "\\\""; break;
      case '\\': o += "\\\\"; break;
      case '\n': o += "\\n"; break;
      case '\t': o += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) o += fmt::format("\\u{:04x}", static_cast<int>(c));
        else o += c;
    }
  }
  return o + "\"";
}

std::string jsonInts(const std::vector<int64_t>& v) { return fmt::format("[{}]", fmt::join(v, ", ")); }

}  // namespace loom
