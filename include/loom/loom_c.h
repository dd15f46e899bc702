/* loom's C ABI: any language with a C FFI (Python's ctypes, Julia's ccall, Rust) drives loom
 * through these functions. C linkage, opaque handles, plain C types only; nothing of C++
 * crosses it. Exported from libloom (libloom.so.0).
 *
 * Conventions:
 *  - Every function that can fail returns a loom_status. On failure, loom_last_error() gives the
 *    message (what was wrong, where, what would be right), for the calling thread, until that
 *    thread's next failing call. Out-parameters are left untouched on failure.
 *  - Strings loom returns through `char**` are the caller's: free them with loom_string_free.
 *    Strings loom returns as `const char*` are loom's and live as long as the library.
 *  - Handles are freed by their *_free function; freeing NULL is a no-op. A handle may be used
 *    by one thread at a time; a runner's calls from several threads wait their turn.
 *  - JSON results are UTF-8 objects whose keys are documented beside each function.
 *
 *   loom_fusion* f = NULL;
 *   if (loom_fusion_builtin("layer_norm", "f16", &f) != LOOM_OK) puts(loom_last_error());
 */
#ifndef LOOM_LOOM_C_H
#define LOOM_LOOM_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Exported from libloom, which hides every symbol its public headers do not declare. */
#if defined(__GNUC__)
#pragma GCC visibility push(default)
#endif

/* The ABI's version: bumped when a signature or a struct changes (additions keep it). */
#define LOOM_C_ABI_VERSION 1

typedef enum loom_status {
  LOOM_OK = 0,
  LOOM_ERROR_INPUT = 1,    /* bad input: a fusion, a size, a tensor, a name (the message says which) */
  LOOM_ERROR_ARGUMENT = 2, /* a NULL handle or pointer, a count out of range */
  LOOM_ERROR_NO_GPU = 3,   /* running needs a GPU (or the CUDA driver) and none was found */
  LOOM_ERROR_INTERNAL = 4  /* a bug in loom: please report the message */
} loom_status;

/* Element types, in loom's order (include/loom/dtypes.def). */
typedef enum loom_dtype {
  LOOM_BOOL = 0,
  LOOM_I32 = 1,
  LOOM_I64 = 2,
  LOOM_F16 = 3,
  LOOM_BF16 = 4,
  LOOM_F32 = 5,
  LOOM_F64 = 6
} loom_dtype;

/* A tensor in host or device memory: `data` points at element (0, ..., 0); strides are in
 * elements (NULL: row-major). loom never frees `data`. */
typedef struct loom_tensor {
  void* data;
  int32_t dtype; /* a loom_dtype */
  int32_t ndim;
  const int64_t* shape;
  const int64_t* strides;
} loom_tensor;

typedef struct loom_fusion loom_fusion;   /* an immutable fusion */
typedef struct loom_options loom_options; /* sizes, layouts, target and knobs for one call */
typedef struct loom_results loom_results; /* host tensors loom computed (the reference) */
typedef struct loom_runner loom_runner;   /* a fusion compiled and run on the GPU */

/* ---- library ---- */
int32_t loom_abi_version(void);      /* LOOM_C_ABI_VERSION of the library */
const char* loom_version(void);      /* "0.6.0" */
const char* loom_last_error(void);   /* the calling thread's last failure, "" if none */
void loom_string_free(char* s);
const char* loom_dtype_name(int32_t dtype); /* "f16", ...; NULL when not a loom_dtype */
/* The built-ins and the framework ops as JSON: {"builtins": [{name, summary, dtype, sizes:
 * {SYMBOL: value}}], "ops": [{name, summary}]}. */
loom_status loom_builtins_json(char** out);

/* ---- fusions ---- */
/* A fusion from loom's text format (`len` bytes; the text need not end in NUL). */
loom_status loom_fusion_from_text(const char* text, size_t len, loom_fusion** out);
/* A built-in by name (`loom examples`), its main tensors in `dtype` ("f16", "bf16", "f32",
 * "f64"; NULL: its default). */
loom_status loom_fusion_builtin(const char* name, const char* dtype, loom_fusion** out);
/* A framework op (frontend/framework_ops.h: a norm's forward with the statistics its backward
 * reads, or that backward) with its parameters as "key=value,..." text, e.g.
 * ("layer_norm", "x=f16,w=f32,b=f32,eps=1e-6"); loom_builtins_json lists the ops. */
loom_status loom_fusion_op(const char* op, const char* params, loom_fusion** out);
void loom_fusion_free(loom_fusion* f);
/* The fusion in the text format (round-trips through loom_fusion_from_text). */
loom_status loom_fusion_text(const loom_fusion* f, char** out);
/* Its signature as JSON: {name, symbols: [..], inputs: [{name, dtype, shape: [extent text]}],
 * outputs: [{name, dtype, shape, alias: input name or null}], sizes: {default sizes of a
 * built-in}}. */
loom_status loom_fusion_signature_json(const loom_fusion* f, char** out);
/* The kernels the fusion runs as for `opts`'s sizes and layouts (no GPU needed): the JSON of
 * `loom segment --json`: {fusion, kernels, bytes, one_kernel_bytes, rejections, segments}. */
