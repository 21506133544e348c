//===- CudaEngine.cpp - libloomrt_cuda: what CUDA bundles call ------------===//
//
// The functions the host code of `loomc --target=cuda` calls, in
// libloomrt_cuda.so (built where CMake finds the CUDA toolkit and cuBLAS;
// libloomrt itself never links CUDA, so that it loads on machines without a
// driver):
//
// * MLIR's GPU runtime interface (`mgpuModuleLoad`, `mgpuLaunchKernel`,
//   `mgpuMemAlloc`, ...), over the CUDA driver API, whose entry points come
//   from the runtime API (cudaGetDriverEntryPointByVersion) rather than from
//   linking libcuda. Every launch and copy goes to one stream per device,
//   which `mgpuStreamCreate` hands out (and `mgpuStreamDestroy` keeps), so
//   that a buffer freed on it can be given out again at once: everything
//   after the free is ordered after the last use.
// * A caching allocator of device memory (blocks kept by rounded size), with
//   the statistics of the CPU engine's: the live bytes of the compiled
//   code's temporaries and their peak (the runtime's own buffers, a
//   session's tensors, are not temporaries).
// * The products the compiler hands to libraries: `loom_cuda_matmul_<t>`
//   and `loom_cuda_batch_matmul_<t>` (t: f32, bf16, f16; f32 results), with
//   the CPU kernels' flags (1: b transposed, 2: a transposed, 4: overwrite
//   c), over cuBLAS on the same stream. fp32 products use TF32 tensor cores
//   only when LOOM_CUDA_TF32=1.
// * Errors: CUDA's first error on a thread is kept with the call that got
//   it; the runtime reads it after each entry point (loomCudaTakeError) and
//   turns it into a loom_status_t. Nothing prints, nothing aborts.
//
//===----------------------------------------------------------------------===//

#include "CudaEngine.h"
#include "LowPrecision.h"
#include "MemRefDescriptor.h"

#include <cublas_v2.h>
#include <cuda.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <string>
#include <type_traits>

namespace {

thread_local std::string firstError;

void fail(const char *call, const std::string &what) {
  if (firstError.empty())
    firstError = std::string(call) + ": " + what;
}

bool check(cudaError_t status, const char *call) {
  if (status == cudaSuccess)
    return true;
  fail(call, cudaGetErrorString(status));
  return false;
}

bool check(cublasStatus_t status, const char *call) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return true;
  fail(call, cublasGetStatusString(status));
  return false;
}

/// The driver API's functions the engine uses, looked up through the
/// runtime API.
struct Driver {
  CUresult (*moduleLoadData)(CUmodule *, const void *) = nullptr;
  CUresult (*moduleUnload)(CUmodule) = nullptr;
  CUresult (*moduleGetFunction)(CUfunction *, CUmodule, const char *) = nullptr;
  CUresult (*launchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned,
                           unsigned, unsigned, unsigned, CUstream, void **,
                           void **) = nullptr;
  CUresult (*getErrorString)(CUresult, const char **) = nullptr;
  bool ready = false;
};

template <typename F> bool entry(const char *name, F &fn) {
  void *ptr = nullptr;
  cudaDriverEntryPointQueryResult found;
  if (!check(cudaGetDriverEntryPointByVersion(name, &ptr, 12000,
                                              cudaEnableDefault, &found),
             name))
    return false;
  if (found != cudaDriverEntryPointSuccess || !ptr) {
    fail(name, "not found in the CUDA driver");
    return false;
  }
  fn = reinterpret_cast<F>(ptr);
  return true;
}

/// The device, its stream and cuBLAS handle, made on first use: bundles
/// load their kernels from a constructor, before any session exists. The
/// device is LOCAL_RANK's (one rank per GPU, as torchrun sets it), else 0.
struct Engine {
  Driver driver;
  cudaStream_t stream = nullptr;
  cublasHandle_t blas = nullptr;
  bool tf32 = false;
  bool ready = false;

  std::mutex mutex;
  // Free blocks by rounded size, and each live block's size and whether it
  // is a temporary of compiled code.
  std::multimap<size_t, void *> freeBlocks;
  std::map<void *, std::pair<size_t, bool>> liveBlocks;
  size_t temporaryBytes = 0, temporaryPeak = 0, reservedBytes = 0;

