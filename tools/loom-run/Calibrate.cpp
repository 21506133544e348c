//===- Calibrate.cpp - loom-run calibrate: a cluster profile of this machine
//===//
//
//   loom-run calibrate --nproc N -o cluster.json
//
// Measures what the planner's cost model needs, as N local ranks see it
// (each with its share of the CPUs, as `loom-run train --nproc N` gives
// them):
//
//  * the throughput of libloomrt's GEMM kernels (the ones compiled bundles
//    call) in fp32 and bf16 over a grid of shapes, since a CPU reaches very
//    different rates on a 64-wide and a 1024-wide product;
//  * the memory bandwidth a streaming kernel reaches on each rank;
//  * the latency and bandwidth of all-reduce, all-gather and messages
//    between the N ranks (Gloo, called from a thread of their own as
//    libloomrt's collective queue calls it), each fitted to the formula the
//    planner uses (all-reduce: t = 2 (n - 1) latency + 2 (n - 1) / n *
//    bytes / bandwidth).
//
// With more ranks than cores, the ranks measure the GEMMs and the bandwidth
// in turns, as many at a time as have cores of their own, and the profile
// records the cores (cores_per_node); the planner's simulation then shares
// the cores among the ranks computing at each moment (each core among the
// ranks pinned to it where the launcher pins them: plan::pinRanks, which
// puts the ranks of a turn on different CPUs).
//
// Rank 0 writes the figures as a cluster description (the format of
// examples/clusters/) with one node of N "devices", each a rank's share of
// this CPU. The ranks time each measurement together (a barrier first; in
// turns on time-shared cores), and the figure kept is the mean over the
// ranks.
//
//===----------------------------------------------------------------------===//

#include "Comm.h"
#include "Launch.h"
#include "MemRefDescriptor.h"
#include "Parallel.h"
#include "loom/Planner/Planner.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace llvm;

cl::SubCommand calibrateCommand(
    "calibrate",
    "Measure this machine for the planner (GEMM throughput by shape, memory "
    "bandwidth, all-reduce latency and bandwidth over --nproc ranks) and "
    "write a cluster description for loomc --plan --cluster");

static cl::opt<unsigned> calibrateRanks(
    "nproc",
    cl::desc("Local ranks to calibrate for (default 1): the profile "
             "describes one node of this many devices, each a rank's share "
             "of the CPUs"),
    cl::init(1), cl::sub(calibrateCommand));
static cl::opt<std::string>
    calibrateOutput("o", cl::desc("The cluster description to write"),
                    cl::value_desc("cluster.json"), cl::Required,
                    cl::sub(calibrateCommand));
static cl::opt<double> calibrateSeconds(
    "seconds",
    cl::desc("Time spent on each measurement (default 0.05; more is "
             "steadier)"),
    cl::init(0.05), cl::sub(calibrateCommand));

namespace {

using Clock = std::chrono::steady_clock;

/// A rank-2 memref's descriptor, as libloomrt's kernels take it.
template <typename T> using Matrix = loom::rt::Descriptor<T, 2>;

template <typename T> Matrix<T> matrix(std::vector<T> &data, int64_t rows,
                                       int64_t cols) {
  return {data.data(), data.data(), 0, {rows, cols}, {cols, 1}};
}

} // namespace

extern "C" void _mlir_ciface_loom_kernel_matmul_f32(Matrix<float> *,
                                                    Matrix<float> *,
                                                    Matrix<float> *, int64_t);
extern "C" void _mlir_ciface_loom_kernel_matmul_bf16(Matrix<uint16_t> *,
                                                     Matrix<uint16_t> *,
                                                     Matrix<float> *, int64_t);

