//===- Kernels.cpp - library kernels that generated code calls ------------===//
//
// Contractions that a library does better than generated loops. Compiled
// bundles call these through MLIR's C interface (`_mlir_ciface_<name>`, one
// memref descriptor pointer per memref argument); they resolve against
// libloomrt when the bundle is loaded. fp32 GEMM is oneDNN's (`dnnl_sgemm`)
// for large results and OpenBLAS's for small ones; bf16 products (f32
// results) are oneDNN matmul primitives (AMX or AVX-512 BF16 where the CPU
// has them), cached per shape, unless the f32 GEMM on their factors widened
// to f32 is faster on this CPU (nativeBf16); fp16 products too where oneDNN has
// them (the oneDNN 2.6 of Debian 12 has no f16 matmul for CPUs, so there they
// widen their factors and take the f32 GEMM). All run single-threaded, split
// over the runtime's thread pool (Parallel.h), which also runs the bundles' own
// parallel loops: one set of threads for everything.
//
//===----------------------------------------------------------------------===//

#include "LowPrecision.h"
#include "MemRefDescriptor.h"
#include "Parallel.h"

#include "loom/runtime.h"

#include <cblas.h>
#include <oneapi/dnnl/dnnl.hpp>
#include <omp.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace {
using loom::rt::Bf16;
using loom::rt::F16;
using loom::rt::toFloat;

using loom::rt::Descriptor;
template <typename T> using Matrix = Descriptor<T, 2>;
template <typename T> using Batch = Descriptor<T, 3>;
template <typename T> using Grouped = Descriptor<T, 5>;

/// Makes the calling thread's OpenMP team (oneDNN's) a single thread: the
/// pool splits the work. It is a per-thread setting.
void singleThreadedDnnl() {
  thread_local const bool once = [] {
    omp_set_num_threads(1);
    return true;
  }();
  (void)once;
}

/// Results with at least this many rows and columns go to oneDNN, smaller
/// ones to OpenBLAS. On the products of the benchmark models (one thread
/// each), oneDNN's JIT GEMM was 1-19 % faster from 128 x 128 up; on the
/// convolutions of a small ResNet (8 to 64 output channels) OpenBLAS's
/// small-matrix kernels were 5-35 % faster.
constexpr int64_t kOneDnnMinSide = 128;

/// c = op(a) * op(b) + beta * c (beta 1: accumulate, 0: overwrite) on
/// row-major matrices with leading dimensions, on the calling thread.
void gemm(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
          const float *a, int64_t lda, const float *b, int64_t ldb, float beta,
          float *c, int64_t ldc) {
  if (m < kOneDnnMinSide || n < kOneDnnMinSide) {
    // The pool splits the work; OpenBLAS's own threads would compete with it.
    static const bool singleThreadedBlas = [] {
      openblas_set_num_threads(1);
      return true;
    }();
    (void)singleThreadedBlas;
    cblas_sgemm(CblasRowMajor, transposeA ? CblasTrans : CblasNoTrans,
                transposeB ? CblasTrans : CblasNoTrans, (int)m, (int)n, (int)k,
                1.0f, a, (int)lda, b, (int)ldb, beta, c, (int)ldc);
    return;
  }
  // Likewise oneDNN's OpenMP team.
  singleThreadedDnnl();
  dnnl_status_t status =
      dnnl_sgemm(transposeA ? 'T' : 'N', transposeB ? 'T' : 'N', m, n, k, 1.0f,
                 a, lda, b, ldb, beta, c, ldc);
  if (status != dnnl_success) {
    // Only malformed arguments fail, which the compiler never emits.
    std::fprintf(stderr,
                 "loom: oneDNN GEMM [%lld x %lld x %lld] failed (status %d)\n",
                 (long long)m, (long long)n, (long long)k, (int)status);
    std::abort();
  }
}
template <typename T> constexpr dnnl::memory::data_type kDnnlType;
template <>
constexpr dnnl::memory::data_type kDnnlType<Bf16> = dnnl::memory::data_type::bf16;
template <>
constexpr dnnl::memory::data_type kDnnlType<F16> = dnnl::memory::data_type::f16;

