#include "runner.h"

#include <c10/cuda/CUDAStream.h>

#include <loom/error.h>

namespace loom_torch {

namespace {

constexpr size_t kMaxSignatures = 16;

int alignmentOf(const at::Tensor& t) {
  const auto p = reinterpret_cast<uintptr_t>(t.data_ptr());
  return p == 0 ? 16 : static_cast<int>(std::min<uintptr_t>(16, p & (~p + 1)));
}

// The signature `Runner` keys on: per input its dtype, alignment, rank, sizes and strides.
void appendKey(const at::Tensor& t, std::vector<int64_t>& key) {
  key.push_back(static_cast<int64_t>(t.scalar_type()));
  key.push_back(alignmentOf(t));
  key.push_back(t.dim());
  for (int64_t s : t.sizes()) key.push_back(s);
  for (int64_t s : t.strides()) key.push_back(s);
}

bool sameKey(const std::vector<int64_t>& key, at::ArrayRef<at::Tensor> inputs) {
  size_t at = 0;
  auto next = [&](int64_t v) { return at < key.size() && key[at++] == v; };
  for (const at::Tensor& t : inputs) {
    if (!next(static_cast<int64_t>(t.scalar_type())) || !next(alignmentOf(t)) || !next(t.dim())) return false;
    for (int64_t s : t.sizes())
      if (!next(s)) return false;
    for (int64_t s : t.strides())
      if (!next(s)) return false;
  }
  return at == key.size();
}

loom::DeviceTensor wrap(const at::Tensor& t, const char* where) {
  return loom::DeviceTensor::wrap(reinterpret_cast<uintptr_t>(t.data_ptr()), loomDtype(t.scalar_type(), where),
                                  t.sizes().vec(), t.strides().vec());
}

}  // namespace

loom::DType loomDtype(at::ScalarType t, const char* where) {
  switch (t) {
    case at::kBool: return loom::DType::Bool;
    case at::kInt: return loom::DType::I32;
    case at::kLong: return loom::DType::I64;
    case at::kHalf: return loom::DType::F16;
    case at::kBFloat16: return loom::DType::BF16;
    case at::kFloat: return loom::DType::F32;
    case at::kDouble: return loom::DType::F64;
    default:
      throw loom::Error(std::string(where) + ": dtype " + c10::toString(t) +
                        " is not one of loom's (bool, int32, int64, float16, bfloat16, float32, float64)");
  }
}

at::ScalarType torchDtype(loom::DType t) {
  switch (t) {
    case loom::DType::Bool: return at::kBool;
    case loom::DType::I32: return at::kInt;
    case loom::DType::I64: return at::kLong;
    case loom::DType::F16: return at::kHalf;
    case loom::DType::BF16: return at::kBFloat16;
    case loom::DType::F32: return at::kFloat;
    case loom::DType::F64: return at::kDouble;
  }
  return at::kFloat;
}

bool plainCuda(const at::Tensor& t) {
  const c10::DispatchKeySet ks = t.key_set();
  return ks.has(c10::DispatchKey::CUDA) && !ks.has(c10::DispatchKey::Python) &&
         !ks.has(c10::DispatchKey::Functionalize) && !ks.has(c10::DispatchKey::FuncTorchBatched) &&
         !ks.has(c10::DispatchKey::FuncTorchGradWrapper) && !ks.has(c10::DispatchKey::Conjugate) &&
         !ks.has(c10::DispatchKey::Negative);
}

Runner::Runner(loom::Fusion fusion) : fusion_(std::move(fusion)) {
  exec_ = std::make_unique<loom::Executor>(fusion_);
  n_inputs_ = fusion_.inputNames().size();
}

Runner::Signature& Runner::addSignature(at::ArrayRef<at::Tensor> inputs, std::vector<int64_t> key) {
  const std::vector<std::string> names = fusion_.inputNames();
  if (inputs.size() != names.size())
    throw loom::Error("fusion `" + fusion_.name() + "` takes " + std::to_string(names.size()) + " inputs, " +
                      std::to_string(inputs.size()) + " given");
  auto s = std::make_unique<Signature>();
  s->key = std::move(key);
  const int device = inputs.empty() ? loom::selectedDevice() : inputs[0].get_device();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string where = "fusion `" + fusion_.name() + "`, input `" + names[i] + "`";
    if (!inputs[i].is_cuda())
      throw loom::Error(where + ": a " + inputs[i].device().str() + " tensor; loom runs on CUDA tensors");
    if (inputs[i].get_device() != device)
      throw loom::Error(where + ": on cuda:" + std::to_string(inputs[i].get_device()) + ", the first input on cuda:" +
                        std::to_string(device) + "; every input must be on one GPU");
    s->ins.push_back(wrap(inputs[i], where.c_str()));
  }
  if (device != loom::selectedDevice()) loom::selectDevice(device);  // (throws once loom runs on another)
  s->device = at::TensorOptions().device(at::Device(at::kCUDA, static_cast<c10::DeviceIndex>(device)));
  const std::vector<loom::TensorDesc> descs = exec_->outputSpecs(s->ins);
  const std::vector<int> aliases = fusion_.outputAliases();
  for (size_t i = 0; i < descs.size(); ++i)
    s->specs.push_back({descs[i].shape, descs[i].strides, torchDtype(descs[i].dtype), aliases[i]});
  if (sigs_.size() >= kMaxSignatures) sigs_.pop_back();
  sigs_.insert(sigs_.begin(), std::move(s));
  return *sigs_.front();
}

