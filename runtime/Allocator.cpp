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
// size class. Up to kCacheLimit bytes of freed blocks are kept, per exact
// size; the rest go back to malloc.
//
//===----------------------------------------------------------------------===//

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

void *allocate(size_t size) {
  size_t rounded = (size + kHeader - 1) / kHeader * kHeader;
  BlockCache &c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    auto it = c.free.find(rounded);
    if (it != c.free.end() && !it->second.empty()) {
      void *block = it->second.back();
      it->second.pop_back();
      c.cachedBytes -= rounded;
      return static_cast<char *>(block) + kHeader;
    }
  }
  void *block = std::aligned_alloc(kHeader, rounded + kHeader);
  if (!block)
    return nullptr;
  *static_cast<size_t *>(block) = rounded;
  return static_cast<char *>(block) + kHeader;
}

void release(void *pointer) {
  if (!pointer)
    return;
  void *block = static_cast<char *>(pointer) - kHeader;
  size_t rounded = *static_cast<size_t *>(block);
  BlockCache &c = cache();
  {
    std::lock_guard<std::mutex> lock(c.mutex);
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
