// The text format: every fusion prints, parses back structurally equal, and prints the same.
#include <catch2/catch.hpp>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "frontend/builder.h"
#include "frontend/examples.h"
#include "frontend/parser.h"
#include "ir/error.h"
#include "ir/printer.h"

using namespace loom;
using ir::Axis;
using ir::OpFamily;
using ir::OpKind;

namespace {

Extent sym(const char* s) { return Extent::symbol(s); }

// print -> parse -> equal -> print identical; returns the text.
std::string roundTrip(const ir::Fusion& f) {
  std::string text = ir::printFusion(f);
  INFO(text);
  auto g = parseFusion(text);
  CHECK(ir::structurallyEqual(f, *g));
  CHECK(ir::printFusion(*g) == text);
  return text;
}

struct Operands {
  const ir::Value *x, *w, *c, *i, *v, *g, *gates;
};

Operands addInputs(ir::Fusion& f) {
  Extent N = sym("N"), C = sym("C"), H = sym("H"), W = sym("W"), B = sym("B");
  return {
      f.addInput("x", DType::F32, {Axis::iter(N), Axis::iter(1024)}),
      f.addInput("w", DType::F32, {Axis::bcast(), Axis::iter(1024)}),
      f.addInput("c", DType::Bool, {Axis::iter(N), Axis::iter(1024)}),
      f.addInput("i", DType::I32, {Axis::iter(N), Axis::iter(1024)}),
      f.addInput("v", DType::F16, {Axis::iter(1024)}),
      f.addInput("g", DType::BF16, {Axis::iter(N), Axis::iter(C), Axis::iter(H), Axis::iter(W)}),
      f.addInput("gates", DType::F32, {Axis::iter(B), Axis::iter(Extent(4) * H)}),
  };
}

void addConstants(ir::Fusion& f) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double d : {1e-5, inf, -inf, std::nan(""), -0.0, 0.0, 3.0000000000000004, 0.1, 1e300,
                   5e-324, -2.5, 1e16})
    f.addOp(OpKind::Constant, {}, ir::ScalarAttrs{d, DType::F32, {}});
  f.addOp(OpKind::Constant, {}, ir::ScalarAttrs{42, DType::I32, {}});
  f.addOp(OpKind::Constant, {}, ir::ScalarAttrs{1, DType::Bool, {}});
}

