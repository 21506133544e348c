//===- CudaEngineEmulated.cpp - a device engine in host memory ------------===//
//
// libloomrt_cuda_emulated.so: CudaEngine.h's interface with host memory
// standing in for the device, for bundles of `loomc --target=cuda-emulated`
// (the CUDA target's placement run on the CPU). The session keeps separate
// "device" and host copies of every tensor and copies between them as it
// would with a GPU, so the CPU tests check that bookkeeping: a copy it
// forgets leaves a run on stale values. Compiled code's temporaries stay the
// CPU allocator's, so this engine has none to count.
//
//===----------------------------------------------------------------------===//

#include "CudaEngine.h"

#include <cstdlib>
#include <cstring>

LOOM_CUDA_API void *loomCudaAlloc(uint64_t bytes) {
  size_t size = (bytes + 511) / 512 * 512;
  void *ptr = std::aligned_alloc(512, size ? size : 512);
  // Not the host copy's contents: a run must not see what was never copied.
  if (ptr)
    std::memset(ptr, 0xA5, size ? size : 512);
  return ptr;
}

LOOM_CUDA_API void loomCudaFree(void *ptr) { std::free(ptr); }

LOOM_CUDA_API void loomCudaMemoryStats(size_t *live, size_t *peak,
                                       size_t *reserved) {
  *live = *peak = *reserved = 0;
}

LOOM_CUDA_API void loomCudaResetPeak(void) {}

LOOM_CUDA_API int loomCudaCopy(void *dst, const void *src, size_t bytes) {
  std::memcpy(dst, src, bytes);
  return 1;
}

LOOM_CUDA_API size_t loomCudaTakeError(char *buffer, size_t size) {
  if (buffer && size)
    buffer[0] = '\0';
  return 0;
}
