//===- CudaEngineTest.cpp - libloomrt_cuda on a GPU -----------------------===//
//
// Runs where a CUDA device is present (the device machine's
// scripts/gpu-check.sh); skips elsewhere. The allocator's reuse and
// statistics, a kernel loaded and launched through MLIR's GPU runtime
// interface as compiled bundles do it, the products of every flag
// combination and factor type against a reference computed here, and the
// error a bad launch leaves.
//
//===----------------------------------------------------------------------===//

#include "CudaEngine.h"
#include "LowPrecision.h"
#include "MemRefDescriptor.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string>
#include <vector>

extern "C" {
void *mgpuModuleLoad(void *data, size_t size);
void mgpuModuleUnload(void *module);
void *mgpuModuleGetFunction(void *module, const char *name);
void mgpuLaunchKernel(void *function, intptr_t gridX, intptr_t gridY,
                      intptr_t gridZ, intptr_t blockX, intptr_t blockY,
                      intptr_t blockZ, int32_t smem, void *stream,
                      void **params, void **extra, size_t paramsCount);
void *mgpuStreamCreate();
void mgpuStreamSynchronize(void *stream);
void mgpuStreamDestroy(void *stream);
void *mgpuMemAlloc(uint64_t bytes, void *stream, bool isHostShared);
void mgpuMemFree(void *ptr, void *stream);
}

namespace {

bool haveDevice() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

#define REQUIRE_DEVICE()                                                       \
  if (!haveDevice())                                                           \
  GTEST_SKIP() << "no CUDA device"

std::string takeError() {
  char buffer[512];
  size_t length = loomCudaTakeError(buffer, sizeof(buffer));
  return length ? std::string(buffer) : std::string();
}

using loom::rt::Descriptor;

using loom::rt::Bf16;

/// values[i] = ((i * mul) % mod - offset) / scale: small values, exact in
/// bf16, varied enough to catch a transposed or shifted operand.
void fillPattern(std::vector<float> &values, int mul, int mod, int offset,
                 float scale) {
  for (size_t i = 0; i < values.size(); ++i)
    values[i] = float(int(i * mul % mod) - offset) / scale;
}

} // namespace

extern "C" {
void _mlir_ciface_loom_cuda_matmul_f32(Descriptor<float, 2> *,
                                       Descriptor<float, 2> *,
                                       Descriptor<float, 2> *, int64_t);
void _mlir_ciface_loom_cuda_matmul_bf16(Descriptor<Bf16, 2> *,
                                        Descriptor<Bf16, 2> *,
                                        Descriptor<float, 2> *, int64_t);
void _mlir_ciface_loom_cuda_batch_matmul_f32(Descriptor<float, 3> *,
                                             Descriptor<float, 3> *,
                                             Descriptor<float, 3> *, int64_t);
}

namespace {

TEST(CudaEngine, AllocatorReusesBlocksAndCounts) {
  REQUIRE_DEVICE();
  size_t live0, peak0, reserved0;
  loomCudaMemoryStats(&live0, &peak0, &reserved0);
  void *stream = mgpuStreamCreate();
  // Compiled code's temporaries are counted...
  void *a = mgpuMemAlloc(1000, stream, false);
  ASSERT_NE(a, nullptr) << takeError();
  size_t live, peak, reserved;
  loomCudaMemoryStats(&live, &peak, &reserved);
  EXPECT_EQ(live - live0, 1024u); // Rounded to 512 bytes.
  mgpuMemFree(a, stream);
  // ... the runtime's buffers (a session's tensors) are not, but share the
  // cache: the same rounded size is the same block.
  void *b = loomCudaAlloc(900);
  EXPECT_EQ(b, a);
  loomCudaMemoryStats(&live, &peak, &reserved);
  EXPECT_EQ(live, live0);
  loomCudaFree(b);
  EXPECT_GE(peak, live0 + 1024);
  loomCudaResetPeak();
  loomCudaMemoryStats(&live, &peak, &reserved);
  EXPECT_EQ(peak, live);
  EXPECT_EQ(takeError(), "");
}

// y[i] += 1 for i < n, written by hand in PTX (assembled by ptxas in the
// CUDA toolkit as checked when this test was written), loaded and launched
// the way compiled bundles do.
const char *kAddOnePtx = R"(.version 8.0
.target sm_80
.address_size 64
.visible .entry add_one(.param .u64 add_one_y, .param .u32 add_one_n)
{
  .reg .pred %p<2>;
  .reg .b32 %r<6>;
  .reg .f32 %f<3>;
  .reg .b64 %rd<5>;
  ld.param.u64 %rd1, [add_one_y];
  ld.param.u32 %r1, [add_one_n];
  mov.u32 %r2, %ctaid.x;
  mov.u32 %r3, %ntid.x;
  mov.u32 %r4, %tid.x;
  mad.lo.s32 %r5, %r2, %r3, %r4;
  setp.ge.s32 %p1, %r5, %r1;
  @%p1 bra DONE;
  cvta.to.global.u64 %rd2, %rd1;
  mul.wide.s32 %rd3, %r5, 4;
  add.s64 %rd4, %rd2, %rd3;
  ld.global.f32 %f1, [%rd4];
  add.f32 %f2, %f1, 0f3F800000;
  st.global.f32 [%rd4], %f2;
DONE:
  ret;
}
)";

