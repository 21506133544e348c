//===- Comm.cpp - Gloo communicators and rendezvous stores ----------------===//

#include "Comm.h"
#include "LowPrecision.h"

#include <gloo/allgather.h>
#include <gloo/allreduce.h>
#include <gloo/alltoall.h>
#include <gloo/barrier.h>
#include <gloo/broadcast.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>
#include <deque>
#include <vector>

namespace loom::comm {

Communicator::~Communicator() = default;

namespace {

int envInt(const char *name, int fallback, int minimum) {
  const char *value = std::getenv(name);
  if (!value || !*value)
    return fallback;
  char *end = nullptr;
  errno = 0;
  long parsed = std::strtol(value, &end, 10);
  if (errno || *end || parsed < minimum || parsed > (1 << 30))
    throw Error(std::string(name) + "=" + value + " is not an integer >= " +
                std::to_string(minimum));
  return (int)parsed;
}

//===----------------------------------------------------------------------===//
// TCP store
//===----------------------------------------------------------------------===//

/// A key/value store served by rank 0 over TCP, as torchrun's: each request
/// is one connection carrying `S key value` (set) or `G key` (get, answered
/// with the value or "absent"). Clients poll until a key appears or the
/// timeout passes. It carries addresses only; tensors go through Gloo.
class TcpStore : public gloo::rendezvous::Store {
public:
  TcpStore(const Rendezvous &r) : address(r.address), port(r.port),
                                  timeout(r.timeout), rank(r.rank) {
    if (r.rank == 0)
      serve();
  }
  ~TcpStore() override {
    stopping = true;
    if (listener >= 0)
      ::shutdown(listener, SHUT_RDWR);
    if (server.joinable())
      server.join();
    if (listener >= 0)
      ::close(listener);
  }

  void set(const std::string &key, const std::vector<char> &data) override {
    std::vector<char> reply;
    request('S', key, &data, reply);
  }

