//===- Collectives.cpp - collectives that compiled bundles call -----------===//
//
// One-shot bufferization turns loom collectives into calls of these
// functions (passes/Conversion/CollectivesToRuntime.cpp). They run on the
// communicator of the session whose entry point is running; a failure (a
// peer died, a timeout, a bundle built for another number of ranks) is
// recorded and loom_session_run returns it as LOOM_STATUS_UNAVAILABLE,
// since generated code has no way to return an error.
//
// Every collective runs on one background thread per process, in the order
// the program issues them (the same on every rank, so they match up). A
// synchronous collective waits for its turn and its result; a started
// all-reduce (loom.all_reduce_start) returns at once, so the computation
// after it overlaps with the communication until its loom.wait.
//
// A bundle for a device (a CUDA bundle) passes device buffers: each
// collective then copies what it reads to the host and what it writes back
// (HostCopy), and exchanges the host copies over the communicator.
//
//===----------------------------------------------------------------------===//

#include "Collectives.h"
#include "LowPrecision.h"
#include "StridedBytes.h"
#include "Trace.h"

#include "loom/runtime.h"

#include <algorithm>
#include <condition_variable>
#include <cstring>
#include <memory>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <type_traits>
#include <mutex>
#include <thread>
#include <vector>

namespace loom::rt {

thread_local comm::Communicator *currentCommunicator = nullptr;
thread_local int (*deviceCopy)(void *, const void *, size_t) = nullptr;
thread_local std::string collectiveError;
thread_local std::vector<int64_t> currentMesh;

} // namespace loom::rt

namespace {

/// MLIR's unranked memref descriptor: the rank and the ranked descriptor
/// (allocated, aligned, offset, sizes[rank], strides[rank]).
struct Unranked {
  int64_t rank;
  void *descriptor;
};

/// A strided memref of `T` (f32, bf16 or f16), read and written as f32
/// (exactly: f32 holds every bf16 and f16 value).
template <typename T> struct View {
  T *data;
  std::vector<int64_t> sizes, strides;

  explicit View(const Unranked &u) {
    auto *words = static_cast<int64_t *>(u.descriptor);
    T *aligned = reinterpret_cast<T *>(words[1]);
    data = aligned + words[2];
    sizes.assign(words + 3, words + 3 + u.rank);
    strides.assign(words + 3 + u.rank, words + 3 + 2 * u.rank);
  }
  size_t count() const {
    size_t n = 1;
    for (int64_t s : sizes)
      n *= (size_t)s;
    return n;
  }
  T &at(const std::vector<int64_t> &index) const {
    int64_t offset = 0;
    for (size_t d = 0; d < sizes.size(); ++d)
      offset += index[d] * strides[d];
    return data[offset];
  }
  float get(const std::vector<int64_t> &index) const {
    return loom::rt::toFloat(at(index));
  }
  void set(const std::vector<int64_t> &index, float value) const {
    at(index) = loom::rt::fromFloat<T>(value);
  }
  /// The row-major position of `index` in a dense tensor of this shape.
  size_t linear(const std::vector<int64_t> &index) const {
    size_t at = 0;
    for (size_t d = 0; d < sizes.size(); ++d)
      at = at * (size_t)sizes[d] + (size_t)index[d];
    return at;
  }
  /// Calls fn(index) for every index in row-major order.
  template <typename Fn> void forEachIndex(Fn &&fn) const {
    size_t n = count(), rank = sizes.size();
    std::vector<int64_t> index(rank, 0);
    for (size_t i = 0; i < n; ++i) {
      fn(index);
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < sizes[d])
          break;
        index[d] = 0;
      }
    }
  }
  /// Whether the elements lie packed in row-major order (the strides of a
  /// dense tensor), which allows copies by runs instead of by index.
  bool dense() const {
    int64_t expected = 1;
    for (size_t d = sizes.size(); d-- > 0;) {
      if (sizes[d] != 1 && strides[d] != expected)
        return false;
      expected *= sizes[d];
    }
    return true;
  }
  /// Elements before and after dimension `dim` (a dense view is
  /// [outer, sizes[dim], inner]).
  std::pair<size_t, size_t> around(int64_t dim) const {
    size_t outer = 1, inner = 1;
    for (int64_t d = 0; d < (int64_t)sizes.size(); ++d)
      (d < dim ? outer : inner) *= d == dim ? 1 : (size_t)sizes[d];
    return {outer, inner};
  }
  /// The elements in row-major order.
  std::vector<float> packed() const {
    if (dense()) {
      size_t n = count();
      std::vector<float> values(n);
      for (size_t i = 0; i < n; ++i)
        values[i] = loom::rt::toFloat(data[i]);
      return values;
    }
    std::vector<float> values;
    values.reserve(count());
    forEachIndex(
        [&](const std::vector<int64_t> &i) { values.push_back(get(i)); });
    return values;
  }
  /// Writes `values` (row-major) into the view.
  void unpack(const std::vector<float> &values) const {
    if (dense()) {
      for (size_t i = 0, n = count(); i < n; ++i)
        data[i] = loom::rt::fromFloat<T>(values[i]);
      return;
    }
    size_t i = 0;
    forEachIndex([&](const std::vector<int64_t> &index) {
      set(index, values[i++]);
    });
  }
};

