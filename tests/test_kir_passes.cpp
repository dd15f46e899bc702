// CPU-only: the kernel IR's loops, reductions and memory operations beyond the pointwise ones,
// on hand-made kernels: what the verifier refuses, what lower-combines writes, and that the
// translator's PTX passes ptxas.
#include <catch2/catch.hpp>

#include "tests/compile_test_util.h"

#include "compiler/codegen/kir_to_llvm.h"
#include "compiler/kir/builder.h"
#include "compiler/kir/lower_combines.h"
#include "compiler/kir/printer.h"
#include "compiler/kir/verifier.h"

using namespace loom;
using loom::test::has;
using namespace loom::kir;

namespace {

std::string joined(const std::vector<std::string>& v) { return fmt::format("{}", fmt::join(v, " | ")); }

// out[row] = the sum of row `row` of a [rows, 1024] f32 input: `threads` threads a row, one row
// a block (over `cluster` blocks of a cluster, each a slice), each thread folding its chunks in
// a counted loop. `welford`: the row's (count, mean, M2) instead, out = M2.
Kernel rowKernel(int threads, int cluster, bool welford_stats) {
  const int64_t rows = 64, D = 1024, per_thread = D / threads / cluster;
  Kernel k;
  k.name = "rows";
  k.scheduler = "test";
  k.params = {{"x", DType::F32, false, rows * D}, {"out", DType::F32, true, rows}};
  k.launch = {rows * cluster, threads};
  Builder b;
  b.spread("tid", Mapping::Threads, threads, [&](const ExprP& tid) {
    b.bindAs("t_in_row", convert(tid, Type::idx()));
    b.bindAs("row_in_block", index(IndexOp::Div, tid, i32Const(threads)));
    b.bindAs("lane", index(IndexOp::Rem, tid, i32Const(32)));
    b.spread("blk", Mapping::Blocks, rows * cluster, [&](const ExprP& blk) {
      ExprP block = b.convert(blk, Type::idx());
      ExprP row = b.udiv(block, intConst(cluster));
      ExprP rank = b.urem(block, intConst(cluster));
      ExprP t = var("t_in_row", Type::idx());
      ExprP zero = dataConst(DType::F32, 0, 1);
      const CombineSpec spec{Combine::Sum, "{D}", threads, 1, "t_in_row", "row_in_block", "lane", cluster, {}};
      auto acc = b.repeat("k", per_thread, {zero, zero}, [&](const ExprP& kk, const std::vector<ExprP>& in) {
        ExprP col = b.add(b.mul(rank, intConst(D / cluster)), b.add(b.mul(kk, intConst(threads)), t));
        ExprP x = b.bind(load(0, DType::F32, add(mul(row, intConst(D)), col), 1, Access::Gather, 1, Cache::Invariant));
        return std::vector<ExprP>{b.math(ir::OpKind::Add, DType::F32, {in[0], x}),
                                  b.math(ir::OpKind::Add, DType::F32, {in[1], b.math(ir::OpKind::Mul, DType::F32, {x, x})})};
      });
      ExprP result;
      if (welford_stats) {
        b.emit(welford({"n", "mean", "m2"}, {dataConst(DType::F32, per_thread, 1), acc[0], acc[1]}, spec));
        result = var("m2", Type::data(DType::F32, 1));
      } else {
        b.emit(combine("total", acc[0], spec));
        result = var("total", Type::data(DType::F32, 1));
      }
      b.ifThen(b.op(IndexOp::Eq, t, intConst(0)), "one",
               [&] { b.emit(store(1, row, result, Access::Gather, 1)); });
    });
  });
  k.body = b.take();
  return k;
}

}  // namespace

TEST_CASE("kir passes: a counted loop carries values; combines lower to butterflies and shared memory", "[kir]") {
  Kernel k = rowKernel(128, 1, false);
  REQUIRE(verify(k).empty());
  CHECK(has(printKernel(k), "in [0, 8) carrying ("));
  CHECK(has(printKernel(k), "_in1 = 0:f32):"));
  Kernel low = lowerCombines(k);
  INFO(printKernel(low));
  REQUIRE(verify(low).empty());
  const std::string t = printKernel(low);
  CHECK(has(t, "smem red_smem: f32[4]"));
  CHECK(has(t, "shfl.bfly("));
  CHECK(!has(t, "combine.sum"));
  for (int sm : {80, 90}) LOOM_CHECK_PTXAS(codegen::translateToPtx(low, sm), sm);
}

TEST_CASE("kir passes: Welford statistics of rows of several warps merge through the row's first warp", "[kir]") {
  Kernel low = lowerCombines(rowKernel(256, 1, true));
  INFO(printKernel(low));
  REQUIRE(verify(low).empty());
  const std::string t = printKernel(low);
  CHECK(has(t, "smem welford_smem: f32[24]"));
  CHECK(has(t, "smem row_result: f32[3]"));
  CHECK(has(t, "div.approx("));
  CHECK(has(t, "[first_warp]"));
  CHECK(has(t, "= t_in_row <u 32"));
  LOOM_CHECK_PTXAS(codegen::translateToPtx(low, 90), 90);
}

TEST_CASE("kir passes: a combine over a cluster reads every block's total through distributed shared memory", "[kir]") {
  Kernel low = lowerCombines(rowKernel(128, 4, false));
  INFO(printKernel(low));
  REQUIRE(verify(low).empty());
  const std::string t = printKernel(low);
  CHECK(has(t, "smem cluster_red: f32[1]"));
  CHECK(has(t, "barrier.cluster.arrive"));
  CHECK(has(t, "barrier.cluster.wait"));
  CHECK(has(t, "mapa("));
  LOOM_CHECK_PTXAS(codegen::translateToPtx(low, 90), 90);
}

TEST_CASE("kir passes: the verifier refuses a cp.async copy read before its wait, and spreads off the launch", "[kir]") {
  Kernel k;
  k.name = "copy";
  k.scheduler = "test";
  k.params = {{"x", DType::F16, false, 1024}, {"y", DType::F16, true, 1024}};
  k.launch = {1, 128};
  k.buffers = {{"loom_row_smem", "loom_row_smem", Place::SmemDyn, DType::F32, 2048, 16}};
  auto body = [&](bool wait, int64_t spread_extent) {
    Builder b;
    b.spread("tid", Mapping::Threads, spread_extent, [&](const ExprP& tid) {
      ExprP i = b.mul(b.convert(tid, Type::idx()), intConst(8));
      ExprP byte = b.mul(i, intConst(2));
      b.emit(asyncCopy("loom_row_smem", byte, 0, DType::F16, i, 16));
      if (wait) b.emit(asyncWaitAll());
      ExprP v = b.bind(bytesLoad("loom_row_smem", DType::F16, 8, byte, 16));
      b.emit(store(1, i, v, Access::Vector, 1));
    });
    return b.take();
  };
  k.body = body(true, 128);
  CHECK(verify(k).empty());
  LOOM_CHECK_PTXAS(codegen::translateToPtx(k, 80), 80);
  k.body = body(false, 128);
  CHECK(has(joined(verify(k)), "buffer `loom_row_smem` is read before the cp.async copies into it are waited for"));
  k.body = body(true, 256);
  auto p = joined(verify(k));
  CHECK(has(p, "`tid` spread over [0, 256) of threads, but the launch has 128"));
  CHECK(has(p, "may reach"));  // 256 threads of 8 elements pass the tensors' 1024
}