/// A oneDNN matmul of one shape, layout and element type, with its memory
/// objects (whose data pointers are set per call); invalid when oneDNN has
/// no implementation for it.
struct LowGemm {
  dnnl::matmul primitive;
  dnnl::memory a, b, c;
  bool valid = false;
};

/// The factors of a bf16 or f16 product in f32 (exact: every bf16 and f16
/// value is an f32 value), densely packed in their own layouts (leading
/// dimensions: a's columns, b's columns) in the calling thread's buffers;
/// converted over the thread pool when `parallel`.
template <typename T>
std::pair<const float *, const float *>
widenFactors(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
             const T *a, int64_t lda, const T *b, int64_t ldb, bool parallel) {
  thread_local std::vector<float> wideA, wideB;
  auto widen = [&](const T *from, int64_t ld, int64_t rows, int64_t cols,
                   std::vector<float> &to) {
    to.resize(rows * cols);
    float *out = to.data();
    auto convert = [&](int64_t begin, int64_t end) {
      for (int64_t i = begin; i < end; ++i)
        for (int64_t j = 0; j < cols; ++j)
          out[i * cols + j] = toFloat(from[i * ld + j]);
    };
    if (parallel)
      loom::rt::parallelFor(rows, convert);
    else
      convert(0, rows);
  };
  widen(a, lda, transposeA ? k : m, transposeA ? m : k, wideA);
  widen(b, ldb, transposeB ? n : k, transposeB ? k : n, wideB);
  return {wideA.data(), wideB.data()};
}

/// c = op(a) * op(b) + beta * c with bf16 or f16 factors and an f32 result,
/// on the calling thread, by the f32 GEMM on the factors widened to f32.
template <typename T>
void widenedGemm(bool transposeA, bool transposeB, int64_t m, int64_t n,
                 int64_t k, const T *a, int64_t lda, const T *b, int64_t ldb,
                 float beta, float *c, int64_t ldc) {
  auto [wideA, wideB] = widenFactors(transposeA, transposeB, m, n, k, a, lda, b,
                                     ldb, /*parallel=*/false);
  gemm(transposeA, transposeB, m, n, k, wideA, transposeA ? m : k, wideB,
       transposeB ? k : n, beta, c, ldc);
}

/// c = op(a) * op(b) + beta * c with bf16 or f16 factors and an f32 result
/// by oneDNN's matmul, on the calling thread; false when oneDNN has no
/// implementation for it (f16 in oneDNN 2.6, also on AVX-512 FP16 CPUs).
template <typename T>
bool nativeGemm(bool transposeA, bool transposeB, int64_t m, int64_t n,
                int64_t k, const T *a, int64_t lda, const T *b, int64_t ldb,
                float beta, float *c, int64_t ldc) {
  singleThreadedDnnl();
  using dnnl::memory;
  static dnnl::engine engine(dnnl::engine::kind::cpu, 0);
  thread_local dnnl::stream stream(engine);
  using Key = std::tuple<bool, bool, int64_t, int64_t, int64_t, int64_t,
                         int64_t, int64_t, bool>;
  thread_local std::map<Key, LowGemm> cache;
  Key key{transposeA, transposeB, m, n, k, lda, ldb, ldc, beta != 0.0f};
  auto [it, inserted] = cache.try_emplace(key);
  LowGemm &g = it->second;
  if (inserted) {
    try {
      memory::desc aDesc({m, k}, kDnnlType<T>,
                         transposeA ? memory::dims{1, lda}
                                    : memory::dims{lda, 1});
      memory::desc bDesc({k, n}, kDnnlType<T>,
                         transposeB ? memory::dims{1, ldb}
                                    : memory::dims{ldb, 1});
      memory::desc cDesc({m, n}, memory::data_type::f32, memory::dims{ldc, 1});
      dnnl::primitive_attr attr;
      if (beta != 0.0f) {
        dnnl::post_ops ops;
        ops.append_sum(beta);
        attr.set_post_ops(ops);
      }
      dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(aDesc, bDesc, cDesc),
                                      attr, engine);
      g.primitive = dnnl::matmul(pd);
      g.a = memory(aDesc, engine, nullptr);
      g.b = memory(bDesc, engine, nullptr);
      g.c = memory(cDesc, engine, nullptr);
      g.valid = true;
    } catch (const dnnl::error &) {
      g.valid = false;
    }
  }
  if (!g.valid)
    return false;
  g.a.set_data_handle(const_cast<T *>(a));
  g.b.set_data_handle(const_cast<T *>(b));
  g.c.set_data_handle(c);
  g.primitive.execute(
      stream,
      {{DNNL_ARG_SRC, g.a}, {DNNL_ARG_WEIGHTS, g.b}, {DNNL_ARG_DST, g.c}});
  return true;
}