/// The memref `u` of `elementBytes`-byte elements as raw bytes.
loom::rt::StridedBytes bytesOf(const Unranked &u, int64_t elementBytes) {
  auto *words = static_cast<int64_t *>(u.descriptor);
  return {reinterpret_cast<char *>(words[1]) + words[2] * elementBytes,
          (size_t)elementBytes,
          std::vector<int64_t>(words + 3, words + 3 + u.rank),
          std::vector<int64_t>(words + 3 + u.rank, words + 3 + 2 * u.rank)};
}

/// The buffer of a collective's argument where the host can read and write
/// it. For a device bundle (loom::rt::deviceCopy set) that is a host copy of
/// the span the view covers on the device, from its first element to its
/// last (gaps of a strided view included, so that writing the span back
/// keeps them); else the argument itself. An argument the collective only
/// writes is not read from the device when its view is dense.
class HostCopy {
public:
  enum Use { Read, Write };

  HostCopy(Unranked *u, int64_t elementBytes, Use use)
      : original(u), elementBytes(elementBytes) {
    auto *words = static_cast<int64_t *>(u->descriptor);
    int64_t rank = u->rank;
    // The view's lowest and highest element, relative to its offset.
    int64_t low = 0, high = 0, count = 1;
    for (int64_t d = 0; d < rank; ++d) {
      int64_t size = words[3 + d], stride = words[3 + rank + d];
      count *= size;
      (stride < 0 ? low : high) += (size - 1) * stride;
    }
    key = reinterpret_cast<char *>(words[1]) + words[2] * elementBytes;
    if (!loom::rt::deviceCopy || count == 0)
      return;
    device =
        reinterpret_cast<char *>(words[1]) + (words[2] + low) * elementBytes;
    bytes = (size_t)(high - low + 1) * (size_t)elementBytes;
    host.resize(bytes);
    descriptor.assign(words, words + 3 + 2 * rank);
    descriptor[0] = descriptor[1] = reinterpret_cast<int64_t>(host.data());
    descriptor[2] = -low;
    staged = {rank, descriptor.data()};
    dense = high - low + 1 == count;
    if ((use == Read || !dense) &&
        !loom::rt::deviceCopy(host.data(), device, bytes))
      fail("from");
  }

  /// The argument as the host reads and writes it; null when it could not
  /// be copied from the device.
  Unranked *get() {
    if (failed)
      return nullptr;
    return device ? &staged : original;
  }

  /// The argument's address on the device, which names it to loom.wait.
  const void *address() const { return key; }

  /// Copies what the host wrote back to the device. A view with gaps puts
  /// only its elements into the span read again: the device may have
  /// written the gaps since (between a started all-reduce and its wait).
  void writeBack() {
    if (!device || failed)
      return;
    if (!dense) {
      loom::rt::StridedBytes view = bytesOf(staged, elementBytes);
      std::vector<char> packed;
      view.copy(packed, /*intoPacked=*/true);
      if (!loom::rt::deviceCopy(host.data(), device, bytes))
        return fail("from");
      view.copy(packed, /*intoPacked=*/false);
    }
    if (!loom::rt::deviceCopy(device, host.data(), bytes))
      fail("to");
  }

private:
  void fail(const char *direction) {
    failed = true;
    if (loom::rt::collectiveError.empty())
      loom::rt::collectiveError =
          std::string("copying a collective's buffer ") + direction +
          " the device failed";
  }

  Unranked *original;
  int64_t elementBytes;
  bool dense = true;
  Unranked staged{0, nullptr};
  const void *key = nullptr;
  char *device = nullptr;
  size_t bytes = 0;
  std::vector<char> host;
  std::vector<int64_t> descriptor;
  bool failed = false;
};