namespace {

int fail(const Twine &message) {
  return reportError("loom-run calibrate", message);
}

/// Runs `body` once untimed, then as many times as fill `seconds` (at least
/// twice) and returns the mean time of one run. Every rank runs it the same
/// number of times, since `body` may be a collective. With `before`, each
/// run of `body` comes after a call of `before`, which is not timed.
template <typename Body, typename Before = void (*)()>
double timeIt(
    loom::comm::Communicator *comm, double seconds, Body body,
    Before before = [] {}) {
  if (comm)
    comm->barrier();
  auto start = Clock::now();
  before();
  body();
  // The slowest rank's first run sets the count (ranks that take no part
  // in `body` would ask for a million).
  float once = std::chrono::duration<float>(Clock::now() - start).count();
  if (comm) {
    comm->allReduce(&once, 1, loom::comm::ReduceOp::Max);
    comm->barrier();
  }
  float runs = std::max(2.0, std::ceil(seconds / std::max(once, 1e-9f)));
  runs = std::min(runs, 1e6f);
  double elapsed = 0;
  for (int i = 0; i < int(runs); ++i) {
    before();
    start = Clock::now();
    body();
    elapsed += std::chrono::duration<double>(Clock::now() - start).count();
  }
  if (comm)
    comm->barrier();
  return elapsed / int(runs);
}

/// The mean of `value` over the ranks.
double meanOverRanks(loom::comm::Communicator *comm, double value) {
  if (!comm)
    return value;
  float v = static_cast<float>(value);
  comm->allReduce(&v, 1, loom::comm::ReduceOp::Sum);
  return v / comm->size();
}

namespace plan = mlir::loom::plan;

/// Runs `measure` (given the communicator to time with) on every rank,
/// `turn` ranks at a time: the ranks of a turn measure together, untimed
/// against the others, which wait (all at once, with the communicator,
/// when `turn` covers every rank). Returns this rank's figure.
template <typename Measure>
double inTurns(loom::comm::Communicator *comm, int turn, Measure measure) {
  if (!comm || turn >= comm->size())
    return measure(comm);
  double figure = 0;
  for (int k = 0; k * turn < comm->size(); ++k) {
    comm->barrier();
    if (comm->rank() / turn == k)
      figure = measure(nullptr);
  }
  return figure;
}

/// Passes over the GEMM grid. A shape's figure is the median of its passes:
/// the passes are seconds apart, so a burst of load from elsewhere on the
/// machine (this VM's neighbours, a rank's helper threads) slows one pass
/// of a shape rather than every measurement of it.
constexpr int kGemmPasses = 3;

std::vector<plan::GemmSample> measureGemms(loom::comm::Communicator *comm,
                                           int turn, double seconds) {
  static const int64_t rows[] = {16, 64, 256, 1024, 4096};
  static const int64_t widths[] = {32, 128, 512, 2048};
  std::vector<plan::GemmSample> samples;
  for (const char *precision : {"fp32", "bf16"})
    for (int64_t m : rows)
      for (int64_t k : widths)
        for (int64_t n : widths)
          samples.push_back({m, n, k, precision, 0});
  std::vector<std::vector<double>> rates(samples.size());
  for (int pass = 0; pass < kGemmPasses; ++pass)
    for (size_t i = 0; i < samples.size(); ++i) {
      const plan::GemmSample &s = samples[i];
      std::vector<float> c(s.m * s.n);
      Matrix<float> cm = matrix(c, s.m, s.n);
      double t;
      if (s.precision == "fp32") {
        std::vector<float> a(s.m * s.k, 0.5f), b(s.k * s.n, 0.25f);
        Matrix<float> am = matrix(a, s.m, s.k), bm = matrix(b, s.k, s.n);
        t = inTurns(comm, turn, [&](loom::comm::Communicator *c) {
          return timeIt(c, seconds / kGemmPasses, [&] {
            _mlir_ciface_loom_kernel_matmul_f32(&am, &bm, &cm, 4);
          });
        });
      } else {
        std::vector<uint16_t> a(s.m * s.k, 0x3f00), b(s.k * s.n, 0x3e80);
        Matrix<uint16_t> am = matrix(a, s.m, s.k), bm = matrix(b, s.k, s.n);
        t = inTurns(comm, turn, [&](loom::comm::Communicator *c) {
          return timeIt(c, seconds / kGemmPasses, [&] {
            _mlir_ciface_loom_kernel_matmul_bf16(&am, &bm, &cm, 4);
          });
        });
      }
      double flops = 2.0 * s.m * s.n * s.k;
      rates[i].push_back(meanOverRanks(comm, flops / t));
    }
  for (size_t i = 0; i < samples.size(); ++i) {
    std::vector<double> &r = rates[i];
    std::nth_element(r.begin(), r.begin() + r.size() / 2, r.end());
    samples[i].flops = r[r.size() / 2];
  }
  return samples;
}

/// Bytes per second of c = a + b over arrays far larger than the caches
/// (what a training step's tensors, taken together, are), on this rank's
/// threads.
double measureBandwidth(loom::comm::Communicator *comm, int turn,
                        double seconds) {
  const size_t count = size_t(1) << 24;
  std::vector<float> a(count, 1.0f), b(count, 2.0f), c(count);
  int threads = loom::rt::numThreads();
  auto part = [&](int t) {
    size_t chunk = (count + threads - 1) / threads;
    size_t lo = t * chunk, hi = std::min(count, lo + chunk);
    const float *pa = a.data(), *pb = b.data();
    float *pc = c.data();
    for (size_t i = lo; i < hi; ++i)
      pc[i] = pa[i] + pb[i];
  };
  auto pass = [&] {
    if (threads == 1)
      return part(0);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back(part, t);
    for (std::thread &w : workers)
      w.join();
  };
  // The median of five timings: one pass is long enough for the machine's
  // other work to disturb it. In one turn, so that after the first the
  // ranks of a turn stream together.
  double median = inTurns(comm, turn, [&](loom::comm::Communicator *c) {
    std::vector<double> times;
    for (int i = 0; i < 5; ++i)
      times.push_back(timeIt(c, seconds / 5, pass));
    std::sort(times.begin(), times.end());
    return times[2];
  });
  return meanOverRanks(comm, 3.0 * count * sizeof(float) / median);
}

/// The GEMM rates and memory bandwidth of `profile`, each the mean over the
/// ranks. On a node whose ranks time-share its cores, the ranks time each
/// kernel in turns of Cluster::measuredBusy, the others waiting, so that each
/// figure is that of a rank with cores of its own (every core busy), which
/// the simulation scales by the ranks computing at each moment.
/// Timed all at once, short kernels caught the sharing only in part: 4-rank
/// profiles on 2 cores read 58-75 GFLOP/s for a 1024x512x512 product that
/// 2-rank ones (a core per rank) read at 100-114, but fp32 peaks of 87-108
/// GFLOP/s (2-rank: 107-115), from small products.
void measureKernels(loom::comm::Communicator *comm, plan::Cluster &profile,
                    double seconds) {
  int turn = profile.measuredBusy();
  profile.gemm = measureGemms(comm, turn, seconds);
  profile.memoryBandwidth = measureBandwidth(comm, turn, seconds);
}

/// Runs communicator calls on a thread of their own, one after another, and
/// waits for each, as libloomrt's collective queue does for a bundle's
/// collectives, sends and receives (so the hand-over between the threads is
/// part of what is measured).
class CollectiveThread {
public:
  CollectiveThread() : worker([this] { loop(); }) {}
  ~CollectiveThread() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
    }
    changed.notify_all();
    worker.join();
  }
  /// Runs `task` on the thread and waits for it; rethrows its error.
  void run(std::function<void()> task) {
    start(std::move(task));
    finish();
  }
  /// Starts `task` on the thread (finish() waits for it).
  void start(std::function<void()> task) {
    std::lock_guard<std::mutex> lock(mutex);
    pending = std::move(task);
    done = false;
    changed.notify_all();
  }
  bool finished() {
    std::lock_guard<std::mutex> lock(mutex);
    return done;
  }
  /// Waits for the started task; rethrows its error.
  void finish() {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return done; });
    if (!error.empty()) {
      std::string e = std::move(error);
      error.clear();
      throw loom::comm::Error(e);
    }
  }

