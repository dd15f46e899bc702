// `loom run --batch FILE`: many `loom run` cases in one process (one CUDA context, one LLVM
// start-up), as the GPU soak runs them. Each line of FILE holds a case's arguments as they
// would follow `loom run` (FUSION and its options; `#` starts a comment line). Every case
// prints what `loom run` prints, then one line `== result K: STATUS` (K counts lines with a
// case from 1): `ok`; `error: MESSAGE` (loom refused the case with a user error);
// `MISMATCH: MESSAGE` (a GPU result differs from the reference); `INTERNAL: MESSAGE` (a
// compiler bug or anything else thrown). Exits 1 when any case is a MISMATCH or INTERNAL.
#include <fstream>
#include <iostream>
#include <sstream>

#include "ir/error.h"
#include "tools/loom/cli.h"

namespace loom::cli {

int runRun(const Args& a);

namespace {
std::string firstLine(const std::string& s) { return s.substr(0, s.find('\n')); }
}  // namespace

int runBatch(const std::string& path, const std::vector<std::string>& options) {
  std::ifstream in(path);
  LOOM_USER_CHECK(in.good(), "--batch {}: cannot read the file", path);
  std::string line;
  int k = 0, bad = 0;
  while (std::getline(in, line)) {
    std::istringstream words(line);
    std::vector<std::string> argv;
    for (std::string w; words >> w;) argv.push_back(w);
    if (argv.empty() || argv[0][0] == '#') continue;
    ++k;
    std::cout << fmt::format("== case {}: {}\n", k, line) << std::flush;
    std::string status = "ok";
    try {
      Args a(argv, {"check", "no-check"});
      a.checkKnown(options, "run");
      LOOM_USER_CHECK(!a.get("batch"), "a --batch line cannot name another --batch");
      runRun(a);
    } catch (const Error& e) {
      const std::string msg = firstLine(e.what());
      const bool mismatch = msg.find("does not match the CPU reference") != std::string::npos;
      status = (mismatch ? "MISMATCH: " : "error: ") + msg;
      bad += mismatch;
    } catch (const std::exception& e) {
      status = "INTERNAL: " + firstLine(e.what());
      ++bad;
    }
    std::cout << fmt::format("== result {}: {}\n", k, status) << std::flush;
  }
  std::cout << fmt::format("== {} cases, {} mismatched or internal\n", k, bad);
  return bad ? 1 : 0;
}

}  // namespace loom::cli
