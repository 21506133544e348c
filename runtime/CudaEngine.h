//===- CudaEngine.h - libloomrt_cuda's interface to the runtime -*- C++ -*-===//
//
// What libloomrt reads from libloomrt_cuda.so (CudaEngine.cpp), which it
// opens only for CUDA bundles: device memory through the engine's caching
// allocator, copies on the engine's stream, and the first CUDA error of the
// calling thread. C names, for dlsym.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_CUDAENGINE_H
#define LOOM_RUNTIME_CUDAENGINE_H

#include <cstddef>
#include <cstdint>

#define LOOM_CUDA_API extern "C" __attribute__((visibility("default")))

/// Device memory of at least `bytes` for the runtime's own buffers (a
/// session's tensors; null on failure, with the error kept).
LOOM_CUDA_API void *loomCudaAlloc(uint64_t bytes);
/// Gives a block (the runtime's, or compiled code's) back to the cache,
/// reused by later allocations in stream order.
LOOM_CUDA_API void loomCudaFree(void *ptr);
/// The bytes compiled code has allocated (mgpuMemAlloc: the steps'
/// temporaries) and not freed, their most since the start or the last
/// loomCudaResetPeak, and the bytes the cache holds from CUDA.
LOOM_CUDA_API void loomCudaMemoryStats(size_t *live, size_t *peak,
                                       size_t *reserved);
LOOM_CUDA_API void loomCudaResetPeak(void);
/// Copies between host and device memory (either way) after the work queued
/// so far, and waits for it; 0 on failure.
LOOM_CUDA_API int loomCudaCopy(void *dst, const void *src, size_t bytes);
/// Writes the calling thread's first CUDA error since the last call (with
/// the call that got it) into `buffer` and clears it; returns its length (0:
/// none).
LOOM_CUDA_API size_t loomCudaTakeError(char *buffer, size_t size);

#endif // LOOM_RUNTIME_CUDAENGINE_H