/// Whether bf16 products take oneDNN's bf16 matmul (false: widenedGemm).
/// Where the CPU multiplies bf16 fast they do: with AMX, and with AVX-512
/// BF16 on AMD's CPUs (an AMD EPYC (Zen 4): oneDNN's bf16 products at 1.97x
/// its f32 GEMM's rate). Elsewhere the f32 GEMM on widened factors computes
/// the same products, accumulated in f32, faster: an Intel Xeon VM with
/// AVX-512 BF16 but no AMX ran oneDNN's bf16 matmul at 84 GFLOP/s against
/// the f32 GEMM's 163 on one thread, and without AVX-512 BF16 oneDNN
/// emulates bf16. Decided by the CPU, not by timing, so that every process
/// on a machine decides alike (the ranks of a run; a resumed run and a
/// straight one, which must agree bit for bit). LOOM_BF16_GEMM=native or
/// =widened decides instead.
bool nativeBf16() {
  static const bool native = [] {
    if (const char *choice = std::getenv("LOOM_BF16_GEMM"); choice && *choice) {
      if (std::strcmp(choice, "native") == 0)
        return true;
      if (std::strcmp(choice, "widened") == 0)
        return false;
      std::fprintf(stderr,
                   "loom: warning: LOOM_BF16_GEMM=%s is neither native nor "
                   "widened; deciding by the CPU\n",
                   choice);
    }
    auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    auto has = [&](dnnl::cpu_isa wanted) {
      auto bits = static_cast<unsigned>(wanted);
      return (isa & bits) == bits;
    };
    if (has(dnnl::cpu_isa::avx512_core_amx))
      return true;
    bool amd = false;
#if defined(__x86_64__) || defined(__i386__)
    unsigned eax, ebx, ecx, edx;
    if (__get_cpuid(0, &eax, &ebx, &ecx, &edx)) {
      char vendor[13];
      std::memcpy(vendor, &ebx, 4);
      std::memcpy(vendor + 4, &edx, 4);
      std::memcpy(vendor + 8, &ecx, 4);
      vendor[12] = 0;
      amd = std::strcmp(vendor, "AuthenticAMD") == 0;
    }
#endif
    return amd && has(dnnl::cpu_isa::avx512_core_bf16);
  }();
  return native;
}

/// c = op(a) * op(b) + beta * c with bf16 or f16 factors and an f32 result,
/// on the calling thread: oneDNN's matmul where it has one (for bf16 where
/// nativeBf16), else the f32 GEMM on widened factors.
template <typename T>
void gemm(bool transposeA, bool transposeB, int64_t m, int64_t n, int64_t k,
          const T *a, int64_t lda, const T *b, int64_t ldb, float beta,
          float *c, int64_t ldc) {
  bool native = !std::is_same_v<T, Bf16> || nativeBf16();
  if (native &&
      nativeGemm(transposeA, transposeB, m, n, k, a, lda, b, ldb, beta, c, ldc))
    return;
  widenedGemm(transposeA, transposeB, m, n, k, a, lda, b, ldb, beta, c, ldc);
}