/// Moves the blocks of a dense tensor [outer, groups * run / inner, inner]
/// split along its middle dimension into `groups` equal parts: part r's run
/// o (`run` elements) lies at (o * groups + r) * run in the tensor and at
/// (r * outer + o) * run packed. `pack` copies the tensor `from` into the
/// packed `to`, else the packed `from` into the tensor `to`, converting
/// between T and f32 on the way.
template <typename From, typename To>
void copyRuns(const From *from, To *to, size_t outer, size_t groups,
              size_t run, bool pack) {
  for (size_t r = 0; r < groups; ++r)
    for (size_t o = 0; o < outer; ++o) {
      size_t tensorAt = (o * groups + r) * run, packedAt = (r * outer + o) * run;
      const From *in = from + (pack ? tensorAt : packedAt);
      To *out = to + (pack ? packedAt : tensorAt);
      for (size_t j = 0; j < run; ++j)
        out[j] = loom::rt::fromFloat<To>(loom::rt::toFloat(in[j]));
    }
}

/// Communicators over parts of the mesh, by the run's communicator and the
/// group's name; made the first time a collective needs one.
std::map<std::pair<loom::comm::Communicator *, std::string>,
         std::unique_ptr<loom::comm::Communicator>>
    subgroups;
std::mutex subgroupsMutex;

/// The group of this rank along the mesh axes `order` names (4-bit nibbles,
/// lowest first, each an axis index plus 1): the ranks that share its
/// coordinates on the other axes, ordered by their coordinates on the
/// group's axes in the order listed (the first is the major one). Empty
/// when the mesh does not describe the run.
std::vector<int> groupOf(int rank, int worldSize, int64_t order,
                         std::string &name) {
  const std::vector<int64_t> &mesh = loom::rt::currentMesh;
  int64_t devices = 1;
  for (int64_t size : mesh)
    devices *= size;
  if (mesh.empty() || devices != worldSize)
    return {};
  std::vector<size_t> axes;
  for (int64_t rest = order; rest; rest >>= 4)
    axes.push_back((size_t)(rest & 0xf) - 1);
  auto coords = [&](int r) {
    std::vector<int64_t> c(mesh.size());
    for (size_t a = mesh.size(); a-- > 0;) {
      c[a] = r % mesh[a];
      r /= (int)mesh[a];
    }
    return c;
  };
  std::vector<int64_t> mine = coords(rank);
  std::vector<std::pair<std::vector<int64_t>, int>> members;
  for (int r = 0; r < worldSize; ++r) {
    std::vector<int64_t> other = coords(r);
    bool same = true;
    for (size_t a = 0; a < mesh.size(); ++a)
      same &= (std::find(axes.begin(), axes.end(), a) != axes.end()) || other[a] == mine[a];
    if (!same)
      continue;
    std::vector<int64_t> key;
    for (size_t a : axes)
      key.push_back(a < other.size() ? other[a] : 0);
    members.push_back({std::move(key), r});
  }
  std::sort(members.begin(), members.end());
  std::vector<int> ranks;
  for (auto &[key, r] : members)
    ranks.push_back(r);
  name = "axes" + std::to_string(order);
  for (size_t a = 0; a < mesh.size(); ++a)
    if (!(std::find(axes.begin(), axes.end(), a) != axes.end()))
      name += "-" + std::to_string(mine[a]);
  return ranks;
}

/// The communicator for a collective over `group` ((axes << 32) | number of
/// ranks; no axes means the whole mesh), or null with the
/// reason recorded (not distributed, another number of ranks). A group of
/// one needs none.
loom::comm::Communicator *communicatorFor(int64_t group, const char *what,
                                         bool &alone) {
  using namespace loom;
  int64_t groupSize = group & 0xffffffff, axesOrder = group >> 32;
  alone = groupSize == 1;
  comm::Communicator *c = rt::currentCommunicator;
  if (alone)
    return nullptr;
  std::string span = std::string("the bundle's ") + what + " spans " +
                     std::to_string(groupSize) + " ranks, but ";
  if (!c) {
    rt::collectiveError =
        span + "the session is not part of a distributed run "
               "(loom_session_options_t.distributed; start the ranks with "
               "loom-run launch or a torchrun-style launcher)";
    return nullptr;
  }
  // The whole run in the mesh's own order is the run's communicator; in
  // another order (a dimension split over [tp, dp]) it is a reordered copy.
  int64_t meshOrder = 0;
  for (size_t a = 0; a < rt::currentMesh.size() && a < 8; ++a)
    meshOrder |= (int64_t)(a + 1) << (4 * a);
  bool oneAxis = axesOrder < 16;
  if (c->size() == groupSize &&
      (oneAxis || axesOrder == meshOrder || rt::currentMesh.empty()))
    return c;
  std::string name;
  std::vector<int> ranks = groupOf(c->rank(), c->size(), axesOrder, name);
  if (axesOrder == 0 || (int64_t)ranks.size() != groupSize) {
    rt::collectiveError = span + "the run has " + std::to_string(c->size());
    return nullptr;
  }
  std::lock_guard<std::mutex> lock(subgroupsMutex);
  auto &sub = subgroups[{c, name}];
  if (!sub) {
    try {
      sub = c->split(ranks, name);
    } catch (const comm::Error &e) {
      rt::collectiveError = e.what();
      return nullptr;
    }
  }
  return sub.get();
}