// One or more uses of `k`, on operands that suit its family.
void addUses(ir::Fusion& f, OpKind k, const Operands& in) {
  Extent N = sym("N"), C = sym("C"), H = sym("H"), W = sym("W"), B = sym("B");
  switch (ir::opFamily(k)) {
    case OpFamily::Unary:
    case OpFamily::Predicate:
      f.addOp(k, {in.x});
      return;
    case OpFamily::UnaryAny:
      f.addOp(k, {in.x});
      f.addOp(k, {in.i});
      return;
    case OpFamily::LogicalNot:
      f.addOp(k, {in.c});
      return;
    case OpFamily::Binary:
      f.addOp(k, {in.i, in.i});
      [[fallthrough]];
    case OpFamily::BinaryFloat:
    case OpFamily::Compare:
      f.addOp(k, {in.x, in.w});
      return;
    case OpFamily::Logical:
      f.addOp(k, {in.c, in.c});
      f.addOp(k, {in.i, in.i});
      return;
    case OpFamily::Where:
      f.addOp(k, {in.c, in.x, in.w});
      return;
    case OpFamily::Cast:
      f.addOp(k, {in.x}, ir::CastAttrs{DType::F16});
      f.addOp(k, {in.c}, ir::CastAttrs{DType::F32});
      return;
    case OpFamily::Bitcast:
      f.addOp(k, {in.x}, ir::CastAttrs{DType::I32});
      f.addOp(k, {in.i}, ir::CastAttrs{DType::F32});
      return;
    case OpFamily::Reduce:
      f.addOp(k, {in.x}, ir::ReduceAttrs{{1}, false});
      f.addOp(k, {in.g}, ir::ReduceAttrs{{1, 2, 3}, true});
      return;
    case OpFamily::VarMean:
      f.addOp(k, {in.x}, ir::ReduceAttrs{{1}, true, 1}, {"var", "mean", "n"});
      f.addOp(k, {in.g}, ir::ReduceAttrs{{0, 2}, false, 0.5});
      return;
    case OpFamily::ArgReduce:
      f.addOp(k, {in.x}, ir::ReduceAttrs{{1}, false});
      f.addOp(k, {in.i}, ir::ReduceAttrs{{0}, true});
      return;
    case OpFamily::Broadcast:
      f.addOp(k, {in.v}, ir::BroadcastAttrs{{true, false}});
      f.addOp(k, {in.v}, ir::BroadcastAttrs{{false, true, true}});
      return;
    case OpFamily::Reshape: {
      Extent per_group = C / Extent(32);
      auto split = f.addOp(k, {in.g}, ir::ShapeAttrs{{N, 32, per_group, H, W}});
      f.addOp(k, {split->output()}, ir::ShapeAttrs{{N, C, H * W}});
      return;
    }
    case OpFamily::Permute:
      f.addOp(k, {in.x}, ir::DimsAttrs{{1, 0}});
      f.addOp(k, {in.g}, ir::DimsAttrs{{0, 2, 3, 1}});
      return;
    case OpFamily::Squeeze: {
      auto u = f.addOp(OpKind::Unsqueeze, {in.x}, ir::DimsAttrs{{1}});
      f.addOp(k, {u->output()}, ir::DimsAttrs{{1}});
      return;
    }
    case OpFamily::Unsqueeze:
      f.addOp(k, {in.x}, ir::DimsAttrs{{2}});
      f.addOp(k, {in.v}, ir::DimsAttrs{{0}});
      return;
    case OpFamily::Slice:
      f.addOp(k, {in.gates}, ir::SliceAttrs{{0, 0}, {B, H}});
      f.addOp(k, {in.gates}, ir::SliceAttrs{{0, H}, {B, Extent(2) * H}});
      f.addOp(k, {in.gates}, ir::SliceAttrs{{0, Extent(3) * H}, {B, Extent(4) * H}});
      return;
    case OpFamily::Gather:
      if (k == OpKind::Gather) {
        f.addOp(k, {in.x, in.i}, ir::DimsAttrs{{1}});  // one index a position
        f.addOp(k, {in.w, in.i}, ir::DimsAttrs{{1}});  // x broadcast along N
      } else {
        auto picks = f.addOp(OpKind::Iota, {}, ir::ScalarAttrs{0, DType::I32, {Extent(5)}, 0});  // i32[5]
        f.addOp(k, {in.g, picks->output()}, ir::DimsAttrs{{2}});
      }
      return;
    case OpFamily::Concat: {
      auto a = f.addOp(OpKind::Slice, {in.gates}, ir::SliceAttrs{{0, 0}, {B, H}});
      auto b = f.addOp(OpKind::Slice, {in.gates}, ir::SliceAttrs{{0, H}, {B, Extent(3) * H}});
      f.addOp(k, {a->output(), b->output(), a->output()}, ir::DimsAttrs{{1}});  // [B, 4*H]
      f.addOp(k, {in.x, in.x}, ir::DimsAttrs{{0}});                            // [2*N, 1024]
      f.addOp(k, {in.v}, ir::DimsAttrs{{0}});
      return;
    }
    case OpFamily::Constant:
      addConstants(f);
      return;
    case OpFamily::Full:
      f.addOp(k, {}, ir::ScalarAttrs{0, DType::F32, {N, 8}});
      f.addOp(k, {}, ir::ScalarAttrs{-1.5, DType::F16, {}});
      return;
    case OpFamily::Iota:
      f.addOp(k, {}, ir::ScalarAttrs{0, DType::I64, {N, 8}, 1});
      f.addOp(k, {}, ir::ScalarAttrs{0, DType::F16, {3}, 0});
      return;
    case OpFamily::Random: {
      const std::string op(ir::opName(k));
      const ir::Value* seed = f.addInput(op + "_seed", DType::I64, {});
      const ir::Value* offset = f.addInput(op + "_offset", DType::I64, {});
      f.addOp(k, {seed, offset}, ir::ScalarAttrs{0, DType::F32, {N, 8}});
      f.addOp(k, {seed, offset}, ir::ScalarAttrs{0, DType::BF16, {5}});
      return;
    }
  }
  FAIL("no use written for op family of " << ir::opName(k));
}

