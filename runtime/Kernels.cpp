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

/// c += op(a) * op(b): bit 0 of `flags` transposes `b` ([N, K] instead of
/// [K, N]), bit 1 transposes `a` ([K, M] instead of [M, K]); c is [M, N].
/// Rows must be contiguous (unit inner stride), which the compiler
/// guarantees.
extern "C" LOOM_API void
_mlir_ciface_loom_kernel_matmul_f32(Matrix *a, Matrix *b, Matrix *c,
                                    int64_t flags) {
  bool transposeA = flags & 2, transposeB = flags & 1;
  int64_t m = c->sizes[0], n = c->sizes[1];
  int64_t k = transposeA ? a->sizes[0] : a->sizes[1];
  if (m == 0 || n == 0)
    return;
  cblas_sgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
              transposeB ? CblasTrans : CblasNoTrans,
              (int)m, (int)n, (int)k, 1.0f, a->data(), (int)a->strides[0],
              b->data(), (int)b->strides[0], 1.0f, c->data(),
              (int)c->strides[0]);
}

namespace {
/// MLIR's descriptor of a rank-3 memref of f32.
struct Batch {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[3];
  int64_t strides[3];
  float *data() const { return aligned + offset; }
};
} // namespace

/// c[i] += op(a[i]) * op(b[i]) for every i of the leading (batch) dimension,
/// with `flags` as in loom_kernel_matmul_f32.
extern "C" LOOM_API void
_mlir_ciface_loom_kernel_batch_matmul_f32(Batch *a, Batch *b, Batch *c,
                                          int64_t flags) {
  bool transposeA = flags & 2, transposeB = flags & 1;
  int64_t m = c->sizes[1], n = c->sizes[2];
  int64_t k = transposeA ? a->sizes[1] : a->sizes[2];
  if (m == 0 || n == 0)
    return;
  for (int64_t i = 0; i < c->sizes[0]; ++i)
    cblas_sgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
                transposeB ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
                1.0f, a->data() + i * a->strides[0], (int)a->strides[1],
                b->data() + i * b->strides[0], (int)b->strides[1], 1.0f,
                c->data() + i * c->strides[0], (int)c->strides[1]);
}
