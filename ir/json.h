#pragma once
// The two JSON pieces loom's JSON outputs (segments, bench reports, the C ABI) are built from.
#include <cstdint>
#include <string>
#include <vector>

namespace loom {

// `s` as a JSON string: quoted, with quotes, backslashes and control bytes escaped.
std::string jsonStr(const std::string& s);
// `[1, 2, 3]`.
std::string jsonInts(const std::vector<int64_t>& v);

}  // namespace loom
