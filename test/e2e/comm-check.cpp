//===- comm-check.cpp - one rank of a collective check --------------------===//
//
// Usage: RANK=r WORLD_SIZE=n [LOOM_STORE=file:DIR | MASTER_ADDR/MASTER_PORT]
//        comm-check [--count N] [--die-before-all-reduce]
//
// Connects to the other ranks (loom::comm::connectGloo) and runs each
// collective on data that depends on the rank, comparing every element with
// its closed form: all_reduce of (r + 1) * (i + 1) is S * (i + 1) with
// S = n (n + 1) / 2; all_gather of r * 1000 + i puts that at r * N + i;
// reduce_scatter of the same gives S * (r * N + i + 1); a broadcast from the
// last rank gives its values everywhere. Prints one line per collective and
// exits 1 with the error (naming the rank) on a mismatch or a failure.
// `--die-before-all-reduce` makes rank 1 exit(3) before the all_reduce, to
// check that the others fail within the timeout instead of hanging.
//
//===----------------------------------------------------------------------===//

#include "Comm.h"
#include "LowPrecision.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

using loom::comm::Communicator;

namespace {

bool expectEqual(const char *what, int rank, const std::vector<float> &got,
                 const std::vector<float> &want) {
  for (size_t i = 0; i < want.size(); ++i)
    if (std::fabs(got[i] - want[i]) > 1e-6f * std::fabs(want[i])) {
      std::fprintf(stderr, "comm-check: rank %d: %s element %zu is %g, "
                           "expected %g\n", rank, what, i, got[i], want[i]);
      return false;
    }
  std::printf("rank %d: %s ok (%zu floats)\n", rank, what, want.size());
  return true;
}

} // namespace

int main(int argc, char **argv) {
  size_t count = 1000;
  bool die = false;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--count") && i + 1 < argc)
      count = std::strtoul(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--die-before-all-reduce"))
      die = true;
    else {
      std::fprintf(stderr, "comm-check: unknown argument %s\n", argv[i]);
      return 1;
    }
  }
  try {
    loom::comm::Rendezvous r = loom::comm::rendezvousFromEnvironment();
    std::unique_ptr<Communicator> comm = loom::comm::connectGloo(r);
    int rank = comm->rank(), n = comm->size();
    float s = n * (n + 1) / 2.0f;
    bool ok = true;

    comm->barrier();
    if (die && rank == 1) {
      std::fprintf(stderr, "comm-check: rank 1 exits on purpose\n");
      std::fflush(stdout);
      std::_Exit(3);
    }
    std::vector<float> data(count), want(count);
    for (size_t i = 0; i < count; ++i) {
      data[i] = (rank + 1) * float(i + 1);
      want[i] = s * float(i + 1);
    }
    comm->allReduceSum(data.data(), count);
    ok &= expectEqual("all_reduce", rank, data, want);

    // bf16 on the wire: integers up to 256 are exact in bf16, so the sums
    // are exact in any order.
    std::vector<uint16_t> half(count);
    std::vector<float> halfSum(count), wantHalf(count);
    for (size_t i = 0; i < count; ++i) {
      half[i] = loom::rt::fromFloat<loom::rt::Bf16>(
                    float((rank + 1) * (i % 16 + 1)))
                    .bits;
      wantHalf[i] = s * float(i % 16 + 1);
    }
    comm->allReduceHalf(half.data(), count, loom::comm::HalfFormat::BFloat16,
                        loom::comm::ReduceOp::Sum);
    for (size_t i = 0; i < count; ++i)
      halfSum[i] = loom::rt::toFloat(loom::rt::Bf16{half[i]});
    ok &= expectEqual("all_reduce_bf16", rank, halfSum, wantHalf);

    std::vector<float> mine(count), gathered(count * n), wantGathered(count * n);
    for (size_t i = 0; i < count; ++i)
      mine[i] = rank * 1000.0f + float(i);
    for (int q = 0; q < n; ++q)
      for (size_t i = 0; i < count; ++i)
        wantGathered[q * count + i] = q * 1000.0f + float(i);
    comm->allGather(mine.data(), gathered.data(), count);
    ok &= expectEqual("all_gather", rank, gathered, wantGathered);

    std::vector<float> full(count * n), block(count), wantBlock(count);
    for (size_t i = 0; i < full.size(); ++i)
      full[i] = (rank + 1) * float(i + 1);
    for (size_t i = 0; i < count; ++i)
      wantBlock[i] = s * float(rank * count + i + 1);
    comm->reduceScatterSum(full.data(), block.data(), count);
    ok &= expectEqual("reduce_scatter", rank, block, wantBlock);

    // all_to_all: block q of rank r's input is r * 1000 + q * count + i;
    // rank r receives block r of every rank q, in rank order.
    std::vector<float> send(count * n), received(count * n),
        wantReceived(count * n);
    for (size_t i = 0; i < send.size(); ++i)
      send[i] = rank * 1000000.0f + float(i);
    for (int q = 0; q < n; ++q)
      for (size_t i = 0; i < count; ++i)
        wantReceived[q * count + i] =
            q * 1000000.0f + float(rank * count + i);
    comm->allToAll(send.data(), received.data(), count);
    ok &= expectEqual("all_to_all", rank, received, wantReceived);

    std::vector<float> cast(count), wantCast(count);
    for (size_t i = 0; i < count; ++i) {
      cast[i] = rank == n - 1 ? 7.0f + float(i) : -1.0f;
      wantCast[i] = 7.0f + float(i);
    }
    comm->broadcast(cast.data(), count, n - 1);
    ok &= expectEqual("broadcast", rank, cast, wantCast);
    comm->barrier();
    return ok ? 0 : 1;
  } catch (const loom::comm::Error &e) {
    std::fprintf(stderr, "comm-check: %s\n", e.what());
    return 1;
  }
}
