//===- Parallel.cpp - the runtime's thread pool ---------------------------===//
//
// Workers wait for a new loop by spinning briefly (loops of one training step
// follow each other within microseconds) and then sleeping on a condition
// variable. The caller posts a loop by publishing a new ticket (the loop's
// generation, its chunk count and the next chunk), and every thread, the
// caller included, claims chunks from the ticket until none is left; the
// caller then waits until every chunk is finished, not until every worker
// has looked: a worker that wakes late (waking a sleeping CPU of a virtual
// machine can take milliseconds) finds nothing left of that loop to claim.
//
//===----------------------------------------------------------------------===//

#include "Parallel.h"

#include "loom/runtime.h"

#include <pthread.h>
#include <sched.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <mutex>
#include <thread>

namespace loom::rt {
namespace {

/// How long an idle worker spins before it sleeps.
constexpr auto kSpin = std::chrono::microseconds(200);

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#else
  std::this_thread::yield();
#endif
}

thread_local bool insideLoop = false;

/// Set in the child of a fork, which has none of the pool's workers: its
/// loops run on the calling thread.
std::atomic<bool> forkedChild{false};

class Pool {
public:
  explicit Pool(int threads) : threads(threads) {
    for (int i = 1; i < threads; ++i)
      std::thread([this] { work(); }).detach();
  }

  int size() const { return threads; }

  void run(int64_t iterations, ChunkFn fn, void *ctx, int chunksPerThread) {
    if (threads == 1 || iterations < 2 || insideLoop ||
        forkedChild.load(std::memory_order_relaxed) || !busy.try_lock()) {
      fn(ctx, 0, iterations);
      return;
    }
    int64_t chunks = std::min<int64_t>(
        {iterations, int64_t(threads) * std::max(1, chunksPerThread),
         kMaxChunks});
    // No worker holds a chunk of the previous loop (all of them finished
    // before it returned), so its fields can be rewritten.
    job = {fn, ctx, iterations, chunks};
    remaining.store(chunks, std::memory_order_relaxed);
    uint64_t generation = (ticket.load(std::memory_order_relaxed) >> 32) + 1;
    ticket.store(pack(generation, chunks, 0), std::memory_order_release);
    {
      // Pairs with the workers' predicate check: none misses the wake-up.
      std::lock_guard<std::mutex> lock(sleepMutex);
    }
    wake.notify_all();
    runChunks(generation);
    for (unsigned spins = 0; remaining.load(std::memory_order_acquire) != 0;
         ++spins) {
      if (spins < 4096)
        relax();
      else
        std::this_thread::yield();
    }
    busy.unlock();
  }

private:
  struct Job {
    ChunkFn fn = nullptr;
    void *ctx = nullptr;
    int64_t iterations = 0;
    int64_t chunks = 0;
  };

  /// The ticket packs a loop's generation (high 32 bits), its chunk count
  /// (16 bits) and the next chunk to claim (low 16 bits), so that a claim
  /// only succeeds for the loop the claimer saw posted, while it is running.
  static constexpr int64_t kMaxChunks = 0xffff;
  static uint64_t pack(uint64_t generation, int64_t chunks, int64_t next) {
    return generation << 32 | uint64_t(chunks) << 16 | uint64_t(next);
  }

  /// Claims and runs chunks of loop `generation` until none is left. Chunk i
  /// is always [iterations * i / chunks, iterations * (i + 1) / chunks),
  /// whichever thread takes it. A successful claim keeps the loop (and so
  /// `job`) alive until the chunk is finished, since the caller waits for
  /// every chunk.
  void runChunks(uint64_t generation) {
    insideLoop = true;
    uint64_t current = ticket.load(std::memory_order_acquire);
    for (;;) {
      int64_t chunks = int64_t(current >> 16 & 0xffff);
      int64_t i = int64_t(current & 0xffff);
      if (current >> 32 != (generation & 0xffffffff) || i >= chunks)
        break;
      if (!ticket.compare_exchange_weak(current, current + 1,
                                        std::memory_order_acquire,
                                        std::memory_order_acquire))
        continue;
      job.fn(job.ctx, job.iterations * i / chunks,
             job.iterations * (i + 1) / chunks);
      remaining.fetch_sub(1, std::memory_order_release);
      current = ticket.load(std::memory_order_acquire);
    }
    insideLoop = false;
  }

  void work() {
    uint64_t seen = 0;
    auto posted = [&] {
      return ticket.load(std::memory_order_acquire) >> 32;
    };
    for (;;) {
      uint64_t current = posted();
      auto start = std::chrono::steady_clock::now();
      for (unsigned spins = 0; current == seen; ++spins) {
        relax();
        current = posted();
        if ((spins & 255) == 255 &&
            std::chrono::steady_clock::now() - start > kSpin)
          break;
      }
      if (current == seen) {
        std::unique_lock<std::mutex> lock(sleepMutex);
        wake.wait(lock, [&] { return posted() != seen; });
        current = posted();
      }
      seen = current;
      runChunks(current);
    }
  }

  const int threads;
  std::mutex busy;
  Job job;
  std::atomic<uint64_t> ticket{0};
  std::atomic<int64_t> remaining{0};
  std::mutex sleepMutex;
  std::condition_variable wake;
};

Pool &pool() {
  // Never destroyed: detached workers may still wait on it at exit.
  static Pool *instance = [] {
    pthread_atfork(nullptr, nullptr, [] { forkedChild = true; });
    return new Pool(configuredThreads());
  }();
  return *instance;
}

} // namespace

int availableCpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

int configuredThreads() {
  if (const char *env = std::getenv("LOOM_NUM_THREADS")) {
    char *end = nullptr;
    long value = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && value > 0)
      return static_cast<int>(std::min<long>(value, 256));
  }
  return availableCpus();
}

int numThreads() { return pool().size(); }

void parallelFor(int64_t iterations, ChunkFn fn, void *ctx,
                 int chunksPerThread) {
  if (iterations <= 0)
    return;
  pool().run(iterations, fn, ctx, chunksPerThread);
}

} // namespace loom::rt

/// Called by compiled bundles for the loop nests that
/// loom-outline-parallel-loops moved into functions of their own.
extern "C" LOOM_API void loom_rt_parallel_for(loom::rt::ChunkFn fn, void *ctx,
                                              int64_t iterations) {
  // Loop nests are cheap to cut finer: a thread that starts late, or whose
  // data is further away, takes fewer chunks.
  loom::rt::parallelFor(iterations, fn, ctx, /*chunksPerThread=*/4);
}
