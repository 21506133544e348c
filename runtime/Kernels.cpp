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
/// MLIR's descriptor of a rank-`Rank` memref of f32.
template <int Rank>
struct Descriptor {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[Rank];
  int64_t strides[Rank];
  float *data() const { return aligned + offset; }
};
using Matrix = Descriptor<2>;
using Batch = Descriptor<3>;

/// c += op(a) * op(b) on row-major matrices with leading dimensions.
void gemm(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
          const float *a, int64_t lda, const float *b, int64_t ldb, float *c,
          int64_t ldc) {
  cblas_sgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
              transposeB ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
              1.0f, a, (int)lda, b, (int)ldb, 1.0f, c, (int)ldc);
}
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
  gemm(transposeA, transposeB, m, n, k, a->data(), a->strides[0], b->data(),
       b->strides[0], c->data(), c->strides[0]);
}

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
    gemm(transposeA, transposeB, m, n, k, a->data() + i * a->strides[0],
         a->strides[1], b->data() + i * b->strides[0], b->strides[1],
         c->data() + i * c->strides[0], c->strides[1]);
}
