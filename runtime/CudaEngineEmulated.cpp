//===- CudaEngineEmulated.cpp - a device engine in host memory ------------===//
//
// libloomrt_cuda_emulated.so: CudaEngine.h's interface with host memory
// standing in for the device, for bundles of `loomc --target=cuda-emulated`
// (the CUDA target's placement run on the CPU). The session keeps separate
// "device" and host copies of every tensor and copies between them as it
// would with a GPU, so the CPU tests check that bookkeeping: a copy it
// forgets leaves a run on stale values. Counts its bytes as the CUDA
// engine does.
//
//===----------------------------------------------------------------------===//

#include "CudaEngine.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>

namespace {

struct State {
  std::mutex mutex;
  std::map<void *, size_t> live;
  size_t liveBytes = 0, peakBytes = 0;
};

State &state() {
  static State *instance = new State;
  return *instance;
}

} // namespace

LOOM_CUDA_API void *loomCudaAlloc(uint64_t bytes) {
  size_t size = (bytes + 511) / 512 * 512;
  void *ptr = std::aligned_alloc(512, size ? size : 512);
  if (!ptr)
    return nullptr;
  // Not the host copy's contents: a run must not see what was never copied.
  std::memset(ptr, 0xA5, size ? size : 512);
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.live[ptr] = size;
  s.liveBytes += size;
  s.peakBytes = std::max(s.peakBytes, s.liveBytes);
  return ptr;
}

LOOM_CUDA_API void loomCudaFree(void *ptr) {
  if (!ptr)
    return;
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  auto it = s.live.find(ptr);
  if (it == s.live.end())
    return;
  s.liveBytes -= it->second;
  s.live.erase(it);
  std::free(ptr);
}

LOOM_CUDA_API void loomCudaMemoryStats(size_t *live, size_t *peak,
                                       size_t *reserved) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  *live = s.liveBytes;
  *peak = s.peakBytes;
  *reserved = s.liveBytes;
}

LOOM_CUDA_API void loomCudaResetPeak(void) {
  State &s = state();
  std::lock_guard<std::mutex> lock(s.mutex);
  s.peakBytes = s.liveBytes;
}

LOOM_CUDA_API int loomCudaCopy(void *dst, const void *src, size_t bytes) {
  std::memcpy(dst, src, bytes);
  return 1;
}

LOOM_CUDA_API int loomCudaSynchronize(void) { return 1; }

LOOM_CUDA_API size_t loomCudaTakeError(char *buffer, size_t size) {
  if (buffer && size)
    buffer[0] = '\0';
  return 0;
}
