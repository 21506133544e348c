/*===- c_api_test.c - libloomrt's C API, compiled as C11 ------------------===*
 *
 * Keeps include/loom/runtime.h valid C and checks the API's behavior on the
 * MLP bundle (784-256-256-10, batch 4) that ctest compiles first: tensor
 * queries, every error status, and a run whose logits are compared with the
 * same MLP computed here in double precision from the bundle's parameters.
 *
 * Usage: runtime-c-api-test MLP_BUNDLE_DIR
 *
 *===----------------------------------------------------------------------===*/

#include "loom/runtime.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;

#define EXPECT(cond)                                                           \
  do {                                                                         \
    if (!(cond)) {                                                             \
      fprintf(stderr, "%s:%d: expectation failed: %s\n", __FILE__, __LINE__,  \
              #cond);                                                          \
      ++failures;                                                              \
    }                                                                          \
  } while (0)

/* Expects `status` to carry `code`; frees it. */
static void expect_code(loom_status_t status, loom_status_code_t code,
                        int line) {
  if (loom_status_code(status) != code) {
    fprintf(stderr, "%s:%d: expected status %d, got %d (%s)\n", __FILE__, line,
            (int)code, (int)loom_status_code(status),
            loom_status_message(status));
    ++failures;
  }
  loom_status_free(status);
}
#define EXPECT_CODE(status, code) expect_code((status), (code), __LINE__)

static const float *tensor_floats(loom_session_t *s, const char *name) {
  size_t index = 0, bytes = 0;
  const void *data = NULL;
  EXPECT_CODE(loom_session_find_tensor(s, name, &index), LOOM_STATUS_OK);
  EXPECT_CODE(loom_session_tensor_data(s, index, &data, &bytes),
              LOOM_STATUS_OK);
  return (const float *)data;
}

/* y[b][o] = act(sum_i x[b][i] * w[o][i] + bias[o]) (PyTorch's Linear). */
static void linear(const double *x, const float *w, const float *bias,
                   int batch, int in, int out, int relu, double *y) {
  for (int b = 0; b < batch; ++b)
    for (int o = 0; o < out; ++o) {
      double acc = bias[o];
      for (int i = 0; i < in; ++i)
        acc += x[b * in + i] * w[o * in + i];
      y[b * out + o] = relu && acc < 0 ? 0 : acc;
    }
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: runtime-c-api-test MLP_BUNDLE_DIR\n");
    return 2;
  }
  loom_session_t *session = NULL;

  /* Errors of session creation. */
  EXPECT_CODE(loom_session_create(NULL, NULL, &session),
              LOOM_STATUS_INVALID_ARGUMENT);
  EXPECT_CODE(loom_session_create("/nonexistent/model.loom", NULL, &session),
              LOOM_STATUS_NOT_FOUND);
  EXPECT(session == NULL);
  loom_session_options_t options;
  loom_session_options_initialize(&options);
  EXPECT(options.struct_size == sizeof(options));
  options.entry_point = "no_such_entry";
  EXPECT_CODE(loom_session_create(argv[1], &options, &session),
              LOOM_STATUS_INVALID_ARGUMENT);

  options.entry_point = NULL;
  loom_status_t status = loom_session_create(argv[1], &options, &session);
  if (status) {
    fprintf(stderr, "cannot load %s: %s\n", argv[1],
            loom_status_message(status));
    loom_status_free(status);
    return 1;
  }

  /* Not distributed (options.distributed defaults to 0): rank 0 of 1. */
  EXPECT(options.distributed == 0);
  EXPECT(loom_session_rank(session) == 0);
  EXPECT(loom_session_world_size(session) == 1);
  EXPECT(loom_session_rank(NULL) == 0 && loom_session_world_size(NULL) == 1);

  /* Tensor queries: x, six parameters, logits. */
  EXPECT(loom_session_tensor_count(session) == 8);
  loom_tensor_info_t info;
  EXPECT_CODE(loom_session_tensor_info(session, 0, &info), LOOM_STATUS_OK);
  EXPECT(strcmp(info.name, "x") == 0);
  EXPECT(info.kind == LOOM_TENSOR_INPUT && info.dtype == LOOM_DTYPE_FLOAT32);
  EXPECT(info.rank == 2 && info.shape[0] == 4 && info.shape[1] == 784);
  EXPECT(info.bytes == 4 * 784 * sizeof(float));
  size_t logits = 0;
  EXPECT_CODE(loom_session_find_tensor(session, "logits", &logits),
              LOOM_STATUS_OK);
  EXPECT_CODE(loom_session_tensor_info(session, logits, &info),
              LOOM_STATUS_OK);
  EXPECT(info.kind == LOOM_TENSOR_OUTPUT && info.rank == 2 &&
         info.shape[1] == 10);
  EXPECT_CODE(loom_session_tensor_info(session, 99, &info),
              LOOM_STATUS_INVALID_ARGUMENT);
  size_t index = 0;
  EXPECT_CODE(loom_session_find_tensor(session, "nope", &index),
              LOOM_STATUS_INVALID_ARGUMENT);
  /* A bundle for one device: its whole shapes are its shapes, and setting
     a tensor whole is setting it. */
  EXPECT(loom_session_mesh_devices(session) == 1);
  EXPECT(loom_session_mesh_devices(NULL) == 1);
  int32_t whole_rank = 0;
  int64_t whole_shape[LOOM_MAX_RANK];
  EXPECT_CODE(loom_session_tensor_whole_shape(session, 0, &whole_rank,
                                              whole_shape),
              LOOM_STATUS_OK);
  EXPECT(whole_rank == 2 && whole_shape[0] == 4 && whole_shape[1] == 784);
  EXPECT_CODE(loom_session_tensor_whole_shape(session, 99, &whole_rank,
                                              whole_shape),
              LOOM_STATUS_INVALID_ARGUMENT);
  EXPECT_CODE(loom_session_set_tensor_whole(session, logits, NULL, 0),
              LOOM_STATUS_INVALID_ARGUMENT);
  EXPECT(strcmp(loom_dtype_name(LOOM_DTYPE_BFLOAT16), "bfloat16") == 0);
  EXPECT(loom_dtype_size(LOOM_DTYPE_INT64) == 8);

  /* Running needs every input; sizes must match. */
  EXPECT_CODE(loom_session_run(session), LOOM_STATUS_FAILED_PRECONDITION);
  static float x[4 * 784];
  for (int i = 0; i < 4 * 784; ++i)
    x[i] = (float)(0.5 * sin(0.37 * i));
  EXPECT_CODE(loom_session_set_tensor(session, 0, x, sizeof(x) - 4),
              LOOM_STATUS_INVALID_ARGUMENT);
  EXPECT_CODE(loom_session_set_tensor(session, logits, x, sizeof(x)),
              LOOM_STATUS_INVALID_ARGUMENT);
  EXPECT_CODE(loom_session_set_tensor_whole(session, 0, x, sizeof(x) - 4),
              LOOM_STATUS_INVALID_ARGUMENT);
  EXPECT_CODE(loom_session_set_tensor_whole(session, 0, x, sizeof(x)),
              LOOM_STATUS_OK);
  EXPECT_CODE(loom_session_run(session), LOOM_STATUS_OK);

  /* The reference: the same MLP in double precision. */
  static double x64[4 * 784], h1[4 * 256], h2[4 * 256], ref[4 * 10];
  for (int i = 0; i < 4 * 784; ++i)
    x64[i] = x[i];
  linear(x64, tensor_floats(session, "fc1.weight"),
         tensor_floats(session, "fc1.bias"), 4, 784, 256, 1, h1);
  linear(h1, tensor_floats(session, "fc2.weight"),
         tensor_floats(session, "fc2.bias"), 4, 256, 256, 1, h2);
  linear(h2, tensor_floats(session, "fc3.weight"),
         tensor_floats(session, "fc3.bias"), 4, 256, 10, 0, ref);
  const float *out = tensor_floats(session, "logits");
  double max_diff = 0, max_ref = 0;
  for (int i = 0; i < 40; ++i) {
    max_diff = fmax(max_diff, fabs(out[i] - ref[i]));
    max_ref = fmax(max_ref, fabs(ref[i]));
  }
  /* fp32 accumulation over 784 terms vs double: 1e-4 relative is ample. */
  printf("logits vs double-precision reference: relative error %.3g\n",
         max_diff / max_ref);
  EXPECT(max_ref > 0 && max_diff <= 1e-4 * max_ref);

  /* A second run gives the same result. */
  float first[40];
  memcpy(first, out, sizeof(first));
  EXPECT_CODE(loom_session_run(session), LOOM_STATUS_OK);
  EXPECT(memcmp(first, tensor_floats(session, "logits"), sizeof(first)) == 0);

  /* Memory: the session's buffers by kind, and the temporaries of one run,
     measured by libloomrt's allocator, against the compiler's prediction
     in the manifest (loom-buffer-peak). */
  loom_memory_stats_t stats;
  EXPECT_CODE(loom_session_memory_stats(NULL, &stats),
              LOOM_STATUS_INVALID_ARGUMENT);
  size_t by_kind[4] = {0, 0, 0, 0};
  for (size_t i = 0; i < loom_session_tensor_count(session); ++i) {
    EXPECT_CODE(loom_session_tensor_info(session, i, &info), LOOM_STATUS_OK);
    by_kind[info.kind] += info.bytes;
  }
  loom_memory_reset_peak();
  EXPECT_CODE(loom_session_run(session), LOOM_STATUS_OK);
  EXPECT_CODE(loom_session_memory_stats(session, &stats), LOOM_STATUS_OK);
  EXPECT(stats.parameter_bytes == by_kind[LOOM_TENSOR_PARAMETER] &&
         stats.parameter_bytes == (784 * 256 + 256 + 256 * 256 + 256 +
                                   256 * 10 + 10) * sizeof(float));
  EXPECT(stats.input_bytes == by_kind[LOOM_TENSOR_INPUT] &&
         stats.output_bytes == by_kind[LOOM_TENSOR_OUTPUT] &&
         stats.state_bytes == 0);
  printf("temporaries of one run: peak %zu bytes, predicted %zu bytes, %zu "
         "alive after it\n",
         stats.temporary_peak_bytes, stats.predicted_temporary_peak_bytes,
         stats.temporary_bytes);
  EXPECT(stats.temporary_bytes == 0);
  EXPECT(stats.predicted_temporary_peak_bytes > 0 &&
         stats.temporary_peak_bytes == stats.predicted_temporary_peak_bytes);

  loom_session_destroy(session);
  loom_session_destroy(NULL);
  loom_status_free(NULL);
  if (failures)
    fprintf(stderr, "%d expectation(s) failed\n", failures);
  else
    printf("runtime C API: all checks passed\n");
  return failures ? 1 : 0;
}
