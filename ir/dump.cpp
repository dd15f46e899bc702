#include "ir/dump.h"

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <set>

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

std::set<DumpStage> enabledFromEnv() {
  std::set<DumpStage> out;
  const char* env = std::getenv("LOOM_DUMP");
  if (!env) return out;
  std::string_view s(env);
  while (!s.empty()) {
    size_t c = s.find(',');
    std::string_view item = s.substr(0, c);
    if (item == "all") {
      for (auto st : allDumpStages()) out.insert(st);
    } else if (!item.empty()) {
      bool found = false;
      for (auto st : allDumpStages())
        if (dumpStageName(st) == item) {
          out.insert(st);
          found = true;
        }
      if (!found)
        std::fprintf(stderr, "loom: warning: LOOM_DUMP names unknown stage `%.*s`\n",
                     static_cast<int>(item.size()), item.data());
    }
    if (c == std::string_view::npos) break;
    s.remove_prefix(c + 1);
  }
  return out;
}
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

DumpStage parseDumpStage(std::string_view name) {
  std::string names;
  for (auto s : allDumpStages()) {
    if (dumpStageName(s) == name) return s;
    names += (names.empty() ? "" : ", ") + std::string(dumpStageName(s));
  }
  fail("unknown stage `{}`; stages are: {}", name, names);
}

bool dumpEnabled(DumpStage s) {
  static const std::set<DumpStage> enabled = enabledFromEnv();
  return enabled.count(s) > 0;
}

void dumpIfEnabled(DumpStage s, std::string_view title, const std::string& text) {
  if (!dumpEnabled(s)) return;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  std::fprintf(stderr, "=== loom %.*s: %.*s ===\n%s%s", static_cast<int>(dumpStageName(s).size()),
               dumpStageName(s).data(), static_cast<int>(title.size()), title.data(), text.c_str(),
               (!text.empty() && text.back() == '\n') ? "" : "\n");
}

}  // namespace loom