private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      changed.wait(lock, [&] { return stopping || pending; });
      if (!pending)
        return;
      std::function<void()> task = std::move(pending);
      pending = nullptr;
      lock.unlock();
      std::string failure;
      try {
        task();
      } catch (const loom::comm::Error &e) {
        failure = e.what();
      }
      lock.lock();
      error = failure;
      done = true;
      changed.notify_all();
    }
  }

  std::mutex mutex;
  std::condition_variable changed;
  std::function<void()> pending;
  bool done = false, stopping = false;
  std::string error;
  std::thread worker;
};

/// The figures of t = steps * latency + volume / bandwidth from times
/// measured over sizes, where `steps` and `volume` are the formula's factors
/// for the group (the ring's 2 (n - 1) and 2 (n - 1) / n * bytes for
/// all-reduce): the latency from the three smallest sizes (their median,
/// which one scheduling hiccup does not move), the bandwidth from the slope
/// between the two largest. `times` keeps each size's measured time.
struct Fit {
  struct Point {
    double steps, volume, t;
  };
  std::vector<Point> points; // by increasing size
  std::vector<std::pair<double, double>> times; // bytes, seconds
  void add(double steps, double volumeBytes, double bytes, double t) {
    points.push_back({steps, volumeBytes, t});
    times.push_back({bytes, t});
  }
  /// The fit (bandwidth in bytes per second and latency in seconds, both
  /// positive) and the times by size, for a group of `ranks`.
  plan::MeasuredCollective solve(int64_t ranks) const {
    std::vector<double> small;
    for (size_t i = 0; i < points.size() && i < 3; ++i)
      small.push_back(points[i].t / points[i].steps);
    std::sort(small.begin(), small.end());
    double latency = std::max(small[small.size() / 2], 1e-7);
    const Point &big = points.back(), &prev = points[points.size() - 2];
    double slope = (big.t - prev.t) / (big.volume - prev.volume);
    if (!(slope > 0))
      slope = std::max(big.t - big.steps * latency, 1e-9) / big.volume;
    plan::MeasuredCollective out;
    out.bandwidth = 1 / slope;
    out.latency = latency;
    out.ranks = ranks;
    out.times = times;
    return out;
  }
};

