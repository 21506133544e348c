//===- Collectives.cpp - collectives that compiled bundles call -----------===//
//
// One-shot bufferization turns loom collectives into calls of these
// functions (passes/Conversion/CollectivesToRuntime.cpp). They run on the
// communicator of the session whose entry point is running; a failure (a
// peer died, a timeout, a bundle built for another number of ranks) is
// recorded and loom_session_run returns it as LOOM_STATUS_UNAVAILABLE,
// since generated code has no way to return an error.
//
//===----------------------------------------------------------------------===//

#include "Collectives.h"

#include "loom/runtime.h"

#include <cstdint>
#include <vector>

namespace loom::rt {

thread_local comm::Communicator *currentCommunicator = nullptr;
thread_local std::string collectiveError;

} // namespace loom::rt

namespace {

/// MLIR's unranked memref descriptor: the rank and the ranked descriptor
/// (allocated, aligned, offset, sizes[rank], strides[rank]).
struct Unranked {
  int64_t rank;
  void *descriptor;
};

struct View {
  float *data;
  std::vector<int64_t> sizes, strides;

  explicit View(const Unranked &u) {
    auto *words = static_cast<int64_t *>(u.descriptor);
    float *aligned = reinterpret_cast<float *>(words[1]);
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
  /// Calls fn(element) for every element in row-major order.
  template <typename Fn> void forEach(Fn &&fn) const {
    size_t n = count(), rank = sizes.size();
    std::vector<int64_t> index(rank, 0);
    for (size_t i = 0; i < n; ++i) {
      int64_t offset = 0;
      for (size_t d = 0; d < rank; ++d)
        offset += index[d] * strides[d];
      fn(data[offset]);
      for (size_t d = rank; d-- > 0;) {
        if (++index[d] < sizes[d])
          break;
        index[d] = 0;
      }
    }
  }
};

} // namespace

/// out = the group's `in` combined by `reduction` (loom::ReductionKind: sum,
/// prod, max, min, avg) over `groupSize` ranks.
extern "C" LOOM_API void
_mlir_ciface_loom_rt_all_reduce_f32(Unranked *in, Unranked *out,
                                    int64_t reduction, int64_t groupSize) {
  using namespace loom;
  if (!rt::collectiveError.empty())
    return; // an earlier collective of this run failed
  View src(*in), dst(*out);
  std::vector<float> values;
  values.reserve(src.count());
  src.forEach([&](float &x) { values.push_back(x); });
  comm::Communicator *c = rt::currentCommunicator;
  if (groupSize > 1) {
    if (!c) {
      rt::collectiveError =
          "the bundle all-reduces over " + std::to_string(groupSize) +
          " ranks, but the session is not part of a distributed run "
          "(loom_session_options_t.distributed; start the ranks with "
          "loom-run launch or a torchrun-style launcher)";
      return;
    }
    if (c->size() != groupSize) {
      rt::collectiveError =
          "the bundle all-reduces over " + std::to_string(groupSize) +
          " ranks, but the run has " + std::to_string(c->size());
      return;
    }
    static const comm::ReduceOp ops[] = {comm::ReduceOp::Sum,
                                         comm::ReduceOp::Prod,
                                         comm::ReduceOp::Max,
                                         comm::ReduceOp::Min,
                                         comm::ReduceOp::Sum};
    if (reduction < 0 || reduction > 4) {
      rt::collectiveError =
          "unknown all-reduce kind " + std::to_string(reduction);
      return;
    }
    try {
      c->allReduce(values.data(), values.size(), ops[reduction]);
    } catch (const comm::Error &e) {
      rt::collectiveError = e.what();
      return;
    }
    if (reduction == 4) // avg
      for (float &v : values)
        v /= (float)groupSize;
  }
  size_t i = 0;
  dst.forEach([&](float &x) { x = values[i++]; });
}
