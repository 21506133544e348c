//===- Parallel.cpp - the runtime's thread pool ---------------------------===//
//
// Workers wait for a new loop by spinning briefly (loops of one training step
// follow each other within microseconds) and then sleeping on a condition
// variable. The caller posts a loop by bumping a generation counter, runs
// the first chunk itself and spins until the workers' chunks are done.
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
#include <vector>

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
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof(set), &set) == 0)
    return std::max(1, CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

thread_local bool insideLoop = false;

/// Set in the child of a fork, which has none of the pool's workers: its
/// loops run on the calling thread.
std::atomic<bool> forkedChild{false};

class Pool {
public:
  explicit Pool(int threads) : threads(threads) {
    for (int i = 1; i < threads; ++i)
      workers.emplace_back([this, i] { work(i); });
    for (std::thread &worker : workers)
      worker.detach();
  }

  int size() const { return threads; }

  void run(int64_t iterations, ChunkFn fn, void *ctx) {
    if (threads == 1 || iterations < 2 || insideLoop ||
        forkedChild.load(std::memory_order_relaxed) || !busy.try_lock()) {
      fn(ctx, 0, iterations);
      return;
    }
    job = {fn, ctx, iterations};
    pending.store(threads - 1, std::memory_order_relaxed);
    generation.fetch_add(1, std::memory_order_release);
    {
      // Pairs with the workers' predicate check: none misses the wake-up.
      std::lock_guard<std::mutex> lock(sleepMutex);
    }
    wake.notify_all();
    runChunk(0);
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
  };

  void runChunk(int index) {
    int64_t begin = job.iterations * index / threads;
    int64_t end = job.iterations * (index + 1) / threads;
    if (begin < end) {
      insideLoop = true;
      job.fn(job.ctx, begin, end);
      insideLoop = false;
    }
  }

  void work(int index) {
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
      runChunk(index);
      pending.fetch_sub(1, std::memory_order_release);
    }
  }

  const int threads;
  std::vector<std::thread> workers;
  std::mutex busy;
  Job job;
  std::atomic<uint64_t> generation{0};
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

int numThreads() { return pool().size(); }

void parallelFor(int64_t iterations, ChunkFn fn, void *ctx) {
  if (iterations <= 0)
    return;
  pool().run(iterations, fn, ctx);
}

} // namespace loom::rt

/// Called by compiled bundles for the loop nests that
/// loom-outline-parallel-loops moved into functions of their own.
extern "C" LOOM_API void loom_rt_parallel_for(loom::rt::ChunkFn fn, void *ctx,
                                              int64_t iterations) {
  loom::rt::parallelFor(iterations, fn, ctx);
}
