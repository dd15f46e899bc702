// LLVM IR -> PTX. See ptx_backend.h for the contract; the comments here say why each step is.
#include "compiler/codegen/ptx_backend.h"

#include <llvm/ADT/SmallString.h>
#include <llvm/Bitcode/BitcodeReader.h>
#include <llvm/IR/CallingConv.h>
#include <llvm/IR/Constants.h>
#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/IR/Metadata.h>
#include <llvm/IR/Module.h>
#include <llvm/IR/Verifier.h>
#include <llvm/IRReader/IRReader.h>
#include <llvm/Linker/Linker.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/SourceMgr.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/Target/TargetOptions.h>
#include <llvm/Transforms/IPO/Internalize.h>

#include <chrono>
#include <mutex>
#include <set>

#include <fmt/ranges.h>

#include "compiler/codegen/libdevice.h"
#include "ir/error.h"

// Only the NVPTX target is linked into libloom, so initialize just it (not InitializeAll*).
extern "C" void LLVMInitializeNVPTXTargetInfo();
extern "C" void LLVMInitializeNVPTXTarget();
extern "C" void LLVMInitializeNVPTXTargetMC();
extern "C" void LLVMInitializeNVPTXAsmPrinter();

namespace loom::codegen {
namespace {

constexpr const char* kTriple = "nvptx64-nvidia-cuda";

struct SmTarget {
  int sm;
  const char* ptx_feature;
};

// The PTX ISA version decides which drivers accept the PTX (8.0 needs CUDA 12.0 / driver 525+,
// 8.5 needs CUDA 12.5 / driver 555+). sm_80..89 gain nothing from newer PTX, so they keep the
// oldest version that has every feature loom uses; sm_90 takes the newest LLVM 19 knows (8.5),
// which driver 580 / CUDA 13 (the reference machine) accepts.
constexpr SmTarget kTargets[] = {
    {80, "+ptx80"},
    {86, "+ptx80"},
    {89, "+ptx80"},
    {90, "+ptx85"},
};

const SmTarget& findTarget(int sm) {
  for (const SmTarget& t : kTargets)
    if (t.sm == sm) return t;
  fail("no PTX target for sm_{}: loom supports sm_{}", sm, fmt::join(supportedSms(), ", sm_"));
}

void initNvptxOnce() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeNVPTXTargetInfo();
    LLVMInitializeNVPTXTarget();
    LLVMInitializeNVPTXTargetMC();
    LLVMInitializeNVPTXAsmPrinter();
  });
}

llvm::CodeGenOptLevel codegenLevel(int o) {
  switch (o) {
    case 0: return llvm::CodeGenOptLevel::None;
    case 1: return llvm::CodeGenOptLevel::Less;
    case 2: return llvm::CodeGenOptLevel::Default;
    default: return llvm::CodeGenOptLevel::Aggressive;
  }
}

llvm::OptimizationLevel irLevel(int o) {
  switch (o) {
    case 0: return llvm::OptimizationLevel::O0;
    case 1: return llvm::OptimizationLevel::O1;
    case 2: return llvm::OptimizationLevel::O2;
    default: return llvm::OptimizationLevel::O3;
  }
}

// A TargetMachine is cheap to make and not documented as safe to share between threads that
// compile at once, so each compilation makes its own.
std::unique_ptr<llvm::TargetMachine> makeTargetMachine(const PtxOptions& opts) {
  initNvptxOnce();
  const SmTarget& t = findTarget(opts.sm);
  std::string err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(kTriple, err);
  LOOM_ASSERT(target, "NVPTX target missing from this LLVM build: {}", err);
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      kTriple, "sm_" + std::to_string(t.sm), t.ptx_feature, llvm::TargetOptions(), std::nullopt,
      std::nullopt, codegenLevel(opts.opt_level)));
  LOOM_ASSERT(tm, "could not create the NVPTX target machine for sm_{}", t.sm);
  return tm;
}