/// The process's collectives, run one after another on a worker thread in
/// the order they were issued.
class CollectiveQueue {
public:
  static CollectiveQueue &get() {
    static CollectiveQueue queue;
    return queue;
  }

  /// Queues `task` (which returns an error message, empty on success);
  /// returns the ticket to wait for.
  uint64_t submit(std::function<std::string()> task) {
    std::lock_guard<std::mutex> lock(mutex);
    if (!worker.joinable())
      worker = std::thread([this] { loop(); });
    tasks.emplace_back(nextTicket, std::move(task));
    changed.notify_all();
    return nextTicket++;
  }

  /// Blocks until `ticket` ran; returns its error message.
  std::string wait(uint64_t ticket) {
    std::unique_lock<std::mutex> lock(mutex);
    changed.wait(lock, [&] { return finished >= ticket; });
    std::string error;
    if (auto it = errors.find(ticket); it != errors.end()) {
      error = std::move(it->second);
      errors.erase(it);
    }
    return error;
  }

  ~CollectiveQueue() {
    {
      std::lock_guard<std::mutex> lock(mutex);
      stopping = true;
      changed.notify_all();
    }
    if (worker.joinable())
      worker.join();
  }

private:
  void loop() {
    std::unique_lock<std::mutex> lock(mutex);
    while (true) {
      changed.wait(lock, [&] { return stopping || !tasks.empty(); });
      if (tasks.empty())
        return;
      auto [ticket, task] = std::move(tasks.front());
      tasks.pop_front();
      lock.unlock();
      std::string error = task();
      lock.lock();
      if (!error.empty())
        errors[ticket] = std::move(error);
      finished = ticket;
      changed.notify_all();
    }
  }

  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::pair<uint64_t, std::function<std::string()>>> tasks;
  std::map<uint64_t, std::string> errors;
  uint64_t nextTicket = 1, finished = 0;
  bool stopping = false;
  std::thread worker;
};

/// Runs `fn` (a communicator call) in its turn on the collective thread and
/// waits for it, recording its failure.
/// With tracing on, the wait is recorded as `what` (null: not recorded).
template <typename Fn> bool guarded(Fn &&fn, const char *what = nullptr) {
  CollectiveQueue &queue = CollectiveQueue::get();
  int64_t started =
      what && loom::rt::trace::enabled() ? loom::rt::trace::now() : 0;
  std::string error = queue.wait(queue.submit([&]() -> std::string {
    try {
      fn();
      return "";
    } catch (const loom::comm::Error &e) {
      return e.what();
    }
  }));
  if (started)
    loom::rt::trace::record(what, "wait", started, loom::rt::trace::now());
  if (error.empty())
    return true;
  loom::rt::collectiveError = error;
  return false;
}

/// Started all-reduces by their output's address: the ticket to wait for
/// and the output's host copy, written back once the reduction is done.
struct Started {
  uint64_t ticket;
  std::shared_ptr<HostCopy> out;
};
thread_local std::map<const void *, Started> pending;

/// loom::ReductionKind (sum, prod, max, min, avg) as a communicator op.
bool reduceOpOf(int64_t reduction, loom::comm::ReduceOp &op) {
  using loom::comm::ReduceOp;
  static const ReduceOp ops[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Max,
                                 ReduceOp::Min, ReduceOp::Sum};
  if (reduction < 0 || reduction > 4) {
    loom::rt::collectiveError =
        "unknown reduction kind " + std::to_string(reduction);
    return false;
  }
  op = ops[reduction];
  return true;
}

} // namespace

