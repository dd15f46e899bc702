/* The C ABI from C (include/loom/loom_c.h compiled as C11): every entry point, and the errors
 * each gives for bad input, with their status and message. CPU only: on a machine with a GPU
 * the runner's device half is tested by the Python package's GPU tests. */
#include <loom/loom_c.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define EXPECT(cond)                                                        \
  do {                                                                      \
    if (!(cond)) {                                                          \
      fprintf(stderr, "%s:%d: failed: %s (last error: %s)\n", __FILE__, __LINE__, #cond, \
              loom_last_error());                                           \
      ++failures;                                                           \
    }                                                                       \
  } while (0)

/* `call` returns `status` and the thread's last error then contains `text`. */
#define EXPECT_ERROR(call, status, text)                                                    \
  do {                                                                                      \
    loom_status s_ = (call);                                                                \
    if (s_ != (status) || strstr(loom_last_error(), (text)) == NULL) {                      \
      fprintf(stderr, "%s:%d: %s gave status %d, error \"%s\"; wanted %d and \"%s\"\n", __FILE__, \
              __LINE__, #call, (int)s_, loom_last_error(), (int)(status), (text));          \
      ++failures;                                                                           \
    }                                                                                       \
  } while (0)

static int contains(const char* s, const char* what) { return s && strstr(s, what) != NULL; }

static void test_library(void) {
  char* j = NULL;
  EXPECT(loom_abi_version() == LOOM_C_ABI_VERSION);
  EXPECT(strlen(loom_version()) >= 5);
  EXPECT(strcmp(loom_dtype_name(LOOM_BF16), "bf16") == 0);
  EXPECT(strcmp(loom_dtype_name(LOOM_F64), "f64") == 0);
  EXPECT(loom_dtype_name(7) == NULL && loom_dtype_name(-1) == NULL);
  EXPECT(loom_builtins_json(&j) == LOOM_OK);
  EXPECT(contains(j, "\"name\": \"layer_norm_backward\""));
  EXPECT(contains(j, "\"ops\": [{\"name\": \"layer_norm\""));
  loom_string_free(j);
  loom_string_free(NULL);
  EXPECT_ERROR(loom_builtins_json(NULL), LOOM_ERROR_ARGUMENT, "`out` is NULL");
  EXPECT(loom_gpu_available() == 0 || loom_gpu_available() == 1);
}

static const char* kText =
    "fusion scale_add {\n"
    "  in x: f32[N, D]\n"
    "  in b: f32[D]\n"
    "  t0: f32[1b, D] = broadcast(b, new=[true, false])\n"
    "  t1: f32[N, D] = add(x, t0)\n"
    "  s: f32[N] = sum(t1, dims=[1], keepdim=false)\n"
    "  out y = t1\n"
    "  out s = s\n"
    "}\n";

static void test_fusions(void) {
  loom_fusion* f = NULL;
  loom_fusion* g = NULL;
  char* s = NULL;
  EXPECT(loom_fusion_from_text(kText, strlen(kText), &f) == LOOM_OK);
  EXPECT(loom_fusion_text(f, &s) == LOOM_OK);
  EXPECT(contains(s, "fusion scale_add {"));
  /* Round trip: the printed text parses to the same text. */
  EXPECT(loom_fusion_from_text(s, strlen(s), &g) == LOOM_OK);
  char* s2 = NULL;
  EXPECT(loom_fusion_text(g, &s2) == LOOM_OK);
  EXPECT(s && s2 && strcmp(s, s2) == 0);
  loom_string_free(s);
  loom_string_free(s2);
  loom_fusion_free(g);
  EXPECT(loom_fusion_signature_json(f, &s) == LOOM_OK);
  EXPECT(contains(s, "\"inputs\": [{\"name\": \"x\", \"dtype\": \"f32\", \"shape\": [\"N\", \"D\"]}"));
  EXPECT(contains(s, "\"alias\": null"));
  loom_string_free(s);

  /* Bad text: a located user error; the out-parameter untouched. */
  loom_fusion* bad = (loom_fusion*)0x1;
  EXPECT_ERROR(loom_fusion_from_text("fusion f {\n  in x: f99[N]\n}\n", 26, &bad), LOOM_ERROR_INPUT, "f99");
  EXPECT(bad == (loom_fusion*)0x1);
  EXPECT_ERROR(loom_fusion_from_text(NULL, 3, &g), LOOM_ERROR_ARGUMENT, "`text` is NULL");
  EXPECT_ERROR(loom_fusion_from_text(kText, strlen(kText), NULL), LOOM_ERROR_ARGUMENT, "`out` is NULL");
  EXPECT_ERROR(loom_fusion_text(NULL, &s), LOOM_ERROR_ARGUMENT, "`fusion` is NULL");
  EXPECT_ERROR(loom_fusion_signature_json(f, NULL), LOOM_ERROR_ARGUMENT, "`out` is NULL");

  /* Built-ins. */
  EXPECT(loom_fusion_builtin("group_norm", "bf16", &g) == LOOM_OK);
  EXPECT(loom_fusion_signature_json(g, &s) == LOOM_OK);
  EXPECT(contains(s, "\"dtype\": \"bf16\"") && contains(s, "\"sizes\": {\"C\": 128"));
  loom_string_free(s);
  loom_fusion_free(g);
  EXPECT(loom_fusion_builtin("layer_norm", NULL, &g) == LOOM_OK);
  loom_fusion_free(g);
  EXPECT_ERROR(loom_fusion_builtin("layer_nrom", NULL, &g), LOOM_ERROR_INPUT, "the built-ins are: ");
  EXPECT_ERROR(loom_fusion_builtin("layer_norm", "f8", &g), LOOM_ERROR_INPUT, "dtype `f8` is not a dtype");
  EXPECT_ERROR(loom_fusion_builtin(NULL, NULL, &g), LOOM_ERROR_ARGUMENT, "`name` is NULL");

  /* Framework ops with their parameters. */
  EXPECT(loom_fusion_op("group_norm", "x=bf16, groups=8, w=f32, b=none, eps=1e-6", &g) == LOOM_OK);
  EXPECT(loom_fusion_signature_json(g, &s) == LOOM_OK);
  EXPECT(contains(s, "\"name\": \"x\", \"dtype\": \"bf16\", \"shape\": [\"N\", \"C\", \"S\"]"));
  EXPECT(contains(s, "\"name\": \"rstd\", \"dtype\": \"f32\", \"shape\": [\"N\", \"8\"]"));
  EXPECT(!contains(s, "\"name\": \"b\""));
  loom_string_free(s);
  loom_fusion_free(g);
  EXPECT(loom_fusion_op("batch_norm", "x=f16,running=f32,w=f32,b=f32,momentum=0.05", &g) == LOOM_OK);
  EXPECT(loom_fusion_signature_json(g, &s) == LOOM_OK);
  EXPECT(contains(s, "\"alias\": \"running_var\""));
  loom_string_free(s);
  loom_fusion_free(g);
  EXPECT_ERROR(loom_fusion_op("layer_norm", "x=f16,eps=abc", &g), LOOM_ERROR_INPUT, "eps=abc is not a number");
  EXPECT_ERROR(loom_fusion_op("layer_norm", "x=f16,groups=2", &g), LOOM_ERROR_INPUT, "takes no parameter `groups`");
  EXPECT_ERROR(loom_fusion_op("layer_norm", "w=f32", &g), LOOM_ERROR_INPUT, "parameter `x` (a dtype) is needed");
  EXPECT_ERROR(loom_fusion_op("group_norm", "x=f16,groups=0", &g), LOOM_ERROR_INPUT, "groups=0 is not a positive");
  EXPECT_ERROR(loom_fusion_op("layer_norm", "x=f16,x=f32", &g), LOOM_ERROR_INPUT, "`x` is given twice");
  EXPECT_ERROR(loom_fusion_op("layer_norm", "x", &g), LOOM_ERROR_INPUT, "must look like key=value");
  EXPECT_ERROR(loom_fusion_op("layer_nrom", NULL, &g), LOOM_ERROR_INPUT, "they are: layer_norm, ");
  loom_fusion_free(NULL);
  loom_fusion_free(f);
}

static void test_options_segments_dumps(void) {
  loom_fusion* f = NULL;
  loom_options* o = NULL;
  char* s = NULL;
  EXPECT(loom_fusion_builtin("group_norm", "f16", &f) == LOOM_OK);
  EXPECT(loom_options_create(&o) == LOOM_OK);
  EXPECT(loom_options_set_size(o, "N", 8) == LOOM_OK);
  EXPECT(loom_options_set_layout(o, "x", "nhwc") == LOOM_OK);
  EXPECT(loom_options_set_target(o, 80, 108) == LOOM_OK);
  EXPECT(loom_options_set_knob(o, "LOOM_NO_GRID", 1) == LOOM_OK);
  EXPECT(loom_fusion_segments_json(f, o, &s) == LOOM_OK);
  EXPECT(contains(s, "\"kernels\": 1") && contains(s, "\"scheduler\": \"normalization\""));
  loom_string_free(s);
  EXPECT(loom_fusion_segments_json(f, NULL, &s) == LOOM_OK); /* the built-in's own sizes */
  loom_string_free(s);
  EXPECT(loom_fusion_dump(f, "ptx", o, &s) == LOOM_OK);
  EXPECT(contains(s, ".target sm_80"));
  loom_string_free(s);
  EXPECT(loom_fusion_dump(f, "schedule", o, &s) == LOOM_OK);
  EXPECT(contains(s, "normalization"));
  loom_string_free(s);
  EXPECT(loom_fusion_dump(f, "ir", NULL, &s) == LOOM_OK);
  EXPECT(contains(s, "fusion group_norm"));
  loom_string_free(s);

  EXPECT_ERROR(loom_fusion_dump(f, "sass", o, &s), LOOM_ERROR_INPUT, "sass");
  EXPECT_ERROR(loom_fusion_dump(f, "launch", o, &s), LOOM_ERROR_INPUT, "only while running");
  EXPECT_ERROR(loom_fusion_dump(f, NULL, o, &s), LOOM_ERROR_ARGUMENT, "`stage` is NULL");
  EXPECT_ERROR(loom_options_set_size(o, "N", -1), LOOM_ERROR_INPUT, "sizes must be 0 or more");
  EXPECT_ERROR(loom_options_set_size(NULL, "N", 3), LOOM_ERROR_ARGUMENT, "`options` is NULL");
  EXPECT_ERROR(loom_options_set_target(o, 75, 40), LOOM_ERROR_INPUT, "loom emits PTX for sm_");
  EXPECT_ERROR(loom_options_set_target(o, 90, 0), LOOM_ERROR_INPUT, "give 1 to 1024");
  EXPECT_ERROR(loom_options_set_knob(o, "LOOM_TUNE_NOTHING", 1), LOOM_ERROR_INPUT, "no tuning knob");
  EXPECT_ERROR(loom_options_set_knob(o, "LOOM_NO_GRID", 2), LOOM_ERROR_INPUT, "it is a switch");
  /* Layouts and sizes are checked against the fusion where they are used. */
  EXPECT(loom_options_set_layout(o, "y", "nhwc") == LOOM_OK);
  EXPECT_ERROR(loom_fusion_segments_json(f, o, &s), LOOM_ERROR_INPUT, "has no input `y`");
  loom_options_free(o);
  EXPECT(loom_options_create(&o) == LOOM_OK);
  EXPECT(loom_options_set_layout(o, "x", "0,3,3,1") == LOOM_OK);
  EXPECT_ERROR(loom_fusion_dump(f, "kir", o, &s), LOOM_ERROR_INPUT, "a permutation of 0..3");
  loom_options_free(o);
  EXPECT(loom_options_create(&o) == LOOM_OK);
  EXPECT(loom_options_set_size(o, "C", 100) == LOOM_OK); /* 32 groups do not divide 100 */
  EXPECT(loom_fusion_segments_json(f, o, &s) != LOOM_OK);
  EXPECT(strlen(loom_last_error()) > 0);
  loom_options_free(o);
  loom_options_free(NULL);
  loom_fusion_free(f);
}

static void test_eval(void) {
  loom_fusion* f = NULL;
  loom_results* r = NULL;
  EXPECT(loom_fusion_from_text(kText, strlen(kText), &f) == LOOM_OK);
  /* x: 2 x 3, given transposed in memory (strides 1, 2); b: 3. */
  float x[6] = {1, 4, 2, 5, 3, 6}; /* x[i][j] = x[j * 2 + i]: rows {1,2,3} and {4,5,6} */
  float b[3] = {0.5f, -1, 2};
  int64_t xs[2] = {2, 3}, xst[2] = {1, 2}, bs[1] = {3};
  loom_tensor in[2] = {{x, LOOM_F32, 2, xs, xst}, {b, LOOM_F32, 1, bs, NULL}};
  EXPECT(loom_fusion_eval(f, in, 2, NULL, &r) == LOOM_OK);
  EXPECT(loom_results_count(r) == 2);
  loom_tensor y, s;
  EXPECT(loom_results_get(r, 0, &y) == LOOM_OK);
  EXPECT(loom_results_get(r, 1, &s) == LOOM_OK);
  EXPECT(y.dtype == LOOM_F32 && y.ndim == 2 && y.shape[0] == 2 && y.shape[1] == 3 && y.strides[0] == 3);
  const float want_y[6] = {1.5f, 1, 5, 4.5f, 4, 8};
  for (int i = 0; i < 6; ++i) EXPECT(fabsf(((const float*)y.data)[i] - want_y[i]) < 1e-6f);
  EXPECT(s.ndim == 1 && s.shape[0] == 2);
  EXPECT(fabsf(((const float*)s.data)[0] - 7.5f) < 1e-6f && fabsf(((const float*)s.data)[1] - 16.5f) < 1e-6f);
  EXPECT_ERROR(loom_results_get(r, 2, &y), LOOM_ERROR_ARGUMENT, "output 2 of 2");
  EXPECT(loom_results_count(NULL) == 0);
  loom_results_free(r);
  loom_results_free(NULL);

  /* Errors: count, dtype, rank, sizes that disagree, strides, NULL data. */
  EXPECT_ERROR(loom_fusion_eval(f, in, 1, NULL, &r), LOOM_ERROR_INPUT, "takes 2 inputs, 1 given");
  loom_tensor wrong = in[1];
  wrong.dtype = LOOM_F16;
  loom_tensor two[2] = {in[0], wrong};
  EXPECT_ERROR(loom_fusion_eval(f, two, 2, NULL, &r), LOOM_ERROR_INPUT, "`b`");
  int64_t bs4[1] = {4};
  two[1] = in[1];
  two[1].shape = bs4;
  EXPECT_ERROR(loom_fusion_eval(f, two, 2, NULL, &r), LOOM_ERROR_INPUT, "D=3");
  two[1] = in[1];
  two[1].dtype = 42;
  EXPECT_ERROR(loom_fusion_eval(f, two, 2, NULL, &r), LOOM_ERROR_ARGUMENT, "dtype 42 is not a loom_dtype");
  int64_t neg[1] = {-1};
  two[1] = in[1];
  two[1].strides = neg;
  EXPECT_ERROR(loom_fusion_eval(f, two, 2, NULL, &r), LOOM_ERROR_INPUT, "negative stride");
  two[1] = in[1];
  two[1].data = NULL;
  EXPECT_ERROR(loom_fusion_eval(f, two, 2, NULL, &r), LOOM_ERROR_ARGUMENT, "`data` is NULL");
  two[1] = in[1];
  two[1].ndim = 65;
  EXPECT_ERROR(loom_fusion_eval(f, two, 2, NULL, &r), LOOM_ERROR_ARGUMENT, "ndim 65");
  EXPECT_ERROR(loom_fusion_eval(f, NULL, 2, NULL, &r), LOOM_ERROR_ARGUMENT, "`inputs` is NULL");
  loom_fusion_free(f);
}

static void test_runner(void) {
  loom_fusion* f = NULL;
  loom_runner* r = NULL;
  char* s = NULL;
  EXPECT(loom_fusion_from_text(kText, strlen(kText), &f) == LOOM_OK);
  EXPECT(loom_runner_create(f, NULL, &r) == LOOM_OK);
  loom_fusion_free(f); /* the runner keeps the fusion alive */
  int64_t xs[2] = {2, 3}, bs[1] = {3};
  loom_tensor in[2] = {{(void*)0x1000, LOOM_F32, 2, xs, NULL}, {(void*)0x2000, LOOM_F32, 1, bs, NULL}};
  EXPECT_ERROR(loom_runner_outputs_json(r, in, 1, &s), LOOM_ERROR_INPUT, "takes 2 inputs, 1 given");
  EXPECT_ERROR(loom_runner_run(NULL, in, 2, NULL, 0, 0), LOOM_ERROR_ARGUMENT, "`runner` is NULL");
  if (!loom_gpu_available()) {
    EXPECT_ERROR(loom_runner_outputs_json(r, in, 2, &s), LOOM_ERROR_NO_GPU, "no GPU found");
    EXPECT_ERROR(loom_runner_run(r, in, 2, NULL, 0, 0), LOOM_ERROR_NO_GPU, "no GPU found");
    /* The same signature again takes the runner's rebinding path: its pointers are still checked,
       and a refused call leaves the next one checked in full. */
    EXPECT_ERROR(loom_runner_run(r, in, 2, NULL, 0, 0), LOOM_ERROR_NO_GPU, "no GPU found");
    loom_tensor again[2] = {in[0], in[1]};
    again[1].data = NULL;
    EXPECT_ERROR(loom_runner_run(r, again, 2, NULL, 0, 0), LOOM_ERROR_INPUT, "input `b`: wrap: null device pointer");
    again[1].data = (void*)0x2002;
    EXPECT_ERROR(loom_runner_run(r, again, 2, NULL, 0, 0), LOOM_ERROR_INPUT, "input `b`: wrap: pointer 0x2002 is not aligned");
    again[1].data = (void*)0x2000;
    again[1].dtype = 42;
    EXPECT_ERROR(loom_runner_run(r, again, 2, NULL, 0, 0), LOOM_ERROR_ARGUMENT, "input `b`: dtype 42");
    EXPECT_ERROR(loom_runner_run(r, in, 2, NULL, 0, 0), LOOM_ERROR_NO_GPU, "no GPU found");
    again[1].dtype = LOOM_F32;
    again[1].data = NULL;  /* the first call of a signature names the tensor too */
    int64_t xs3[2] = {2, 4};
    again[0].shape = xs3;
    EXPECT_ERROR(loom_runner_run(r, again, 2, NULL, 0, 0), LOOM_ERROR_INPUT, "input `b`: wrap: null device pointer");
    /* More outputs than the fusion has: refused, then the same call again (with one a NULL
       pointer) is checked in full, not taken as a repeat. */
    int64_t ys[2] = {2, 3};
    loom_tensor outs[3] = {{(void*)0x3000, LOOM_F32, 2, ys, NULL}, {(void*)0x4000, LOOM_F32, 1, ys, NULL},
                           {(void*)0x5000, LOOM_F32, 2, ys, NULL}};
    EXPECT_ERROR(loom_runner_run(r, in, 2, outs, 3, 0), LOOM_ERROR_NO_GPU, "no GPU found");
    outs[2].data = NULL;
    EXPECT_ERROR(loom_runner_run(r, in, 2, outs, 3, 0), LOOM_ERROR_INPUT, "output 2: wrap: null device pointer");
  }
  loom_runner_free(r);
  loom_runner_free(NULL);
  EXPECT_ERROR(loom_runner_create(NULL, NULL, &r), LOOM_ERROR_ARGUMENT, "`fusion` is NULL");
}

static void test_device(void) {
  EXPECT(loom_selected_device() == 0);
  int32_t where = -7;
  const int on_host = 5;
  EXPECT_ERROR(loom_pointer_device(&on_host, NULL), LOOM_ERROR_ARGUMENT, "`device` is NULL");
  EXPECT_ERROR(loom_pointer_device(NULL, &where), LOOM_ERROR_ARGUMENT, "`ptr` is NULL");
  if (!loom_gpu_available()) {
    EXPECT_ERROR(loom_select_device(0), LOOM_ERROR_NO_GPU, "no GPU found");
    EXPECT_ERROR(loom_select_device(-1), LOOM_ERROR_NO_GPU, "no GPU found");
    EXPECT_ERROR(loom_pointer_device(&on_host, &where), LOOM_ERROR_NO_GPU, "no GPU found");
    EXPECT(loom_selected_device() == 0 && where == -7);
    return;
  }
  /* Pageable host memory is no GPU's (the positive case: the GPU tests, through a buffer). */
  EXPECT_ERROR(loom_pointer_device(&on_host, &where), LOOM_ERROR_INPUT, "is no memory the CUDA driver knows");
  EXPECT(where == -7);
  EXPECT_ERROR(loom_select_device(-1), LOOM_ERROR_INPUT, "GPU -1 does not exist: GPUs are numbered from 0");
  EXPECT_ERROR(loom_select_device(4096), LOOM_ERROR_INPUT, "GPU 4096 does not exist: the NVIDIA driver reports");
  EXPECT(loom_select_device(0) == LOOM_OK);
  EXPECT(loom_select_device(0) == LOOM_OK); /* the GPU in use again: nothing to do */
  EXPECT(loom_selected_device() == 0);
  /* Another GPU once loom runs on one (where the machine has two). */
  const loom_status other = loom_select_device(1);
  EXPECT(other == LOOM_ERROR_INPUT && (strstr(loom_last_error(), "GPU 1 does not exist") ||
                                       strstr(loom_last_error(), "loom runs on GPU 0 in this process")));
  EXPECT(loom_selected_device() == 0);
}

int main(void) {
  test_library();
  test_device();
  test_fusions();
  test_options_segments_dumps();
  test_eval();
  test_runner();
  if (failures) {
    fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  puts("C ABI: all checks passed");
  return 0;
}