std::string verifyMessage(const llvm::Module& m) {
  std::string msg;
  llvm::raw_string_ostream os(msg);
  if (!llvm::verifyModule(m, &os)) return "";
  os.flush();
  return msg.empty() ? "module does not verify" : msg;
}

// Kernels are the functions with the ptx_kernel calling convention or annotated
// {fn, !"kernel", i32 1} in !nvvm.annotations (how LLVM 19's NVPTX backend marks them).
std::set<std::string> kernelNames(const llvm::Module& m) {
  std::set<std::string> names;
  for (const llvm::Function& f : m)
    if (f.getCallingConv() == llvm::CallingConv::PTX_Kernel && !f.isDeclaration())
      names.insert(f.getName().str());
  if (const llvm::NamedMDNode* ann = m.getNamedMetadata("nvvm.annotations")) {
    for (const llvm::MDNode* node : ann->operands()) {
      // Operands come in (fn, key, value) triples after the function; kernels use exactly one.
      if (node->getNumOperands() < 3) continue;
      auto* fn = llvm::mdconst::dyn_extract_or_null<llvm::Function>(node->getOperand(0));
      for (unsigned i = 1; fn && i + 1 < node->getNumOperands(); i += 2) {
        auto* key = llvm::dyn_cast_or_null<llvm::MDString>(node->getOperand(i));
        auto* val = llvm::mdconst::dyn_extract_or_null<llvm::ConstantInt>(node->getOperand(i + 1));
        if (key && val && key->getString() == "kernel" && val->isOne())
          names.insert(fn->getName().str());
      }
    }
  }
  return names;
}

// libdevice is read lazily: LinkOnlyNeeded then materializes only the __nv_* functions the
// module calls (and what they call), instead of parsing all ~500 KB of bitcode every time.
void linkLibdevice(llvm::Module& m) {
  bool needed = false;
  for (const llvm::Function& f : m)
    needed |= f.isDeclaration() && f.getName().starts_with("__nv_");
  if (!needed) return;  // a module that calls no libdevice function needs none of it
  std::string_view bc = libdeviceBitcode();
  llvm::MemoryBufferRef buf(llvm::StringRef(bc.data(), bc.size()), "libdevice.10.bc");
  auto lib = llvm::getLazyBitcodeModule(buf, m.getContext());
  LOOM_ASSERT(bool(lib), "embedded libdevice does not load: {}",
              llvm::toString(lib.takeError()));
  // libdevice says nvptx64-nvidia-gpulibs and an older data layout; adopt the module's so the
  // linker has nothing to warn about.
  (*lib)->setTargetTriple(m.getTargetTriple());
  (*lib)->setDataLayout(m.getDataLayout());
  bool failed = llvm::Linker::linkModules(m, std::move(*lib), llvm::Linker::LinkOnlyNeeded);
  LOOM_ASSERT(!failed, "linking libdevice failed (LLVM printed the reason on stderr)");
}

void runOptPipeline(llvm::Module& m, llvm::TargetMachine& tm, int opt_level) {
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cgam;
  llvm::ModuleAnalysisManager mam;
  // PassBuilder's constructor calls tm.registerPassBuilderCallbacks(*this), which adds NVPTX's
  // pipeline-start passes (NVVMReflect folds libdevice's __nvvm_reflect("__CUDA_FTZ") and
  // __CUDA_ARCH queries) and its alias analysis; calling it again would add them twice.
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cgam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cgam, mam);
  llvm::ModulePassManager mpm = opt_level == 0
                                    ? pb.buildO0DefaultPipeline(llvm::OptimizationLevel::O0)
                                    : pb.buildPerModuleDefaultPipeline(irLevel(opt_level));
  mpm.run(m, mam);
}

std::string emitPtx(llvm::Module& m, llvm::TargetMachine& tm) {
  llvm::SmallString<0> out;
  llvm::raw_svector_ostream os(out);
  // Instruction selection and PTX printing still live in the legacy pass manager in LLVM 19.
  llvm::legacy::PassManager pm;
  bool unsupported = tm.addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::AssemblyFile);
  LOOM_ASSERT(!unsupported, "NVPTX target cannot emit assembly");
  pm.run(m);
  return std::string(out.str());
}

}  // namespace