namespace {

/// Combines `values`, f32 copies of T elements, over the group by `op`:
/// f32 tensors as f32; bf16 and fp16 ones travel and combine in their own
/// format (half the bytes), each combination rounded to it, as NCCL
/// reduces them.
template <typename T>
void allReduceValues(loom::comm::Communicator *c, std::vector<float> &values,
                     loom::comm::ReduceOp op) {
  if constexpr (std::is_same_v<T, float>) {
    c->allReduce(values.data(), values.size(), op);
  } else {
    std::vector<uint16_t> bits(values.size());
    for (size_t i = 0; i < values.size(); ++i)
      bits[i] = loom::rt::fromFloat<T>(values[i]).bits;
    c->allReduceHalf(bits.data(), bits.size(),
                     std::is_same_v<T, loom::rt::Bf16>
                         ? loom::comm::HalfFormat::BFloat16
                         : loom::comm::HalfFormat::Float16,
                     op);
    for (size_t i = 0; i < values.size(); ++i)
      values[i] = loom::rt::toFloat(T{bits[i]});
  }
}

/// The communicator a collective over `group` runs on, or null when it has
/// nothing to exchange: after an earlier failure, or in a group of one
/// (where `dst` receives `src`).
template <typename T>
loom::comm::Communicator *exchangeOrCopy(const View<T> &src,
                                         const View<T> &dst, int64_t group,
                                         const char *what) {
  if (!loom::rt::collectiveError.empty())
    return nullptr;
  bool alone;
  loom::comm::Communicator *c = communicatorFor(group, what, alone);
  if (alone) {
    dst.unpack(src.packed());
    return nullptr;
  }
  return c;
}

/// out = the group's `in` concatenated along `dim` in rank order (bf16 and
/// fp16 travel as f32: no reduction rounds them).
template <typename T>
void allGather(Unranked *in, Unranked *out, int64_t dim, int64_t group) {
  int64_t groupSize = group & 0xffffffff;
  using namespace loom;
  View<T> src(*in), dst(*out);
  comm::Communicator *c = exchangeOrCopy(src, dst, group, "all-gather");
  if (!c)
    return;
  std::vector<float> mine = src.packed();
  std::vector<float> blocks(mine.size() * (size_t)groupSize);
  if (!guarded([&] {
        c->allGather(mine.data(), blocks.data(), mine.size());
      }, "all-gather"))
    return;
  // Block r holds rank r's tensor; it lands at offset r * size along `dim`:
  // in a dense result, runs of size * inner elements.
  if (dst.dense()) {
    auto [outer, inner] = src.around(dim);
    copyRuns(blocks.data(), dst.data, outer, groupSize,
             (size_t)src.sizes[dim] * inner, /*pack=*/false);
    return;
  }
  // One index buffer for every element (a copy per element would allocate).
  size_t i = 0;
  std::vector<int64_t> at;
  for (int64_t r = 0; r < groupSize; ++r)
    src.forEachIndex([&](const std::vector<int64_t> &index) {
      at.assign(index.begin(), index.end());
      at[dim] += r * src.sizes[dim];
      dst.set(at, blocks[i++]);
    });
}

/// Splits `in` along `splitDim` into one piece per rank of the group, sends
/// piece r to rank r and concatenates the pieces received along
/// `concatDim` in rank order (bf16 and fp16 travel as f32).
template <typename T>
void allToAll(Unranked *in, Unranked *out, int64_t splitDim, int64_t concatDim,
              int64_t group) {
  int64_t groupSize = group & 0xffffffff;
  using namespace loom;
  View<T> src(*in), dst(*out);
  comm::Communicator *c = exchangeOrCopy(src, dst, group, "all-to-all");
  if (!c)
    return;
  // The shape of one piece; piece r (rows [r * n, (r + 1) * n) of
  // splitDim) is packed contiguously at r * block.
  View<T> piece = src;
  int64_t n = src.sizes[splitDim] / groupSize;
  piece.sizes[splitDim] = n;
  size_t block = piece.count();
  std::vector<float> packed(block * (size_t)groupSize),
      received(packed.size());
  if (src.dense()) {
    auto [outer, inner] = src.around(splitDim);
    copyRuns(src.data, packed.data(), outer, groupSize, (size_t)n * inner,
             /*pack=*/true);
  } else {
    std::vector<int64_t> local;
    src.forEachIndex([&](const std::vector<int64_t> &index) {
      local.assign(index.begin(), index.end());
      local[splitDim] = index[splitDim] % n;
      packed[(size_t)(index[splitDim] / n) * block + piece.linear(local)] =
          src.get(index);
    });
  }
  if (!guarded([&] { c->allToAll(packed.data(), received.data(), block); },
               "all-to-all"))
    return;
  if (dst.dense()) {
    auto [outer, inner] = piece.around(concatDim);
    copyRuns(received.data(), dst.data, outer, groupSize,
             (size_t)piece.sizes[concatDim] * inner, /*pack=*/false);
    return;
  }
  size_t i = 0;
  std::vector<int64_t> at;
  for (int64_t r = 0; r < groupSize; ++r)
    piece.forEachIndex([&](const std::vector<int64_t> &index) {
      at.assign(index.begin(), index.end());
      at[concatDim] += r * piece.sizes[concatDim];
      dst.set(at, received[i++]);
    });
}

/// out = this rank's slice along `dim` (rank r keeps [r * n, (r + 1) * n),
/// n = out's size there) of the group's `in` combined by `reduction`.
template <typename T>
void reduceScatter(Unranked *in, Unranked *out, int64_t dim, int64_t reduction,
                   int64_t group) {
  int64_t groupSize = group & 0xffffffff;
  using namespace loom;
  View<T> src(*in), dst(*out);
  comm::Communicator *c = exchangeOrCopy(src, dst, group, "reduce-scatter");
  comm::ReduceOp op;
  if (!c || !reduceOpOf(reduction, op))
    return;
  // Pack the input as groupSize blocks of out's shape, block r being the
  // slice rank r keeps, so that each block is contiguous.
  int64_t n = dst.sizes[dim];
  size_t block = dst.count();
  std::vector<float> packed(block * (size_t)groupSize);
  if (src.dense()) {
    auto [outer, inner] = src.around(dim);
    copyRuns(src.data, packed.data(), outer, groupSize, (size_t)n * inner,
             /*pack=*/true);
  } else {
    std::vector<int64_t> local;
    src.forEachIndex([&](const std::vector<int64_t> &index) {
      local.assign(index.begin(), index.end());
      int64_t r = index[dim] / n;
      local[dim] = index[dim] % n;
      packed[(size_t)r * block + dst.linear(local)] = src.get(index);
    });
  }
  if (!guarded([&] { allReduceValues<T>(c, packed, op); }, "reduce-scatter"))
    return;
  std::vector<float> mine(packed.begin() + (size_t)c->rank() * block,
                          packed.begin() + (size_t)(c->rank() + 1) * block);
  if (reduction == 4) // avg
    for (float &v : mine)
      v /= (float)groupSize;
  dst.unpack(mine);
}

/// out (a rank-0 i64 memref) = this rank's position in `group`: the index
/// of the block it holds of a dimension split over the group's axes.
extern "C" LOOM_API void _mlir_ciface_loom_rt_block_index(Unranked *out,
                                                          int64_t group) {
  using namespace loom;
  HostCopy result(out, sizeof(int64_t), HostCopy::Write);
  if (!result.get())
    return;
  auto *words = static_cast<int64_t *>(result.get()->descriptor);
  int64_t *value = reinterpret_cast<int64_t *>(words[1]) + words[2];
  *value = 0;
  bool alone = true;
  comm::Communicator *c = nullptr;
  if (rt::collectiveError.empty())
    c = communicatorFor(group, "block index", alone);
  if (!alone && c)
    *value = c->rank();
  result.writeBack();
}

/// Starts out = the group's `in` combined by `reduction`: `in` is copied at
/// once, the reduction runs on the collective thread, and `out` may be read
/// only after wait(out).
template <typename T>
void allReduceStart(Unranked *in, Unranked *out, int64_t reduction,
                    int64_t group) {
  int64_t groupSize = group & 0xffffffff;
  using namespace loom;
  if (!rt::collectiveError.empty())
    return;
  HostCopy input(in, sizeof(T), HostCopy::Read);
  auto output = std::make_shared<HostCopy>(out, sizeof(T), HostCopy::Write);
  if (!input.get() || !output->get())
    return;
  View<T> src(*input.get()), dst(*output->get());
  auto values = std::make_shared<std::vector<float>>(src.packed());
  bool alone;
  comm::Communicator *c = communicatorFor(group, "all-reduce", alone);
  comm::ReduceOp op;
  if (alone) {
    dst.unpack(*values);
    output->writeBack();
    return;
  }
  if (!c || !reduceOpOf(reduction, op))
    return;
  CollectiveQueue &queue = CollectiveQueue::get();
  // The task holds the output's host copy too: it writes into it.
  uint64_t ticket = queue.submit([=, keep = output]() -> std::string {
    (void)keep;
    try {
      allReduceValues<T>(c, *values, op);
    } catch (const comm::Error &e) {
      return e.what();
    }
    if (reduction == 4) // avg
      for (float &v : *values)
        v /= (float)groupSize;
    dst.unpack(*values);
    return "";
  });
  pending[output->address()] = {ticket, output};
}

/// Waits for the started collective that writes `buffer` (none: returns).
template <typename T> void wait(Unranked *buffer) {
  using namespace loom;
  View<T> view(*buffer);
  auto it = pending.find(view.data);
  if (it == pending.end())
    return;
  int64_t started = rt::trace::enabled() ? rt::trace::now() : 0;
  Started done = std::move(it->second);
  pending.erase(it);
  std::string error = CollectiveQueue::get().wait(done.ticket);
  if (started)
    rt::trace::record("collective wait", "wait", started, rt::trace::now());
  if (!error.empty() && rt::collectiveError.empty())
    rt::collectiveError = error;
  if (error.empty())
    done.out->writeBack();
}

} // namespace

