//===- Parallel.cpp - the runtime's thread pool ---------------------------===//
//
// Workers wait for a new loop by spinning briefly (loops of one training step
// follow each other within microseconds) and then sleeping on a condition
// variable. The caller posts a loop by bumping a generation counter, and
// every thread, the caller included, takes chunks from a shared counter until
// none is left; the caller then spins until the workers are done.
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

/// LOOM_NUM_THREADS when set to a positive number, else the CPUs this process
/// may run on.
int configuredThreads() {
  if (const char *env = std::getenv("LOOM_NUM_THREADS")) {
    char *end = nullptr;
    long value = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && value > 0)
      return static_cast<int>(std::min<long>(value, 256));
  }
  return availableCpus();
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
    job = {fn, ctx, iterations,
           std::min<int64_t>(iterations,
                             int64_t(threads) * std::max(1, chunksPerThread))};
    next.store(0, std::memory_order_relaxed);
    pending.store(threads - 1, std::memory_order_relaxed);
    generation.fetch_add(1, std::memory_order_release);
    {
      // Pairs with the workers' predicate check: none misses the wake-up.
      std::lock_guard<std::mutex> lock(sleepMutex);
    }
    wake.notify_all();
    runChunks();
    for (unsigned spins = 0; pending.load(std::memory_order_acquire) != 0;
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

  /// Takes chunks of the posted loop until none is left. Chunk i is always
  /// [iterations * i / chunks, iterations * (i + 1) / chunks), whichever
  /// thread takes it.
  void runChunks() {
    insideLoop = true;
    for (int64_t i = next.fetch_add(1, std::memory_order_relaxed);
         i < job.chunks; i = next.fetch_add(1, std::memory_order_relaxed))
      job.fn(job.ctx, job.iterations * i / job.chunks,
             job.iterations * (i + 1) / job.chunks);
    insideLoop = false;
  }

  void work() {
    uint64_t seen = 0;
    for (;;) {
      uint64_t current = generation.load(std::memory_order_acquire);
      auto start = std::chrono::steady_clock::now();
      for (unsigned spins = 0; current == seen; ++spins) {
        relax();
        current = generation.load(std::memory_order_acquire);
        if ((spins & 255) == 255 &&
            std::chrono::steady_clock::now() - start > kSpin)
          break;
      }
      if (current == seen) {
        std::unique_lock<std::mutex> lock(sleepMutex);
        wake.wait(lock, [&] {
          return generation.load(std::memory_order_acquire) != seen;
        });
        current = generation.load(std::memory_order_acquire);
      }
      seen = current;
      runChunks();
      pending.fetch_sub(1, std::memory_order_release);
    }
  }

  const int threads;
  std::mutex busy;
  Job job;
  std::atomic<uint64_t> generation{0};
  std::atomic<int64_t> next{0};
  std::atomic<int> pending{0};
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