/// All-reduce, all-gather and point-to-point transfers between the ranks,
/// with their times by size and each fitted to its formula: all-reduce
/// 2 (n - 1) latency + 2 (n - 1) / n bytes / bandwidth, all-gather (n - 1)
/// latency + (n - 1) / n bytes / bandwidth (bytes of the gathered tensor),
/// a message latency + bytes / bandwidth (timed as half a round trip
/// between ranks 0 and 1).
struct Collectives {
  plan::MeasuredCollective allReduce, allGather, p2p;
  /// All-reduce back to back: how a started all-reduce runs while the rank
  /// computes.
  plan::MeasuredCollective allReduceStarted;
  /// All-reduce started while the rank computes (an overlapped gradient
  /// bucket), its threads sharing the rank's CPUs with the compute: printed
  /// for comparison, not part of the profile (the planner times started
  /// all-reduces as on an idle link, which matched measured steps better).
  plan::MeasuredCollective allReduceOverlapped;
};

/// Passes over the collectives' sizes; each figure is the median of its
/// passes. A small collective's time depends on how the ranks' threads are
/// woken and scheduled, in stretches (0.3 ms or 3 ms here before Gloo's
/// event thread ran under SCHED_BATCH, see createDevice in Comm.cpp);
/// spreading a size's runs over passes seconds apart measures its typical
/// time.
constexpr int kCollectivePasses = 3;

double median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

