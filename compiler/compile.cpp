#include "compiler/compile.h"

#include <set>

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>
#include <llvm/Support/raw_ostream.h>

#include "compiler/analysis/domains.h"
#include "compiler/codegen/kir_to_llvm.h"
#include "compiler/codegen/ptx_backend.h"
#include "compiler/kir/fingerprint.h"
#include "compiler/kir/pipeline.h"
#include "compiler/kir/printer.h"
#include "compiler/schedule/row_kernel.h"
#include "compiler/schedule/scheduler.h"
#include "ir/error.h"
#include "ir/printer.h"
#include "loom_build_id.h"  // generated: a hash of the sources

namespace loom {

namespace {
void record(StageText* stages, DumpStage s, const std::string& title, const std::string& text) {
  dumpIfEnabled(s, title, text);
  if (stages) (*stages)[s] += text;
}
bool wanted(StageText* stages, DumpStage s) { return stages || dumpEnabled(s); }
// The schedule dump's word on which sizes the kernel is compiled for (the scheduler's reason
// says why a size stays known where LOOM_TUNE_SYMBOLIC asked for it at run time).
std::string sizesLine(const schedule::Planned& p, const CompileOptions& opts) {
  if (!opts.tuning.symbolic)
    return "  sizes: every one compiled in (an Executor takes the outermost at run time where the scheduler allows "
           "from a second value of it on, or from the first under LOOM_TUNE_SYMBOLIC=1)\n";
  if (p.size_args.empty()) return "  sizes: every one compiled in (the reason above says why)\n";
  std::vector<std::string> names;
  for (const auto& [name, value] : p.size_args) names.push_back(name);
  return fmt::format("  sizes: {} a kernel parameter, the others compiled in\n", fmt::join(names, ", "));
}
// The kernel IR after each pass, where it is wanted.
kir::PassDump kirDump(StageText* stages, const ir::Fusion& f) {
  if (!wanted(stages, DumpStage::KIR)) return {};
  return [stages, &f](const std::string& pass, const std::string& text) {
    record(stages, DumpStage::KIR, fmt::format("{} after {}", f.name(), pass),
           fmt::format("// after pass `{}`\n{}", pass, text));
  };
}
}  // namespace

std::vector<int> supportedSms() { return codegen::supportedSms(); }
int ptxTargetFor(int cc_major, int cc_minor) { return codegen::ptxTargetFor(cc_major, cc_minor); }

namespace {
// What every key ends with: the target, the compiler build, the knobs.
std::string keyTail(const CompileOptions& opts) {
  std::string key = fmt::format("sm_{} sms {}\n", opts.device.sm, opts.device.sm_count);
  // The compiler that wrote it: kernels from another build of loom are never reused.
  key += fmt::format("loom build {}\n", LOOM_BUILD_ID);
  // The tuning knobs set change the code: part of the key (but LOOM_NO_AUTO_SYMBOLIC, which
  // only decides which calls compile with LOOM_TUNE_SYMBOLIC).
  Tuning t = opts.tuning;
  t.no_auto_symbolic = false;
  for (const std::string& s : tuningSettings(t)) key += fmt::format("tuning {}\n", s);
  return key;
}
}  // namespace

std::string compileKey(const ir::Fusion& f, const std::vector<TensorDesc>& inputs, const Bindings& sizes,
                       const CompileOptions& opts) {
  std::string key = ir::fusionText(f);
  for (const auto& d : inputs) key += d.str() + "\n";
  const std::vector<std::string> from_inputs = f.symbols();
  std::set<std::string> named(from_inputs.begin(), from_inputs.end());
  for (const ir::Value* v : f.values())
    for (const Extent& e : v->shape())
      for (const auto& s : e.symbols()) named.insert(s);
  for (const auto& s : named)
    if (auto it = sizes.find(s); it != sizes.end()) key += fmt::format("size {}={}\n", s, it->second);
  return key + keyTail(opts);
}

std::optional<SymbolicClass> symbolicClass(const ir::Fusion& f, const Bindings& sizes,
                                           const std::vector<TensorDesc>& inputs, const CompileOptions& opts,
                                           const schedule::Planned* planned, const std::vector<KnownClass>& known) {
  if (!opts.tuning.symbolic) return std::nullopt;
  std::optional<schedule::Planned> own;
  if (!planned) {
    std::vector<std::string> why;
    own = schedule::planSegment(f, sizes, inputs, opts, "loom_" + f.name(), &why);
    planned = own ? &*own : nullptr;
  }
  const schedule::Planned* p = planned;
  if (!p || p->size_args.empty()) return std::nullopt;
  SymbolicClass c;
  // The kernel IR as its fingerprint (every field of every node; printing it took longer than
  // lowering it), or an earlier size's whose schedule lowers as this one's. The launch's other
  // parameters travel with the cached kernel: they too must be the class's.
  for (const KnownClass& k : known)
    if (p->lowers_as && k.planned && !k.ir_hash.empty() && p->lowers_as(*k.planned)) {
      c.ir_hash = k.ir_hash;
      break;
    }
  if (c.ir_hash.empty()) c.ir_hash = kir::fingerprint(p->lower()).hex();
  const auto& l = p->launch;
  c.key = "symbolic\n" + ir::fusionText(f) +
          fmt::format("kernel ir {}\nlaunch block {} shared {} cluster {} cooperative {} workspace {}\n", c.ir_hash,
                      l.block, l.shared_bytes, l.cluster, l.cooperative, l.workspace_bytes) +
          keyTail(opts);
  c.grid = static_cast<unsigned>(p->launch.grid);
  c.outputs = p->outputs;
  for (const auto& [name, value] : p->size_args) c.size_values.push_back(value);
  return c;
}

CompiledKernel compileFusion(const ir::Fusion& f, const Bindings& sizes,
                             const std::vector<TensorDesc>& inputs, const CompileOptions& opts,
                             StageText* stages) {
  if (wanted(stages, DumpStage::IR)) record(stages, DumpStage::IR, f.name(), ir::printFusion(f));
  if (wanted(stages, DumpStage::Domains))
    record(stages, DumpStage::Domains, f.name(), analysis::DomainAnalysis(f).str(f));
  llvm::LLVMContext ctx;
  std::unique_ptr<llvm::Module> m;
  CompiledKernel out;
  std::string kernel_name = "loom_" + f.name();
  std::vector<std::string> why;
  auto p = schedule::planSegment(f, sizes, inputs, opts, kernel_name, &why);
  if (!p) fail("fusion `{}` cannot run as one kernel: no scheduler accepts it ({})", f.name(), fmt::join(why, "; "));
  if (wanted(stages, DumpStage::Schedule)) record(stages, DumpStage::Schedule, f.name(), p->summary + sizesLine(*p, opts));
  if (wanted(stages, DumpStage::Kernel)) record(stages, DumpStage::Kernel, f.name(), p->detail());
  m = codegen::translateKernel(kir::runPasses(p->lower(), p->first_pass, kir::standardPasses(), kirDump(stages, f)), ctx);
  out.block = static_cast<unsigned>(p->launch.block);
  out.grid = static_cast<unsigned>(p->launch.grid);
  out.shared_bytes = static_cast<unsigned>(p->launch.shared_bytes);
  out.cluster = static_cast<unsigned>(p->launch.cluster);
  out.cooperative = p->launch.cooperative;
  out.workspace_bytes = static_cast<std::uint64_t>(p->launch.workspace_bytes);
  out.outputs = p->outputs;
  out.output_alias = p->output_alias;
  for (const auto& [name, value] : p->size_args) out.size_args.push_back(name);
  if (wanted(stages, DumpStage::LLVM)) {
    std::string s;
    llvm::raw_string_ostream os(s);
    m->print(os, nullptr);
    record(stages, DumpStage::LLVM, f.name(), os.str());
  }
  out.name = kernel_name;
  out.ptx = codegen::compileToPtx(std::move(m), ctx, codegen::PtxOptions{opts.device.sm, 2}, &out.llvm_ptx_ms);
  if (wanted(stages, DumpStage::PTX)) record(stages, DumpStage::PTX, f.name(), out.ptx);
  return out;
}
}  // namespace loom
