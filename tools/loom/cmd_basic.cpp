// `loom examples`, `loom env`, `loom print`, `loom eval`.
#include <algorithm>
#include <cmath>
#include <iostream>
#include <limits>

#include "runtime/environment_options.h"
#include "tools/loom/cli.h"

namespace loom::cli {

int runExamples(const Args& a) {
  LOOM_USER_CHECK(a.positionals().empty(), "`loom examples` takes no arguments");
  size_t width = 0;  // names in one column, however long the longest
  for (const auto& e : builtinExamples()) width = std::max(width, e.name.size());
  for (const auto& e : builtinExamples()) {
    std::string sizes;
    for (const auto& [k, v] : e.default_sizes) sizes += fmt::format("{}{}={}", sizes.empty() ? "" : " ", k, v);
    std::cout << fmt::format("{:<{}} {}  [{}]\n", e.name, width, e.summary, sizes);
  }
  return 0;
}

int runEnv(const Args& a) {
  LOOM_USER_CHECK(a.positionals().empty(), "`loom env` takes no arguments");
  size_t width = 0;
  for (const auto& v : environmentVariables()) width = std::max(width, v.name.size());
  for (const auto& v : environmentVariables()) {
    const auto set = environmentValue(v.name);
    std::cout << fmt::format("{:<{}} {:<12} {}\n", v.name, width, set ? "=" + *set : "(unset)", v.meaning);
  }
  return 0;
}

int runPrint(const Args& a) {
  auto l = loadFromArgs(a, "print");
  std::cout << ir::printFusion(*l.fusion);
  return 0;
}

namespace {
std::string summarize(const HostTensor& t, int max_values) {
  double sum = 0, sq = 0;
  int64_t n = t.numel(), bad = 0;
  for (int64_t i = 0; i < n; ++i) {
    double v = t.getLinear(i);
    if (!std::isfinite(v)) {
      ++bad;
      continue;
    }
    sum += v;
  }
  int64_t good = n - bad;
  double mean = good ? sum / static_cast<double>(good) : NAN;
  for (int64_t i = 0; i < n; ++i) {
    double v = t.getLinear(i);
    if (std::isfinite(v)) sq += (v - mean) * (v - mean);
  }
  double sd = good > 1 ? std::sqrt(sq / static_cast<double>(good - 1)) : 0.0;
  std::string vals;
  for (int64_t i = 0; i < std::min<int64_t>(n, max_values); ++i)
    vals += fmt::format("{}{:.6g}", i ? ", " : "", t.getLinear(i));
  if (n > max_values) vals += ", ...";
  std::string shape = fmt::format("[{}]", fmt::join(t.shape(), ", "));
  return fmt::format("{}{} mean {:.6g} std {:.6g}{}  values [{}]", dtypeName(t.dtype()), shape,
                     mean, sd, bad ? fmt::format(" non-finite {}", bad) : "", vals);
}
// How ill conditioned an output is: its error bounds (evaluateReferenceBounds) at their
// largest, absolutely and against the value's own magnitude.
std::string summarizeBounds(const HostTensor& value, const HostTensor& bound) {
  double most = 0, most_rel = 0;
  int64_t at = -1, at_rel = -1, unbounded = 0;
  for (int64_t i = 0; i < value.numel(); ++i) {
    const double e = bound.getLinear(i), v = value.getLinear(i);
    if (std::isinf(e)) {
      ++unbounded;
      continue;
    }
    if (e > most) {
      most = e;
      at = i;
    }
    if (v != 0 && e / std::fabs(v) > most_rel) {
      most_rel = e / std::fabs(v);
      at_rel = i;
    }
  }
  return fmt::format("error bound: at most {:.3g}{}; relative to the value at most {:.3g}{}{}", most,
                     at >= 0 ? fmt::format(" (at {})", at) : "", most_rel,
                     at_rel >= 0 ? fmt::format(" (at {})", at_rel) : "",
                     unbounded ? fmt::format("; {} elements unbounded (a pole within their operands' bounds, or past the dtype's largest value)", unbounded) : "");
}
}  // namespace

int runEval(const Args& a) {
  auto l = loadFromArgs(a, "eval");
  auto layouts = layoutsFromArgs(a, *l.fusion);
  const auto seed = static_cast<uint64_t>(intOption(a, "seed", 0, 0, std::numeric_limits<int64_t>::max()));
  const bool bounds = a.flag("bounds");
  checkReferenceFits(*l.fusion, l.sizes, /*host_inputs=*/true, "give smaller sizes (--dim)", bounds);
  auto inputs = randomInputs(*l.fusion, l.sizes, layouts, seed);
  ReferenceWithBounds rb;
  if (bounds) rb = evaluateReferenceBounds(*l.fusion, inputs, l.sizes);
  else rb.values = evaluateReference(*l.fusion, inputs, l.sizes);
  const auto& outs = rb.values;
  std::string sizes;
  for (const auto& [k, v] : bindSizes(*l.fusion, inputs, l.sizes))
    sizes += fmt::format("{}{}={}", sizes.empty() ? "" : " ", k, v);
  std::cout << fmt::format("fusion {} ({}), CPU reference, seed {}\n", l.fusion->name(), sizes, seed);
  for (size_t i = 0; i < outs.size(); ++i) {
    std::cout << fmt::format("  {:<18} {}\n", l.fusion->outputs()[i].name, summarize(outs[i], 4));
    if (bounds) std::cout << fmt::format("  {:<18} {}\n", "", summarizeBounds(outs[i], rb.bounds[i]));
  }
  return 0;
}

}  // namespace loom::cli
