// `loom`: explain, run and benchmark fusions. Exit status 0 on success; on any error one line
// `loom: error: ...` on stderr and a non-zero status.
#include <cstdio>
#include <iostream>

#include <loom/version.h>

#include "runtime/environment_options.h"
#include "tools/loom/cli.h"

namespace {

void printTopHelp() {
  std::cout << "usage: loom COMMAND [options]\n\n"
               "loom is a JIT fusion compiler for NVIDIA GPUs. FUSION is a built-in example\n"
               "name (see `loom examples`) or a file in loom's text format.\n\ncommands:\n";
  for (const auto& c : loom::cli::commands())
    std::cout << fmt::format("  {:<10} {}\n", c.name, c.summary);
  std::cout << "\n`loom COMMAND --help` explains one command; `loom --version` prints loom's version.\n";
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  loom::dumpsFromEnvironment();
  if (!args.empty() && args[0] == "--version") {
    std::cout << "loom " << LOOM_VERSION << "\n";
    return 0;
  }
  if (args.empty() || args[0] == "--help" || args[0] == "-h" || args[0] == "help") {
    printTopHelp();
    return args.empty() ? 2 : 0;
  }
  const loom::cli::Command* cmd = nullptr;
  for (const auto& c : loom::cli::commands())
    if (c.name == args[0]) cmd = &c;
  if (!cmd) {
    std::cerr << "loom: error: unknown command `" << args[0] << "`; see `loom --help`\n";
    return 2;
  }
  try {
    loom::cli::Args a({args.begin() + 1, args.end()}, cmd->flags);
    if (a.flag("help")) {
      std::cout << cmd->usage;
      return 0;
    }
    std::vector<std::string> known = cmd->options;
    known.insert(known.end(), cmd->flags.begin(), cmd->flags.end());
    a.checkKnown(known, cmd->name);
    return cmd->run(a);
  } catch (const loom::Error& e) {
    // Parse errors already read `file:line:col: error: ...`; others get the prefix.
    std::string msg = e.what();
    bool located = msg.find(": error: ") != std::string::npos;
    std::cerr << (located ? "loom: " : "loom: error: ") << msg << "\n";
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "loom: error: " << e.what() << "\n";
    return 3;
  }
}
