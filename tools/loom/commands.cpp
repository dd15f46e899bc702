// The table of `loom` subcommands.
#include "tools/loom/cli.h"

namespace loom::cli {

int runExamples(const Args& a);
int runEnv(const Args& a);
int runPrint(const Args& a);
int runEval(const Args& a);
int runDump(const Args& a);
int runRun(const Args& a);
int runSegment(const Args& a);
int runBench(const Args& a);
int runReplay(const Args& a);

const std::vector<Command>& commands() {
  static const std::vector<Command> all = {
      {"examples", "list the built-in example fusions",
       "usage: loom examples\n\nLists the built-in fusions, one line each, with their default "
       "sizes.\nEach can be used wherever a command takes FUSION.\n",
       {}, {}, runExamples},
      {"env", "list the environment variables loom reads, with their values",
       "usage: loom env\n\nLists every environment variable loom reads (runtime/environment.def and the\n"
       "tuning knobs of include/loom/tuning.def), its value here, and what it sets.\n",
       {}, {}, runEnv},
      {"print", "print a fusion in loom's text format",
       "usage: loom print FUSION\n\nPrints FUSION (a built-in name or a text-format file) in the "
       "text format.\nThe output parses back to the same fusion: `loom print group_norm > g.loom; "
       "loom print g.loom`.\n",
       {}, {"dtype"}, runPrint},
      {"eval", "run a fusion on the CPU reference evaluator (float64 inside)",
       "usage: loom eval FUSION [--dim K=V]... [--layout INPUT=nchw|nhwc|PERM]... [--seed S]\n\n"
       "Runs FUSION on seeded random inputs with the float64 CPU reference evaluator and\n"
       "prints each output's shape, dtype, mean, std and first values.\n\n"
       "  --dim K=V        size of symbol K (default: the example's sizes)\n"
       "  --layout IN=L    memory order of input IN: nchw, nhwc, or dims outer->inner (0,2,3,1)\n"
       "  --seed S         random seed (default 0)\n"
       "  --dtype DT       a built-in's main dtype: f16, bf16, f32 or f64\n"
       "  --bounds         also each output's error bounds: how far a correct f32 evaluation may\n"
       "                   land from the reference (large where the result is ill conditioned;\n"
       "                   `loom run` allows twice them where an output fails its tolerance)\n",
       {"bounds"}, {"dim", "layout", "seed", "dtype"}, runEval},
      {"segment", "show the kernels a fusion becomes, and why",
       "usage: loom segment FUSION [--dim K=V]... [--layout IN=L]... [--json] [--dot FILE]\n\n"
       "Prints the segments (kernels) FUSION runs as, in launch order: each one's ops, scheduler,\n"
       "inputs, outputs and parameters, and every scheduler's reason wherever the fusion is cut.\n"
       "Needs no GPU. LOOM_DUMP=segments prints the same during any run.\n\n"
       "  --json           one JSON object: {fusion, kernels, rejections, segments: [{scheduler,\n"
       "                   ops, inputs, outputs, params, rejections}]}\n"
       "  --dot FILE       Graphviz of the fusion graph, one color per segment\n"
       "                   (render: dot -Tpng FILE -o graph.png)\n"
       "  --dim K=V        size of symbol K (default: the example's sizes)\n"
       "  --layout IN=L    memory order of input IN: nchw, nhwc, or dims outer->inner\n",
       {"json"}, {"dim", "layout", "dot", "dtype", "arch"}, runSegment},
      {"dump", "print one compilation stage (ir, domains, segments, schedule, kernel, kir, llvm, ptx)",
       "usage: loom dump FUSION --stage STAGE [--arch sm_90] [--dim K=V]... [--layout IN=L]...\n\n"
       "Prints one stage of compiling FUSION for the given sizes and layouts. Needs no GPU.\n"
       "The same text is printed to stderr during any run by LOOM_DUMP=STAGE[,STAGE...].\n\n"
       "  --stage S        ir | domains | segments | schedule | kernel | kir | llvm | ptx\n"
       "                   (kir: the kernel IR after each lowering pass)\n"
       "  --arch sm_XX     PTX target: sm_80, sm_86, sm_89, sm_90 (default sm_90)\n"
       "  --sms N          multiprocessors to size the grid for (default 132, an H100)\n"
       "  --dim K=V        size of symbol K (default: the example's sizes)\n"
       "  --layout IN=L    memory order of input IN: nchw, nhwc, or dims outer->inner\n"
       "  --dtype DT       a built-in's main dtype: f16, bf16, f32 or f64\n",
       {}, {"stage", "arch", "sms", "dim", "layout", "dtype"}, runDump},
      {"run", "run a fusion on the GPU and check it against the CPU reference",
       "usage: loom run FUSION [--dim K=V]... [--layout IN=L]... [--dtype DT] [--seed S] [--iters N] [--check]\n"
       "                [--device N]\n"
       "       loom run --batch FILE [--device N]\n\n"
       "Compiles FUSION for this GPU, runs it on seeded random inputs (every kernel of its plan,\n"
       "in launch order; each kernel's launch is printed), compares every output with the\n"
       "float64 CPU reference (||out-ref||/||ref|| against a tolerance fitting the dtype) and\n"
       "prints the time of the whole plan. Exits non-zero on a mismatch or with no GPU.\n\n"
       "  --check          compare with the CPU reference (the default; --no-check skips it)\n"
       "  --device N       run on GPU N (default 0)\n"
       "  --dtype DT       a built-in's main dtype: f16, bf16, f32 or f64\n"
       "  --iters N        timed launches (default 20; 0 skips timing)\n"
       "  --seed S         random seed (default 0)\n"
       "  --batch FILE     instead: every line of FILE is a case's arguments (FUSION and these\n"
       "                   options), all run in this process; each case ends with a line\n"
       "                   `== result K: ok|error: ...|MISMATCH: ...|INTERNAL: ...`\n",
       {"check", "no-check"}, {"dim", "layout", "seed", "iters", "dtype", "batch", "device"}, runRun},
      {"bench", "time a fusion on the GPU: GB/s, share of copy bandwidth, compile and launch cost",
       "usage: loom bench FUSION [--dim K=V]... [--layout IN=L]... [--dtype DT] [--iters N] [--json]\n"
       "                  [--inputs DIR] [--save-outputs DIR] [--sizes K=A:B[:S]] [--device N]\n\n"
       "Times FUSION's compiled plan as triton.testing.do_bench does: warm-up, CUDA events\n"
       "around each launch, L2 flushed (256 MiB memset) before each timed launch, median.\n"
       "GB/s counts every input read once and every output written once (in-place outputs\n"
       "too); it is compared with a 512 MiB device-to-device copy timed the same way here.\n"
       "A plan of several kernels is timed whole (its kernels back to back) and each kernel\n"
       "alone, the same way, after a run of the whole plan wrote the intermediates; a kernel's\n"
       "GB/s counts the tensors it reads once and those it writes once (intermediates too).\n"
       "Also reports compile time (this process's first compile, and a cold compile for\n"
       "LLVM->PTX) and the host time per launch of the cached plan. Exits non-zero, saying\n"
       "why, when loom cannot compile the fusion or finds no GPU.\n\n"
       "  --device N         run on GPU N (default 0)\n"
       "  --dim K=V          size of symbol K (default: the example's sizes)\n"
       "  --layout IN=L      memory order of input IN: nchw, nhwc, or dims outer->inner\n"
       "  --dtype DT         dtype of a built-in's main tensors: f16, bf16, f32\n"
       "  --iters N          timed launches (default: ~100 ms worth, as do_bench)\n"
       "  --json             print one JSON object (an error object too, before failing);\n"
       "                     time_ms and gbps are the whole plan's, \"plan\" lists every kernel\n"
       "                     (name, grid, block, bytes read and written, times, gbps)\n"
       "  --inputs DIR       read inputs from DIR/inputs.txt (`name dtype d0,d1 file` lines,\n"
       "                     raw little-endian files in logical row-major order), not random\n"
       "  --save-outputs DIR write each output of one run as DIR/output.NAME.bin (row-major)\n"
       "                     and list them in DIR/outputs.txt\n"
       "  --sizes K=A:B[:S]  instead: the first call of every size K = A, A+S, ... B in one\n"
       "                     process (compiled, from the disk cache, or already in memory; time\n"
       "                     of each first call), as variable batch sizes would make them\n",
       {"json"}, {"dim", "layout", "dtype", "iters", "inputs", "save-outputs", "sizes", "device"}, runBench},
      {"replay", "kernel replay: compile a fixed corpus and compare every kernel's PTX with a baseline",
       "usage: loom replay CORPUS... --target sm_90/132 --baseline FILE [--update] [--save DIR]\n\n"
       "Compiles every line of each CORPUS (bench/workloads.txt's format: name fusion dtype dims\n"
       "layouts [tags]; dtype and dims may be `-`) for one target, GPU architecture and SM\n"
       "count, and compares each kernel's PTX hash and length with the baseline. Lists every\n"
       "kernel that changed, is new or is gone, and exits 1 if any did. Needs no GPU.\n"
       "scripts/replay.sh runs the stored corpus for every target.\n\n"
       "  --target A/S     architecture and SM count, e.g. sm_80/108\n"
       "  --baseline FILE  the reviewed baseline (tests/replay/*.txt)\n"
       "  --update         write the baseline instead of comparing\n"
       "  --save DIR       also write each kernel's PTX as DIR/NAME.kI.ptx (to diff two builds)\n",
       {"update"}, {"target", "baseline", "save"}, runReplay},
  };
  return all;
}

}  // namespace loom::cli
