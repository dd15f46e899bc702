// The public C++ API (include/loom) as a user outside the tree sees it: only <loom/loom.h>.
// (install_consumer builds examples/group_norm.cpp against an installed libloom.so; this checks
// the entry points and their errors, CPU only.)
#include <catch2/catch.hpp>

#include <loom/loom.h>

#include <sstream>
#include <string>

namespace {

loom::Fusion scaledSoftmax() {
  loom::FusionBuilder fb("scaled_softmax");
  auto x = fb.input("x", loom::DType::F16, {"N", 96});
  fb.output("y", loom::softmax(x * 0.5, -1));
  return fb.finish();
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

template <typename F>
std::string errorOf(F&& f) {
  try {
    f();
  } catch (const loom::Error& e) {
    return e.what();
  }
  return "(no loom::Error)";
}

}  // namespace

TEST_CASE("public API: build, print, parse back, evaluate", "[public_api]") {
  loom::Fusion f = scaledSoftmax();
  CHECK(f.name() == "scaled_softmax");
  CHECK(f.inputNames() == std::vector<std::string>{"x"});
  CHECK(f.outputNames() == std::vector<std::string>{"y"});
  std::ostringstream os;
  os << f;
  CHECK(os.str() == f.str());
  loom::Fusion g = loom::Fusion::parse(f.str());
  CHECK(g.str() == f.str());

  auto x = loom::HostTensor::random(loom::DType::F16, {3, 96}, 7);
  auto ref = loom::evaluateReference(f, {x});
  REQUIRE(ref.size() == 1);
  CHECK(ref[0].shape() == std::vector<int64_t>{3, 96});
  double row = 0;
  for (int64_t j = 0; j < 96; ++j) row += ref[0].get({1, j});
  CHECK(row > 0.99);
  CHECK(row < 1.01);
  // The comparison accepts the reference itself and rejects a changed element.
  CHECK(loom::compareOutputs(f, {x}, {}, ref, ref)[0].ok);
  auto wrong = ref[0].contiguous();
  wrong = loom::HostTensor::fromValues(loom::DType::F16, {3, 96}, wrong.toVector());
  wrong.set({2, 5}, wrong.get({2, 5}) + 0.25);
  CHECK_FALSE(loom::compareOutputs(f, {x}, {}, {wrong}, ref)[0].ok);
}

TEST_CASE("public API: built-ins by name, with their sizes", "[public_api]") {
  auto names = loom::Fusion::builtinNames();
  REQUIRE(names.size() > 10);
  loom::Fusion ln = loom::Fusion::builtin("layer_norm", loom::DType::BF16);
  CHECK(ln.name() == "layer_norm");
  CHECK(contains(ln.str(), "bf16"));
  CHECK(loom::Fusion::builtinSizes("layer_norm").count("N") == 1);
  CHECK(contains(errorOf([] { loom::Fusion::builtin("layer_nrom"); }),
                 "`layer_nrom` is not a built-in fusion; the built-ins are"));
  CHECK(contains(errorOf([] { loom::Fusion::builtin("layer_norm", loom::DType::I32); }), "floating-point"));
}

TEST_CASE("public API: misuse is a loom::Error that says what was wrong", "[public_api]") {
  loom::FusionBuilder fb("twice");
  auto x = fb.input("x", loom::DType::F32, {"N"});
  fb.output("y", loom::exp(x));
  loom::Fusion f = fb.finish();
  CHECK(contains(errorOf([&] { fb.finish(); }), "already finished its fusion"));
  CHECK(contains(errorOf([&] { fb.input("z", loom::DType::F32, {4}); }), "already finished its fusion"));
  CHECK(contains(errorOf([&] { loom::full(fb, {4}, 1.0, loom::DType::F32); }), "already finished"));
  loom::Fusion moved = std::move(f);
  CHECK(moved.name() == "twice");
  CHECK(contains(errorOf([&] { (void)f.str(); }), "moved from"));
  CHECK(contains(errorOf([&] { loom::evaluateReference(f, {}); }), "moved from"));
  CHECK(contains(errorOf([&] { loom::Executor ex(f); }), "moved from"));
  CHECK(contains(errorOf([] { loom::Tensor t; (void)t.dtype(); }), "empty tensor handle"));
  // A handle kept from building cannot change the finished fusion.
  CHECK(contains(errorOf([&] { (void)loom::exp(x); }), "fusion `twice` is finished"));
  CHECK(moved.str().find("exp") == moved.str().rfind("exp"));
  CHECK(contains(errorOf([] { loom::Fusion::parse("fusion broken {\n  in x: f32[N]\n  out y = q\n}\n"); }), ":3:"));
}

TEST_CASE("public API: constants and fills through the builder", "[public_api]") {
  loom::FusionBuilder fb("fill");
  auto x = fb.input("x", loom::DType::F32, {4});
  fb.output("y", x + loom::full(fb, {4}, 2.5, loom::DType::F32) * loom::constant(fb, 2.0, loom::DType::F32));
  loom::Fusion f = fb.finish();
  auto xs = loom::HostTensor::fromValues(loom::DType::F32, {4}, {1, 2, 3, 4});
  auto y = loom::evaluateReference(f, {xs})[0];
  CHECK(y.toVector() == std::vector<double>{6, 7, 8, 9});
}

TEST_CASE("public API: without a GPU, gpuAvailable says why", "[public_api]") {
  std::string why;
  if (loom::gpuAvailable(&why)) {
    SUCCEED("a GPU is here");
  } else {
    CHECK(contains(why, "no NVIDIA GPU found"));
  }
}
