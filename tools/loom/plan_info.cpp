#include "tools/loom/plan_info.h"

#include "ir/error.h"

namespace loom::cli {

uint64_t tensorBytes(const TensorDesc& d) {
  return d.bytes();
}

uint64_t fusionBytes(const std::vector<TensorDesc>& inputs, const std::vector<TensorDesc>& outputs) {
  uint64_t b = 0;
  for (const auto& d : inputs) b += tensorBytes(d);
  for (const auto& d : outputs) b += tensorBytes(d);
  return b;
}

std::vector<KernelInfo> planKernels(const CompiledPlan& plan, const std::vector<TensorDesc>& inputs) {
  auto descOf = [&](const TensorRef& r) -> const TensorDesc& {
    const auto idx = static_cast<size_t>(r.index);
    const auto& v = r.kind == TensorRef::Kind::Input ? inputs
                    : r.kind == TensorRef::Kind::Output ? plan.outputs : plan.temps;
    LOOM_ASSERT(r.index >= 0 && idx < v.size(), "plan argument out of range");
    return v[idx];
  };
  std::vector<KernelInfo> out;
  for (const PlannedKernel& pk : plan.kernels) {
    const CompiledKernel& ck = pk.kernel;
    KernelInfo k;
    k.name = ck.name;
    k.grid = ck.grid;
    k.block = ck.block;
    k.shared_bytes = ck.shared_bytes;
    k.cluster = ck.cluster;
    k.cooperative = ck.cooperative;
    // The kernel's parameters: its segment's inputs, then its outputs (compile.h).
    LOOM_ASSERT(ck.outputs.size() <= pk.args.size(), "kernel {} has fewer arguments than outputs", ck.name);
    const size_t first_out = pk.args.size() - ck.outputs.size();
    for (size_t i = 0; i < pk.args.size(); ++i)
      (i < first_out ? k.bytes_read : k.bytes_written) += tensorBytes(descOf(pk.args[i]));
    out.push_back(std::move(k));
  }
  return out;
}

std::string launchText(const KernelInfo& k) {
  std::string s = fmt::format("{} grid {} block {}", k.name, k.grid, k.block);
  if (k.shared_bytes) s += fmt::format(" shared {} B", k.shared_bytes);
  if (k.cluster > 1) s += fmt::format(" cluster {}", k.cluster);
  if (k.cooperative) s += " cooperative";
  return s;
}

}  // namespace loom::cli