Runner::Signature& Runner::signatureFor(at::ArrayRef<at::Tensor> inputs) {
  for (size_t i = 0; i < sigs_.size(); ++i) {
    if (!sameKey(sigs_[i]->key, inputs)) continue;
    if (i) std::rotate(sigs_.begin(), sigs_.begin() + static_cast<std::ptrdiff_t>(i), sigs_.begin() + static_cast<std::ptrdiff_t>(i) + 1);
    return *sigs_.front();
  }
  std::vector<int64_t> key;
  for (const at::Tensor& t : inputs) appendKey(t, key);
  return addSignature(inputs, std::move(key));
}

std::vector<at::Tensor> Runner::run(at::ArrayRef<at::Tensor> inputs) {
  std::lock_guard<std::mutex> lock(mu_);
  Signature& s = signatureFor(inputs);
  std::vector<at::Tensor> out;
  out.reserve(s.specs.size());
  for (const OutSpec& o : s.specs)
    out.push_back(o.alias >= 0 ? inputs[static_cast<size_t>(o.alias)]
                               : at::empty_strided(o.shape, o.strides, s.device.dtype(o.dtype)));
  for (size_t i = 0; i < inputs.size(); ++i) s.ins[i].rebind(reinterpret_cast<uintptr_t>(inputs[i].data_ptr()));
  if (s.outs.empty()) {
    for (const at::Tensor& t : out) s.outs.push_back(wrap(t, "output"));
  } else {
    for (size_t i = 0; i < out.size(); ++i) s.outs[i].rebind(reinterpret_cast<uintptr_t>(out[i].data_ptr()));
  }
  const c10::DeviceIndex dev = s.device.device().index();
  exec_->setStream(reinterpret_cast<uintptr_t>(c10::cuda::getCurrentCUDAStream(dev).stream()));
  exec_->launch(s.ins, s.outs);
  return out;
}

std::vector<OutSpec> Runner::specs(at::ArrayRef<at::Tensor> like) {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<loom::DeviceTensor> ins;
  const std::vector<std::string> names = fusion_.inputNames();
  if (like.size() != names.size())
    throw loom::Error("fusion `" + fusion_.name() + "` takes " + std::to_string(names.size()) + " inputs, " +
                      std::to_string(like.size()) + " given");
  // Fake tensors have no memory: a 16-byte aligned address stands in (never read or written).
  constexpr uintptr_t kStandIn = uintptr_t{1} << 40;
  for (size_t i = 0; i < like.size(); ++i)
    ins.push_back(loom::DeviceTensor::wrap(kStandIn, loomDtype(like[i].scalar_type(), names[i].c_str()),
                                           like[i].sizes().vec(), like[i].strides().vec()));
  std::vector<OutSpec> out;
  const std::vector<int> aliases = fusion_.outputAliases();
  const std::vector<loom::TensorDesc> descs = exec_->outputSpecs(ins);
  for (size_t i = 0; i < descs.size(); ++i)
    out.push_back({descs[i].shape, descs[i].strides, torchDtype(descs[i].dtype), aliases[i]});
  return out;
}

}  // namespace loom_torch
