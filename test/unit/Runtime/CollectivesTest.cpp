//===- CollectivesTest.cpp - collectives on a device bundle's buffers -----===//
//
// With loom::rt::deviceCopy set (a device bundle's run), the collectives
// compiled code calls read their arguments through it into host copies and
// write back only their output's elements: what lies between the elements
// of a strided output stays as the device has it, also when the device
// wrote it after the collective read the span. Without it (a CPU bundle)
// they work on the buffers themselves. Here the "device" is host memory and
// the copy a counting memcpy.
//
//===----------------------------------------------------------------------===//

#include "Collectives.h"

#include <gtest/gtest.h>

#include <cstring>
#include <vector>

namespace {

/// MLIR's unranked memref descriptor, as compiled code passes it.
struct Unranked {
  int64_t rank;
  void *descriptor;
};

/// A rank-1 strided view of `data`: allocated, aligned, offset, size,
/// stride.
struct View1 {
  int64_t words[5];
  Unranked unranked;
  View1(float *data, int64_t offset, int64_t size, int64_t stride)
      : words{reinterpret_cast<int64_t>(data), reinterpret_cast<int64_t>(data),
              offset, size, stride},
        unranked{1, words} {}
};

int copies = 0;
/// The output's device span: the first copy out of it is followed by device
/// work writing between its elements.
float *deviceOut = nullptr;
bool outRead = false;

int countingCopy(void *dst, const void *src, size_t bytes) {
  ++copies;
  std::memcpy(dst, src, bytes);
  if (src == deviceOut && !outRead) {
    outRead = true;
    deviceOut[1] = 42;
  }
  return 1;
}

int failingCopy(void *, const void *, size_t) {
  ++copies;
  return 0;
}

} // namespace

extern "C" void _mlir_ciface_loom_rt_all_reduce_f32(Unranked *in,
                                                    Unranked *out,
                                                    int64_t reduction,
                                                    int64_t group);
extern "C" void _mlir_ciface_loom_rt_all_gather_f32(Unranked *in,
                                                    Unranked *out, int64_t dim,
                                                    int64_t group);

TEST(Collectives, DeviceBuffersGoThroughHostCopies) {
  // in: elements 1, 3, 5 of [0..6); out: elements 0, 3, 6 of 7 floats.
  std::vector<float> in = {10, 11, 12, 13, 14, 15};
  std::vector<float> out(7, -1);
  View1 src(in.data(), 1, 3, 2), dst(out.data(), 0, 3, 3);
  copies = 0;
  deviceOut = out.data();
  outRead = false;
  loom::rt::deviceCopy = countingCopy;
  // A group of one: out receives in.
  _mlir_ciface_loom_rt_all_reduce_f32(&src.unranked, &dst.unranked, 0, 1);
  loom::rt::deviceCopy = nullptr;
  EXPECT_TRUE(loom::rt::collectiveError.empty()) << loom::rt::collectiveError;
  // Read in, read out's span (it has gaps), read it again before writing
  // it back, write it.
  EXPECT_EQ(copies, 4);
  // out's elements are in's; between them, the device's values, including
  // the one it wrote after the span was first read.
  EXPECT_EQ(out, (std::vector<float>{11, 42, -1, 13, -1, -1, 15}));
}

TEST(Collectives, HostBuffersAreUsedInPlace) {
  std::vector<float> in = {1, 2, 3};
  std::vector<float> out(3, 0);
  View1 src(in.data(), 0, 3, 1), dst(out.data(), 0, 3, 1);
  copies = 0;
  loom::rt::deviceCopy = nullptr;
  _mlir_ciface_loom_rt_all_gather_f32(&src.unranked, &dst.unranked, 0, 1);
  EXPECT_TRUE(loom::rt::collectiveError.empty()) << loom::rt::collectiveError;
  EXPECT_EQ(copies, 0);
  EXPECT_EQ(out, in);
}

TEST(Collectives, AFailedDeviceCopyIsTheRunsError) {
  std::vector<float> in = {1, 2, 3};
  std::vector<float> out(3, -1);
  View1 src(in.data(), 0, 3, 1), dst(out.data(), 0, 3, 1);
  copies = 0;
  loom::rt::collectiveError.clear();
  loom::rt::deviceCopy = failingCopy;
  _mlir_ciface_loom_rt_all_reduce_f32(&src.unranked, &dst.unranked, 0, 1);
  loom::rt::deviceCopy = nullptr;
  EXPECT_EQ(loom::rt::collectiveError,
            "copying a collective's buffer from the device failed");
  // Reading in failed: nothing else was copied, out is untouched.
  EXPECT_EQ(copies, 1);
  EXPECT_EQ(out, (std::vector<float>{-1, -1, -1}));
  loom::rt::collectiveError.clear();
}
