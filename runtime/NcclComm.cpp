//===- NcclComm.cpp - the NCCL engine for GPU ranks -----------------------===//
//
// A Communicator over NCCL, for ranks whose tensors live on CUDA devices. The
// ranks exchange NCCL's unique id through the same rendezvous store as Gloo's
// addresses (rank 0 creates and publishes it), then NCCL connects them.
// Collectives are enqueued on the communicator's stream and awaited up to
// the rendezvous timeout; a peer that never joins makes the wait time out,
// which aborts the communicator and throws Error instead of hanging. Built
// only where CMake finds CUDA and NCCL (LOOM_HAVE_NCCL).
//
//===----------------------------------------------------------------------===//

#include "Comm.h"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

namespace loom::comm {
namespace {

class NcclCommunicator : public Communicator {
public:
  NcclCommunicator(const Rendezvous &r, int device) : rendezvous(r) {
    check(cudaSetDevice(device), "selecting CUDA device " +
                                     std::to_string(device));
    ncclUniqueId id;
    std::unique_ptr<Store> store = openStore(r);
    if (r.rank == 0) {
      checkNccl(ncclGetUniqueId(&id), "creating the NCCL unique id");
      store->set("nccl-id", std::vector<char>(id.internal,
                                              id.internal + sizeof(id)));
    } else {
      std::vector<char> bytes = store->get("nccl-id");
      if (bytes.size() != sizeof(id))
        throw Error(where("the published NCCL id has the wrong size"));
      std::memcpy(id.internal, bytes.data(), sizeof(id));
    }
    // Non-blocking, so that a missing peer is a timeout rather than a hang.
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    checkNccl(ncclCommInitRankConfig(&comm, r.worldSize, id, r.rank, &config),
              "joining the NCCL communicator");
    await("joining the NCCL communicator");
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
          "creating a CUDA stream");
    check(cudaMalloc(&scratch, sizeof(float)), "allocating barrier scratch");
  }

  /// A communicator split off another (ncclCommSplit).
  NcclCommunicator(const Rendezvous &group, ncclComm_t split)
      : rendezvous(group), comm(split) {
    await("splitting the NCCL communicator");
    check(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking),
          "creating a CUDA stream");
    check(cudaMalloc(&scratch, sizeof(float)), "allocating barrier scratch");
  }

  ~NcclCommunicator() override {
    if (scratch)
      cudaFree(scratch);
    if (stream)
      cudaStreamDestroy(stream);
    if (comm)
      ncclCommDestroy(comm);
  }

  int rank() const override { return rendezvous.rank; }
  int size() const override { return rendezvous.worldSize; }

  std::unique_ptr<Communicator> split(const std::vector<int> &ranks,
                                      const std::string &name) override {
    int color = 0;
    for (int r : ranks)
      color = color * 31 + r + 1;
    int key = -1;
    for (size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i] == rendezvous.rank)
        key = (int)i;
    if (key < 0)
      throw Error(where("is not in the group it splits off"));
    ncclComm_t sub = nullptr;
    checkNccl(ncclCommSplit(comm, color & 0x7fffffff, key, &sub, nullptr),
              "splitting off group " + name);
    Rendezvous group = rendezvous;
    group.rank = key;
    group.worldSize = (int)ranks.size();
    group.prefix = rendezvous.prefix + "/group/" + name;
    return std::unique_ptr<Communicator>(new NcclCommunicator(group, sub));
  }

  void allReduce(float *data, size_t count, ReduceOp op) override {
    ncclRedOp_t nccl = op == ReduceOp::Sum    ? ncclSum
                       : op == ReduceOp::Prod ? ncclProd
                       : op == ReduceOp::Max  ? ncclMax
                                              : ncclMin;
    run("all_reduce", ncclAllReduce(data, data, count, ncclFloat, nccl, comm,
                                    stream));
  }
  void allReduceHalf(uint16_t *data, size_t count, HalfFormat format,
                     ReduceOp op) override {
    ncclRedOp_t nccl = op == ReduceOp::Sum    ? ncclSum
                       : op == ReduceOp::Prod ? ncclProd
                       : op == ReduceOp::Max  ? ncclMax
                                              : ncclMin;
    ncclDataType_t type =
        format == HalfFormat::BFloat16 ? ncclBfloat16 : ncclHalf;
    run("all_reduce",
        ncclAllReduce(data, data, count, type, nccl, comm, stream));
  }
  void allGather(const float *in, float *out, size_t count) override {
    run("all_gather", ncclAllGather(in, out, count, ncclFloat, comm, stream));
  }
  void allToAll(const float *in, float *out, size_t count) override {
    // One grouped send and receive per peer (NCCL has no all-to-all call).
    if (!comm)
      throw Error(where("all_to_all: the communicator was aborted"));
    checkNccl(ncclGroupStart(), "all_to_all");
    // The group is closed whatever fails inside it.
    ncclResult_t issued = ncclSuccess;
    for (int r = 0; r < size() && issued == ncclSuccess; ++r) {
      issued = ncclSend(in + (size_t)r * count, count, ncclFloat, r, comm,
                        stream);
      if (issued == ncclSuccess)
        issued = ncclRecv(out + (size_t)r * count, count, ncclFloat, r, comm,
                          stream);
    }
    ncclResult_t closed = ncclGroupEnd();
    checkNccl(issued, "all_to_all");
    checkNccl(closed, "all_to_all");
    await("all_to_all", /*onStream=*/true);
  }
  void reduceScatterSum(const float *in, float *out, size_t count) override {
    run("reduce_scatter",
        ncclReduceScatter(in, out, count, ncclFloat, ncclSum, comm, stream));
  }
  void broadcast(float *data, size_t count, int root) override {
    run("broadcast",
        ncclBroadcast(data, data, count, ncclFloat, root, comm, stream));
  }
  void barrier() override {
    run("barrier", ncclAllReduce(scratch, scratch, 1, ncclFloat, ncclSum,
                                 comm, stream));
  }
  // Point-to-point: a send copies its data and is issued, with the sends
  // after it, in one NCCL group with the next receive (or at waitSends), so
  // that two stages sending to each other before receiving do not block.
  void send(const void *data, size_t bytes, int peer,
            uint64_t sequence) override {
    void *copy = nullptr;
    check(cudaMalloc(&copy, bytes ? bytes : 1), "allocating a send buffer");
    check(cudaMemcpyAsync(copy, data, bytes, cudaMemcpyDeviceToDevice, stream),
          "copying a send buffer");
    queued.push_back({copy, bytes, peer});
    (void)sequence; // NCCL matches messages between two ranks in order
  }
  void recv(void *data, size_t bytes, int peer, uint64_t sequence) override {
    (void)sequence;
    issue("receive", data, bytes, peer);
  }
  void waitSends() override { issue("send", nullptr, 0, -1); }

