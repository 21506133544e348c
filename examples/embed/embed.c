/*===- embed.c - an application embedding Loom's runtime ------------------===*
 *
 * Loads a bundle compiled by loomc, lists its tensors, feeds every input a
 * ramp of values, runs it and prints the start of each output.
 *
 *   loomc model.onnx -o model.loom
 *   loom-embed-example model.loom
 *
 * Build against include/loom/runtime.h and link libloomrt.
 *
 *===----------------------------------------------------------------------===*/

#include "loom/runtime.h"

#include <stdio.h>
#include <stdlib.h>

static const char *kind_name(loom_tensor_kind_t kind) {
  return kind == LOOM_TENSOR_INPUT       ? "input"
         : kind == LOOM_TENSOR_PARAMETER ? "parameter"
                                         : "output";
}

static int report(loom_status_t status) {
  fprintf(stderr, "error: %s\n", loom_status_message(status));
  loom_status_free(status);
  return 1;
}

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s MODEL.loom\n", argv[0]);
    return 1;
  }
  loom_session_t *session = NULL;
  loom_status_t status = loom_session_create(argv[1], NULL, &session);
  if (status)
    return report(status);

  size_t count = loom_session_tensor_count(session);
  for (size_t i = 0; i < count; ++i) {
    loom_tensor_info_t info;
    if ((status = loom_session_tensor_info(session, i, &info)))
      return report(status);
    printf("%-10s %-24s %s [", kind_name(info.kind), info.name,
           loom_dtype_name(info.dtype));
    for (int d = 0; d < info.rank; ++d)
      printf("%s%lld", d ? ", " : "", (long long)info.shape[d]);
    printf("]\n");
    if (info.kind != LOOM_TENSOR_INPUT)
      continue;
    /* A ramp in [0, 1) for float inputs, zeros otherwise. */
    unsigned char *data = calloc(1, info.bytes ? info.bytes : 1);
    if (!data)
      return 1;
    if (info.dtype == LOOM_DTYPE_FLOAT32)
      for (size_t k = 0; k < info.bytes / 4; ++k)
        ((float *)data)[k] = (float)(k % 100) / 100.0f;
    status = loom_session_set_tensor(session, i, data, info.bytes);
    free(data);
    if (status)
      return report(status);
  }

  if ((status = loom_session_run(session)))
    return report(status);

  for (size_t i = 0; i < count; ++i) {
    loom_tensor_info_t info;
    const void *data;
    size_t bytes;
    if ((status = loom_session_tensor_info(session, i, &info)) ||
        (status = loom_session_tensor_data(session, i, &data, &bytes)))
      return report(status);
    if (info.kind != LOOM_TENSOR_OUTPUT || info.dtype != LOOM_DTYPE_FLOAT32)
      continue;
    printf("%s:", info.name);
    for (size_t k = 0; k < bytes / 4 && k < 5; ++k)
      printf(" %.4f", ((const float *)data)[k]);
    printf("%s\n", bytes / 4 > 5 ? " ..." : "");
  }
  loom_session_destroy(session);
  return 0;
}