loom_status loom_fusion_segments_json(const loom_fusion* f, const loom_options* opts, char** out);
/* One stage of compiling it (no GPU needed): "ir", "domains", "segments", "schedule",
 * "kernel", "kir", "llvm" or "ptx", as `loom dump --stage`. */
loom_status loom_fusion_dump(const loom_fusion* f, const char* stage, const loom_options* opts, char** out);

/* ---- options (all optional; NULL options are the defaults) ---- */
loom_status loom_options_create(loom_options** out);
void loom_options_free(loom_options* o);
/* Binds size symbol `name` (>= 0; at 0 a fusion runs as no kernels). Sizes not given come from the tensors (run, eval) or a
 * built-in's defaults (segments, dump). */
loom_status loom_options_set_size(loom_options* o, const char* name, int64_t value);
/* Memory order of input `input` for segments and dumps: "nchw", "nhwc" (also "contiguous",
 * "channels_last"), or dims outer to inner as "0,2,3,1". (Runs take the tensors' strides.) */
loom_status loom_options_set_layout(loom_options* o, const char* input, const char* layout);
/* The target of segments and dumps: sm (80, 86, 89, 90) and its number of SMs (default 90, 132). */
loom_status loom_options_set_target(loom_options* o, int32_t sm, int32_t sm_count);
/* A tuning knob or switch by its environment name (LOOM_NO_GRID=1, LOOM_TUNE_...): the same
 * meaning as `loom tune`'s list, for this options object only. */
loom_status loom_options_set_knob(loom_options* o, const char* name, int64_t value);

/* ---- the float64 reference on the CPU ---- */
/* Evaluates `f` on host tensors (any strides), returning one contiguous host tensor per output. */
loom_status loom_fusion_eval(const loom_fusion* f, const loom_tensor* inputs, size_t n_inputs,
                             const loom_options* opts, loom_results** out);
size_t loom_results_count(const loom_results* r);
/* Output i: `out->data`, `shape` and `strides` point into `r` and live until loom_results_free. */
loom_status loom_results_get(const loom_results* r, size_t i, loom_tensor* out);
void loom_results_free(loom_results* r);

/* ---- the GPU ---- */
/* Whether a GPU and the CUDA driver are there (1) or not (0); never fails. */
int32_t loom_gpu_available(void);
/* Makes GPU `device` (the driver's number, as cuda:N) the one loom runs on in this process: one
 * GPU a process, GPU 0 unless this chose another before loom's first GPU work. Naming the GPU
 * already in use does nothing; another one once loom has run on a GPU is LOOM_ERROR_INPUT (one
 * process per GPU, as data-parallel training runs), as is a number the driver has no GPU for. */
loom_status loom_select_device(int32_t device);
/* The GPU loom runs on, or will run on at its first GPU work; never fails. */
int32_t loom_selected_device(void);
/* The GPU whose memory `ptr` points into (the driver's number, as cuda:N), for checking pointers
 * that came without their GPU (__cuda_array_interface__) before a run: loom_runner_run does not
 * ask. -1 for memory every GPU reaches (managed memory, page-locked host memory).
 * LOOM_ERROR_ARGUMENT for NULL; LOOM_ERROR_INPUT where the driver knows no memory at `ptr`
 * (pageable host memory, a freed pointer); LOOM_ERROR_NO_GPU without a GPU. */
loom_status loom_pointer_device(const void* ptr, int32_t* device);
/* A runner of `f` (kept alive by the runner) with `opts`'s knobs; compiles on first use of each
 * input signature (dtypes, sizes, strides, alignment), as loom::Executor. */
loom_status loom_runner_create(const loom_fusion* f, const loom_options* opts, loom_runner** out);
void loom_runner_free(loom_runner* r);
/* The outputs a run on these device tensors produces, compiling if needed:
 * {outputs: [{name, dtype, shape, strides, alias: index of the input written in place or -1}],
 *  kernels: number of kernels}. The caller allocates them (alias: pass that input). */
loom_status loom_runner_outputs_json(loom_runner* r, const loom_tensor* inputs, size_t n_inputs, char** out);
/* Launches the fusion on `stream` (a CUstream; 0: the legacy default stream), asynchronously:
 * inputs and outputs are device pointers; outputs as loom_runner_outputs_json says. loom runs in
 * its GPU's primary context (loom_select_device; the CUDA runtime's and PyTorch's), pushed over
 * the caller's current context for the call where that is another: `stream` is a stream of that
 * primary context, and 0 its legacy stream. A stream being captured into a CUDA graph records
 * the launch (the capture gets intermediates and workspaces of its own, held by the runner): the
 * graph must not outlive the runner. */
loom_status loom_runner_run(loom_runner* r, const loom_tensor* inputs, size_t n_inputs,
                            const loom_tensor* outputs, size_t n_outputs, uintptr_t stream);

#if defined(__GNUC__)
#pragma GCC visibility pop
#endif

#ifdef __cplusplus
}
#endif

#endif /* LOOM_LOOM_C_H */