TEST(CudaEngine, LaunchesAKernelAsBundlesDo) {
  REQUIRE_DEVICE();
  void *module = mgpuModuleLoad(const_cast<char *>(kAddOnePtx),
                                std::strlen(kAddOnePtx) + 1);
  ASSERT_NE(module, nullptr) << takeError();
  void *function = mgpuModuleGetFunction(module, "add_one");
  ASSERT_NE(function, nullptr) << takeError();
  const int n = 1000;
  std::vector<float> host(n);
  for (int i = 0; i < n; ++i)
    host[i] = float(i);
  void *stream = mgpuStreamCreate();
  void *y = mgpuMemAlloc(n * sizeof(float), stream, false);
  ASSERT_TRUE(loomCudaCopy(y, host.data(), n * sizeof(float)));
  int32_t count = n;
  void *params[] = {&y, &count};
  mgpuLaunchKernel(function, (n + 255) / 256, 1, 1, 256, 1, 1, 0, stream,
                   params, nullptr, 2);
  mgpuStreamSynchronize(stream);
  mgpuStreamDestroy(stream);
  ASSERT_TRUE(loomCudaCopy(host.data(), y, n * sizeof(float)));
  for (int i = 0; i < n; ++i)
    ASSERT_EQ(host[i], float(i) + 1.0f) << "element " << i;
  mgpuMemFree(y, stream);
  mgpuModuleUnload(module);
  EXPECT_EQ(takeError(), "");
}

TEST(CudaEngine, ABadLaunchLeavesAnError) {
  REQUIRE_DEVICE();
  mgpuLaunchKernel(nullptr, 1, 1, 1, 1, 1, 1, 0, mgpuStreamCreate(), nullptr,
                   nullptr, 0);
  std::string error = takeError();
  EXPECT_NE(error.find("mgpuLaunchKernel"), std::string::npos) << error;
  EXPECT_EQ(takeError(), ""); // Taken once.
}

/// c (m x n, leading dimension ldc) = op(a) * op(b) (+ c) on the host.
void reference(int64_t flags, int64_t m, int64_t n, int64_t k,
               const std::vector<float> &a, int64_t lda,
               const std::vector<float> &b, int64_t ldb, std::vector<float> &c,
               int64_t ldc) {
  bool ta = flags & 2, tb = flags & 1;
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = flags & 4 ? 0.0 : c[i * ldc + j];
      for (int64_t p = 0; p < k; ++p)
        sum += double(ta ? a[p * lda + i] : a[i * lda + p]) *
               double(tb ? b[j * ldb + p] : b[p * ldb + j]);
      c[i * ldc + j] = float(sum);
    }
}

template <typename T> T *upload(const std::vector<T> &host) {
  T *device = static_cast<T *>(loomCudaAlloc(host.size() * sizeof(T)));
  EXPECT_TRUE(loomCudaCopy(device, host.data(), host.size() * sizeof(T)));
  return device;
}

