//===- ParallelTest.cpp - the runtime's thread pool and split GEMMs -------===//
//
// loom_rt_parallel_for, which compiled bundles call for their parallel loop
// nests (4 chunks per thread), and the GEMM kernels that split their products
// over the same pool. ctest runs these with LOOM_NUM_THREADS=3, so that
// chunks are uneven.
//
//===----------------------------------------------------------------------===//

#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

extern "C" void loom_rt_parallel_for(void (*fn)(void *, int64_t, int64_t),
                                     void *ctx, int64_t iterations);

namespace {

template <int Rank> struct Desc {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[Rank];
  int64_t strides[Rank];
};

} // namespace

extern "C" void _mlir_ciface_loom_kernel_matmul_f32(Desc<2> *a, Desc<2> *b,
                                                    Desc<2> *c, int64_t flags);
extern "C" void _mlir_ciface_loom_kernel_batch_matmul_f32(Desc<3> *a,
                                                          Desc<3> *b,
                                                          Desc<3> *c,
                                                          int64_t flags);

namespace {

int poolThreads() {
  const char *env = std::getenv("LOOM_NUM_THREADS");
  return env ? std::atoi(env) : 0;
}

/// What one parallel loop saw: its chunks and the threads that ran them.
struct Record {
  std::mutex mutex;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  std::set<std::thread::id> threads;
  std::vector<std::atomic<int>> visits;
  explicit Record(int64_t n) : visits(n) {}
};

void recordChunk(void *ctx, int64_t begin, int64_t end) {
  auto *record = static_cast<Record *>(ctx);
  for (int64_t i = begin; i < end; ++i)
    record->visits[i]++;
  std::lock_guard<std::mutex> lock(record->mutex);
  record->chunks.emplace_back(begin, end);
  record->threads.insert(std::this_thread::get_id());
}

TEST(ParallelFor, EveryIterationOnceInFourChunksPerThread) {
  ASSERT_EQ(poolThreads(), 3) << "ctest sets LOOM_NUM_THREADS=3";
  for (int64_t n : {1, 2, 3, 7, 100, 1001}) {
    Record record(n);
    loom_rt_parallel_for(recordChunk, &record, n);
    for (int64_t i = 0; i < n; ++i)
      EXPECT_EQ(record.visits[i].load(), 1) << "n " << n << " iteration " << i;
    // 4 chunks per thread, of at least one iteration each.
    int64_t expected = n < 12 ? n : 12;
    EXPECT_EQ((int64_t)record.chunks.size(), expected) << "n " << n;
    EXPECT_GE(record.threads.size(), 1u);
    EXPECT_LE(record.threads.size(), 3u);
  }
}

TEST(ParallelFor, SeveralThreadsTakePart) {
  // Chunks that take a while: the workers cannot all be too late for them.
  struct Slow {
    std::mutex mutex;
    std::set<std::thread::id> threads;
  } slow;
  loom_rt_parallel_for(
      [](void *ctx, int64_t, int64_t) {
        auto *slow = static_cast<Slow *>(ctx);
        {
          std::lock_guard<std::mutex> lock(slow->mutex);
          slow->threads.insert(std::this_thread::get_id());
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      },
      &slow, 12);
  EXPECT_GE(slow.threads.size(), 2u);
}

TEST(ParallelFor, ChunksDependOnlyOnTheCount) {
  // Chunk i of 12 is [24 i / 12, 24 (i + 1) / 12), whichever thread runs it.
  for (int round = 0; round < 3; ++round) {
    Record record(24);
    loom_rt_parallel_for(recordChunk, &record, 24);
    std::set<std::pair<int64_t, int64_t>> chunks(record.chunks.begin(),
                                                 record.chunks.end());
    std::set<std::pair<int64_t, int64_t>> expected;
    for (int64_t i = 0; i < 12; ++i)
      expected.insert({2 * i, 2 * i + 2});
    EXPECT_EQ(chunks, expected);
  }
}

TEST(ParallelFor, ZeroIterationsRunNothing) {
  Record record(0);
  loom_rt_parallel_for(recordChunk, &record, 0);
  EXPECT_TRUE(record.chunks.empty());
}

struct Nested {
  std::atomic<int> innerOnOtherThread{0};
  std::atomic<int> innerIterations{0};
};

void innerChunk(void *ctx, int64_t begin, int64_t end) {
  auto *nested = static_cast<std::pair<Nested *, std::thread::id> *>(ctx);
  if (std::this_thread::get_id() != nested->second)
    nested->first->innerOnOtherThread++;
  nested->first->innerIterations += static_cast<int>(end - begin);
}

void outerChunk(void *ctx, int64_t begin, int64_t end) {
  for (int64_t i = begin; i < end; ++i) {
    std::pair<Nested *, std::thread::id> inner{static_cast<Nested *>(ctx),
                                               std::this_thread::get_id()};
    loom_rt_parallel_for(innerChunk, &inner, 8);
  }
}

TEST(ParallelFor, LoopsInsideLoopsRunOnTheirThread) {
  Nested nested;
  loom_rt_parallel_for(outerChunk, &nested, 6);
  EXPECT_EQ(nested.innerIterations.load(), 6 * 8);
  EXPECT_EQ(nested.innerOnOtherThread.load(), 0);
}

void sumChunk(void *ctx, int64_t begin, int64_t end) {
  auto *sum = static_cast<std::atomic<int64_t> *>(ctx);
  for (int64_t i = begin; i < end; ++i)
    *sum += i;
}

TEST(ParallelFor, CallersOnSeveralThreads) {
  // One caller holds the pool while the other runs its loops inline.
  std::atomic<int64_t> sums[2] = {{0}, {0}};
  std::vector<std::thread> callers;
  for (int t = 0; t < 2; ++t)
    callers.emplace_back([&sums, t] {
      for (int round = 0; round < 500; ++round)
        loom_rt_parallel_for(sumChunk, &sums[t], 100);
    });
  for (std::thread &caller : callers)
    caller.join();
  for (auto &sum : sums)
    EXPECT_EQ(sum.load(), 500 * (99 * 100 / 2));
}

TEST(ParallelFor, ForkedChildRunsLoopsItself) {
  // The pool is running (earlier tests); a forked child has none of its
  // workers and must not wait for them.
  std::atomic<int64_t> warm{0};
  loom_rt_parallel_for(sumChunk, &warm, 10);
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    alarm(10); // a hang fails the test instead of blocking it
    std::atomic<int64_t> sum{0};
    loom_rt_parallel_for(sumChunk, &sum, 1000);
    _exit(sum.load() == 999 * 1000 / 2 ? 0 : 1);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status)) << "the child hung or crashed";
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

/// A row-major matrix with `pad` unused floats after each row.
struct Matrix {
  std::vector<float> storage;
  Desc<2> desc{};
  Matrix(int64_t rows, int64_t cols, int64_t pad, float seed) {
    storage.resize(rows * (cols + pad));
    for (size_t i = 0; i < storage.size(); ++i)
      storage[i] = std::sin(seed + 0.61f * (float)i);
    desc.allocated = desc.aligned = storage.data();
    desc.sizes[0] = rows;
    desc.sizes[1] = cols;
    desc.strides[0] = cols + pad;
    desc.strides[1] = 1;
  }
  float at(int64_t i, int64_t j) const {
    return storage[i * desc.strides[0] + j];
  }
};

/// c + op(a) op(b) by the definition, in double.
void expectProduct(const Matrix &a, const Matrix &b, const Matrix &before,
                   const Matrix &c, bool transposeA, bool transposeB) {
  int64_t m = c.desc.sizes[0], n = c.desc.sizes[1];
  int64_t k = transposeA ? a.desc.sizes[0] : a.desc.sizes[1];
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = before.at(i, j);
      for (int64_t p = 0; p < k; ++p)
        sum += (double)(transposeA ? a.at(p, i) : a.at(i, p)) *
               (transposeB ? b.at(j, p) : b.at(p, j));
      ASSERT_NEAR(c.at(i, j), sum, 1e-4 * (1 + std::fabs(sum)))
          << "c[" << i << ", " << j << "]";
    }
}

