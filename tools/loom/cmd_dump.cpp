// `loom dump FUSION --stage ...`: one stage of the pipeline, on any machine (no GPU needed).
#include <fstream>
#include <iostream>

#include "compiler/compile.h"
#include "compiler/segment/segmenter.h"
#include "runtime/environment_options.h"
#include "tools/loom/cli.h"

namespace loom::cli {

int parseArch(const Args& a) {
  auto arch = a.get("arch").value_or("sm_90");
  LOOM_USER_CHECK(arch.rfind("sm_", 0) == 0 && arch.size() > 3, "--arch `{}` must look like sm_90", arch);
  const std::string digits = arch.substr(3);
  LOOM_USER_CHECK(digits.size() <= 3 && digits.find_first_not_of("0123456789") == std::string::npos,
                  "--arch `{}` must look like sm_90", arch);
  const int sm = std::stoi(digits);
  auto ok = supportedSms();
  LOOM_USER_CHECK(std::find(ok.begin(), ok.end(), sm) != ok.end(), "--arch {}: loom emits PTX for "
                  "sm_{}", arch, fmt::join(ok, ", sm_"));
  return sm;
}

Bindings boundSizes(const ir::Fusion& f, const std::vector<TensorDesc>& descs, const Bindings& given) {
  std::vector<DType> dtypes;
  std::vector<std::vector<int64_t>> shapes;
  for (const auto& d : descs) {
    dtypes.push_back(d.dtype);
    shapes.push_back(d.shape);
  }
  return bindShapes(f, dtypes, shapes, given);
}

int runSegment(const Args& a) {
  auto l = loadFromArgs(a, "segment");
  auto layouts = layoutsFromArgs(a, *l.fusion);
  CompileOptions opts{{parseArch(a), 132}, tuningFromEnvironment()};
  auto descs = describeInputs(*l.fusion, l.sizes, layouts);
  Bindings bound = boundSizes(*l.fusion, descs, l.sizes);
  auto plan = segment::segmentFusion(*l.fusion, bound, descs, opts);
  if (auto path = a.get("dot")) {
    std::ofstream out(*path);
    LOOM_USER_CHECK(static_cast<bool>(out), "cannot write `{}`", *path);
    out << plan.dot(*l.fusion);
  }
  std::cout << (a.flag("json") ? plan.json(*l.fusion) : plan.str(*l.fusion));
  return 0;
}

int runDump(const Args& a) {
  auto l = loadFromArgs(a, "dump");
  auto layouts = layoutsFromArgs(a, *l.fusion);
  std::string stage_name = a.get("stage").value_or("ir");
  DumpStage stage = parseDumpStage(stage_name);
  if (stage == DumpStage::IR) {
    std::cout << ir::printFusion(*l.fusion);
    return 0;
  }
  LOOM_USER_CHECK(stage != DumpStage::Launch, "stage `launch` happens only while running; use "
                  "LOOM_DUMP=launch with `loom run`");
  CompileOptions opts{{parseArch(a), 132}, tuningFromEnvironment()};
  opts.device.sm_count = static_cast<int>(intOption(a, "sms", opts.device.sm_count, 1, 1024));
  auto descs = describeInputs(*l.fusion, l.sizes, layouts);
  StageText text;
  // Binding checks sizes against the fusion the same way a run would.
  Bindings bound = boundSizes(*l.fusion, descs, l.sizes);
  const CompiledPlan plan = compilePlan(*l.fusion, bound, descs, opts, &text);
  if (plan.kernels.empty() && stage != DumpStage::Segments) {  // a size of 0: no kernel has stages
    std::cout << plan.segments;
    return 0;
  }
  auto it = text.find(stage);
  LOOM_USER_CHECK(it != text.end(), "stage `{}` has nothing to show for `{}` yet", stage_name,
                  l.fusion->name());
  std::cout << it->second;
  return 0;
}

}  // namespace loom::cli