std::vector<int> supportedSms() {
  std::vector<int> sms;
  for (const SmTarget& t : kTargets) sms.push_back(t.sm);
  return sms;
}

int ptxTargetFor(int cc_major, int cc_minor) {
  int cc = cc_major * 10 + cc_minor;
  int best = 0;
  for (const SmTarget& t : kTargets)
    if (t.sm <= cc) best = t.sm;
  LOOM_USER_CHECK(best != 0, "GPU of compute capability {}.{} is too old: loom needs sm_80 or newer",
                  cc_major, cc_minor);
  return best;
}

std::string compileToPtx(std::unique_ptr<llvm::Module> m, llvm::LLVMContext& ctx,
                         const PtxOptions& opts, double* ms_out) {
  auto t0 = std::chrono::steady_clock::now();
  LOOM_ASSERT(m, "compileToPtx given no module");
  LOOM_ASSERT(&m->getContext() == &ctx, "module {} lives in another LLVMContext",
              m->getName().str());
  LOOM_USER_CHECK(opts.opt_level >= 0 && opts.opt_level <= 3,
                  "opt level {} is not one of 0, 1, 2, 3", opts.opt_level);
  std::unique_ptr<llvm::TargetMachine> tm = makeTargetMachine(opts);  // checks opts.sm

  std::string broken = verifyMessage(*m);
  LOOM_ASSERT(broken.empty(), "generated LLVM IR of {} is invalid: {}", m->getName().str(), broken);
  std::set<std::string> kernels = kernelNames(*m);
  LOOM_ASSERT(!kernels.empty(), "LLVM module {} has no kernel", m->getName().str());

  m->setTargetTriple(kTriple);
  m->setDataLayout(tm->createDataLayout());
  // NVVMReflect answers libdevice's __nvvm_reflect("__CUDA_FTZ") from this flag: 0 keeps
  // denormals (IEEE results, matching the float64 reference); codegen may have set it already.
  if (!m->getModuleFlag("nvvm-reflect-ftz"))
    m->addModuleFlag(llvm::Module::Override, "nvvm-reflect-ftz", uint32_t(0));
  linkLibdevice(*m);
  // Everything but the kernels becomes internal so the optimizer may inline it and drop what is
  // unused (all of libdevice the kernels do not reach).
  llvm::internalizeModule(*m, [&](const llvm::GlobalValue& gv) {
    return kernels.count(gv.getName().str()) != 0;
  });

  runOptPipeline(*m, *tm, opts.opt_level);
  std::string ptx = emitPtx(*m, *tm);
  if (ms_out)
    *ms_out = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count();
  return ptx;
}

std::string compileLlvmIrToPtx(std::string_view ir_text, const PtxOptions& opts, double* ms_out) {
  llvm::LLVMContext ctx;
  llvm::SMDiagnostic diag;
  llvm::MemoryBufferRef buf(llvm::StringRef(ir_text.data(), ir_text.size()), "<llvm-ir>");
  std::unique_ptr<llvm::Module> m = llvm::parseIR(buf, diag, ctx);
  if (!m) {
    std::string msg;
    llvm::raw_string_ostream os(msg);
    diag.print("loom", os, /*ShowColors=*/false);
    os.flush();
    fail("LLVM IR does not parse: {}", msg);
  }
  std::string broken = verifyMessage(*m);
  LOOM_USER_CHECK(broken.empty(), "LLVM IR does not verify: {}", broken);
  LOOM_USER_CHECK(!kernelNames(*m).empty(),
                  "LLVM IR has no kernel: mark one with the ptx_kernel calling convention or "
                  "!nvvm.annotations = !{{!{{ptr @fn, !\"kernel\", i32 1}}}}");
  return compileToPtx(std::move(m), ctx, opts, ms_out);
}

}  // namespace loom::codegen