private:
  std::string where(const std::string &what) const {
    return "rank " + std::to_string(rendezvous.rank) + " of " +
           std::to_string(rendezvous.worldSize) + ": " + what;
  }
  void check(cudaError_t status, const std::string &what) {
    if (status != cudaSuccess)
      throw Error(where(what + " failed: " + cudaGetErrorString(status)));
  }
  void checkNccl(ncclResult_t status, const std::string &what) {
    if (status != ncclSuccess && status != ncclInProgress)
      throw Error(where(what + " failed: " + ncclGetErrorString(status)));
  }

  /// Waits for the communicator's pending work (and, with `stream`, the
  /// stream's) until the timeout; aborts and throws after it.
  void await(const std::string &what, bool onStream = false) {
    auto deadline = std::chrono::steady_clock::now() + rendezvous.timeout;
    while (true) {
      ncclResult_t state;
      checkNccl(ncclCommGetAsyncError(comm, &state), what);
      if (state != ncclSuccess && state != ncclInProgress)
        throw Error(where(what + " failed: " + ncclGetErrorString(state)));
      bool done = state == ncclSuccess;
      if (done && onStream) {
        cudaError_t query = cudaStreamQuery(stream);
        if (query != cudaErrorNotReady)
          check(query, what);
        done = query == cudaSuccess;
      }
      if (done)
        return;
      if (std::chrono::steady_clock::now() > deadline) {
        ncclCommAbort(comm);
        comm = nullptr;
        throw Error(where(what + " did not finish within " +
                          std::to_string(rendezvous.timeout.count() / 1000) +
                          " s (a peer died or did not answer)"));
      }
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  void run(const char *what, ncclResult_t enqueued) {
    if (!comm)
      throw Error(where(std::string(what) + ": the communicator was aborted"));
    checkNccl(enqueued, what);
    await(what, /*onStream=*/true);
  }

  struct Queued {
    void *data;
    size_t bytes;
    int peer;
  };
  std::vector<Queued> queued;

  /// Issues the queued sends and (with peer >= 0) a receive in one group
  /// and waits for them; frees the sends' copies.
  void issue(const char *what, void *data, size_t bytes, int peer) {
    if (!comm)
      throw Error(where(std::string(what) + ": the communicator was aborted"));
    checkNccl(ncclGroupStart(), what);
    for (const Queued &q : queued)
      checkNccl(ncclSend(q.data, q.bytes, ncclChar, q.peer, comm, stream),
                what);
    if (peer >= 0)
      checkNccl(ncclRecv(data, bytes, ncclChar, peer, comm, stream), what);
    checkNccl(ncclGroupEnd(), what);
    await(what, /*onStream=*/true);
    for (const Queued &q : queued)
      cudaFree(q.data);
    queued.clear();
  }

  Rendezvous rendezvous;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  float *scratch = nullptr;
};

} // namespace

bool haveNccl() { return true; }

std::unique_ptr<Communicator> connectNccl(const Rendezvous &rendezvous,
                                          int device) {
  return std::make_unique<NcclCommunicator>(rendezvous, device);
}

} // namespace loom::comm
