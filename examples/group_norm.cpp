// A first loom program: build group norm with the C++ API, print it, see how it is segmented,
// and run it on the GPU against the CPU reference (or on the CPU reference alone without one).
#include <iostream>

#include <loom/loom.h>

int main() try {
  loom::FusionBuilder fb("group_norm");
  auto x = fb.input("x", loom::DType::F16, {"N", "C", "H", "W"});
  auto w = fb.input("w", loom::DType::F32, {"C"});
  auto b = fb.input("b", loom::DType::F32, {"C"});
  fb.output("y", loom::group_norm(x, 32, w, b, 1e-5));
  loom::Fusion f = fb.finish();
  std::cout << f;  // the text format

  // Inputs: x in channels-last memory order; the same logical values as NCHW.
  std::vector<loom::HostTensor> host = {
      loom::HostTensor::random(loom::DType::F16, {2, 128, 16, 16}, 1).withOrder({0, 2, 3, 1}),
      loom::HostTensor::random(loom::DType::F32, {128}, 2),
      loom::HostTensor::random(loom::DType::F32, {128}, 3)};
  auto ref = loom::evaluateReference(f, host);

  std::string why;
  if (!loom::gpuAvailable(&why)) {
    std::cout << "no GPU (" << why << "); CPU reference output: " << ref[0].describe() << "\n";
    return 0;
  }
  std::vector<loom::DeviceTensor> dev;
  for (const auto& h : host) dev.push_back(loom::DeviceTensor::fromHost(h));
  loom::Executor ex(f);
  std::cout << ex.describePlan(dev);
  auto out = ex.run(dev);
  auto cmp = loom::compareOutputs(f, host, {}, {out[0].toHost()}, ref)[0];
  std::cout << "y: " << cmp.str() << "\n";
  return cmp.ok ? 0 : 1;
} catch (const loom::Error& e) {
  std::cerr << "error: " << e.what() << "\n";
  return 1;
}
