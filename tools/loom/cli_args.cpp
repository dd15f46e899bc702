#include <algorithm>
#include <optional>

#include "tools/loom/cli.h"
#include "runtime/cuda_driver.h"
#include "runtime/device.h"
#include "runtime/memory_order.h"

namespace loom::cli {

Args::Args(const std::vector<std::string>& argv, const std::vector<std::string>& flags) {
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& s = argv[i];
    if (s.rfind("--", 0) != 0 || s == "--") {
      pos_.push_back(s);
      continue;
    }
    std::string key = s.substr(2), val;
    auto eq = key.find('=');
    if (eq != std::string::npos) {
      val = key.substr(eq + 1);
      key = key.substr(0, eq);
      opts_.insert({key, val});
    } else if (std::find(flags.begin(), flags.end(), key) != flags.end() || key == "help") {
      flags_[key] = true;
    } else {
      LOOM_USER_CHECK(i + 1 < argv.size(), "option --{} needs a value", key);
      opts_.insert({key, argv[++i]});
    }
  }
}

std::optional<std::string> Args::get(const std::string& k) const {
  auto r = opts_.equal_range(k);
  if (r.first == r.second) return std::nullopt;
  return std::prev(r.second)->second;
}

std::vector<std::string> Args::getAll(const std::string& k) const {
  std::vector<std::string> out;
  auto r = opts_.equal_range(k);
  for (auto it = r.first; it != r.second; ++it) out.push_back(it->second);
  return out;
}

void Args::checkKnown(const std::vector<std::string>& known, const std::string& cmd) const {
  auto ok = [&](const std::string& k) {
    return k == "help" || std::find(known.begin(), known.end(), k) != known.end();
  };
  for (const auto& [k, v] : opts_)
    LOOM_USER_CHECK(ok(k), "`loom {}` has no option --{}; see `loom {} --help`", cmd, k, cmd);
  for (const auto& [k, v] : flags_)
    LOOM_USER_CHECK(ok(k), "`loom {}` has no option --{}; see `loom {} --help`", cmd, k, cmd);
}

// `s` whole as a whole number, or nothing.
static std::optional<int64_t> wholeNumber(const std::string& s) {
  size_t pos = 0;
  long long v = 0;
  try {
    v = std::stoll(s, &pos);
  } catch (...) {
    return std::nullopt;
  }
  if (pos != s.size() || s.empty()) return std::nullopt;
  return v;
}

static int64_t parseInt(const std::string& s, const std::string& what) {
  const auto v = wholeNumber(s);
  LOOM_USER_CHECK(v.has_value(), "{}: `{}` is not a whole number", what, s);
  return *v;
}

int64_t intOption(const Args& a, const std::string& name, int64_t fallback, int64_t lo, int64_t hi) {
  auto v = a.get(name);
  if (!v) return fallback;
  const auto x = wholeNumber(*v);
  LOOM_USER_CHECK(x && *x >= lo && *x <= hi, "--{} `{}` must be a whole number from {} to {}", name, *v, lo, hi);
  return *x;
}

Loaded loadFromArgs(const Args& a, const std::string& cmd) {
  LOOM_USER_CHECK(!a.positionals().empty(), "`loom {}` needs a FUSION (a built-in name from "
                  "`loom examples`, or a file)", cmd);
  LOOM_USER_CHECK(a.positionals().size() == 1, "`loom {}` takes one FUSION, got {}", cmd,
                  a.positionals().size());
  Loaded l;
  std::optional<DType> dtype;
  if (auto d = a.get("dtype")) {
    dtype = parseDType(*d);
    LOOM_USER_CHECK(dtype.has_value(), "--dtype `{}` is not a dtype; try f16, bf16, f32 or f64", *d);
  }
  l.fusion = loadFusion(a.positionals()[0], &l.sizes, dtype);
  auto syms = l.fusion->symbols();
  for (const auto& d : a.getAll("dim")) {
    auto eq = d.find('=');
    LOOM_USER_CHECK(eq != std::string::npos && eq > 0, "--dim `{}` must look like N=64", d);
    std::string k = d.substr(0, eq);
    LOOM_USER_CHECK(std::find(syms.begin(), syms.end(), k) != syms.end(),
                    "--dim {}: fusion `{}` has no size `{}`; its sizes are: {}", d,
                    l.fusion->name(), k, fmt::format("{}", fmt::join(syms, ", ")));
    int64_t v = parseInt(d.substr(eq + 1), "--dim " + d);
    LOOM_USER_CHECK(v >= 0, "--dim {}: sizes must be 0 or more", d);
    l.sizes[k] = v;
  }
  return l;
}

std::map<std::string, std::vector<int>> layoutsFromArgs(const Args& a, const ir::Fusion& f) {
  std::map<std::string, std::vector<int>> out;
  for (const auto& spec : a.getAll("layout")) {
    auto eq = spec.find('=');
    LOOM_USER_CHECK(eq != std::string::npos, "--layout `{}` must look like x=nhwc", spec);
    const std::string name = spec.substr(0, eq);
    out[name] = parseMemoryOrder(f, name, spec.substr(eq + 1), "--layout " + spec);
  }
  return out;
}

std::vector<HostTensor> randomInputs(const ir::Fusion& f, const Bindings& sizes,
                                     const std::map<std::string, std::vector<int>>& layouts,
                                     uint64_t seed) {
  std::vector<HostTensor> out;
  for (const ir::Value* v : f.inputs()) {
    auto shape = evalShape(v, sizes);
    // Variances must stay positive; everything else is U(-1, 1).
    bool positive = v->name().find("var") != std::string::npos;
    auto it = layouts.find(v->name());
    out.push_back(HostTensor::random(v->dtype(), shape, seed++, positive ? 0.5 : -1.0, 1.0,
                                     it != layouts.end() ? it->second : std::vector<int>{}));
  }
  return out;
}

runtime::Device& gpuFromArgs(const Args& a) {
  std::string why;
  LOOM_USER_CHECK(runtime::gpuAvailable(&why), "{}", why);
  if (a.get("device")) runtime::selectDevice(static_cast<int>(intOption(a, "device", 0, 0, 1023)));
  return runtime::Device::get();
}

}  // namespace loom::cli
