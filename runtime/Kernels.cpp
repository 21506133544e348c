//===- Kernels.cpp - library kernels that generated code calls ------------===//
//
// Contractions that a library does better than generated loops. Compiled
// bundles call these through MLIR's C interface (`_mlir_ciface_<name>`, one
// memref descriptor pointer per memref argument); they resolve against
// libloomrt when the bundle is loaded. fp32 GEMM is OpenBLAS's, which uses
// every core for large products.
//
//===----------------------------------------------------------------------===//

#include "loom/runtime.h"

#include <cblas.h>

#include <cstdint>

namespace {
/// MLIR's descriptor of a rank-2 memref of f32.
struct Matrix {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
  float *data() const { return aligned + offset; }
};
} // namespace

/// c += op(a) * op(b), where op transposes `b` when `transpose_b` is set:
/// a is [M, K], b is [K, N] (or [N, K] transposed), c is [M, N]. Rows must be
/// contiguous (unit inner stride), which the compiler guarantees.
extern "C" LOOM_API void
_mlir_ciface_loom_kernel_matmul_f32(Matrix *a, Matrix *b, Matrix *c,
                                    int64_t transpose_b) {
  int64_t m = c->sizes[0], n = c->sizes[1], k = a->sizes[1];
  if (m == 0 || n == 0)
    return;
  cblas_sgemm(CblasRowMajor, CblasNoTrans, transpose_b ? CblasTrans : CblasNoTrans,
              (int)m, (int)n, (int)k, 1.0f, a->data(), (int)a->strides[0],
              b->data(), (int)b->strides[0], 1.0f, c->data(),
              (int)c->strides[0]);
}
