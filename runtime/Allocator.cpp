//===- Allocator.cpp - the heap of compiled bundles -----------------------===//
//
// Bundles allocate their temporaries through MLIR's generic allocation
// functions (`finalize-memref-to-llvm{use-generic-functions}`), which
// resolve here when the bundle is loaded. A training step allocates and
// frees the same sizes every call; keeping freed blocks for reuse saves
// the page faults and zeroing of fresh pages that a large malloc/free pair
// costs each time (glibc maps large blocks and returns them to the kernel).
//
// Blocks are 64-byte aligned, with a 64-byte header that records their
// size class and the size asked for. Up to kCacheLimit bytes of freed
// blocks are kept, per exact size; the rest go back to malloc.
//
// The bytes asked for and not yet freed are counted, with their
// high-water mark: the memory a bundle's temporaries take at most, which
// `loom-buffer-peak` predicts from the compiled code
// (loom_session_memory_stats).
//
//===----------------------------------------------------------------------===//

#include "Allocator.h"
#include "loom/runtime.h"

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace {

constexpr size_t kHeader = 64;
constexpr size_t kCacheLimit = size_t(4) << 30;

struct BlockCache {
  std::mutex mutex;
  std::unordered_map<size_t, std::vector<void *>> free;
  size_t cachedBytes = 0;
  /// Bytes asked for and not freed, and their most since the last reset.
  size_t liveBytes = 0, peakBytes = 0;

  ~BlockCache() {
    for (auto &[size, blocks] : free)
      for (void *block : blocks)
        std::free(block);
  }
};

BlockCache &cache() {
  static BlockCache *instance = new BlockCache(); // outlives static bundles
  return *instance;
}

/// Counts `size` bytes as alive (`alive`) or freed. Called under the mutex.
void account(BlockCache &c, size_t size, bool alive) {
  if (alive) {
    c.liveBytes += size;
    if (c.liveBytes > c.peakBytes)
      c.peakBytes = c.liveBytes;
  } else {
    c.liveBytes -= size;
  }
}

void *allocate(size_t size) {
  size_t rounded = (size + kHeader - 1) / kHeader * kHeader;
  BlockCache &c = cache();
  void *block = nullptr;
  {
    // One lock per allocation: the bytes count as alive from here (and are
    // taken back if malloc fails).
    std::lock_guard<std::mutex> lock(c.mutex);
    account(c, size, /*alive=*/true);
    auto it = c.free.find(rounded);
    if (it != c.free.end() && !it->second.empty()) {
      block = it->second.back();
      it->second.pop_back();
      c.cachedBytes -= rounded;
    }
  }
  if (!block) {
    block = std::aligned_alloc(kHeader, rounded + kHeader);
    if (!block) {
      std::lock_guard<std::mutex> lock(c.mutex);
      account(c, size, /*alive=*/false);
      return nullptr;
    }
    static_cast<size_t *>(block)[0] = rounded;
  }
  static_cast<size_t *>(block)[1] = size;
  return static_cast<char *>(block) + kHeader;
}

void release(void *pointer) {
  if (!pointer)
    return;
  void *block = static_cast<char *>(pointer) - kHeader;
  size_t rounded = static_cast<size_t *>(block)[0];
  BlockCache &c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    account(c, static_cast<size_t *>(block)[1], /*alive=*/false);
    if (c.cachedBytes + rounded <= kCacheLimit) {
      c.free[rounded].push_back(block);
      c.cachedBytes += rounded;
      return;
    }
  }
  std::free(block);
}

} // namespace

extern "C" LOOM_API void *_mlir_memref_to_llvm_alloc(size_t size) {
  return allocate(size);
}

extern "C" LOOM_API void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment,
                                                             size_t size) {
  // Every block is 64-byte aligned; larger alignments are not requested by
  // Loom's lowering.
  if (alignment > kHeader)
    return nullptr;
  return allocate(size);
}

extern "C" LOOM_API void _mlir_memref_to_llvm_free(void *pointer) {
  release(pointer);
}

namespace loom::rt {
void temporaryBytes(size_t *live, size_t *peak) {
  BlockCache &c = cache();
  std::lock_guard<std::mutex> lock(c.mutex);
  *live = c.liveBytes;
  *peak = c.peakBytes;
}
} // namespace loom::rt

extern "C" LOOM_API void loom_memory_reset_peak(void) {
  {
    BlockCache &c = cache();
    std::lock_guard<std::mutex> lock(c.mutex);
    c.peakBytes = c.liveBytes;
  }
  loom::rt::resetDevicePeaks();
}
