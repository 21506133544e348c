//===- AllocatorTest.cpp - the heap that compiled bundles allocate from ---===//
//
// libloomrt implements MLIR's generic allocation functions, which bundles
// call for their temporaries, with a cache of freed blocks.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>

extern "C" {
void *_mlir_memref_to_llvm_alloc(size_t size);
void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size);
void _mlir_memref_to_llvm_free(void *pointer);
}

namespace {

bool aligned64(void *p) { return reinterpret_cast<uintptr_t>(p) % 64 == 0; }

TEST(Allocator, BlocksAreAlignedAndWritable) {
  for (size_t size :
       {size_t(1), size_t(63), size_t(64), size_t(65), size_t(1) << 20}) {
    void *p = _mlir_memref_to_llvm_alloc(size);
    ASSERT_NE(p, nullptr);
    EXPECT_TRUE(aligned64(p)) << size;
    std::memset(p, 0xab, size);
    _mlir_memref_to_llvm_free(p);
  }
}

TEST(Allocator, FreedBlockIsReusedForTheSameSizeClass) {
  void *a = _mlir_memref_to_llvm_alloc(3000);
  _mlir_memref_to_llvm_free(a);
  // 3000 and 3008 round up to the same 64-byte class: the freed block returns.
  void *b = _mlir_memref_to_llvm_alloc(3008);
  EXPECT_EQ(a, b);
  // A block in use is never handed out twice.
  void *c = _mlir_memref_to_llvm_alloc(3000);
  EXPECT_NE(b, c);
  _mlir_memref_to_llvm_free(b);
  _mlir_memref_to_llvm_free(c);
}

TEST(Allocator, OtherSizesGetOtherBlocks) {
  void *a = _mlir_memref_to_llvm_alloc(4096);
  _mlir_memref_to_llvm_free(a);
  void *b = _mlir_memref_to_llvm_alloc(8192);
  EXPECT_NE(a, b);
  std::memset(b, 0, 8192);
  _mlir_memref_to_llvm_free(b);
}

TEST(Allocator, AlignedAllocationUpTo64Bytes) {
  void *p = _mlir_memref_to_llvm_aligned_alloc(64, 256);
  ASSERT_NE(p, nullptr);
  EXPECT_TRUE(aligned64(p));
  _mlir_memref_to_llvm_free(p);
  EXPECT_EQ(_mlir_memref_to_llvm_aligned_alloc(4096, 256), nullptr);
  _mlir_memref_to_llvm_free(nullptr); // a no-op, as free(NULL)
}

} // namespace