// `source:line:col: error: ` prefix and a phrase of the message of parsing `text`.
std::string parseError(const std::string& text) {
  try {
    parseFusion(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(parsed without error)";
}

}  // namespace

TEST_CASE("every op in ops.def round-trips through the text format", "[text]") {
  ir::Fusion f("every_op");
  Operands in = addInputs(f);
  for (OpKind k : ir::allOpKinds()) addUses(f, k, in);
  const ir::Op* last = f.ops().back();
  f.addOutput("y", last->output());
  f.addOutput("x_neg", f.ops().front()->output(), in.x);

  std::set<OpKind> seen;
  for (const ir::Op* op : f.ops()) seen.insert(op->kind());
  CHECK(seen.size() == ir::allOpKinds().size());

  std::string text = roundTrip(f);
  CHECK_THAT(text, Catch::Contains("reshape(g, shape=[N, 32, C/32, H, W])"));
  CHECK_THAT(text, Catch::Contains("reshape(t"));
  CHECK_THAT(text, Catch::Contains(", shape=[N, C, H*W])"));
  CHECK_THAT(text, Catch::Contains("f32[B, H] = slice(gates, starts=[0, H], stops=[B, 2*H])"));
  CHECK_THAT(text, Catch::Contains("var: f32[N, 1b], mean: f32[N, 1b], n: i64[N, 1b] = "
                                   "var_mean(x, dims=[1], correction=1, keepdim=true)"));
  CHECK_THAT(text, Catch::Contains("correction=0.5, keepdim=false)"));
  for (const char* c : {"const(1e-05, dtype=f32)", "const(inf, dtype=f32)", "const(-inf, ",
                        "const(nan, ", "const(-0, ", "const(0, ", "const(3.0000000000000004, ",
                        "const(5e-324, ", "const(42, dtype=i32)", "const(1, dtype=bool)"})
    CHECK_THAT(text, Catch::Contains(c));
  CHECK_THAT(text, Catch::Contains("f32[N, 8] = full(value=0, dtype=f32, shape=[N, 8])"));
  CHECK_THAT(text, Catch::Contains("f16[] = full(value=-1.5, dtype=f16, shape=[])"));
  CHECK_THAT(text, Catch::Contains("out x_neg = t0 alias x"));
}

TEST_CASE("the printed form is the documented one", "[text]") {
  ir::Fusion f("small");
  auto x = f.addInput("x", DType::F16, {Axis::iter(sym("N")), Axis::iter(1024)});
  auto eps = f.addInput("eps", DType::F32, {});
  auto t0 = f.addOp(OpKind::Cast, {x}, ir::CastAttrs{DType::F32})->output();
  auto vm = f.addOp(OpKind::VarMean, {t0}, ir::ReduceAttrs{{1}, true, 0}, {"var", "mean", "n"});
  auto t1 = f.addOp(OpKind::Add, {vm->output(0), eps})->output();
  auto t2 = f.addOp(OpKind::Sum, {t0}, ir::ReduceAttrs{{1}, false})->output();
  f.addOutput("y", t1);
  f.addOutput("s", t2);
  const std::string expected =
      "fusion small {\n"
      "  in x: f16[N, 1024]\n"
      "  in eps: f32[]\n"
      "  t0: f32[N, 1024] = cast(x, to=f32)\n"
      "  var: f32[N, 1b], mean: f32[N, 1b], n: i64[N, 1b] = var_mean(t0, dims=[1], "
      "correction=0, keepdim=true)\n"
      "  t1: f32[N, 1b] = add(var, eps)\n"
      "  t2: f32[N] = sum(t0, dims=[1], keepdim=false)\n"
      "  out y = t1\n"
      "  out s = t2\n"
      "}\n";
  CHECK(ir::printFusion(f) == expected);
  std::ostringstream os;
  os << f;
  CHECK(os.str() == expected);
  CHECK(ir::printOp(*f.ops()[0]) == "t0: f32[N, 1024] = cast(x, to=f32)");
  roundTrip(f);
}

TEST_CASE("hand-written text: comments, blank lines, defaults, untyped lines", "[text]") {
  const std::string text = R"(# layer norm, by hand
   # indented comment

fusion layer_norm {   # trailing comment
  in x: f16[N, 1024]
  in w: f16[1024]

  t0: f32[N, 1024] = cast(x, to=f32)  # upcast
  var, mean, n = var_mean(t0, dims=[1], keepdim=true)
  t1 = sub(t0, mean)
  s: f32[N] = sum(t0,
                  dims=[1])
  t2: f32[] = const(1e-05, dtype=f32)
  t3 = add(var, t2)
  t4 = rsqrt(t3)
  t5 = mul(t1, t4)
  w32 = cast(w, to=f32)
  wb = broadcast(w32, new=[true, false])
  y = mul(t5, wb)
  out y = y
}
# trailing comment, no newline)";
  auto f = parseFusion(text);
  REQUIRE(f->name() == "layer_norm");
  CHECK(f->ops().size() == 11);
  const ir::Op* vm = f->findValue("var")->definition();
  CHECK(vm->attr<ir::ReduceAttrs>() == ir::ReduceAttrs{{1}, true, 0});
  CHECK(f->findValue("s")->definition()->attr<ir::ReduceAttrs>().keepdim == false);
  CHECK(f->findValue("y")->typeString() == "f32[N, 1024]");
  CHECK(f->outputs().at(0).value == f->findValue("y"));
  std::string printed = roundTrip(*f);
  CHECK_THAT(printed, Catch::Contains("  t1: f32[N, 1024] = sub(t0, mean)\n"));
}

TEST_CASE("names that look like keywords, and quoted fusion names", "[text]") {
  ir::Fusion f("my fusion \"v2\"\\\n");
  auto in = f.addInput("in", DType::F32, {Axis::iter(sym("N"))});
  auto out = f.addOp(OpKind::Neg, {in}, {}, {"out"})->output();
  auto alias = f.addOp(OpKind::Abs, {out}, {}, {"alias"})->output();
  f.addOp(OpKind::Exp, {alias}, {}, {"fusion"});
  f.addOutput("out", out);
  f.addOutput("alias", alias, in);
  std::string text = roundTrip(f);
  CHECK_THAT(text, Catch::StartsWith("fusion \"my fusion \\\"v2\\\"\\\\\\n\" {\n"));
  CHECK_THAT(text, Catch::Contains("  out alias = alias alias in\n"));

  ir::Fusion empty("");
  roundTrip(empty);
}

TEST_CASE("unusual extents and line endings round-trip", "[text]") {
  ir::Fusion f("extents");
  Extent H = sym("H"), G = sym("G"), C = sym("C"), N = sym("N");
  f.addInput("a", DType::F64, {Axis::iter(Extent(2) * H / Extent(3)), Axis::iter(C / G / G),
                               Axis::iter(H * H), Axis::iter(0), Axis::iter(1), Axis::bcast(),
                               Axis::iter(Extent(1) / N), Axis::iter(int64_t{1} << 62)});
  std::string text = roundTrip(f);
  CHECK_THAT(text, Catch::Contains(
                       "in a: f64[2*H/3, C/G/G, H*H, 0, 1, 1b, 1/N, 4611686018427387904]"));

  std::string crlf = "fusion f {\r\n  in x: f32[N]\r\n  t0 = neg(x)\r\n  out y = t0\r\n}\r\n";
  CHECK(parseFusion(crlf)->ops().size() == 1);
  CHECK(parseError("fusion f {\r\n  in x: f32[N]\r\n  t0 neg(x)\r\n}\r\n") ==
        "<input>:3:6: error: expected `:` or `=`, found `neg`\n  t0 neg(x)\n     ^");
}

TEST_CASE("built-in examples round-trip", "[text]") {
  for (const Example& e : builtinExamples()) {
    INFO(e.name);
    auto f = e.buildDefault();
    roundTrip(*f);
  }
}

TEST_CASE("parse errors point at line:col with a caret", "[text]") {
  std::string msg = parseError("fusion f {\n  in x: f32[N]\n  t0: f32[N] neg(x)\n}\n");
  CHECK(msg ==
        "<input>:3:14: error: expected `=`, found `neg`\n"
        "  t0: f32[N] neg(x)\n"
        "             ^");
  try {
    parseFusion("fusion f {\n\tin x: f17[N]\n}", "norm.loom");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK(std::string(e.what()) ==
          "norm.loom:2:8: error: expected a dtype (bool, i32, i64, f16, bf16, f32, f64), found "
          "`f17`\n\tin x: f17[N]\n\t      ^");
  }
}

TEST_CASE("malformed inputs: location and reason", "[text]") {
  struct Case {
    const char* what;
    std::string body;  // lines inside `fusion f { ... }`, starting on line 2
    std::string where;
    std::string phrase;
  };
  const std::string x = "  in x: f32[N]\n";
  const std::vector<Case> cases = {
      {"missing =", x + "  t0: f32[N] neg(x)\n", "3:14", "expected `=`, found `neg`"},
      {"missing = untyped", x + "  t0 neg(x)\n", "3:6", "expected `:` or `=`, found `neg`"},
      {"unknown dtype", "  in x: f17[N]\n", "2:9", "expected a dtype"},
      {"unknown op", x + "  t0: f32[N] = mull(x, x)\n", "3:16",
       "unknown op `mull`; did you mean `mul`?"},
      {"unknown operand", x + "  t0: f32[N] = neg(y)\n", "3:20",
       "unknown value `y`; did you mean `x`?"},
      {"bad extent", "  in x: f32[N, -3]\n", "2:16", "expected an extent"},
      {"extent with junk", "  in x: f32[N, 3k]\n", "2:16", "expected an extent"},
      {"division by zero", "  in x: f32[N/0]\n", "2:14", "division of extent N by a zero"},
      {"unterminated list", "  in x: f32[N, M]\n  t0: f32[N] = sum(x, dims=[1)\n", "3:30",
       "expected `,` or `]`, found `)`"},
      {"unterminated type", "  in x: f32[N\n  in y: f32[N]\n", "3:3",
       "expected `,` or `]`, found `in`"},
      {"declared type differs", x + "  t0: f16[N] = neg(x)\n", "3:7",
       "`t0` is declared as f16[N] but `neg` gives it type f32[N]"},
      {"declared broadcast differs", "  in x: f32[N, M]\n  t0: f32[N] = sum(x, dims=[1], "
       "keepdim=true)\n", "3:7", "declared as f32[N] but `sum` gives it type f32[N, 1b]"},
      {"duplicate value", x + "  x: f32[N] = neg(x)\n", "3:3",
       "`x` is already defined at line 2, column 6"},
      {"duplicate within a line", x + "  a, a, b = var_mean(x, dims=[0])\n", "3:6",
       "`a` is already defined"},
      {"rank mismatch in add", x + "  in y: f32[N, M]\n  t0: f32[N] = add(x, y)\n", "4:16",
       "rank mismatch between `x` f32[N] and `y` f32[N, M]"},
      {"dtype mismatch", x + "  in i: i32[N]\n  t0 = add(x, i)\n", "4:8", "dtype mismatch"},
      {"reshape changes size", "  in x: f32[N, 4]\n  t0: f32[N, 8] = reshape(x, shape=[N, 8])\n",
       "3:19", "changes the number of elements"},
      {"reshape not a view", "  in x: f32[N, M]\n  t0 = reshape(x, shape=[M, N])\n", "3:8",
       "is not a view"},
      {"wrong output count", x + "  v = var_mean(x, dims=[0])\n", "3:7",
       "`var_mean` has 3 outputs but 1 names were given"},
      {"unknown attribute", x + "  t0 = sum(x, dim=[0])\n", "3:15",
       "`sum` has no attribute `dim`; its attributes are `dims`, `keepdim`"},
      {"attribute on pointwise op", x + "  t0 = neg(x, dims=[0])\n", "3:15",
       "`neg` takes no attributes"},
      {"missing attribute", x + "  t0 = sum(x)\n", "3:13", "`sum` needs the attribute `dims`"},
      {"attribute twice", x + "  t0 = sum(x, dims=[0], dims=[0])\n", "3:25",
       "`dims` is given twice"},
      {"operand after attribute", x + "  t0 = sum(dims=[0], x)\n", "3:22",
       "operands come before attributes"},
      {"bad bool", x + "  t0 = sum(x, dims=[0], keepdim=yes)\n", "3:33",
       "expected `true` or `false`, found `yes`"},
      {"bad number", "  t0 = const(one, dtype=f32)\n", "2:14", "expected a number, found `one`"},
      {"number out of range", "  t0 = const(1e999, dtype=f32)\n", "2:14", "out of range"},
      {"unexpected character", x + "  t0 = neg(x) @\n", "3:15", "found `@`"},
      {"output of unknown value", x + "  out y = z\n", "3:11", "unknown value `z`"},
      {"alias of non-input", x + "  t0 = neg(x)\n  t1 = neg(t0)\n  out y = t1 alias t0\n", "5:7",
       "which is not a fusion input"},
      {"bad dim", x + "  t0 = sum(x, dims=[1])\n", "3:8", "dim 1 does not exist in `x` f32[N]"},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    std::string msg = parseError("fusion f {\n" + c.body + "}\n");
    CHECK_THAT(msg, Catch::StartsWith("<input>:" + c.where + ": error: "));
    CHECK_THAT(msg, Catch::Contains(c.phrase));
    CHECK_THAT(msg, Catch::EndsWith("^"));
  }
}

TEST_CASE("malformed files: structure around the fusion", "[text]") {
  CHECK_THAT(parseError(""), Catch::StartsWith("<input>:1:1: error: expected `fusion`, found end "
                                               "of input"));
  CHECK_THAT(parseError("# nothing\n\n"), Catch::Contains("expected `fusion`"));
  CHECK_THAT(parseError("fusion {\n}\n"),
             Catch::StartsWith("<input>:1:8: error: expected a fusion name, found `{`"));
  CHECK_THAT(parseError("fusion f\n  in x: f32[N]\n}\n"),
             Catch::StartsWith("<input>:2:3: error: expected `{`, found `in`"));
  CHECK_THAT(parseError("fusion f {\n  in x: f32[N]\n  out y = x\n"),
             Catch::StartsWith("<input>:3:12: error: expected `}`, found end of input"));
  CHECK_THAT(parseError("fusion f {\n  in x: f32[N]\n}\njunk\n"),
             Catch::StartsWith("<input>:4:1: error: expected end of input after the fusion's "
                               "closing `}`"));
  CHECK_THAT(parseError("fusion f {\n}\nfusion g {\n}\n"),
             Catch::StartsWith("<input>:3:1: error:") && Catch::Contains("holds one fusion"));
  CHECK_THAT(parseError("fusion \"f {\n}\n"),
             Catch::StartsWith("<input>:1:8: error: expected a fusion name, found an "
                               "unterminated string"));
  CHECK_THAT(parseError("fusion f {\n  = neg(x)\n}\n"),
             Catch::StartsWith("<input>:2:3: error: expected a statement"));
}

TEST_CASE("stray bytes are quoted whole, never as half a UTF-8 character", "[text]") {
  auto at = [](const std::string& junk) { return parseError("fusion f {\n  in x: f32[N]" + junk + "\n}\n"); };
  // scripts/fuzz_text.py found messages quoting the first byte of `é` alone: not UTF-8.
  CHECK_THAT(at("\xC3\xA9"), Catch::Contains("found `\xC3\xA9` (outside ASCII)"));
  CHECK_THAT(at("\xE2\x82\xAC"), Catch::Contains("found `\xE2\x82\xAC` (outside ASCII)"));
  CHECK_THAT(at("\xC3"), Catch::Contains("found byte 0xC3 (not valid UTF-8)"));
  CHECK_THAT(at("\xFF\xFE"), Catch::Contains("found byte 0xFF (not valid UTF-8)"));
  CHECK_THAT(at("\x01"), Catch::Contains("found byte 0x01"));
  CHECK_THAT(at("@"), Catch::Contains("found `@`"));
}

TEST_CASE("errors never echo bytes a terminal would interpret; the caret still points right", "[text]") {
  // An escape sequence, a control byte and invalid UTF-8 after the input's type: shown escaped.
  std::string msg = parseError("fusion f {\n  in x: f32[N]\x1B[31m\x01\xFF\n}\n");
  CHECK(msg ==
        "<input>:2:15: error: expected a statement (`in`, `out` or `name: type = op(...)`) or `}`, found "
        "byte 0x1B\n"
        "  in x: f32[N]\\x1B[31m\\x01\\xFF\n"
        "              ^");
  // Escaped bytes before the column widen the caret's indentation by their escapes.
  msg = parseError("fusion f {\n  in x: f32[N] \x07 @\n}\n");
  CHECK(msg.substr(msg.find('\n') + 1) == "  in x: f32[N] \\x07 @\n               ^");
  msg = parseError("fusion \"a\x07" "b\" @\n");
  CHECK(msg.substr(msg.find('\n') + 1) == "fusion \"a\\x07b\" @\n                ^");
  // Printable UTF-8 stays as it is; C1 controls (valid UTF-8, but a terminal acts on them) and
  // control bytes inside strings are escaped in the message too.
  CHECK_THAT(parseError("fusion f {\n  in x: f32[N] \xC3\xA9\n}\n"), Catch::Contains("f32[N] \xC3\xA9\n"));
  msg = parseError("fusion f {\n  in x: f32[N] \xC2\x85\n}\n");
  CHECK_THAT(msg, Catch::Contains("found control character U+0085"));
  CHECK_THAT(msg, Catch::Contains("f32[N] \\xC2\\x85\n"));
  msg = parseError("fusion f {\n  in x: f32[N]\n  y: f32[N] = cast(x, to=\"a\x1B" "b\")\n  out y = y\n}\n");
  CHECK_THAT(msg, Catch::Contains("found string \"a\\x1Bb\""));
  for (char ch : msg) CHECK((static_cast<unsigned char>(ch) >= 0x20 || ch == '\n'));
}

TEST_CASE("a reshape's shape may hold one -1, the size the others leave, as in the builder", "[text]") {
  auto f = parseFusion("fusion g {\n  in x: f16[N, C, H, W]\n  t0 = reshape(x, shape=[N, 32, -1])\n"
                       "  t1 = reshape(t0, shape=[-1, C, H, W])\n  out y = t1\n}\n");
  FusionBuilder fb("g");
  auto x = fb.input("x", DType::F16, {"N", "C", "H", "W"});
  auto t0 = reshape(x, {Dim("N"), Dim(32), Dim(-1)});
  fb.output("y", reshape(t0, {Dim(-1), Dim("C"), Dim("H"), Dim("W")}));
  auto built = fb.finish();
  const std::string text = ir::printFusion(*f);
  CHECK(text == ir::printFusion(*built));
  CHECK_THAT(text, Catch::Contains("shape=[N, 32, C*H*W/32]"));
  CHECK(ir::printFusion(*parseFusion(text)) == text);  // the round trip keeps the resolved sizes
  auto flat = parseFusion("fusion g {\n  in x: f16[N, D]\n  t0 = reshape(x, shape=[-1])\n  out y = t0\n}\n");
  CHECK_THAT(ir::printFusion(*flat), Catch::Contains("t0: f16[D*N] = reshape(x, shape=[D*N])"));
  CHECK(parseError("fusion g {\n  in x: f16[N, D]\n  t0 = reshape(x, shape=[-1, -1])\n  out y = t0\n}\n") ==
        "<input>:3:30: error: -1 may appear only once in a reshape's shape\n"
        "  t0 = reshape(x, shape=[-1, -1])\n"
        "                             ^");
  CHECK_THAT(parseError("fusion g {\n  in x: f16[N, D]\n  t0 = reshape(x, shape=[-2, N])\n  out y = t0\n}\n"),
             Catch::Contains("3:26: error: a reshape's shape takes sizes, and -1 once for the size the others leave"));
  // -1 belongs to reshape alone.
  CHECK_THAT(parseError("fusion g {\n  in x: f16[N, D]\n  t0 = full(value=1, dtype=f32, shape=[-1])\n  out y = t0\n}\n"),
             Catch::Contains("3:40: error: expected an extent"));
}

TEST_CASE("parseFusionFile reads files and names them in errors", "[text]") {
  try {
    parseFusionFile("/nonexistent/dir/f.loom");
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(std::string(e.what()), Catch::Contains("/nonexistent/dir/f.loom") &&
                             Catch::Contains("No such file or directory"));
  }
  std::string path = "loom_text_format_test.loom";
  {
    std::ofstream out(path);
    out << "fusion f {\n  in x: f32[N]\n  t0: f32[N] = neg(x)\n  out y = t0\n}\n";
  }
  CHECK(parseFusionFile(path)->ops().size() == 1);
  {
    std::ofstream out(path);
    out << "fusion f {\n  in x: f32[N]\n  t0: f32[N] = neg(q)\n}\n";
  }
  try {
    parseFusionFile(path);
    FAIL("no error");
  } catch (const Error& e) {
    CHECK_THAT(std::string(e.what()), Catch::StartsWith(path + ":3:20: error: unknown value `q`"));
  }
  std::remove(path.c_str());
}
