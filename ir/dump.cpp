#include "ir/dump.h"

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>

#include "ir/error.h"

namespace loom {

namespace {
struct StageInfo {
  std::string_view name, help;
};
constexpr StageInfo kStages[] = {
#define LOOM_X(e, name, help) {name, help},
    LOOM_DUMP_STAGES(LOOM_X)
#undef LOOM_X
};

// The stages to print, one bit each: set by setDumpStages, read by every compile.
std::atomic<uint32_t> g_enabled{0};
}  // namespace

std::string_view dumpStageName(DumpStage s) { return kStages[static_cast<int>(s)].name; }
std::string_view dumpStageHelp(DumpStage s) { return kStages[static_cast<int>(s)].help; }

const std::vector<DumpStage>& allDumpStages() {
  static const std::vector<DumpStage> all = [] {
    std::vector<DumpStage> v;
    for (size_t i = 0; i < std::size(kStages); ++i) v.push_back(static_cast<DumpStage>(i));
    return v;
  }();
  return all;
}

std::optional<DumpStage> findDumpStage(std::string_view name) {
  for (auto s : allDumpStages())
    if (dumpStageName(s) == name) return s;
  return std::nullopt;
}

DumpStage parseDumpStage(std::string_view name) {
  if (std::optional<DumpStage> s = findDumpStage(name)) return *s;
  std::string names;
  for (auto s : allDumpStages()) names += (names.empty() ? "" : ", ") + std::string(dumpStageName(s));
  fail("unknown stage `{}`; stages are: {}", name, names);
}

void setDumpStages(std::string_view spec) {
  uint32_t bits = 0;
  while (!spec.empty()) {
    size_t c = spec.find(',');
    std::string_view item = spec.substr(0, c);
    if (item == "all") {
      for (auto st : allDumpStages()) bits |= 1u << static_cast<int>(st);
    } else if (!item.empty()) {
      const std::optional<DumpStage> st = findDumpStage(item);
      if (st)
        bits |= 1u << static_cast<int>(*st);
      else
        std::fprintf(stderr, "loom: warning: LOOM_DUMP names unknown stage `%.*s`\n",
                     static_cast<int>(item.size()), item.data());
    }
    if (c == std::string_view::npos) break;
    spec.remove_prefix(c + 1);
  }
  g_enabled.store(bits, std::memory_order_relaxed);
}

bool dumpEnabled(DumpStage s) { return (g_enabled.load(std::memory_order_relaxed) >> static_cast<int>(s)) & 1u; }

void dumpIfEnabled(DumpStage s, std::string_view title, const std::string& text) {
  if (!dumpEnabled(s)) return;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "=== loom %.*s: %.*s ===\n%s%s", static_cast<int>(dumpStageName(s).size()),
               dumpStageName(s).data(), static_cast<int>(title.size()), title.data(), text.c_str(),
               (!text.empty() && text.back() == '\n') ? "" : "\n");
}

}  // namespace loom