namespace {

/// Messages sent to and received from each rank so far: both sides of a
/// pair count the same sequence. Touched only on the collective thread.
std::map<int, uint64_t> sentTo, receivedFrom;
/// The queued sends of the running entry point.
thread_local std::vector<uint64_t> sendTickets;

/// The rank `offset` steps along the mesh axis `group` names (the axis's
/// index plus 1 in bits 32-35), or -1 after an earlier failure of the
/// running entry point or with collectiveError set.
int peerAlong(loom::comm::Communicator *c, int64_t group, int64_t offset,
              const char *what) {
  using namespace loom;
  if (!rt::collectiveError.empty())
    return -1;
  int64_t axis = ((group >> 32) & 0xf) - 1;
  if (!c) {
    rt::collectiveError = std::string("the bundle's ") + what +
                          " needs a distributed run (start the ranks with "
                          "loom-run train --nproc or a torchrun-style "
                          "launcher)";
    return -1;
  }
  if (axis < 0 || axis >= (int64_t)rt::currentMesh.size()) {
    rt::collectiveError = std::string("the bundle's ") + what +
                          " names a mesh axis the bundle's mesh has not";
    return -1;
  }
  int64_t stride = 1;
  for (size_t a = axis + 1; a < rt::currentMesh.size(); ++a)
    stride *= rt::currentMesh[a];
  int64_t coord = (c->rank() / stride) % rt::currentMesh[axis];
  if (coord + offset < 0 || coord + offset >= rt::currentMesh[axis]) {
    rt::collectiveError = std::string("the bundle's ") + what + " on rank " +
                          std::to_string(c->rank()) +
                          " names a peer off the mesh";
    return -1;
  }
  return (int)(c->rank() + offset * stride);
}

} // namespace

