//===- Parallel.h - the runtime's thread pool -----------------------------===//
//
// One pool per process runs the parallel loops of compiled bundles
// (loom_rt_parallel_for) and splits the library kernels' GEMMs. Its size is
// LOOM_NUM_THREADS, or else the number of CPUs the process may run on;
// `loom-run train --nproc N` gives each rank its share of the CPUs.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_PARALLEL_H
#define LOOM_RUNTIME_PARALLEL_H

#include "loom/runtime.h"

#include <cstdint>
#include <type_traits>

namespace loom::rt {

/// A chunk of a parallel loop: iterations [begin, end) with `ctx`.
using ChunkFn = void (*)(void *ctx, int64_t begin, int64_t end);

/// The CPUs this process may run on (its affinity mask), at least 1: the
/// pool's size unless LOOM_NUM_THREADS is set. Exported for the launcher,
/// which gives each local rank its share.
LOOM_API int availableCpus();

/// The threads the pool is made with: LOOM_NUM_THREADS when it is a
/// positive number (at most 256; a value that is not is ignored), else
/// availableCpus(). Starts nothing. Exported for the launcher, which pins
/// ranks of one thread.
LOOM_API int configuredThreads();

/// Threads that parallel loops use, the calling thread included (at least 1):
/// LOOM_NUM_THREADS when it is a positive number (a value that is not is
/// ignored), else availableCpus(). Exported for loom-run calibrate, which
/// measures with a rank's threads.
LOOM_API int numThreads();

/// Runs fn(ctx, begin, end) over [0, iterations) cut into
/// min(iterations, threads * chunksPerThread) contiguous chunks, which the
/// threads (the calling one included) take in turn, and returns when all are
/// done. Chunk boundaries depend only on `iterations`, `chunksPerThread` and
/// the pool's size, never on timing. Runs everything on the calling thread
/// when the pool has one thread, when called from inside a parallel loop,
/// while another thread's loop holds the pool, or in a process forked after
/// the pool started (which has none of its workers). Thread-safe.
void parallelFor(int64_t iterations, ChunkFn fn, void *ctx,
                 int chunksPerThread = 1);

/// parallelFor over a callable `body(begin, end)`, one chunk per thread.
template <typename Body> void parallelFor(int64_t iterations, Body &&body) {
  parallelFor(
      iterations,
      [](void *ctx, int64_t begin, int64_t end) {
        (*static_cast<std::remove_reference_t<Body> *>(ctx))(begin, end);
      },
      &body);
}

} // namespace loom::rt

#endif // LOOM_RUNTIME_PARALLEL_H