void checkMatmul(int64_t m, int64_t n, int64_t k, bool transposeA,
                 bool transposeB) {
  Matrix a = transposeA ? Matrix(k, m, 3, 0.1f) : Matrix(m, k, 3, 0.1f);
  Matrix b = transposeB ? Matrix(n, k, 1, 0.7f) : Matrix(k, n, 1, 0.7f);
  Matrix c(m, n, 2, 1.3f), before = c;
  _mlir_ciface_loom_kernel_matmul_f32(
      &a.desc, &b.desc, &c.desc, (transposeB ? 1 : 0) | (transposeA ? 2 : 0));
  expectProduct(a, b, before, c, transposeA, transposeB);
}

TEST(SplitGemm, ByRows) {
  // 70 x 40 x 100 multiply-adds are enough to split (2^18), and 70 rows
  // >= 3 threads x 16: blocks of rows, the last one short.
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      checkMatmul(70, 40, 100, ta, tb);
}

TEST(SplitGemm, ByColumns) {
  // 20 rows are too few to split; 100 columns are not.
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      checkMatmul(20, 100, 140, ta, tb);
}

TEST(SplitGemm, SmallProductsOnOneThread) { checkMatmul(5, 7, 3, false, true); }

TEST(SplitGemm, LargeBlocksGoToOneDnn) {
  // 400 rows in 3 blocks of 128 to 144 rows, 300 columns: every block has at
  // least 128 rows and columns, so oneDNN computes it (OpenBLAS the blocks
  // above).
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      checkMatmul(400, 300, 70, ta, tb);
}

