#pragma once
// Shared by the tests that run the `loom` CLI as a user would: its path, and one command's
// exit status and output.
#include <catch2/catch.hpp>

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace loom::test {

// The `loom` beside this test binary (build/bin, or .device/bin on the GPU machine), else the
// one this build made (LOOM_CLI).
inline std::string loomCli() {
  std::error_code ec;
  auto self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    auto beside = self.parent_path() / "loom";
    if (std::filesystem::exists(beside, ec)) return beside.string();
  }
  return LOOM_CLI;
}

struct CliResult {
  int status;
  std::string out;  // stdout and stderr together
};

// `env` (VAR=VALUE ...) is set for this one command.
inline CliResult runLoom(const std::string& args, const std::string& env = "") {
  std::string cmd = env + " " + loomCli() + " " + args + " 2>&1";
  CliResult r{0, ""};
  FILE* p = popen(cmd.c_str(), "r");
  REQUIRE(p != nullptr);
  std::array<char, 4096> buf{};
  while (size_t n = fread(buf.data(), 1, buf.size(), p)) r.out.append(buf.data(), n);
  int st = pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  return r;
}

}  // namespace loom::test