  void *allocate(uint64_t bytes, bool temporary);

  bool init() {
    if (ready)
      return true;
    int device = 0;
    if (const char *local = std::getenv("LOCAL_RANK"))
      device = std::atoi(local);
    int count = 0;
    if (!check(cudaGetDeviceCount(&count), "cudaGetDeviceCount"))
      return false;
    if (count == 0) {
      fail("cudaGetDeviceCount", "no CUDA device");
      return false;
    }
    device %= count;
    if (!check(cudaSetDevice(device), "cudaSetDevice") ||
        !check(cudaFree(nullptr), "cudaFree (context)") ||
        !check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
               "cudaStreamCreateWithFlags") ||
        !check(cublasCreate(&blas), "cublasCreate") ||
        !check(cublasSetStream(blas, stream), "cublasSetStream"))
      return false;
    if (!entry("cuModuleLoadData", driver.moduleLoadData) ||
        !entry("cuModuleUnload", driver.moduleUnload) ||
        !entry("cuModuleGetFunction", driver.moduleGetFunction) ||
        !entry("cuLaunchKernel", driver.launchKernel) ||
        !entry("cuGetErrorString", driver.getErrorString))
      return false;
    const char *tf32Env = std::getenv("LOOM_CUDA_TF32");
    tf32 = tf32Env && std::strcmp(tf32Env, "1") == 0;
    ready = true;
    return true;
  }

  bool checkDriver(CUresult status, const char *call) {
    if (status == CUDA_SUCCESS)
      return true;
    const char *what = nullptr;
    if (driver.getErrorString)
      driver.getErrorString(status, &what);
    fail(call, what ? what : "CUDA driver error " + std::to_string(status));
    return false;
  }
};

Engine &engine() {
  static Engine *instance = new Engine; // Outlives bundles' destructors.
  return *instance;
}

/// Blocks are rounded to 512 bytes, and above 1 MiB to 1/8 of their power
/// of two, so that a block can serve requests of a slightly smaller size.
size_t roundedSize(size_t bytes) {
  if (bytes <= (size_t(1) << 20))
    return (bytes + 511) & ~size_t(511);
  size_t power = size_t(1) << (63 - __builtin_clzll(bytes));
  size_t step = power / 8;
  return (bytes + step - 1) / step * step;
}

using loom::rt::Descriptor;

using loom::rt::Bf16;
using loom::rt::F16;

template <typename T> cudaDataType_t dataType();
template <> cudaDataType_t dataType<float>() { return CUDA_R_32F; }
template <> cudaDataType_t dataType<Bf16>() { return CUDA_R_16BF; }
template <> cudaDataType_t dataType<F16>() { return CUDA_R_16F; }

/// c = op(a) * op(b) (+ c unless bit 4 of `flags`) for `batch` row-major
/// products `stride*` elements apart: the column-major product
/// c^T = op(b)^T * op(a)^T, which is cuBLAS's.
template <typename T>
void gemm(int64_t flags, int64_t batch, int64_t m, int64_t n, int64_t k,
          const T *a, int64_t lda, int64_t strideA, const T *b, int64_t ldb,
          int64_t strideB, float *c, int64_t ldc, int64_t strideC) {
  Engine &e = engine();
  if (!e.init() || m == 0 || n == 0 || batch == 0)
    return;
  bool transposeA = flags & 2, transposeB = flags & 1;
  float alpha = 1.0f, beta = flags & 4 ? 0.0f : 1.0f;
  cublasComputeType_t compute = std::is_same<T, float>::value && e.tf32
                                    ? CUBLAS_COMPUTE_32F_FAST_TF32
                                    : CUBLAS_COMPUTE_32F;
  cublasOperation_t opB = transposeB ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opA = transposeA ? CUBLAS_OP_T : CUBLAS_OP_N;
  check(cublasGemmStridedBatchedEx(
            e.blas, opB, opA, n, m, k, &alpha, b, dataType<T>(), ldb, strideB,
            a, dataType<T>(), lda, strideA, &beta, c, CUDA_R_32F, ldc, strideC,
            batch, compute, CUBLAS_GEMM_DEFAULT),
        "cublasGemmStridedBatchedEx");
}