/// Products smaller than this many multiply-adds run on one thread.
constexpr int64_t kParallelGemmWork = 1 << 18;

/// gemm split over the thread pool, by blocks of rows or of columns of c
/// (multiples of 16, a multiple of the micro-kernels' tiles). Each thread packs the
/// whole of the operand the blocks share (b for blocks of rows, a for blocks
/// of columns), so the split goes along the longer side of c, which shares
/// the smaller operand.
template <typename T>
void parallelGemm(bool transposeA, bool transposeB, int64_t m, int64_t n,
                  int64_t k, const T *a, int64_t lda, const T *b, int64_t ldb,
                  float beta, float *c, int64_t ldc) {
  int threads = loom::rt::numThreads();
  constexpr int64_t tile = 16;
  bool rowsSplit = m >= threads * tile, columnsSplit = n >= threads * tile;
  bool byRows = rowsSplit && (m >= n || !columnsSplit);
  if (threads == 1 || m * n * k < kParallelGemmWork ||
      !(rowsSplit || columnsSplit)) {
    gemm(transposeA, transposeB, m, n, k, a, lda, b, ldb, beta, c, ldc);
    return;
  }
  if constexpr (std::is_same_v<T, Bf16>) {
    if (!nativeBf16()) {
      // Widened once, over the pool, rather than the factor the blocks
      // share by every thread.
      auto [wideA, wideB] = widenFactors(transposeA, transposeB, m, n, k, a,
                                         lda, b, ldb, /*parallel=*/true);
      parallelGemm(transposeA, transposeB, m, n, k, wideA, transposeA ? m : k,
                   wideB, transposeB ? k : n, beta, c, ldc);
      return;
    }
  }
  int64_t extent = byRows ? m : n, tiles = (extent + tile - 1) / tile;
  loom::rt::parallelFor(tiles, [&](int64_t begin, int64_t end) {
    int64_t lo = begin * tile, hi = std::min(end * tile, extent);
    if (byRows)
      gemm(transposeA, transposeB, hi - lo, n, k,
           transposeA ? a + lo : a + lo * lda, lda, b, ldb, beta, c + lo * ldc,
           ldc);
    else
      gemm(transposeA, transposeB, m, hi - lo, k, a, lda,
           transposeB ? b + lo * ldb : b + lo, ldb, beta, c + lo, ldc);
  });
}
/// c += op(a) * op(b): bit 0 of `flags` transposes `b` ([N, K] instead of
/// [K, N]), bit 1 transposes `a` ([K, M] instead of [M, K]), bit 2 overwrites
/// c (c = op(a) * op(b), c not read); c is [M, N]. Rows must be contiguous
/// (unit inner stride), which the compiler guarantees.
template <typename T>
void matmulKernel(Matrix<T> *a, Matrix<T> *b, Matrix<float> *c, int64_t flags) {
  bool transposeA = flags & 2, transposeB = flags & 1;
  float beta = flags & 4 ? 0.0f : 1.0f;
  int64_t m = c->sizes[0], n = c->sizes[1];
  int64_t k = transposeA ? a->sizes[0] : a->sizes[1];
  if (m == 0 || n == 0)
    return;
  parallelGemm(transposeA, transposeB, m, n, k, a->data(), a->strides[0],
               b->data(), b->strides[0], beta, c->data(), c->strides[0]);
}