/// Sends `in` to the rank `offset` steps along the mesh axis of `group`
/// (loom.send): copied and queued on the collective thread; the entry point
/// returns only once every message has been taken (loom_session_run).
static void sendTo(Unranked *in, int64_t elementBytes, int64_t group,
                   int64_t offset) {
  using namespace loom;
  comm::Communicator *c = rt::currentCommunicator;
  int peer = peerAlong(c, group, offset, "send");
  if (peer < 0)
    return;
  // Copied now: the compiled code may reuse the buffer before the
  // collective thread sends it.
  HostCopy input(in, elementBytes, HostCopy::Read);
  if (!input.get())
    return;
  auto dense = std::make_shared<std::vector<char>>();
  bytesOf(*input.get(), elementBytes).copy(*dense, /*intoPacked=*/true);
  CollectiveQueue &queue = CollectiveQueue::get();
  sendTickets.push_back(queue.submit([=]() -> std::string {
    try {
      c->send(dense->data(), dense->size(), peer, sentTo[peer]++);
    } catch (const comm::Error &e) {
      return e.what();
    }
    return "";
  }));
}

/// out = the next message from the rank `offset` steps along the mesh axis
/// of `group` (loom.recv), waiting up to the run's timeout.
static void receiveFrom(Unranked *out, int64_t elementBytes, int64_t group,
                        int64_t offset) {
  using namespace loom;
  comm::Communicator *c = rt::currentCommunicator;
  int peer = peerAlong(c, group, offset, "receive");
  if (peer < 0)
    return;
  HostCopy output(out, elementBytes, HostCopy::Write);
  if (!output.get())
    return;
  rt::StridedBytes view = bytesOf(*output.get(), elementBytes);
  // A dense buffer (the fresh one loom.recv bufferizes into) takes the
  // message itself; another goes through a packed copy.
  bool dense = view.dense();
  std::vector<char> packed(dense ? 0 : view.count() * elementBytes);
  char *into = dense ? view.data : packed.data();
  int64_t started = rt::trace::enabled() ? rt::trace::now() : 0;
  if (!guarded([&] {
        c->recv(into, view.count() * elementBytes, peer,
                receivedFrom[peer]++);
      }))
    return;
  if (started)
    rt::trace::record("receive from rank " + std::to_string(peer), "wait",
                      started, rt::trace::now());
  if (!dense)
    view.copy(packed, /*intoPacked=*/false);
  output.writeBack();
}