Collectives measureCollectives(loom::comm::Communicator *comm, double seconds,
                               bool timeShared, raw_ostream &log) {
  CollectiveThread thread;
  double n = comm->size();
  int rank = comm->rank();
  // What the rank computes meanwhile: small products, as a backward pass
  // does between its buckets.
  const int64_t side = 128;
  std::vector<float> a(side * side, 0.5f), b(side * side, 0.25f),
      c(side * side);
  Matrix<float> am = matrix(a, side, side), bm = matrix(b, side, side),
                cm = matrix(c, side, side);
  // A training step issues each collective after computing for a while,
  // and a collective then takes longer than one run right after another
  // (a 4 KiB all-reduce on 2 ranks here: 0.46-0.70 ms against 0.20-0.22 ms;
  // before Gloo's event thread ran under SCHED_BATCH, 2.6-4.5 ms against
  // 0.4-2.5 ms). So every collective, message and round trip below is timed
  // after the ranks computed for kComputeGap.
  constexpr double kComputeGap = 2e-3;
  auto compute = [&] {
    auto start = Clock::now();
    while (std::chrono::duration<double>(Clock::now() - start).count() <
           kComputeGap)
      _mlir_ciface_loom_kernel_matmul_f32(&am, &bm, &cm, 4);
  };
  // Ranks that time-share their CPUs end that computing up to a time slice
  // apart, and the first would time its collective from then on, while its
  // CPU ran the others: the step simulation already runs each computing
  // rank at its share of the CPU, so here the ranks meet at a barrier
  // (untimed) before their collective. Measured without it, all-reduces of
  // 256 bytes over 4 ranks on 2 cores took 2.8-3.5 ms (1.8-2.0 ms with
  // it), and the benchmark MLP's tp=4 plan, with an all-reduce in each
  // layer, was predicted 22-39 % above its fastest measured round in four
  // runs (7.7 and 24.3 % in two runs with it).
  auto computeThenMeet = [&] {
    compute();
    if (timeShared)
      comm->barrier();
  };
  static const size_t counts[] = {64,     1024,    16384,
                                  131072, 1 << 20, 1 << 22};
  constexpr size_t sizes = std::size(counts);
  // [kind][size] -> one time per pass; kinds: all-reduce, all-gather,
  // message, all-reduce while computing, all-reduce back to back.
  std::vector<double> measured[5][sizes];
  for (int pass = 0; pass < kCollectivePasses; ++pass)
    for (size_t i = 0; i < sizes; ++i) {
      size_t count = counts[i];
      std::vector<float> data(count, 1.0f), gathered(count);
      double bytes = count * sizeof(float);
      measured[0][i].push_back(meanOverRanks(
          comm, timeIt(
                    comm, seconds,
                    [&] {
                      thread.run([&] {
                        comm->allReduce(data.data(), count,
                                        loom::comm::ReduceOp::Sum);
                      });
                    },
                    computeThenMeet)));
      // Each rank contributes count / n: the gathered tensor has `count`.
      size_t part = std::max<size_t>(1, count / comm->size());
      measured[1][i].push_back(meanOverRanks(
          comm, timeIt(
                    comm, seconds,
                    [&] {
                      thread.run([&] {
                        comm->allGather(data.data(), gathered.data(), part);
                      });
                    },
                    computeThenMeet)));
      uint64_t sequence = 0;
      double roundTrip = meanOverRanks(
          comm, timeIt(
                    comm, seconds,
                    [&] {
                      if (rank == 0) {
                        thread.run([&] {
                          comm->send(data.data(), bytes, 1, sequence);
                          comm->waitSends();
                        });
                        thread.run([&] {
                          comm->recv(data.data(), bytes, 1, sequence);
                        });
                      } else if (rank == 1) {
                        thread.run([&] {
                          comm->recv(data.data(), bytes, 0, sequence);
                        });
                        thread.run([&] {
                          comm->send(data.data(), bytes, 0, sequence);
                          comm->waitSends();
                        });
                      }
                      ++sequence;
                    },
                    // Only the two ranks of the message compute before it.
                    // Ranks that time-share their CPUs with the others
                    // would otherwise wait for the others' time slices to
                    // receive (messages of 256 bytes took 0.93-1.0 ms on 4
                    // ranks on 2 cores, where a pipeline stage of the
                    // benchmark MLP traced 0.49-0.54 ms per message it
                    // received, waiting included).
                    [&] {
                      if (rank < 2)
                        compute();
                    }));
      // Ranks other than 0 and 1 took no part; the mean over 2 of them is
      // what ranks 0 and 1 measured.
      measured[2][i].push_back(roundTrip * n / 2 / 2);
      // Started, then computed over until it is done: the time from its
      // start to the first product that sees it finished.
      measured[3][i].push_back(meanOverRanks(
          comm, timeIt(comm, seconds, [&] {
            thread.start([&] {
              comm->allReduce(data.data(), count, loom::comm::ReduceOp::Sum);
            });
            while (!thread.finished())
              _mlir_ciface_loom_kernel_matmul_f32(&am, &bm, &cm, 4);
            thread.finish();
          })));
      measured[4][i].push_back(meanOverRanks(
          comm, timeIt(comm, seconds, [&] {
            thread.run([&] {
              comm->allReduce(data.data(), count, loom::comm::ReduceOp::Sum);
            });
          })));
    }

  Fit reduceFit, gatherFit, p2pFit, overlappedFit, backToBackFit;
  for (size_t i = 0; i < sizes; ++i) {
    size_t count = counts[i];
    double bytes = count * sizeof(float);
    double reduce = median(measured[0][i]), gather = median(measured[1][i]),
           message = median(measured[2][i]),
           overlapped = median(measured[3][i]),
           backToBack = median(measured[4][i]);
    log << format("  %9.0f bytes: all-reduce %8.1f us (%8.1f us back to "
                  "back, %8.1f us while computing), all-gather %8.1f us, "
                  "message %8.1f us\n",
                  bytes, reduce * 1e6, backToBack * 1e6, overlapped * 1e6,
                  gather * 1e6, message * 1e6);
    backToBackFit.add(2 * (n - 1), 2 * (n - 1) / n * bytes, bytes, backToBack);
    overlappedFit.add(2 * (n - 1), 2 * (n - 1) / n * bytes, bytes, overlapped);
    reduceFit.add(2 * (n - 1), 2 * (n - 1) / n * bytes, bytes, reduce);
    size_t part = std::max<size_t>(1, count / comm->size());
    double gatheredBytes = double(part) * comm->size() * sizeof(float);
    gatherFit.add(n - 1, (n - 1) / n * gatheredBytes, gatheredBytes, gather);
    p2pFit.add(1, bytes, bytes, message);
  }
  int64_t ranks = comm->size();
  Collectives out;
  out.allReduce = reduceFit.solve(ranks);
  out.allGather = gatherFit.solve(ranks);
  out.p2p = p2pFit.solve(2);
  out.allReduceOverlapped = overlappedFit.solve(ranks);
  out.allReduceStarted = backToBackFit.solve(ranks);
  return out;
}