template <typename T>
void matmul(Descriptor<T, 2> *a, Descriptor<T, 2> *b, Descriptor<float, 2> *c,
            int64_t flags) {
  int64_t k = flags & 2 ? a->sizes[0] : a->sizes[1];
  gemm(flags, 1, c->sizes[0], c->sizes[1], k, a->data(), a->strides[0], 0,
       b->data(), b->strides[0], 0, c->data(), c->strides[0], 0);
}

template <typename T>
void batchMatmul(Descriptor<T, 3> *a, Descriptor<T, 3> *b,
                 Descriptor<float, 3> *c, int64_t flags) {
  int64_t k = flags & 2 ? a->sizes[1] : a->sizes[2];
  gemm(flags, c->sizes[0], c->sizes[1], c->sizes[2], k, a->data(),
       a->strides[1], a->strides[0], b->data(), b->strides[1], b->strides[0],
       c->data(), c->strides[1], c->strides[0]);
}

} // namespace

//===----------------------------------------------------------------------===//
// MLIR's GPU runtime interface
//===----------------------------------------------------------------------===//

LOOM_CUDA_API CUmodule mgpuModuleLoad(void *data, size_t /*size*/) {
  Engine &e = engine();
  CUmodule module = nullptr;
  if (e.init())
    e.checkDriver(e.driver.moduleLoadData(&module, data), "cuModuleLoadData");
  return module;
}

LOOM_CUDA_API void mgpuModuleUnload(CUmodule module) {
  Engine &e = engine();
  if (module && e.ready)
    e.checkDriver(e.driver.moduleUnload(module), "cuModuleUnload");
}

LOOM_CUDA_API CUfunction mgpuModuleGetFunction(CUmodule module,
                                               const char *name) {
  Engine &e = engine();
  CUfunction function = nullptr;
  if (module && e.ready)
    e.checkDriver(e.driver.moduleGetFunction(&function, module, name),
                  "cuModuleGetFunction");
  return function;
}

LOOM_CUDA_API void mgpuLaunchKernel(CUfunction function, intptr_t gridX,
                                    intptr_t gridY, intptr_t gridZ,
                                    intptr_t blockX, intptr_t blockY,
                                    intptr_t blockZ, int32_t smem,
                                    CUstream stream, void **params,
                                    void **extra, size_t /*paramsCount*/) {
  Engine &e = engine();
  if (!function || !e.ready) {
    fail("mgpuLaunchKernel", "no kernel (its module did not load)");
    return;
  }
  e.checkDriver(e.driver.launchKernel(function, gridX, gridY, gridZ, blockX,
                                      blockY, blockZ, smem, stream, params,
                                      extra),
                "cuLaunchKernel");
}

LOOM_CUDA_API CUstream mgpuStreamCreate() {
  Engine &e = engine();
  return e.init() ? reinterpret_cast<CUstream>(e.stream) : nullptr;
}

LOOM_CUDA_API void mgpuStreamDestroy(CUstream) {}

LOOM_CUDA_API void mgpuStreamSynchronize(CUstream stream) {
  check(cudaStreamSynchronize(reinterpret_cast<cudaStream_t>(stream)),
        "cudaStreamSynchronize");
}

LOOM_CUDA_API void *mgpuMemAlloc(uint64_t bytes, CUstream /*stream*/,
                                 bool /*isHostShared*/) {
  return engine().allocate(bytes, /*temporary=*/true);
}

LOOM_CUDA_API void mgpuMemFree(void *ptr, CUstream /*stream*/) {
  loomCudaFree(ptr);
}

LOOM_CUDA_API void mgpuMemcpy(void *dst, void *src, size_t bytes,
                              CUstream stream) {
  check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault,
                        reinterpret_cast<cudaStream_t>(stream)),
        "cudaMemcpyAsync");
}

LOOM_CUDA_API void mgpuSetDefaultDevice(int32_t device) {
  check(cudaSetDevice(device), "cudaSetDevice");
}

//===----------------------------------------------------------------------===//
// The runtime's side (CudaEngine.h)
//===----------------------------------------------------------------------===//

