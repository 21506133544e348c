//===- Comm.h - communicators for distributed runs ------------------------===//
//
// How the ranks of one distributed run find each other and exchange tensors.
// A rendezvous store (a directory every rank can see, or a small TCP
// key/value store served by rank 0, as torchrun's) lets the ranks exchange
// addresses; a collective engine (Gloo over TCP on CPUs) moves the data. Loom
// never implements its own transport: the store only carries addresses.
//
// Ranks learn their place from the variables torchrun, mpirun wrappers and
// Slurm scripts set: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT,
// or LOOM_STORE=file:DIR for a file store.
//
// Every call that can fail throws loom::comm::Error with a message that names
// the rank and the operation; a peer that does not answer within the timeout
// is an error, never a hang.
//
//===----------------------------------------------------------------------===//

#ifndef LOOM_RUNTIME_COMM_H
#define LOOM_RUNTIME_COMM_H

#include <chrono>
#include <cstdint>
#include <cstddef>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace loom::comm {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

/// Where this rank stands and how it finds the others.
struct Rendezvous {
  int rank = 0;
  int worldSize = 1;
  int localRank = 0;
  /// "file" (a directory shared by all ranks) or "tcp" (rank 0 serves).
  std::string store = "tcp";
  /// The directory of a file store.
  std::string path;
  /// The TCP store's address and port (rank 0 listens on the port).
  std::string address = "127.0.0.1";
  int port = 29500;
  /// Separates the keys of consecutive runs that share a store.
  std::string prefix = "loom";
  /// How long a rank waits for a peer, in rendezvous and in collectives.
  std::chrono::milliseconds timeout = std::chrono::seconds(60);
};

/// The rendezvous the environment describes: RANK, WORLD_SIZE, LOCAL_RANK,
/// MASTER_ADDR, MASTER_PORT, LOOM_STORE (`file:DIR` or `tcp`) and
/// LOOM_TIMEOUT_SEC. Without RANK and WORLD_SIZE, a single rank. Malformed
/// values throw Error.
Rendezvous rendezvousFromEnvironment();

/// How all-reduce combines the ranks' values.
enum class ReduceOp { Sum, Prod, Max, Min };

/// The 16-bit float formats collectives carry as they are.
enum class HalfFormat { BFloat16, Float16 };

/// One rank's view of a group of ranks. Collectives are blocking and must be
/// called in the same order on every rank.
class Communicator {
public:
  virtual ~Communicator();
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// data[i] = the ranks' data[i] combined by `op`.
  virtual void allReduce(float *data, size_t count, ReduceOp op) = 0;
  /// The same on bf16 or fp16 values (their bits): half the bytes of
  /// allReduce on the wire; each combination of two values is computed in
  /// f32 and rounded to the format.
  virtual void allReduceHalf(uint16_t *data, size_t count, HalfFormat format,
                             ReduceOp op) = 0;
  /// data[i] = sum over ranks of data[i].
  void allReduceSum(float *data, size_t count) {
    allReduce(data, count, ReduceOp::Sum);
  }
  /// out[r * count + i] = in[i] of rank r.
  virtual void allGather(const float *in, float *out, size_t count) = 0;
  /// out[r * count + i] = in[rank() * count + i] of rank r: block r of
  /// `in` goes to rank r.
  virtual void allToAll(const float *in, float *out, size_t count) = 0;
  /// out[i] = sum over ranks of in[rank() * count + i].
  virtual void reduceScatterSum(const float *in, float *out, size_t count) = 0;
  /// data = data of `root`.
  virtual void broadcast(float *data, size_t count, int root) = 0;
  virtual void barrier() = 0;
  /// Point-to-point (pipeline parallelism): sends `bytes` of `data` to rank
  /// `peer` as the `sequence`-th message from this rank to it. The data is
  /// copied and the call returns at once; waitSends() waits until every
  /// message sent so far has been taken by its receiver.
  virtual void send(const void *data, size_t bytes, int peer,
                    uint64_t sequence) = 0;
  /// Receives the `sequence`-th message from rank `peer` into `data`
  /// (`bytes` long), waiting up to the run's timeout.
  virtual void recv(void *data, size_t bytes, int peer, uint64_t sequence) = 0;
  virtual void waitSends() = 0;
  /// A communicator over `ranks` (which include this one; their order gives
  /// the new ranks), for collectives over part of a mesh. Every rank of the
  /// group must call it with the same ranks and `name`, which keeps groups
  /// apart in the rendezvous store.
  virtual std::unique_ptr<Communicator> split(const std::vector<int> &ranks,
                                              const std::string &name) = 0;
};

/// Connects to every other rank through Gloo's TCP transport after the
/// rendezvous; throws Error if a peer is missing after the timeout, or if
/// LOOM_TRANSPORT_THREAD is set to other than `batch` (the default: the
/// transport's event thread runs under SCHED_BATCH) or `normal`.
std::unique_ptr<Communicator> connectGloo(const Rendezvous &rendezvous);

/// The rendezvous's key/value store, for engines that exchange more than
/// Gloo does (NCCL's unique id). Keys are scoped by the rendezvous prefix.
class Store {
public:
  virtual ~Store();
  virtual void set(const std::string &key, const std::vector<char> &value) = 0;
  /// Waits up to the rendezvous timeout for `key`; throws Error after it.
  virtual std::vector<char> get(const std::string &key) = 0;
};
std::unique_ptr<Store> openStore(const Rendezvous &rendezvous);

/// Whether this build has the NCCL engine (CMake found CUDA and NCCL).
bool haveNccl();

/// Connects to every other rank through NCCL on CUDA device `device`, after
/// exchanging NCCL's unique id through the rendezvous store. Its collectives
/// take device pointers and wait for completion up to the rendezvous
/// timeout, then abort the communicator and throw Error (no hang). Throws
/// Error in a build without NCCL.
std::unique_ptr<Communicator> connectNccl(const Rendezvous &rendezvous,
                                          int device);

} // namespace loom::comm

#endif // LOOM_RUNTIME_COMM_H
