#pragma once
// The one registry of debug dumps: LOOM_DUMP=ir,domains,segments,schedule,kernel,kir,llvm,ptx,launch
// (or `all`) prints those stages to stderr while any program runs; `loom dump --stage` prints
// the same text to stdout.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

#define LOOM_DUMP_STAGES(X) \
  X(IR, "ir", "the fusion in text form")                                   \
  X(Domains, "domains", "iteration domains, atoms and which are reduced")  \
  X(Segments, "segments", "the kernels a fusion becomes and why")          \
  X(Schedule, "schedule", "each kernel's scheduler and parameters")        \
  X(Kernel, "kernel", "the scheduler's kernel: its parameters and expressions") \
  X(KIR, "kir", "the kernel IR after each lowering pass")                  \
  X(LLVM, "llvm", "LLVM IR before optimization")                           \
  X(PTX, "ptx", "PTX from LLVM's NVPTX backend")                           \
  X(Launch, "launch", "each kernel launch: grid, block, time")

enum class DumpStage {
#define LOOM_X(e, name, help) e,
  LOOM_DUMP_STAGES(LOOM_X)
#undef LOOM_X
};

std::string_view dumpStageName(DumpStage s);
std::string_view dumpStageHelp(DumpStage s);
const std::vector<DumpStage>& allDumpStages();
// The stage of that name, or nullopt.
std::optional<DumpStage> findDumpStage(std::string_view name);
// Throws loom::Error listing the valid names.
DumpStage parseDumpStage(std::string_view name);
// The stages to print from now on: a LOOM_DUMP value (`ir,kir`, `all`; an unknown name is a
// warning). The runtime sets it from the environment (dumpsFromEnvironment); none by default.
void setDumpStages(std::string_view spec);
// True when the stage is to be printed.
bool dumpEnabled(DumpStage s);
// Prints `text` under a header to stderr when the stage is enabled.
void dumpIfEnabled(DumpStage s, std::string_view title, const std::string& text);

}  // namespace loom
