// The backward built-ins (frontend/examples_backward.cpp): each compiles at its default sizes,
// as a plan of however many kernels the segmenter makes of it today, every kernel's PTX
// accepted by ptxas, in NCHW and channels-last (x and dy) where it is an image op, for f32, f16
// and bf16; `loom segment` takes each; the text files in examples/fusions/ are what `loom print`
// gives for the built-ins of the same name.
#include <catch2/catch.hpp>

#include <fstream>

#include "compiler/compile.h"
#include "frontend/examples_backward.h"
#include "frontend/internal_api.h"
#include "tests/backward_builtins.h"
#include "tests/cli_test_util.h"
#include "tests/compile_test_util.h"

using namespace loom;

namespace {

const std::vector<std::string> kNames = {
    "layer_norm_backward",    "rms_norm_backward",      "softmax_backward",   "log_softmax_backward",
    "group_norm_backward",    "batch_norm_backward",    "instance_norm_backward",
    "layer_norm_2d_backward", "lstm_cell_backward",     "gru_cell_backward"};

}  // namespace

TEST_CASE("the backward built-ins are listed, each with an x or dy input", "[backward][builtins]") {
  std::vector<std::string> names;
  for (const auto& e : backwardExamples()) {
    names.push_back(e.name);
    CHECK(findExample(e.name) != nullptr);
  }
  CHECK(names == kNames);
  for (const auto& name : loom::test::kMultiKernelBuiltins) CHECK(findExample(name) != nullptr);
}

TEST_CASE("every backward built-in compiles as a plan whose kernels ptxas accepts", "[backward][builtins][ptx]") {
  for (const auto& e : backwardExamples()) {
    for (DType t : {DType::F32, DType::F16, DType::BF16}) {
      auto f = e.build(t);
      for (bool nhwc : {false, true}) {
        if (nhwc && loom::test::mainInput(*f)->rank() != 4) continue;
        auto lay = nhwc ? loom::test::channelsLastImages(*f) : std::map<std::string, std::vector<int>>{};
        INFO(e.name << " " << dtypeName(t) << (nhwc ? " channels-last" : ""));
        auto plan = compilePlan(*f, e.default_sizes, loom::test::descsFor(*f, e.default_sizes, lay),
                                CompileOptions{{90, 132}});
        REQUIRE_FALSE(plan.kernels.empty());
        CHECK(plan.outputs.size() == f->outputs().size());
        if (nhwc && loom::test::kTwoPassChannelsLast.count(e.name)) CHECK(plan.kernels.size() == 2);
        else if (!loom::test::kMultiKernelBuiltins.count(e.name)) CHECK(plan.kernels.size() == 1);
        if (t == DType::F16)  // ptxas on one dtype: the others differ only in loads and casts
          for (const auto& k : plan.kernels) LOOM_CHECK_PTXAS(k.kernel.ptx, 90);
      }
    }
  }
}

TEST_CASE("loom segment takes every backward built-in", "[backward][builtins][cli]") {
  for (const auto& name : kNames) {
    auto r = test::runLoom("segment " + name);
    INFO(r.out);
    CHECK(r.status == 0);
    CHECK(r.out.rfind("fusion " + name + ": ", 0) == 0);
  }
  for (const char* name : {"group_norm_backward", "batch_norm_backward", "instance_norm_backward",
                           "layer_norm_2d_backward"}) {
    auto r = test::runLoom(std::string("segment ") + name + " --layout x=nhwc --layout dy=nhwc");
    INFO(r.out);
    CHECK(r.status == 0);
  }
}

TEST_CASE("examples/fusions holds the backward built-ins' text as loom print writes it", "[backward][builtins][text]") {
  for (const char* name : {"layer_norm_backward", "rms_norm_backward"}) {
    INFO(name);
    std::ifstream in(std::string(LOOM_SOURCE_DIR) + "/examples/fusions/" + name + ".loom");
    REQUIRE(in.good());
    std::string line, text;  // the file less its leading comment lines
    while (std::getline(in, line))
      if (!(text.empty() && line.rfind('#', 0) == 0)) text += line + "\n";
    auto built = findExample(name)->buildDefault();
    CHECK(text == ir::printFusion(*built));
    CHECK(ir::printFusion(*parseFusion(text)) == text);
  }
}