void *Engine::allocate(uint64_t bytes, bool temporary) {
  if (!init())
    return nullptr;
  size_t size = roundedSize(bytes ? bytes : 1);
  std::lock_guard<std::mutex> lock(mutex);
  void *ptr = nullptr;
  auto it = freeBlocks.find(size);
  if (it != freeBlocks.end()) {
    ptr = it->second;
    freeBlocks.erase(it);
  } else {
    if (cudaMalloc(&ptr, size) != cudaSuccess) {
      // Out of memory: give the cached blocks back and try once more.
      cudaGetLastError();
      for (auto &[blockSize, block] : freeBlocks) {
        cudaFree(block);
        reservedBytes -= blockSize;
      }
      freeBlocks.clear();
      if (!check(cudaMalloc(&ptr, size), "cudaMalloc"))
        return nullptr;
    }
    reservedBytes += size;
  }
  liveBlocks[ptr] = {size, temporary};
  if (temporary) {
    temporaryBytes += size;
    temporaryPeak = std::max(temporaryPeak, temporaryBytes);
  }
  return ptr;
}

LOOM_CUDA_API void *loomCudaAlloc(uint64_t bytes) {
  return engine().allocate(bytes, /*temporary=*/false);
}

LOOM_CUDA_API void loomCudaFree(void *ptr) {
  if (!ptr)
    return;
  Engine &e = engine();
  std::lock_guard<std::mutex> lock(e.mutex);
  auto it = e.liveBlocks.find(ptr);
  if (it == e.liveBlocks.end()) {
    fail("mgpuMemFree", "a pointer the engine did not allocate");
    return;
  }
  auto [size, temporary] = it->second;
  if (temporary)
    e.temporaryBytes -= size;
  e.freeBlocks.emplace(size, ptr);
  e.liveBlocks.erase(it);
}

LOOM_CUDA_API void loomCudaMemoryStats(size_t *live, size_t *peak,
                                       size_t *reserved) {
  Engine &e = engine();
  std::lock_guard<std::mutex> lock(e.mutex);
  *live = e.temporaryBytes;
  *peak = e.temporaryPeak;
  *reserved = e.reservedBytes;
}

LOOM_CUDA_API void loomCudaResetPeak(void) {
  Engine &e = engine();
  std::lock_guard<std::mutex> lock(e.mutex);
  e.temporaryPeak = e.temporaryBytes;
}

LOOM_CUDA_API int loomCudaCopy(void *dst, const void *src, size_t bytes) {
  Engine &e = engine();
  return e.init() &&
         check(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, e.stream),
               "cudaMemcpyAsync") &&
         check(cudaStreamSynchronize(e.stream), "cudaStreamSynchronize");
}

LOOM_CUDA_API size_t loomCudaTakeError(char *buffer, size_t size) {
  size_t length = firstError.size();
  if (buffer && size > 0) {
    size_t copied = std::min(length, size - 1);
    std::memcpy(buffer, firstError.data(), copied);
    buffer[copied] = '\0';
  }
  firstError.clear();
  return length;
}

//===----------------------------------------------------------------------===//
// The products
//===----------------------------------------------------------------------===//

#define LOOM_CUDA_KERNELS(SUFFIX, T)                                           \
  LOOM_CUDA_API void _mlir_ciface_loom_cuda_matmul_##SUFFIX(                   \
      Descriptor<T, 2> *a, Descriptor<T, 2> *b, Descriptor<float, 2> *c,       \
      int64_t flags) {                                                         \
    matmul(a, b, c, flags);                                                    \
  }                                                                            \
  LOOM_CUDA_API void _mlir_ciface_loom_cuda_batch_matmul_##SUFFIX(             \
      Descriptor<T, 3> *a, Descriptor<T, 3> *b, Descriptor<float, 3> *c,       \
      int64_t flags) {                                                         \
    batchMatmul(a, b, c, flags);                                               \
  }
LOOM_CUDA_KERNELS(f32, float)
LOOM_CUDA_KERNELS(bf16, Bf16)
LOOM_CUDA_KERNELS(f16, F16)
#undef LOOM_CUDA_KERNELS