/// c[i] += op(a[i]) * op(b[i]) (or = with bit 2 of `flags`) for every i of
/// the leading (batch) dimension, with `flags` as in matmulKernel.
template <typename T>
void batchMatmulKernel(Batch<T> *a, Batch<T> *b, Batch<float> *c,
                       int64_t flags) {
  bool transposeA = flags & 2, transposeB = flags & 1;
  float beta = flags & 4 ? 0.0f : 1.0f;
  int64_t m = c->sizes[1], n = c->sizes[2];
  int64_t k = transposeA ? a->sizes[1] : a->sizes[2];
  if (m == 0 || n == 0)
    return;
  int64_t batch = c->sizes[0];
  auto product = [&](int64_t i) {
    return std::make_tuple(a->data() + i * a->strides[0],
                           b->data() + i * b->strides[0],
                           c->data() + i * c->strides[0]);
  };
  // Whole products per thread when there are enough of them.
  if (batch < loom::rt::numThreads()) {
    for (int64_t i = 0; i < batch; ++i) {
      auto [ai, bi, ci] = product(i);
      parallelGemm(transposeA, transposeB, m, n, k, ai, a->strides[1], bi,
                   b->strides[1], beta, ci, c->strides[1]);
    }
    return;
  }
  loom::rt::parallelFor(batch, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      auto [ai, bi, ci] = product(i);
      gemm(transposeA, transposeB, m, n, k, ai, a->strides[1], bi,
           b->strides[1], beta, ci, c->strides[1]);
    }
  });
}

/// out[n, g, f, oh, ow] += sum_{c, kh, kw} in[n, g, c, oh*sh + kh*dh,
/// ow*sw + kw*dw] * filter[g, f, c, kh, kw] (linalg.conv_2d_ngchw_gfchw; the
/// input is already padded). For each image and group the receptive fields
/// are copied into a [Cg*KH*KW, OH*OW] matrix (im2col), skipped for 1x1
/// kernels with unit stride on dense images, and one GEMM with the group's
/// [Fg, Cg*KH*KW] filter produces its [Fg, OH*OW] outputs. Operands may have
/// any strides; non-dense filters and outputs go through packed copies.
template <typename T>
void conv2dKernel(Grouped<T> *in, Grouped<T> *filter, Grouped<float> *out,
                  int64_t strideH, int64_t strideW, int64_t dilationH,
                  int64_t dilationW) {
  const int64_t images = out->sizes[0], groups = out->sizes[1],
                features = out->sizes[2], outH = out->sizes[3],
                outW = out->sizes[4];
  const int64_t channels = in->sizes[2], kernelH = filter->sizes[3],
                kernelW = filter->sizes[4];
  const int64_t depth = channels * kernelH * kernelW, pixels = outH * outW;
  if (images == 0 || groups == 0 || features == 0 || pixels == 0)
    return;
  const int64_t *is = in->strides, *fs = filter->strides, *os = out->strides;
  // The filter of a group as a row-major [Fg, depth] matrix.
  bool denseFilter = fs[4] == 1 && fs[3] == kernelW &&
                     fs[2] == kernelH * kernelW && fs[1] == depth;
  bool denseOut = os[4] == 1 && os[3] == outW && os[2] == pixels;
  bool direct = kernelH == 1 && kernelW == 1 && strideH == 1 && strideW == 1 &&
                is[4] == 1 && is[3] == in->sizes[4] &&
                is[2] == in->sizes[3] * in->sizes[4];
  // Images are split over the thread pool, each thread packing into buffers
  // of its own; a single image splits its GEMMs instead.
  loom::rt::parallelFor(images, [&](int64_t firstImage, int64_t lastImage) {
    thread_local std::vector<T> columns, packedFilter;
    thread_local std::vector<float> packedOut;
    if (!direct)
      columns.resize(depth * pixels);
    if (!denseFilter)
      packedFilter.resize(features * depth);
    if (!denseOut)
      packedOut.resize(features * pixels);

    for (int64_t g = 0; g < groups; ++g) {
      const T *w = filter->data() + g * fs[0];
      int64_t ldw = fs[1];
      if (!denseFilter) {
        for (int64_t f = 0; f < features; ++f)
          for (int64_t c = 0; c < channels; ++c)
            for (int64_t kh = 0; kh < kernelH; ++kh)
              for (int64_t kw = 0; kw < kernelW; ++kw)
                packedFilter[f * depth + (c * kernelH + kh) * kernelW + kw] =
                    w[f * fs[1] + c * fs[2] + kh * fs[3] + kw * fs[4]];
        w = packedFilter.data();
        ldw = depth;
      }
      for (int64_t n = firstImage; n < lastImage; ++n) {
        const T *image = in->data() + n * is[0] + g * is[1];
        const T *cols = image;
        int64_t ldc = is[2];
        if (!direct) {
          T *col = columns.data();
          for (int64_t c = 0; c < channels; ++c)
            for (int64_t kh = 0; kh < kernelH; ++kh)
              for (int64_t kw = 0; kw < kernelW; ++kw) {
                T *row = col + ((c * kernelH + kh) * kernelW + kw) * pixels;
                for (int64_t oh = 0; oh < outH; ++oh) {
                  const T *src = image + c * is[2] +
                                     (oh * strideH + kh * dilationH) * is[3] +
                                     kw * dilationW * is[4];
                  T *dst = row + oh * outW;
                  int64_t step = strideW * is[4];
                  if (step == 1) {
                    std::memcpy(dst, src, outW * sizeof(T));
                    continue;
                  }
                  for (int64_t ow = 0; ow < outW; ++ow)
                    dst[ow] = src[ow * step];
                }
              }
          cols = col;
          ldc = pixels;
        }
        float *result = out->data() + n * os[0] + g * os[1];
        if (denseOut) {
          parallelGemm(false, false, features, pixels, depth, w, ldw, cols, ldc,
                       1.0f, result, os[2]);
          continue;
        }
        for (int64_t f = 0; f < features; ++f)
          for (int64_t oh = 0; oh < outH; ++oh)
            for (int64_t ow = 0; ow < outW; ++ow)
              packedOut[f * pixels + oh * outW + ow] =
                  result[f * os[2] + oh * os[3] + ow * os[4]];
        parallelGemm(false, false, features, pixels, depth, w, ldw, cols, ldc,
                     1.0f, packedOut.data(), pixels);
        for (int64_t f = 0; f < features; ++f)
          for (int64_t oh = 0; oh < outH; ++oh)
            for (int64_t ow = 0; ow < outW; ++ow)
              result[f * os[2] + oh * os[3] + ow * os[4]] =
                  packedOut[f * pixels + oh * outW + ow];
      }
    }
  });
}
} // namespace

