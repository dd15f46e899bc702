// `loom replay CORPUS... --target sm_90/132 --baseline FILE [--update] [--save DIR]`: kernel
// replay. Compiles every fusion of a fixed corpus for one target and compares each kernel's
// PTX (by hash and length) with a stored, reviewed baseline, listing every kernel that changed
// with what it came from (scheduler, tier, launch), so that a changed line says what changed.
// A refactor shows "0 kernels changed"; a change of generated code updates the baseline in the
// same commit (scripts/replay.sh --update).
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include <fmt/ranges.h>

#include "compiler/compile.h"
#include "compiler/segment/segmenter.h"
#include "runtime/environment_options.h"
#include "runtime/kernel_cache.h"
#include "tools/loom/cli.h"

namespace loom::cli {

int parseArch(const Args& a);
Bindings boundSizes(const ir::Fusion& f, const std::vector<TensorDesc>& descs, const Bindings& given);

namespace {

struct Case {
  std::string name;
  std::vector<std::string> argv;  // as `loom dump` would take them
};

// `name fusion dtype dims layouts [tags]` lines (bench/workloads.txt's format): dtype `-` keeps
// the built-in's own; dims `K=V,K=V` or `-`; layouts `-` or `IN=L,IN=L` (an L of dims keeps
// its commas: `x=1,0`).
std::vector<Case> readCorpus(const std::string& path) {
  std::ifstream in(path);
  LOOM_USER_CHECK(static_cast<bool>(in), "cannot read corpus `{}`", path);
  std::vector<Case> out;
  std::string line;
  for (int no = 1; std::getline(in, line); ++no) {
    if (line.empty() || line[0] == '#' || line.find_first_not_of(" \t") == std::string::npos) continue;
    std::istringstream is(line);
    std::string name, fusion, dtype, dims, layouts;
    is >> name >> fusion >> dtype >> dims >> layouts;
    LOOM_USER_CHECK(!layouts.empty(), "{}:{}: a corpus line is `name fusion dtype dims layouts "
                    "[tags]`, got `{}`", path, no, line);
    Case c{name, {fusion}};
    if (dtype != "-") c.argv.insert(c.argv.end(), {"--dtype", dtype});
    if (dims != "-") {
      std::istringstream ds(dims);
      for (std::string d; std::getline(ds, d, ',');) c.argv.insert(c.argv.end(), {"--dim", d});
    }
    if (layouts != "-") {
      std::vector<std::string> each;
      std::istringstream ls(layouts);
      for (std::string piece; std::getline(ls, piece, ',');) {
        if (piece.find('=') != std::string::npos || each.empty()) each.push_back(piece);
        else each.back() += "," + piece;
      }
      for (const auto& l : each) c.argv.insert(c.argv.end(), {"--layout", l});
    }
    out.push_back(std::move(c));
  }
  return out;
}

// Each segment's scheduler and, where its schedule's reason names one, its tier
// (`...; tier NAME: ...`).
std::vector<std::string> segmentSchedules(const segment::SegmentPlan* plan) {
  std::vector<std::string> out;
  if (!plan) return out;
  for (const auto& seg : plan->segments) {
    std::string s = seg.scheduler;
    const size_t t = seg.params.find("; tier ");
    if (t != std::string::npos) s += ", tier " + seg.params.substr(t + 7, seg.params.find(':', t) - t - 7);
    out.push_back(std::move(s));
  }
  return out;
}

// What a kernel's PTX came from, for a reader of the baseline's diff: its scheduler and tier
// (where the plan's segments are its kernels one for one) and its launch.
std::string scheduleLine(const CompiledKernel& k, const std::string& schedule) {
  std::string s = schedule.empty() ? "" : schedule + ", ";
  s += fmt::format("grid {}, block {}", k.grid, k.block);
  if (k.shared_bytes) s += fmt::format(", smem {}", k.shared_bytes);
  if (k.cluster > 1) s += fmt::format(", cluster {}", k.cluster);
  if (k.cooperative) s += ", cooperative";
  if (k.workspace_bytes) s += fmt::format(", workspace {}", k.workspace_bytes);
  if (!k.size_args.empty()) s += fmt::format(", sizes at run time {}", fmt::join(k.size_args, " "));
  return s;
}

// One line per kernel: `name kI HASH BYTES | SCHEDULE`, or `name refused HASH` for a user error.
std::vector<std::string> replayCase(const Case& c, const CompileOptions& opts, const std::string& save) {
  Args a(c.argv, {});
  std::vector<std::string> lines;
  try {
    auto l = loadFromArgs(a, "replay");
    auto layouts = layoutsFromArgs(a, *l.fusion);
    auto descs = describeInputs(*l.fusion, l.sizes, layouts);
    Bindings bound = boundSizes(*l.fusion, descs, l.sizes);
    auto plan = compilePlan(*l.fusion, bound, descs, opts);
    const auto schedules = segmentSchedules(plan.segment_plan.get());
    const bool one_for_one = schedules.size() == plan.kernels.size();
    for (size_t i = 0; i < plan.kernels.size(); ++i) {
      const CompiledKernel& k = plan.kernels[i].kernel;
      const std::string& ptx = k.ptx;
      lines.push_back(fmt::format("{} k{} {:016x} {} | {}", c.name, i, runtime::fnv1a(ptx), ptx.size(),
                                  scheduleLine(k, one_for_one ? schedules[i] : "")));
      if (!save.empty()) std::ofstream(fmt::format("{}/{}.k{}.ptx", save, c.name, i)) << ptx;
    }
  } catch (const Error& e) {
    lines.push_back(fmt::format("{} refused {:016x} -", c.name, runtime::fnv1a(e.what())));
  }
  return lines;
}

std::map<std::string, std::string> keyed(const std::vector<std::string>& lines) {
  std::map<std::string, std::string> m;
  for (const auto& l : lines) {
    if (l.empty() || l[0] == '#') continue;
    auto sp = l.find(' ');
    auto sp2 = l.find(' ', sp + 1);
    m[l.substr(0, sp2)] = l.substr(sp2 + 1);
  }
  return m;
}

}  // namespace

int runReplay(const Args& a) {
  LOOM_USER_CHECK(!a.positionals().empty(), "`loom replay` needs at least one CORPUS file");
  auto target = a.get("target");
  LOOM_USER_CHECK(target && target->find('/') != std::string::npos,
                  "`loom replay` needs --target ARCH/SMS[+symbolic], e.g. --target sm_90/132");
  auto baseline = a.get("baseline");
  LOOM_USER_CHECK(baseline.has_value(), "`loom replay` needs --baseline FILE");
  // `+symbolic`: the kernels an Executor compiles from a second batch size on
  // (LOOM_TUNE_SYMBOLIC), which take their leading size at run time.
  const size_t plus = target->find('+');
  const std::string variant = plus == std::string::npos ? "" : target->substr(plus + 1);
  LOOM_USER_CHECK(variant.empty() || variant == "symbolic",
                  "--target {}: the one variant after `+` is `symbolic` (e.g. sm_90/132+symbolic)", *target);
  const std::string where = target->substr(0, plus);
  const std::string arch = where.substr(0, where.find('/'));
  const std::string sms = where.substr(where.find('/') + 1);
  Args ta({"--arch", arch, "--sms", sms}, {});
  CompileOptions opts{{parseArch(ta), static_cast<int>(intOption(ta, "sms", 132, 1, 1024))}, tuningFromEnvironment()};
  if (variant == "symbolic") opts.tuning.symbolic = true;
  const std::string save = a.get("save").value_or("");
  if (!save.empty()) std::filesystem::create_directories(save);

  std::vector<std::string> now;
  for (const auto& corpus : a.positionals())
    for (const auto& c : readCorpus(corpus))
      for (auto& l : replayCase(c, opts, save)) now.push_back(std::move(l));

  const std::string header = fmt::format(
      "# kernel replay baseline for {}: `name kernel PTX-hash PTX-bytes | schedule` per kernel (or\n"
      "# `name refused MESSAGE-hash`). Written by scripts/replay.sh --update; review its diff.\n",
      *target);
  if (a.flag("update")) {
    std::ofstream out(*baseline);
    LOOM_USER_CHECK(static_cast<bool>(out), "cannot write `{}`", *baseline);
    out << header;
    for (const auto& l : now) out << l << "\n";
    std::cout << fmt::format("replay {}: {} kernels written to {}\n", *target, now.size(), *baseline);
    return 0;
  }
  std::ifstream in(*baseline);
  LOOM_USER_CHECK(static_cast<bool>(in), "cannot read baseline `{}`; write it with --update", *baseline);
  std::vector<std::string> old;
  for (std::string l; std::getline(in, l);) old.push_back(l);
  auto was = keyed(old), is = keyed(now);
  int changed = 0;
  for (const auto& [k, v] : is) {
    auto it = was.find(k);
    if (it == was.end()) {
      std::cout << fmt::format("new      {} {}: {}\n", *target, k, v);
      ++changed;
    } else if (it->second != v) {
      std::cout << fmt::format("changed  {} {}: {} -> {}\n", *target, k, it->second, v);
      ++changed;
    }
  }
  for (const auto& [k, v] : was)
    if (!is.count(k)) {
      std::cout << fmt::format("gone     {} {}: {}\n", *target, k, v);
      ++changed;
    }
  std::cout << fmt::format("replay {}: {} kernels, {} kernels changed\n", *target, is.size(), changed);
  if (changed)
    std::cout << "A change of generated code updates the baseline in the same commit: "
                 "bash scripts/replay.sh --update, then review the diff.\n";
  return changed ? 1 : 0;
}

}  // namespace loom::cli
