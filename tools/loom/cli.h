#pragma once
// The `loom` command line: one Command per subcommand, one argument parser for all.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "frontend/internal_api.h"

namespace loom::runtime {
class Device;
}  // namespace loom::runtime

namespace loom::cli {

// Parsed arguments: positionals, `--key value` / `--key=value` options (repeatable), flags.
class Args {
 public:
  // `flags` are options that take no value; any other `--key` takes one.
  Args(const std::vector<std::string>& argv, const std::vector<std::string>& flags);
  const std::vector<std::string>& positionals() const { return pos_; }
  bool flag(const std::string& k) const { return flags_.count(k) > 0; }
  std::optional<std::string> get(const std::string& k) const;
  std::vector<std::string> getAll(const std::string& k) const;
  // Throws loom::Error naming any option not in `known`.
  void checkKnown(const std::vector<std::string>& known, const std::string& cmd) const;

 private:
  std::vector<std::string> pos_;
  std::multimap<std::string, std::string> opts_;
  std::map<std::string, bool> flags_;
};

struct Command {
  std::string name;
  std::string summary;  // one line, shown by `loom --help`
  std::string usage;    // full help, shown by `loom NAME --help`
  std::vector<std::string> flags;    // options without values
  std::vector<std::string> options;  // options with values
  std::function<int(const Args&)> run;
};

const std::vector<Command>& commands();

// The fusion named by the first positional, and the sizes to run it with: the example's
// defaults overridden by `--dim K=V`.
struct Loaded {
  std::unique_ptr<ir::Fusion> fusion;
  Bindings sizes;
};
Loaded loadFromArgs(const Args& a, const std::string& cmd);
// Device buffers for `f`'s inputs at these sizes and layouts, holding no data yet (loom bench).
std::vector<DeviceTensor> emptyInputs(const ir::Fusion& f, const Bindings& sizes,
                                      const std::map<std::string, std::vector<int>>& layouts);
// `--layout x=nhwc` (or nchw, or a permutation like 0,2,3,1): memory order per input name.
std::map<std::string, std::vector<int>> layoutsFromArgs(const Args& a, const ir::Fusion& f);
// `--NAME V` as a whole number in [lo, hi], or `fallback` where it is not given; anything else
// is a user error that names the option and the range.
int64_t intOption(const Args& a, const std::string& name, int64_t fallback, int64_t lo, int64_t hi);
// The GPU of a command that runs kernels, once a GPU was found (none: a user error saying why):
// `--device N` selected where given (else loom's, GPU 0 unless selected before).
runtime::Device& gpuFromArgs(const Args& a);
// Seeded random inputs with the given sizes and layouts.
std::vector<HostTensor> randomInputs(const ir::Fusion& f, const Bindings& sizes,
                                     const std::map<std::string, std::vector<int>>& layouts,
                                     uint64_t seed);

}  // namespace loom::cli