// Send and receive by element type (the bundle's declarations carry it;
// the buffers' element size comes as an argument).
#define LOOM_POINT_TO_POINT(SUFFIX)                                            \
  extern "C" LOOM_API void _mlir_ciface_loom_rt_send_##SUFFIX(                 \
      Unranked *in, int64_t elementBytes, int64_t group, int64_t offset) {     \
    sendTo(in, elementBytes, group, offset);                                   \
  }                                                                            \
  extern "C" LOOM_API void _mlir_ciface_loom_rt_recv_##SUFFIX(                 \
      Unranked *out, int64_t elementBytes, int64_t group, int64_t offset) {    \
    receiveFrom(out, elementBytes, group, offset);                             \
  }
LOOM_POINT_TO_POINT(f32)
LOOM_POINT_TO_POINT(bf16)
LOOM_POINT_TO_POINT(f16)
LOOM_POINT_TO_POINT(f64)
LOOM_POINT_TO_POINT(i64)
LOOM_POINT_TO_POINT(i32)
LOOM_POINT_TO_POINT(i8)
LOOM_POINT_TO_POINT(i1)
#undef LOOM_POINT_TO_POINT

namespace loom::rt {
std::string finishPointToPoint() {
  comm::Communicator *c = currentCommunicator;
  std::vector<uint64_t> tickets;
  tickets.swap(sendTickets);
  for (uint64_t ticket : tickets) {
    std::string error = CollectiveQueue::get().wait(ticket);
    if (!error.empty() && collectiveError.empty())
      collectiveError = error;
  }
  if (!c || tickets.empty() || !collectiveError.empty())
    return collectiveError;
  if (!guarded([&] { c->waitSends(); }))
    return collectiveError;
  return "";
}
} // namespace loom::rt

namespace {
/// Runs `collective` (in, out) on host copies of its arguments.
template <typename T, typename Fn>
void onHostCopies(Unranked *in, Unranked *out, Fn &&collective) {
  HostCopy input(in, sizeof(T), HostCopy::Read),
      output(out, sizeof(T), HostCopy::Write);
  if (!input.get() || !output.get())
    return;
  collective(input.get(), output.get());
  if (loom::rt::collectiveError.empty())
    output.writeBack();
}
} // namespace

// The collectives by element type: f32, bf16 and f16.
#define LOOM_COLLECTIVES(SUFFIX, T)                                            \
  extern "C" LOOM_API void _mlir_ciface_loom_rt_all_gather_##SUFFIX(           \
      Unranked *in, Unranked *out, int64_t dim, int64_t group) {               \
    onHostCopies<T>(in, out, [&](Unranked *i, Unranked *o) {                   \
      allGather<T>(i, o, dim, group);                                          \
    });                                                                        \
  }                                                                            \
  extern "C" LOOM_API void _mlir_ciface_loom_rt_all_to_all_##SUFFIX(           \
      Unranked *in, Unranked *out, int64_t splitDim, int64_t concatDim,        \
      int64_t group) {                                                         \
    onHostCopies<T>(in, out, [&](Unranked *i, Unranked *o) {                   \
      allToAll<T>(i, o, splitDim, concatDim, group);                           \
    });                                                                        \
  }                                                                            \
  extern "C" LOOM_API void _mlir_ciface_loom_rt_reduce_scatter_##SUFFIX(       \
      Unranked *in, Unranked *out, int64_t dim, int64_t reduction,             \
      int64_t group) {                                                         \
    onHostCopies<T>(in, out, [&](Unranked *i, Unranked *o) {                   \
      reduceScatter<T>(i, o, dim, reduction, group);                           \
    });                                                                        \
  }                                                                            \
  extern "C" LOOM_API void _mlir_ciface_loom_rt_all_reduce_start_##SUFFIX(     \
      Unranked *in, Unranked *out, int64_t reduction, int64_t group) {         \
    allReduceStart<T>(in, out, reduction, group);                              \
  }                                                                            \
  extern "C" LOOM_API void _mlir_ciface_loom_rt_wait_##SUFFIX(                 \
      Unranked *buffer) {                                                      \
    wait<T>(buffer);                                                           \
  }                                                                            \
  /* out = the group's `in` combined by `reduction` (loom::ReductionKind:      \
     sum, prod, max, min, avg): a started all-reduce, awaited at once. */      \
  extern "C" LOOM_API void _mlir_ciface_loom_rt_all_reduce_##SUFFIX(           \
      Unranked *in, Unranked *out, int64_t reduction, int64_t group) {         \
    allReduceStart<T>(in, out, reduction, group);                              \
    wait<T>(out);                                                              \
  }
LOOM_COLLECTIVES(f32, float)
LOOM_COLLECTIVES(bf16, loom::rt::Bf16)
LOOM_COLLECTIVES(f16, loom::rt::F16)
#undef LOOM_COLLECTIVES