  std::vector<char> get(const std::string &key) override {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    std::vector<char> reply;
    while (true) {
      if (request('G', key, nullptr, reply))
        return reply;
      if (std::chrono::steady_clock::now() > deadline)
        throw Error("rank " + std::to_string(rank) + ": no rank published \"" +
                    key + "\" in the TCP store at " + address + ":" +
                    std::to_string(port) + " within " +
                    std::to_string(timeout.count() / 1000) + " s");
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
  }

  void wait(const std::vector<std::string> &keys) override {
    for (const std::string &key : keys)
      (void)get(key);
  }
  void wait(const std::vector<std::string> &keys,
            const std::chrono::milliseconds &) override {
    wait(keys);
  }

private:
  std::string address;
  int port;
  std::chrono::milliseconds timeout;
  int rank;
  int listener = -1;
  std::thread server;
  std::atomic<bool> stopping{false};
  std::mutex mutex;
  std::map<std::string, std::vector<char>> values;

  static bool sendAll(int fd, const void *data, size_t size) {
    const char *p = static_cast<const char *>(data);
    while (size) {
      ssize_t n = ::send(fd, p, size, MSG_NOSIGNAL);
      if (n <= 0)
        return false;
      p += n;
      size -= (size_t)n;
    }
    return true;
  }
  static bool recvAll(int fd, void *data, size_t size) {
    char *p = static_cast<char *>(data);
    while (size) {
      ssize_t n = ::recv(fd, p, size, 0);
      if (n <= 0)
        return false;
      p += n;
      size -= (size_t)n;
    }
    return true;
  }
  static bool sendBlob(int fd, const char *data, uint64_t size) {
    return sendAll(fd, &size, sizeof size) && sendAll(fd, data, size);
  }
  static bool recvBlob(int fd, std::vector<char> &out) {
    uint64_t size = 0;
    if (!recvAll(fd, &size, sizeof size) || size > (uint64_t(1) << 30))
      return false;
    out.resize(size);
    return recvAll(fd, out.data(), size);
  }

  void serve() {
    listener = ::socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    ::setsockopt(listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    addr.sin_port = htons((uint16_t)port);
    if (listener < 0 ||
        ::bind(listener, reinterpret_cast<sockaddr *>(&addr), sizeof addr) ||
        ::listen(listener, 128))
      throw Error("rank 0: cannot serve the TCP store on port " +
                  std::to_string(port) + ": " + std::strerror(errno) +
                  " (is MASTER_PORT in use?)");
    server = std::thread([this] {
      while (!stopping) {
        int fd = ::accept(listener, nullptr, nullptr);
        if (fd < 0)
          continue;
        timeval tv{5, 0};
        ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        handle(fd);
        ::close(fd);
      }
    });
  }

  void handle(int fd) {
    char op = 0;
    std::vector<char> key, value;
    if (!recvAll(fd, &op, 1) || !recvBlob(fd, key))
      return;
    std::string k(key.begin(), key.end());
    if (op == 'S') {
      if (!recvBlob(fd, value))
        return;
      std::lock_guard<std::mutex> lock(mutex);
      values[k] = std::move(value);
      char ok = 1;
      sendAll(fd, &ok, 1);
    } else if (op == 'G') {
      std::lock_guard<std::mutex> lock(mutex);
      auto it = values.find(k);
      char found = it != values.end();
      if (sendAll(fd, &found, 1) && found)
        sendBlob(fd, it->second.data(), it->second.size());
    }
  }

  /// One request; false when a get finds no value yet.
  bool request(char op, const std::string &key, const std::vector<char> *data,
               std::vector<char> &reply) {
    auto deadline = std::chrono::steady_clock::now() + timeout;
    while (true) {
      int fd = connectOnce();
      if (fd >= 0) {
        char status = 0;
        bool ok = sendAll(fd, &op, 1) &&
                  sendBlob(fd, key.data(), key.size()) &&
                  (!data || sendBlob(fd, data->data(), data->size())) &&
                  recvAll(fd, &status, 1) &&
                  (op != 'G' || !status || recvBlob(fd, reply));
        ::close(fd);
        if (ok)
          return status != 0;
      }
      if (std::chrono::steady_clock::now() > deadline)
        throw Error("rank " + std::to_string(rank) +
                    ": cannot reach the TCP store at " + address + ":" +
                    std::to_string(port) + " (rank 0 serves it) within " +
                    std::to_string(timeout.count() / 1000) + " s");
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  int connectOnce() {
    addrinfo hints{}, *found = nullptr;
    hints.ai_family = AF_INET;
    hints.ai_socktype = SOCK_STREAM;
    if (::getaddrinfo(address.c_str(), std::to_string(port).c_str(), &hints,
                      &found) != 0 ||
        !found)
      throw Error("rank " + std::to_string(rank) + ": cannot resolve " +
                  "MASTER_ADDR \"" + address + "\"");
    int fd = ::socket(found->ai_family, found->ai_socktype, 0);
    if (fd >= 0 && ::connect(fd, found->ai_addr, found->ai_addrlen) != 0) {
      ::close(fd);
      fd = -1;
    }
    ::freeaddrinfo(found);
    if (fd >= 0) {
      timeval tv{5, 0};
      ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    }
    return fd;
  }
};

//===----------------------------------------------------------------------===//
// Gloo
//===----------------------------------------------------------------------===//

/// c[i] = op(a[i], b[i]) on 16-bit floats of type T: Gloo's reduction
/// function for allReduceHalf, computed in f32 and rounded.
template <typename T, ReduceOp op>
void combineHalf(void *c, const void *a, const void *b, size_t n) {
  auto *out = static_cast<T *>(c);
  const auto *x = static_cast<const T *>(a), *y = static_cast<const T *>(b);
  for (size_t i = 0; i < n; ++i) {
    float u = loom::rt::toFloat(x[i]), v = loom::rt::toFloat(y[i]);
    float r = op == ReduceOp::Sum    ? u + v
              : op == ReduceOp::Prod ? u * v
              : op == ReduceOp::Max  ? std::max(u, v)
                                     : std::min(u, v);
    out[i] = loom::rt::fromFloat<T>(r);
  }
}

/// Writing to the socket of a peer that died raises SIGPIPE, whose default
/// action ends the process without a word: the rank would vanish instead of
/// failing its collective with an error that names it and the operation,
/// and the launcher could take it for the rank that failed first. Gloo
/// writes with writev, which cannot ask for MSG_NOSIGNAL, so the process
/// ignores SIGPIPE (as Python does at startup); a handler the program
/// installed itself stays.
void ignoreBrokenPipes() {
  struct sigaction current {};
  if (sigaction(SIGPIPE, nullptr, &current) == 0 &&
      current.sa_handler == SIG_DFL && !(current.sa_flags & SA_SIGINFO))
    ::signal(SIGPIPE, SIG_IGN);
}

/// Gloo's TCP device, whose event thread (started with the device) runs
/// under SCHED_BATCH unless LOOM_TRANSPORT_THREAD=normal.
///
/// The event thread handles a socket only when it can take the pair's lock
/// at once; otherwise it returns to epoll, which reports the same readable
/// socket again at once. When the thread holding that lock (one posting a
/// send or a receive) is preempted by a thread it woke on the same CPU, for
/// instance the peer's event thread that its write woke, the event thread
/// spins in epoll on that CPU until the scheduler's next tick lets the
/// holder finish: stalls of several milliseconds traced on a two-core machine,
/// in pipeline messages and in every collective. A SCHED_BATCH thread does not
/// preempt the running thread when it wakes, so the holder finishes first. It
/// still has its fair share of the CPU, and it runs at once on an idle CPU.
std::shared_ptr<gloo::transport::Device>
createDevice(const gloo::transport::tcp::attr &attr) {
  ignoreBrokenPipes();
  const char *choice = std::getenv("LOOM_TRANSPORT_THREAD");
  std::string policy = choice && *choice ? choice : "batch";
  if (policy != "batch" && policy != "normal")
    throw Error("LOOM_TRANSPORT_THREAD=" + policy +
                " is not one of batch, normal");
#ifdef SCHED_BATCH
  // Threads inherit their creator's policy: switch this thread for the
  // device's creation only. Changing between SCHED_OTHER and SCHED_BATCH
  // needs no privilege; if it fails all the same, the default stays.
  int previous = 0;
  sched_param param{};
  bool switched =
      policy == "batch" &&
      pthread_getschedparam(pthread_self(), &previous, &param) == 0 &&
      previous == SCHED_OTHER &&
      pthread_setschedparam(pthread_self(), SCHED_BATCH, &param) == 0;
  struct Restore {
    bool switched;
    int previous;
    sched_param param;
    ~Restore() {
      if (switched)
        pthread_setschedparam(pthread_self(), previous, &param);
    }
  } restore{switched, previous, param};
#endif
  return gloo::transport::tcp::CreateDevice(attr);
}

class GlooCommunicator : public Communicator {
public:
  GlooCommunicator(const Rendezvous &r) : rendezvous(r) {
    try {
      if (r.store == "file") {
        ::mkdir(r.path.c_str(), 0755);
        store = std::make_shared<gloo::rendezvous::FileStore>(r.path);
      } else {
        store = std::make_shared<TcpStore>(r);
      }
      gloo::rendezvous::PrefixStore prefixed(r.prefix, *store);
      gloo::transport::tcp::attr attr;
      attr.hostname = r.store == "tcp" ? localAddress(r.address) : "127.0.0.1";
      device = createDevice(attr);
      context = std::make_shared<gloo::rendezvous::Context>(r.rank, r.worldSize);
      context->setTimeout(r.timeout);
      context->connectFullMesh(prefixed, device);
    } catch (const Error &) {
      throw;
    } catch (const std::exception &e) {
      throw Error("rank " + std::to_string(r.rank) + " of " +
                  std::to_string(r.worldSize) + ": rendezvous failed: " +
                  e.what());
    }
  }

  /// A sub-group on the same store and transport device.
  GlooCommunicator(const Rendezvous &group,
                   std::shared_ptr<gloo::rendezvous::Store> sharedStore,
                   std::shared_ptr<gloo::transport::Device> sharedDevice)
      : rendezvous(group), store(std::move(sharedStore)),
        device(std::move(sharedDevice)) {
    try {
      gloo::rendezvous::PrefixStore prefixed(group.prefix, *store);
      context = std::make_shared<gloo::rendezvous::Context>(group.rank,
                                                            group.worldSize);
      context->setTimeout(group.timeout);
      context->connectFullMesh(prefixed, device);
    } catch (const std::exception &e) {
      throw Error("rank " + std::to_string(group.rank) + " of group " +
                  group.prefix + ": rendezvous failed: " + e.what());
    }
  }

  std::unique_ptr<Communicator> split(const std::vector<int> &ranks,
                                      const std::string &name) override {
    Rendezvous group = rendezvous;
    group.worldSize = (int)ranks.size();
    group.rank = -1;
    for (size_t i = 0; i < ranks.size(); ++i)
      if (ranks[i] == rendezvous.rank)
        group.rank = (int)i;
    if (group.rank < 0)
      throw Error("rank " + std::to_string(rendezvous.rank) +
                  " is not in the group it splits off");
    group.prefix = rendezvous.prefix + "/group/" + name;
    return std::make_unique<GlooCommunicator>(group, store, device);
  }

  int rank() const override { return rendezvous.rank; }
  int size() const override { return rendezvous.worldSize; }

  void allReduce(float *data, size_t count, ReduceOp op) override {
    using Fn = void (*)(void *, const void *, const void *, size_t);
    Fn combine = op == ReduceOp::Sum    ? static_cast<Fn>(&gloo::sum<float>)
                 : op == ReduceOp::Prod ? static_cast<Fn>(&gloo::product<float>)
                 : op == ReduceOp::Max  ? static_cast<Fn>(&gloo::max<float>)
                                        : static_cast<Fn>(&gloo::min<float>);
    run("all_reduce", count, [&] {
      gloo::AllreduceOptions options(context);
      options.setOutput(data, count);
      options.setReduceFunction(combine);
      gloo::allreduce(stamped(options));
    });
  }

  void allReduceHalf(uint16_t *data, size_t count, HalfFormat format,
                     ReduceOp op) override {
    using Fn = void (*)(void *, const void *, const void *, size_t);
    auto pick = [&](auto tag) -> Fn {
      using T = decltype(tag);
      return op == ReduceOp::Sum    ? &combineHalf<T, ReduceOp::Sum>
             : op == ReduceOp::Prod ? &combineHalf<T, ReduceOp::Prod>
             : op == ReduceOp::Max  ? &combineHalf<T, ReduceOp::Max>
                                    : &combineHalf<T, ReduceOp::Min>;
    };
    Fn combine = format == HalfFormat::BFloat16 ? pick(loom::rt::Bf16{})
                                                : pick(loom::rt::F16{});
    run("all_reduce", count, [&] {
      gloo::AllreduceOptions options(context);
      options.setOutput(data, count);
      options.setReduceFunction(combine);
      gloo::allreduce(stamped(options));
    });
  }

  void allGather(const float *in, float *out, size_t count) override {
    run("all_gather", count, [&] {
      gloo::AllgatherOptions options(context);
      options.setInput(const_cast<float *>(in), count);
      options.setOutput(out, count * (size_t)size());
      gloo::allgather(stamped(options));
    });
  }

  void allToAll(const float *in, float *out, size_t count) override {
    run("all_to_all", count, [&] {
      gloo::AlltoallOptions options(context);
      options.setInput(const_cast<float *>(in), count * (size_t)size());
      options.setOutput(out, count * (size_t)size());
      gloo::alltoall(stamped(options));
    });
  }

  void reduceScatterSum(const float *in, float *out, size_t count) override {
    // Gloo's option-style API has no reduce-scatter: all-reduce a copy and
    // keep this rank's block (twice the traffic of a ring reduce-scatter).
    std::vector<float> all(in, in + count * (size_t)size());
    allReduceSum(all.data(), all.size());
    std::memcpy(out, all.data() + count * (size_t)rank(),
                count * sizeof(float));
  }

  void broadcast(float *data, size_t count, int root) override {
    run("broadcast", count, [&] {
      gloo::BroadcastOptions options(context);
      options.setOutput(data, count);
      options.setRoot(root);
      gloo::broadcast(stamped(options));
    });
  }

  void barrier() override {
    run("barrier", 0, [&] {
      gloo::BarrierOptions options(context);
      gloo::barrier(stamped(options));
    });
  }

  void send(const void *data, size_t bytes, int peer,
            uint64_t sequence) override {
    run("send", bytes / 4, [&] {
      Pending p;
      p.data.assign(static_cast<const char *>(data),
                    static_cast<const char *>(data) + bytes);
      p.buffer = context->createUnboundBuffer(p.data.data(), p.data.size());
      p.buffer->send(peer, pointToPointSlot(sequence));
      p.peer = peer;
      pending.push_back(std::move(p));
    });
  }
  void recv(void *data, size_t bytes, int peer, uint64_t sequence) override {
    run("receive", bytes / 4, [&] {
      auto buffer = context->createUnboundBuffer(data, bytes);
      buffer->recv(peer, pointToPointSlot(sequence));
      buffer->waitRecv(rendezvous.timeout);
    });
  }
  void waitSends() override {
    run("send", 0, [&] {
      while (!pending.empty()) {
        pending.front().buffer->waitSend(rendezvous.timeout);
        pending.pop_front();
      }
    });
  }

private:
  /// A message on its way: its copy and Gloo's buffer over it.
  struct Pending {
    std::vector<char> data;
    std::unique_ptr<gloo::transport::UnboundBuffer> buffer;
    int peer = 0;
  };
  std::deque<Pending> pending;
  /// Messages between two ranks are told apart by their sequence number
  /// (both sides count them), in a slot space of their own.
  static uint64_t pointToPointSlot(uint64_t sequence) {
    return gloo::Slot::build(0x50, (uint32_t)sequence);
  }

  Rendezvous rendezvous;
  std::shared_ptr<gloo::rendezvous::Store> store;
  std::shared_ptr<gloo::transport::Device> device;
  std::shared_ptr<gloo::rendezvous::Context> context;
  uint32_t tag = 0;

  /// Gives a collective's options the next tag (every rank counts the same
  /// sequence) and the run's timeout.
  template <typename Options> Options &stamped(Options &options) {
    options.setTag(tag++);
    options.setTimeout(rendezvous.timeout);
    return options;
  }

  template <typename Fn>
  void run(const char *what, size_t count, Fn &&fn) {
    try {
      fn();
    } catch (const std::exception &e) {
      throw Error("rank " + std::to_string(rank()) + " of " +
                  std::to_string(size()) + ": " + what + " of " +
                  std::to_string(count) +
                  " floats failed (a peer died or did not answer within " +
                  std::to_string(rendezvous.timeout.count() / 1000) +
                  " s): " + e.what());
    }
  }

  /// The address of this host that peers reach MASTER_ADDR through:
  /// loopback for a local run, else the host name.
  static std::string localAddress(const std::string &master) {
    if (master == "127.0.0.1" || master == "localhost")
      return "127.0.0.1";
    char host[256] = {0};
    if (::gethostname(host, sizeof host - 1) != 0)
      return "127.0.0.1";
    return host;
  }
};

} // namespace

Rendezvous rendezvousFromEnvironment() {
  Rendezvous r;
  r.worldSize = envInt("WORLD_SIZE", 1, 1);
  r.rank = envInt("RANK", 0, 0);
  r.localRank = envInt("LOCAL_RANK", r.rank, 0);
  if (r.rank >= r.worldSize)
    throw Error("RANK=" + std::to_string(r.rank) + " is not below WORLD_SIZE=" +
                std::to_string(r.worldSize));
  if (const char *addr = std::getenv("MASTER_ADDR"); addr && *addr)
    r.address = addr;
  r.port = envInt("MASTER_PORT", r.port, 1);
  if (r.port > 65535)
    throw Error("MASTER_PORT=" + std::to_string(r.port) + " is not a port");
  r.timeout = std::chrono::seconds(envInt("LOOM_TIMEOUT_SEC", 60, 1));
  if (const char *store = std::getenv("LOOM_STORE"); store && *store) {
    std::string s = store;
    if (s.rfind("file:", 0) == 0 && s.size() > 5) {
      r.store = "file";
      r.path = s.substr(5);
    } else if (s != "tcp") {
      throw Error("LOOM_STORE=" + s + ": expected file:DIR or tcp");
    }
  }
  if (const char *prefix = std::getenv("LOOM_RUN_ID"); prefix && *prefix)
    r.prefix = prefix;
  return r;
}

Store::~Store() = default;

namespace {
/// The rendezvous store behind Loom's Store interface.
class RendezvousStore : public Store {
public:
  explicit RendezvousStore(const Rendezvous &r) : rendezvous(r) {
    if (r.store == "file") {
      ::mkdir(r.path.c_str(), 0755);
      store = std::make_shared<gloo::rendezvous::FileStore>(r.path);
    } else {
      store = std::make_shared<TcpStore>(r);
    }
  }
  void set(const std::string &key, const std::vector<char> &value) override {
    try {
      store->set(rendezvous.prefix + "/" + key, value);
    } catch (const std::exception &e) {
      throw Error("rank " + std::to_string(rendezvous.rank) +
                  ": cannot publish \"" + key + "\": " + e.what());
    }
  }
  std::vector<char> get(const std::string &key) override {
    std::string full = rendezvous.prefix + "/" + key;
    try {
      store->wait({full}, rendezvous.timeout);
      return store->get(full);
    } catch (const Error &) {
      throw;
    } catch (const std::exception &e) {
      throw Error("rank " + std::to_string(rendezvous.rank) + ": no \"" + key +
                  "\" in the rendezvous store: " + e.what());
    }
  }

private:
  Rendezvous rendezvous;
  std::shared_ptr<gloo::rendezvous::Store> store;
};
} // namespace

std::unique_ptr<Store> openStore(const Rendezvous &rendezvous) {
  return std::make_unique<RendezvousStore>(rendezvous);
}

#ifndef LOOM_HAVE_NCCL
bool haveNccl() { return false; }

std::unique_ptr<Communicator> connectNccl(const Rendezvous &, int) {
  throw Error("this build of Loom has no NCCL engine (CMake found no CUDA "
              "toolkit with NCCL); use Gloo");
}
#endif

std::unique_ptr<Communicator> connectGloo(const Rendezvous &rendezvous) {
  return std::make_unique<GlooCommunicator>(rendezvous);
}

} // namespace loom::comm
