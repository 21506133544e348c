//===- NcclCommTest.cpp - the NCCL engine on a GPU ------------------------===//
//
// Runs where a CUDA device is present (the device machine's
// scripts/gpu-check.sh); skips elsewhere. One GPU allows one rank, so the
// tests are a single-rank run of every collective and a two-rank run whose
// peer never joins, which must time out with an error rather than hang.
//
//===----------------------------------------------------------------------===//

#include "Comm.h"

#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <string>
#include <vector>

namespace {

using loom::comm::Rendezvous;

bool haveDevice() {
  int count = 0;
  return cudaGetDeviceCount(&count) == cudaSuccess && count > 0;
}

Rendezvous fileRendezvous(int rank, int world, const std::string &name) {
  Rendezvous r;
  r.rank = rank;
  r.worldSize = world;
  r.store = "file";
  r.path = ::testing::TempDir() + "/" + name;
  r.prefix = name + std::to_string(std::chrono::steady_clock::now()
                                       .time_since_epoch()
                                       .count());
  r.timeout = std::chrono::seconds(5);
  return r;
}

TEST(NcclComm, CollectivesOnOneRank) {
  if (!haveDevice())
    GTEST_SKIP() << "no CUDA device";
  auto comm = loom::comm::connectNccl(fileRendezvous(0, 1, "nccl-one"), 0);
  ASSERT_EQ(comm->size(), 1);
  std::vector<float> host{1, 2, 3, 4};
  float *in, *out;
  ASSERT_EQ(cudaMalloc(&in, 4 * sizeof(float)), cudaSuccess);
  ASSERT_EQ(cudaMalloc(&out, 4 * sizeof(float)), cudaSuccess);
  cudaMemcpy(in, host.data(), 16, cudaMemcpyHostToDevice);
  comm->allReduce(in, 4, loom::comm::ReduceOp::Max);
  comm->allGather(in, out, 4);
  comm->reduceScatterSum(in, out, 4);
  comm->allToAll(in, out, 4);
  comm->broadcast(out, 4, 0);
  comm->barrier();
  std::vector<float> back(4);
  cudaMemcpy(back.data(), out, 16, cudaMemcpyDeviceToHost);
  EXPECT_EQ(back, host);
  cudaFree(in);
  cudaFree(out);
}

TEST(NcclComm, MissingPeerTimesOut) {
  if (!haveDevice())
    GTEST_SKIP() << "no CUDA device";
  auto started = std::chrono::steady_clock::now();
  try {
    loom::comm::connectNccl(fileRendezvous(1, 2, "nccl-missing"), 0);
    FAIL() << "joined a run whose rank 0 never came";
  } catch (const loom::comm::Error &e) {
    EXPECT_NE(std::string(e.what()).find("rank 1 of 2"), std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started,
            std::chrono::seconds(30));
}

} // namespace