// The kernels by element type of the factors: f32, bf16 and f16 (the
// result is f32 for all).
#define LOOM_KERNELS(SUFFIX, T)                                                \
  extern "C" LOOM_API void _mlir_ciface_loom_kernel_matmul_##SUFFIX(          \
      Matrix<T> *a, Matrix<T> *b, Matrix<float> *c, int64_t flags) {          \
    matmulKernel(a, b, c, flags);                                              \
  }                                                                            \
  extern "C" LOOM_API void _mlir_ciface_loom_kernel_batch_matmul_##SUFFIX(    \
      Batch<T> *a, Batch<T> *b, Batch<float> *c, int64_t flags) {             \
    batchMatmulKernel(a, b, c, flags);                                         \
  }                                                                            \
  extern "C" LOOM_API void _mlir_ciface_loom_kernel_conv2d_##SUFFIX(          \
      Grouped<T> *in, Grouped<T> *filter, Grouped<float> *out,                 \
      int64_t strideH, int64_t strideW, int64_t dilationH,                     \
      int64_t dilationW) {                                                     \
    conv2dKernel(in, filter, out, strideH, strideW, dilationH, dilationW);     \
  }
LOOM_KERNELS(f32, float)
LOOM_KERNELS(bf16, Bf16)
LOOM_KERNELS(f16, F16)
#undef LOOM_KERNELS