/// The CPUs the node's ranks may run on: the union of every rank's
/// affinity mask (each rank's own without a communicator), so that ranks a
/// launcher pinned to their share count once each. Every rank takes part
/// in the all-reduce, whether or not it could read its mask.
int nodeCpus(loom::comm::Communicator *comm) {
  std::vector<float> mine(CPU_SETSIZE);
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) {
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu)
      mine[cpu] = CPU_ISSET(cpu, &set) ? 1.0f : 0.0f;
  } else {
    std::fill_n(mine.begin(), std::min(loom::rt::availableCpus(), CPU_SETSIZE),
                1.0f);
  }
  if (comm)
    comm->allReduce(mine.data(), mine.size(), loom::comm::ReduceOp::Max);
  return std::max(1, (int)std::count(mine.begin(), mine.end(), 1.0f));
}

std::string cpuName() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      size_t colon = line.find(':');
      if (colon != std::string::npos)
        return StringRef(line).drop_front(colon + 1).trim().str();
    }
  return "CPU";
}

double memoryBytes() {
  long pages = ::sysconf(_SC_PHYS_PAGES), size = ::sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? double(pages) * size : 0;
}

} // namespace

int runCalibrate(int argc, char **argv) {
  const char *worldSize = std::getenv("WORLD_SIZE");
  bool distributed = worldSize && std::atoi(worldSize) > 1;
  if (calibrateRanks == 0)
    return fail("--nproc must be at least 1");
  if (!(calibrateSeconds > 0))
    return fail("--seconds must be positive");
  if (calibrateRanks > 1 && !distributed) {
    // The launcher keeps rank 0's output; rank 0 writes the file.
    // On time-shared CPUs a rank waits at a turn's barrier while the
    // others measure, up to about --seconds each: unless the run's
    // collective timeout is given, it grows with that wait beyond the
    // default 60 s (a long --seconds would otherwise time the barrier out).
    if (!std::getenv("LOOM_TIMEOUT_SEC")) {
      double wait = (calibrateRanks - 1) * (calibrateSeconds + 1.0);
      ::setenv("LOOM_TIMEOUT_SEC",
               std::to_string(60 + (long)std::ceil(2 * wait)).c_str(), 1);
    }
    // The ranks of a turn (measureKernels) compute together: pinned, each
    // on its own CPU.
    std::vector<int64_t> turns;
    int cpus = loom::rt::availableCpus();
    for (unsigned r = 0; r < calibrateRanks; ++r)
      turns.push_back(r / cpus);
    return launchRanks(calibrateRanks, /*masterPort=*/0, /*killAfter=*/60,
                       rankCommandLine(argc, argv, {"nproc"}), turns);
  }

  std::unique_ptr<loom::comm::Communicator> comm;
  int rank = 0, ranks = 1;
  try {
    if (distributed) {
      comm = loom::comm::connectGloo(loom::comm::rendezvousFromEnvironment());
      rank = comm->rank();
      ranks = comm->size();
    }
  } catch (const loom::comm::Error &e) {
    return fail(e.what());
  }
  raw_ostream &log = rank == 0 ? outs() : nulls();
  int threads = loom::rt::numThreads();
  // One node of `ranks` devices of `threads` threads on the CPUs the ranks
  // may run on: when they want more threads than it has
  // (Cluster::timeShared), the GEMM and bandwidth figures below are those of
  // a rank with cores of its own (measureKernels), and the simulation shares
  // the cores among the ranks computing at each moment (see measureKernels).
  plan::Cluster profile;
  profile.devicesPerNode = ranks;
  profile.nodes = 1;
  profile.threadsPerDevice = threads;
  try {
    profile.coresPerNode = nodeCpus(comm.get());
    // The most threads any rank runs: every rank must take the same turns
    // (LOOM_NUM_THREADS set differently per rank by another launcher).
    if (comm) {
      float most = float(threads);
      comm->allReduce(&most, 1, loom::comm::ReduceOp::Max);
      profile.threadsPerDevice = int64_t(most);
    }
  } catch (const loom::comm::Error &e) {
    return fail(e.what());
  }
  log << "calibrating " << ranks << (ranks == 1 ? " rank" : " ranks") << " of "
      << profile.threadsPerDevice
      << (profile.threadsPerDevice == 1 ? " thread" : " threads") << " on "
      << cpuName() << "\n";
  if (profile.timeShared())
    log << "  the ranks time-share " << profile.coresPerNode
        << (profile.coresPerNode == 1 ? " CPU" : " CPUs")
        << ": GEMMs and bandwidth are measured by " << profile.measuredBusy()
        << " rank" << (profile.measuredBusy() == 1 ? "" : "s")
        << " at a time, collectives by all\n";

  Collectives collectives;
  try {
    measureKernels(comm.get(), profile, calibrateSeconds);
    if (comm)
      collectives = measureCollectives(comm.get(), calibrateSeconds,
                                       profile.timeShared(), log);
  } catch (const loom::comm::Error &e) {
    return fail(e.what());
  }
  for (const plan::GemmSample &g : profile.gemm) {
    double &peak = g.precision == "bf16" ? profile.peakBf16 : profile.peakFp32;
    peak = std::max(peak, g.flops);
  }
  log << format("  GEMM peak: fp32 %.1f GFLOP/s, bf16 %.1f GFLOP/s per rank\n",
                profile.peakFp32 / 1e9, profile.peakBf16 / 1e9);
  log << format("  memory bandwidth: %.2f GB/s per rank\n",
                profile.memoryBandwidth / 1e9);
  if (comm)
    for (auto [name, fit] :
         {std::pair<const char *, plan::Link>{"all-reduce",
                                              collectives.allReduce},
          {"all-reduce back to back", collectives.allReduceStarted},
          {"all-reduce while computing", collectives.allReduceOverlapped},
          {"all-gather", collectives.allGather},
          {"message", collectives.p2p}})
      log << format("  %s fit: latency %.1f us, bandwidth %.2f GB/s\n", name,
                    fit.latency * 1e6, fit.bandwidth / 1e9);
  if (rank != 0)
    return 0;

  // The measured figures are what the device reaches: no efficiencies, no
  // fixed costs on top. One node of `ranks` devices, each with its share of
  // the memory; a rank alone has no link to measure, and a figure that
  // makes communication free never matters, since no plan of one device
  // has any.
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", std::gmtime(&now));
  profile.name = "local-cpu-" + std::to_string(ranks) + "-ranks";
  profile.source = "loom-run calibrate --nproc " + std::to_string(ranks) +
                   ", " + date;
  profile.device = cpuName() + " (" + std::to_string(threads) +
                   (threads == 1 ? " thread" : " threads") + " per rank)";
  profile.memoryBytes = memoryBytes() / ranks;
  profile.gemmEfficiency = profile.memoryEfficiency = 1;
  profile.linkEfficiency = 1;
  profile.kernelOverhead = 0;
  if (comm) {
    profile.allReduce = collectives.allReduce;
    profile.allReduceStarted = collectives.allReduceStarted;
    profile.allGather = collectives.allGather;
    profile.p2p = collectives.p2p;
  }
  profile.intraNode = profile.interNode =
      comm ? collectives.allReduce : plan::Link{1e12, 1e-6};

  // Written whole to a temporary file, then renamed into place.
  if (Error e = writeToOutput(calibrateOutput, [&](raw_ostream &out) {
        out << formatv("{0:2}", plan::clusterToJson(profile)) << "\n";
        return Error::success();
      }))
    return fail("cannot write " + calibrateOutput + ": " +
                toString(std::move(e)));
  log << "wrote " << calibrateOutput << "\n";
  return 0;
}