TEST(CudaEngine, ProductsOfEveryFlagMatchTheHost) {
  REQUIRE_DEVICE();
  const int64_t m = 5, n = 7, k = 3, pad = 2;
  for (int64_t flags = 0; flags < 8; ++flags) {
    bool ta = flags & 2, tb = flags & 1;
    // Stored shapes with a leading dimension wider than a row.
    int64_t aRows = ta ? k : m, aCols = ta ? m : k;
    int64_t bRows = tb ? n : k, bCols = tb ? k : n;
    int64_t lda = aCols + pad, ldb = bCols + pad, ldc = n + pad;
    std::vector<float> a(aRows * lda), b(bRows * ldb), c(m * ldc);
    fillPattern(a, 7, 11, 5, 4);
    fillPattern(b, 5, 13, 6, 8);
    fillPattern(c, 1, 3, 0, 1);
    std::vector<float> expected = c;
    reference(flags, m, n, k, a, lda, b, ldb, expected, ldc);

    float *da = upload(a), *db = upload(b), *dc = upload(c);
    Descriptor<float, 2> A{da, da, 0, {aRows, aCols}, {lda, 1}};
    Descriptor<float, 2> B{db, db, 0, {bRows, bCols}, {ldb, 1}};
    Descriptor<float, 2> C{dc, dc, 0, {m, n}, {ldc, 1}};
    _mlir_ciface_loom_cuda_matmul_f32(&A, &B, &C, flags);
    std::vector<float> got(c.size());
    ASSERT_TRUE(loomCudaCopy(got.data(), dc, got.size() * sizeof(float)));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        EXPECT_NEAR(got[i * ldc + j], expected[i * ldc + j], 1e-5)
            << "flags " << flags << " at " << i << "," << j;
    // The padding between rows is untouched.
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = n; j < ldc; ++j)
        EXPECT_EQ(got[i * ldc + j], c[i * ldc + j]);

    // bf16 factors (exact in bf16: multiples of 1/8 below 8), f32 result.
    std::vector<Bf16> a16(a.size()), b16(b.size());
    for (size_t i = 0; i < a.size(); ++i)
      a16[i] = loom::rt::fromFloat<Bf16>(a[i]);
    for (size_t i = 0; i < b.size(); ++i)
      b16[i] = loom::rt::fromFloat<Bf16>(b[i]);
    ASSERT_EQ(loom::rt::toFloat(a16[1]), a[1]);
    Bf16 *da16 = upload(a16), *db16 = upload(b16);
    float *dc2 = upload(c);
    Descriptor<Bf16, 2> A16{da16, da16, 0, {aRows, aCols}, {lda, 1}};
    Descriptor<Bf16, 2> B16{db16, db16, 0, {bRows, bCols}, {ldb, 1}};
    Descriptor<float, 2> C2{dc2, dc2, 0, {m, n}, {ldc, 1}};
    _mlir_ciface_loom_cuda_matmul_bf16(&A16, &B16, &C2, flags);
    ASSERT_TRUE(loomCudaCopy(got.data(), dc2, got.size() * sizeof(float)));
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j)
        EXPECT_NEAR(got[i * ldc + j], expected[i * ldc + j], 1e-5)
            << "bf16, flags " << flags << " at " << i << "," << j;
    for (void *p : {(void *)da, (void *)db, (void *)dc, (void *)da16,
                    (void *)db16, (void *)dc2})
      loomCudaFree(p);
  }
  EXPECT_EQ(takeError(), "");
}

TEST(CudaEngine, BatchedProductsMatchTheHost) {
  REQUIRE_DEVICE();
  const int64_t batch = 3, m = 4, n = 6, k = 5;
  for (int64_t flags : {0, 1, 2, 3, 4}) {
    bool ta = flags & 2, tb = flags & 1;
    int64_t aRows = ta ? k : m, aCols = ta ? m : k;
    int64_t bRows = tb ? n : k, bCols = tb ? k : n;
    std::vector<float> a(batch * aRows * aCols), b(batch * bRows * bCols),
        c(batch * m * n);
    fillPattern(a, 3, 7, 3, 2);
    fillPattern(b, 5, 9, 4, 4);
    fillPattern(c, 1, 5, 0, 1);
    std::vector<float> expected = c;
    for (int64_t p = 0; p < batch; ++p) {
      std::vector<float> ap(a.begin() + p * aRows * aCols,
                            a.begin() + (p + 1) * aRows * aCols);
      std::vector<float> bp(b.begin() + p * bRows * bCols,
                            b.begin() + (p + 1) * bRows * bCols);
      std::vector<float> cp(expected.begin() + p * m * n,
                            expected.begin() + (p + 1) * m * n);
      reference(flags, m, n, k, ap, aCols, bp, bCols, cp, n);
      std::copy(cp.begin(), cp.end(), expected.begin() + p * m * n);
    }
    float *da = upload(a), *db = upload(b), *dc = upload(c);
    Descriptor<float, 3> A{
        da, da, 0, {batch, aRows, aCols}, {aRows * aCols, aCols, 1}};
    Descriptor<float, 3> B{
        db, db, 0, {batch, bRows, bCols}, {bRows * bCols, bCols, 1}};
    Descriptor<float, 3> C{dc, dc, 0, {batch, m, n}, {m * n, n, 1}};
    _mlir_ciface_loom_cuda_batch_matmul_f32(&A, &B, &C, flags);
    std::vector<float> got(c.size());
    ASSERT_TRUE(loomCudaCopy(got.data(), dc, got.size() * sizeof(float)));
    for (size_t i = 0; i < got.size(); ++i)
      EXPECT_NEAR(got[i], expected[i], 1e-5)
          << "flags " << flags << " at " << i;
    for (void *p : {(void *)da, (void *)db, (void *)dc})
      loomCudaFree(p);
  }
  EXPECT_EQ(takeError(), "");
}

} // namespace
