// ptxas over PTX text via temp files and posix_spawn (no shell: paths need no quoting).
#include "compiler/codegen/ptxas_check.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#ifndef LOOM_PTXAS_DEFAULT
#define LOOM_PTXAS_DEFAULT "/usr/local/cuda/bin/ptxas"
#endif

extern char** environ;

namespace loom::codegen {
namespace {

// A temp file removed when this goes out of scope, whatever happens in between.
struct TempFile {
  std::string path;
  TempFile(const std::string& dir, const char* suffix) {
    std::string tmpl = fmt::format("{}/loom-ptxas-XXXXXX{}", dir.empty() ? "/tmp" : dir, suffix);
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    int fd = mkstemps(buf.data(), static_cast<int>(std::strlen(suffix)));
    if (fd >= 0) {
      close(fd);
      path = buf.data();
    }
  }
  ~TempFile() {
    if (!path.empty()) unlink(path.c_str());
  }
};

std::string readFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace

std::string defaultPtxasPath() { return LOOM_PTXAS_DEFAULT; }

bool ptxasAvailable(const PtxasTool& tool) { return access(tool.path.c_str(), X_OK) == 0; }

std::string ptxasCheck(const std::string& ptx, int sm, const PtxasTool& tool, int* spill_bytes) {
  std::string ptxas = tool.path;
  TempFile in(tool.temp_dir, ".ptx"), log(tool.temp_dir, ".log");
  if (in.path.empty() || log.path.empty())
    return fmt::format("ptxas check: cannot create a temp file: {}", std::strerror(errno));
  {
    std::ofstream out(in.path);
    out << ptx;
    if (!out) return fmt::format("ptxas check: cannot write {}", in.path);
  }

  // ptxas's stdout and stderr both go to the log file.
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, log.path.c_str(), O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_adddup2(&actions, 1, 2);
  std::string arch = fmt::format("-arch=sm_{}", sm);
  std::vector<std::string> args = {ptxas, arch, "-o", "/dev/null", in.path};
  if (spill_bytes) {
    *spill_bytes = 0;
    args.insert(args.begin() + 1, "-v");
  }
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);

  pid_t pid = 0;
  int rc = posix_spawn(&pid, ptxas.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return fmt::format("ptxas could not be run ({}): {}", ptxas, std::strerror(rc));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  std::string text = readFile(log.path);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    // Verbose ptxas prints "N bytes stack frame, S bytes spill stores, L bytes spill loads" a kernel.
    for (size_t at = text.find(" bytes spill stores"); spill_bytes && at != std::string::npos;
         at = text.find(" bytes spill stores", at + 1)) {
      size_t from = at;
      while (from > 0 && std::isdigit(static_cast<unsigned char>(text[from - 1]))) --from;
      if (from < at) *spill_bytes = std::max(*spill_bytes, std::atoi(text.substr(from, at - from).c_str()));
    }
    return "";
  }
  if (text.empty())
    text = WIFEXITED(status) ? fmt::format("exit status {}", WEXITSTATUS(status))
                             : fmt::format("killed by signal {}", WTERMSIG(status));
  return fmt::format("ptxas {} failed: {}", arch, text);
}

}  // namespace loom::codegen