TEST(SplitGemm, OverwriteDoesNotReadTheResult) {
  // Flag 4: c = a b, whatever c held (NaN here), split or not, through
  // OpenBLAS (small blocks) and oneDNN (blocks of 128 x 160 and more).
  for (int64_t m : {5, 70, 400}) {
    int64_t n = m == 400 ? 160 : 40;
    Matrix a(m, 100, 0, 0.3f), b(100, n, 0, 0.8f), c(m, n, 0, 0.0f);
    Matrix zeros = c;
    for (float &x : zeros.storage)
      x = 0.0f;
    for (float &x : c.storage)
      x = std::nanf("");
    _mlir_ciface_loom_kernel_matmul_f32(&a.desc, &b.desc, &c.desc, 4);
    expectProduct(a, b, zeros, c, false, false);
  }
}

/// A [batch, rows, cols] tensor, dense.
struct Batch {
  std::vector<float> storage;
  Desc<3> desc{};
  Batch(int64_t batch, int64_t rows, int64_t cols, float seed) {
    storage.resize(batch * rows * cols);
    for (size_t i = 0; i < storage.size(); ++i)
      storage[i] = std::cos(seed + 0.29f * (float)i);
    desc.allocated = desc.aligned = storage.data();
    desc.sizes[0] = batch;
    desc.sizes[1] = rows;
    desc.sizes[2] = cols;
    desc.strides[0] = rows * cols;
    desc.strides[1] = cols;
    desc.strides[2] = 1;
  }
  float at(int64_t b, int64_t i, int64_t j) const {
    return storage[b * desc.strides[0] + i * desc.strides[1] + j];
  }
};

void checkBatchMatmul(int64_t batch, int64_t m, int64_t n, int64_t k) {
  // a is [batch, k, m] (transposed), b is [batch, k, n].
  Batch a(batch, k, m, 0.2f), b(batch, k, n, 0.9f), c(batch, m, n, 0.4f);
  Batch before = c;
  _mlir_ciface_loom_kernel_batch_matmul_f32(&a.desc, &b.desc, &c.desc, 2);
  for (int64_t t = 0; t < batch; ++t)
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = before.at(t, i, j);
        for (int64_t p = 0; p < k; ++p)
          sum += (double)a.at(t, p, i) * b.at(t, p, j);
        ASSERT_NEAR(c.at(t, i, j), sum, 1e-4 * (1 + std::fabs(sum)))
            << "c[" << t << ", " << i << ", " << j << "]";
      }
}

TEST(SplitGemm, BatchesOverThreads) { checkBatchMatmul(5, 9, 11, 6); }

TEST(SplitGemm, FewBatchesSplitEachProduct) { checkBatchMatmul(2, 64, 50, 90); }

} // namespace
